"""The reader schema of a subject (resolved once, on the driver) and the decoder built from it on
each executor: message -> Spark row values, with the data contract applied."""

from __future__ import annotations

import functools
import json
from typing import Any

import pyarrow as pa

from .. import _confluent
from ..config import pins_a_version
from ..errors import ConfigError, ExternalSchemaError, RegistryUnavailableError
from ..factory import SchemaRegistrySchemaFactory
from ..reading.types import Converter, avro_type, json_type, protobuf_type
from ..registered_schema import RegisteredSchema
from ..rules.actions import InvalidMessageAction
from ..schema import ExternalSchema
from ..topic_schemas import (
    import_message_class,
    registered_schema,
    schema_for,
    topic_subject,
)
from .kept import Kept
from .options import SourceOptions
from .planning import Planner

#: The registered schema values are read into: the subject's latest version by default, or the
#: one `use.schema.id` / `use.latest.with.metadata` names.
ReaderSchema = RegisteredSchema


#: Factories the driver's planning keeps per worker, one per registry config (`kept.py`).
_factories: Kept[SchemaRegistrySchemaFactory] = Kept(4, lambda factory: factory.close())


def resolve_reader_schema(options: SourceOptions, topic: str) -> ReaderSchema:
    """The version values of `topic` are read into, asked of the registry now (not of a cache: a
    query plans with the subject's versions as they are when it starts)."""
    key = json.dumps(options.config, sort_keys=True, default=str)
    factory = _factories.get(key, lambda: SchemaRegistrySchemaFactory(options.config))
    _confluent.forget_cached(factory.registry_client, topic_subject(factory, topic))
    return registered_schema(factory, topic)


def query_value(options: SourceOptions) -> tuple[ReaderSchema, pa.DataType]:
    """The reader schema of a read and its value column's Arrow type, on the driver: one for all
    the topics it reads (converters are made where the rows are: they hold Protobuf descriptors,
    which do not pickle)."""
    options.require_topics()
    planner = Planner(options)
    admin = planner.admin()
    try:
        topics = planner.topics(admin)
    finally:
        admin.close()
    if not topics:
        raise ConfigError(f"no topic matches topicPattern {options.topic_pattern!r}")
    chosen: tuple[ReaderSchema, pa.DataType] | None = None
    for topic in topics:
        reader = resolve_reader_schema(options, topic)
        value_type, _ = arrow_value_type(reader, options)
        if chosen is None:
            chosen = (reader, value_type)
        elif value_type != chosen[1] or reader.schema_type != chosen[0].schema_type:
            raise ConfigError(
                f"topics read together need one value type: subject {reader.subject} gives "
                f"{value_type}, subject {chosen[0].subject} gives {chosen[1]}; read them apart"
            )
    assert chosen is not None
    return chosen


@functools.lru_cache(maxsize=16)
def avro_parsed(reader: ReaderSchema) -> Any:
    """An Avro reader schema parsed as its executors' deserializers parse it, referenced named
    types written out at their first use (`_confluent.parse_avro`); shared, not to be changed."""
    named = {name: json.loads(text) for name, text in reader.references}
    return _confluent.parse_avro(reader.schema_str, named)


def json_references(reader: ReaderSchema) -> dict[str, Any]:
    """A JSON Schema version's references, by name, as `json_type` takes them."""
    return {name: json.loads(text) for name, text in reader.references}


def arrow_value_type(reader: ReaderSchema, options: SourceOptions) -> tuple[pa.DataType, Converter]:
    """The Arrow type of the value column, and the converter of decoded values to it."""
    if reader.schema_type == "AVRO":
        return avro_type(avro_parsed(reader))
    if reader.schema_type == "JSON":
        return json_type(reader.schema_str, json_references(reader))
    if reader.schema_type == "PROTOBUF":
        return protobuf_type(protobuf_class(options, f"subject {reader.subject}").DESCRIPTOR)
    raise ConfigError(
        f"subject {reader.subject} has schema type {reader.schema_type}, which is not supported"
    )


def protobuf_class(options: SourceOptions, where: str) -> Any:
    path, named = options.protobuf_message_class, options.protobuf_class_named
    if not path:
        raise ConfigError(
            f"{where} holds Protobuf schemas: set {named} to the generated message class "
            "(pkg.module_pb2.Message)"
        )
    return import_message_class(path, named)


def make_schema(
    options: SourceOptions, reader: ReaderSchema, *, client: Any = None, latest: bool = False
) -> tuple[SchemaRegistrySchemaFactory, ExternalSchema]:
    """The external schema an executor decodes with (no `client`: DLQ rules mark rows invalid),
    or encodes with (`latest`: the subject's latest version, never registering one)."""
    conf = dict(options.config)
    pinned = pins_a_version(conf)
    if (latest or reader.schema_type == "AVRO") and not pinned:
        conf["use.latest.version"] = "true"  # Avro resolves every writer version into the reader's
    # No client: the DLQ action marks the row invalid (publishing from `read()` would repeat the
    # copy on every task retry); the validation job writes the DLQ topic once, with its batch.
    actions = None if client is not None else [InvalidMessageAction()]
    factory = SchemaRegistrySchemaFactory(conf, client=client, rule_actions=actions)
    if reader.schema_type == "AVRO":
        schema = factory.avro(reader.for_factory())
        if client is None and not latest and not pinned:
            # Read into the version the driver resolved, not whatever is latest when this task
            # runs: the column type was fixed from it, and so are the rules that run.
            schema.read_into(reader.schema_id, reader.subject, reader.version)
        return factory, schema
    message_class = (
        protobuf_class(options, f"subject {reader.subject}") if reader.schema_type == "PROTOBUF" else None
    )
    return factory, schema_for(factory, reader, message_class)


def is_data_error(error: Exception) -> bool:
    """Errors of a message (bad bytes, unknown id, failed rule), not of the registry or the network."""
    return isinstance(error, ExternalSchemaError) and not isinstance(error, RegistryUnavailableError)
