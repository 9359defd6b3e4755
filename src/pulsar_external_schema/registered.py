"""The registered schema a topic is read into or written with, looked up in the registry.

Spark's reader and writer and the Pulsar Functions schemas do not get a schema from their user:
they take the subject's latest version (or the one `use.schema.id` / `use.latest.with.metadata`
names), and its type says which serde to build.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from confluent_kafka.serialization import MessageField, SerializationContext

from .errors import ConfigError, ExternalSchemaError, RegistryUnavailableError
from .factory import SchemaRegistrySchemaFactory
from .schema import ExternalSchema


@dataclass(frozen=True)
class RegisteredSchema:
    """One registered version of a subject."""

    subject: str
    schema_type: str
    """AVRO, JSON or PROTOBUF."""
    schema_str: str
    schema_id: int
    version: int | None
    references: tuple[tuple[str, str], ...] = ()
    """(name, schema text) of each schema reference, for Avro and JSON Schema."""


def value_subject(factory: SchemaRegistrySchemaFactory, topic: str) -> str:
    subject = factory.config.subject_name_strategy(SerializationContext(topic, MessageField.VALUE), None)
    if not subject:
        raise ConfigError(f"the subject name strategy gives no subject for topic {topic}")
    return str(subject)


def registered_schema(factory: SchemaRegistrySchemaFactory, topic: str) -> RegisteredSchema:
    """The version of `topic`'s value subject that the factory's config selects (default: latest)."""
    config = factory.config
    subject = value_subject(factory, topic)
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
        if getattr(error, "http_status_code", None) == 404:
            raise ConfigError(
                f"subject {subject} (topic {topic}) has no registered schema at {config.registry_url}: "
                f"{error}; register one, or produce with an external schema first"
            ) from None
        raise RegistryUnavailableError(
            f"could not read the registered schema of subject {subject} from {config.registry_url}: {error}",
            topic=topic,
            subject=subject,
        ) from None
    return RegisteredSchema(
        subject, schema.schema_type or "AVRO", schema.schema_str, schema_id, version, references
    )


def import_message_class(path: str, setting: str) -> Any:
    """A generated Protobuf message class from `pkg.module_pb2.Message` (or `pkg.module_pb2:Message`)."""
    module_name, _, class_name = path.replace(":", ".").rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigError(f"{setting}: cannot import {path!r}: {error}") from None


def schema_for(
    factory: SchemaRegistrySchemaFactory, registered: RegisteredSchema, message_class: Any = None
) -> ExternalSchema:
    """The external schema of the registered version's type (Protobuf needs the generated class)."""
    if registered.schema_type == "AVRO":
        return factory.avro(registered.schema_str)
    if registered.schema_type == "JSON":
        return factory.json(registered.schema_str)
    if registered.schema_type == "PROTOBUF":
        if message_class is None:
            raise ConfigError(
                f"subject {registered.subject} holds Protobuf schemas: set 'protobuf.message.class' "
                "to the generated message class (pkg.module_pb2.Message)"
            )
        return factory.protobuf(message_class)
    raise ConfigError(
        f"subject {registered.subject} has schema type {registered.schema_type}, which is not supported"
    )
