"""The reader schema of a subject (resolved once, on the driver) and the decoder built from it on
each executor: message -> Spark row values, with the data contract applied."""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import Any

import fastavro
from confluent_kafka.schema_registry.serde import RuleAction
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql.types import DataType

from ..errors import ConfigError, ExternalSchemaError, RegistryUnavailableError
from ..factory import SchemaRegistrySchemaFactory
from ..rules.actions import rule_violation
from ..schema import ExternalSchema
from .options import SourceOptions
from .types import Converter, avro_type, json_type, protobuf_type


@dataclass(frozen=True)
class ReaderSchema:
    """The registered schema values are read into: the subject's latest version by default,
    or the one `use.schema.id` / `use.latest.with.metadata` names."""

    subject: str
    schema_type: str
    schema_str: str
    schema_id: int
    version: int | None
    references: tuple[tuple[str, str], ...] = ()
    """(name, schema text) of each schema reference, for Avro and JSON Schema."""


def resolve_reader_schema(options: SourceOptions, topic: str) -> ReaderSchema:
    with SchemaRegistrySchemaFactory(options.config) as factory:
        config = factory.config
        subject = config.subject_name_strategy(SerializationContext(topic, MessageField.VALUE), None)
        if not subject:
            raise ConfigError(f"the subject name strategy gives no subject for topic {topic}")
        client = factory.registry_client
        try:
            pinned_id = config.serde.get("use.schema.id")
            metadata = config.serde.get("use.latest.with.metadata")
            if pinned_id is not None:
                registered = client.get_schema(int(pinned_id), subject_name=subject)
                schema, schema_id, version = registered, int(pinned_id), None
            else:
                if metadata:
                    latest = client.get_latest_with_metadata(subject, metadata)
                else:
                    latest = client.get_latest_version(subject)
                schema, schema_id, version = latest.schema, latest.schema_id, latest.version
            references = tuple(
                (ref.name, client.get_version(ref.subject, ref.version).schema.schema_str)
                for ref in schema.references or []
            )
        except ExternalSchemaError:
            raise
        except Exception as error:
            status = getattr(error, "http_status_code", None)
            if status == 404:
                raise ConfigError(
                    f"subject {subject} (topic {topic}) has no registered schema at {config.registry_url}: "
                    f"{error}; register one, or produce with an external schema first"
                ) from None
            raise RegistryUnavailableError(
                f"could not read the reader schema of subject {subject} from {config.registry_url}: {error}",
                topic=topic,
                subject=subject,
            ) from None
        return ReaderSchema(
            subject, schema.schema_type or "AVRO", schema.schema_str, schema_id, version, references
        )


def spark_value_type(reader: ReaderSchema, options: SourceOptions) -> tuple[DataType, Converter]:
    """The Spark type of the value column, and the converter of decoded values to it."""
    if reader.schema_type == "AVRO":
        named: dict[str, Any] = {}
        for _, text in reader.references:
            fastavro.parse_schema(json.loads(text), named_schemas=named)
        return avro_type(fastavro.parse_schema(json.loads(reader.schema_str), named_schemas=named))
    if reader.schema_type == "JSON":
        return json_type(reader.schema_str, {name: json.loads(text) for name, text in reader.references})
    if reader.schema_type == "PROTOBUF":
        return protobuf_type(protobuf_class(options, f"subject {reader.subject}").DESCRIPTOR)
    raise ConfigError(
        f"subject {reader.subject} has schema type {reader.schema_type}, which is not supported"
    )


def protobuf_class(options: SourceOptions, where: str) -> Any:
    path = options.protobuf_message_class
    if not path:
        raise ConfigError(
            f"{where} holds Protobuf schemas: set option 'protobuf.message.class' to the "
            "generated message class (pkg.module_pb2.Message)"
        )
    module_name, _, class_name = path.replace(":", ".").rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigError(f"option 'protobuf.message.class': cannot import {path!r}: {error}") from None


class _InvalidRowAction(RuleAction):
    """The DLQ action inside Spark: the row is marked invalid, and the job dead-letters it.

    Publishing from `read()` would repeat the copy on every task retry and every re-read of a
    batch; the validation job writes the DLQ topic once, with the rest of its batch.
    """

    def type(self) -> str:
        return "DLQ"

    def run(self, ctx: Any, message: Any, ex: Exception | None) -> None:
        raise rule_violation(ctx, message, ex) from ex


def make_schema(
    options: SourceOptions, reader: ReaderSchema, *, client: Any = None, latest: bool = False
) -> tuple[SchemaRegistrySchemaFactory, ExternalSchema]:
    """The external schema an executor decodes with (no `client`: DLQ rules mark rows invalid),
    or encodes with (`latest`: the subject's latest version, never registering one)."""
    conf = dict(options.config)
    pinned = any(key in conf for key in ("use.schema.id", "use.latest.version", "use.latest.with.metadata"))
    if (latest or reader.schema_type == "AVRO") and not pinned:
        conf["use.latest.version"] = "true"  # Avro resolves every writer version into the reader's
    actions = None if client is not None else [_InvalidRowAction()]
    factory = SchemaRegistrySchemaFactory(conf, client=client, rule_actions=actions)
    if reader.schema_type == "AVRO":
        schema = factory.avro(reader.schema_str)
        if client is None and not latest and not pinned:
            # Read into the version the driver resolved, not whatever is latest when this task
            # runs: the column type was fixed from it, and so are the rules that run.
            # confluent-kafka's deserializers take no `use.schema.id`, but read it from here.
            deserializer: Any = schema._part.deserializer
            deserializer._use_schema_id = reader.schema_id
        return factory, schema
    if reader.schema_type == "JSON":
        return factory, factory.json(reader.schema_str)
    return factory, factory.protobuf(protobuf_class(options, f"subject {reader.subject}"))


def is_data_error(error: Exception) -> bool:
    """Errors of a message (bad bytes, unknown id, failed rule), not of the registry or the network."""
    return isinstance(error, ExternalSchemaError) and not isinstance(error, RegistryUnavailableError)
