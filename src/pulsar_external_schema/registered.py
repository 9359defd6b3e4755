"""The registered schema a topic is read into or written with, looked up in the registry.

Spark's reader and writer and the Pulsar Functions schemas do not get a schema from their user:
they take the subject's latest version (or the one `use.schema.id` / `use.latest.with.metadata`
names), and its type says which serde to build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext

from . import _confluent
from ._imports import import_object
from .errors import ConfigError, ExternalSchemaError, RegistryUnavailableError, SubjectNotFoundError
from .factory import SchemaRegistrySchemaFactory
from .registry import describe, failure_kind
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


def topic_subject(
    factory: SchemaRegistrySchemaFactory, topic: str, field: MessageField = MessageField.VALUE
) -> str:
    """The subject of `topic`'s values (or, with `field=KEY`, its keys) under the factory's subject
    name strategy."""
    subject = factory.config.subject_name_strategy(SerializationContext(topic, field), None)
    if not subject:
        raise ConfigError(f"the subject name strategy gives no {field} subject for topic {topic}")
    return str(subject)


def registered_schema(
    factory: SchemaRegistrySchemaFactory, topic: str, field: MessageField = MessageField.VALUE
) -> RegisteredSchema:
    """The version of `topic`'s value (or key) subject that the factory's config selects (default:
    latest)."""
    config = factory.config
    subject = topic_subject(factory, topic, field)
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
        kind = failure_kind(error)
        if kind == "not found":
            raise SubjectNotFoundError(
                f"subject {subject} (topic {topic}) has no registered schema at {config.registry_url}: "
                f"{error}; register one, or produce with an external schema first"
            ) from None
        if kind == "rejected":
            raise ConfigError(
                f"the registry at {config.registry_url} refused to give the registered schema of subject "
                f"{subject} (topic {topic}): {describe(error)}"
            ) from None
        raise RegistryUnavailableError(
            f"could not read the registered schema of subject {subject} from {config.registry_url}: {error}",
            topic=topic,
            subject=subject,
        ) from None
    return RegisteredSchema(
        subject, schema.schema_type or "AVRO", schema.schema_str, schema_id, version, references
    )


def registry_message_class(
    factory: SchemaRegistrySchemaFactory, registered: RegisteredSchema, message_name: str | None = None
) -> Any:
    """A Protobuf message class built from a registered schema, for callers that have no generated
    class (the console tools). The registry parses the `.proto` text: its `serialized` form is a
    FileDescriptorProto, loaded with confluent-kafka's own pool helpers (well-known and Confluent
    types, references). The message is `message_name` (full or short name), else the file's first,
    as Confluent's console producer picks it."""
    from google.protobuf.message_factory import GetMessageClass

    client = factory.registry_client
    where = f"schema id {registered.schema_id} (subject {registered.subject})"
    try:
        # Past the client's cache: it keys schemas by id whatever their format, so a text copy
        # cached by an earlier lookup would come back instead of the descriptor.
        answer = _confluent.rest_get(
            client,
            f"schemas/ids/{registered.schema_id}",
            {"subject": registered.subject, "format": "serialized"},
        )
        pool, file_proto = _confluent.protobuf_pool(
            Schema.from_dict(answer), client, f"{registered.subject}.proto"
        )
    except Exception as error:
        raise ConfigError(
            f"could not load the Protobuf descriptor of {where} from {factory.config.registry_url} "
            f"(GET /schemas/ids/{registered.schema_id}?format=serialized): {error}"
        ) from None
    names = [message.name for message in file_proto.message_type]
    if not names:
        raise ConfigError(f"{where} declares no message")
    package = f"{file_proto.package}." if file_proto.package else ""
    wanted = message_name or names[0]
    full_name = wanted if wanted.startswith(package) and package else package + wanted
    try:
        descriptor = pool.FindMessageTypeByName(full_name)
    except KeyError:
        raise ConfigError(
            f"{where} has no message {wanted!r}; its top-level messages: {', '.join(names)}"
        ) from None
    return GetMessageClass(descriptor)


def import_message_class(path: str, setting: str) -> Any:
    """A generated Protobuf message class from `pkg.module_pb2.Message` (or `pkg.module_pb2:Message`)."""
    try:
        return import_object(path)
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
