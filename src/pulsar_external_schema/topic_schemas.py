"""The registered schema a topic is read into or written with, looked up in the registry.

Spark's reader and writer and the Pulsar Functions schemas do not get a schema from their user:
they take the subject's latest version (or the one `use.schema.id` / `use.latest.with.metadata`
names), and its type says which serde to build. And what they forward untouched to another topic
is registered under that topic's subject (`ForwardedSchemas`).
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext

from . import _confluent
from . import schema_id as ids
from ._imports import import_object
from .codec import PLAN_CACHE_SIZE
from .errors import (
    ConfigError,
    ExternalSchemaError,
    IncompatibleSchemaError,
    RegistryUnavailableError,
    SchemaParseError,
    SubjectNotFoundError,
    UnknownSchemaIdError,
)
from .factory import SchemaRegistrySchemaFactory
from .protobuf_text import SERIALIZED
from .registered_schema import RegisteredSchema
from .registry import describe, failure_kind, is_conflict, registry_error
from .rules.deks import share_deks
from .schema import ExternalSchema


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
        pinned_id = config.use_schema_id
        metadata = config.use_latest_with_metadata
        if pinned_id is not None:
            registered = client.get_schema(pinned_id, subject_name=subject)
            schema, schema_id, version = registered, pinned_id, None
        else:
            if metadata:
                latest = client.get_latest_with_metadata(subject, metadata)
            else:
                latest = client.get_latest_version(subject)
            schema, schema_id, version = latest.schema, latest.schema_id, latest.version
        references = referenced_texts(client, schema)
        registry_references = tuple(
            (ref.name or "", ref.subject or "", int(ref.version or 0)) for ref in schema.references or []
        )
    except ExternalSchemaError:
        raise
    except Exception as error:
        kind = failure_kind(error)
        if kind == "not found" and pinned_id is not None:
            raise ConfigError(
                f"config key 'use.schema.id' = {pinned_id}: the registry at {config.registry_url} has no "
                f"schema with id {pinned_id} under subject {subject} (topic {topic}): {describe(error)}"
            ) from None
        if kind == "not found" and metadata:
            raise ConfigError(
                f"config key 'use.latest.with.metadata' = {metadata}: subject {subject} (topic {topic}) has "
                f"no version with this metadata at {config.registry_url}: {describe(error)}"
            ) from None
        if kind == "not found":
            raise SubjectNotFoundError(
                f"subject {subject} (topic {topic}) has no registered schema at {config.registry_url}: "
                f"{describe(error)}; register one, or produce with an external schema first",
                topic=topic,
                subject=subject,
            ) from None
        failed = registry_error(
            error,
            f"could not read the registered schema of subject {subject}",
            config.registry_url,
            topic=topic,
            subject=subject,
        )
        raise (
            failed
            or RegistryUnavailableError(  # an answer the client could not read, as before
                f"could not read the registered schema of subject {subject} from {config.registry_url}: "
                f"{describe(error)}",
                topic=topic,
                subject=subject,
            )
        ) from None
    return RegisteredSchema(
        subject,
        schema.schema_type or "AVRO",
        schema.schema_str,
        schema_id,
        version,
        references,
        registry_references,
    )


def referenced_texts(client: Any, schema: Schema) -> tuple[tuple[str, str], ...]:
    """(name, schema text) of the versions `schema` references, and of those they reference, each
    once, a version after the ones it needs (confluent-kafka's `_resolve_named_schema` walks them
    so). A cycle is refused when the version is registered, and `seen` ends the walk regardless."""
    texts: dict[str, str] = {}
    seen: set[tuple[str, int]] = set()

    def walk(current: Schema) -> None:
        for ref in current.references or []:
            key = (ref.subject or "", int(ref.version or 0))
            if key in seen:
                continue
            seen.add(key)
            referenced = client.get_version(ref.subject, ref.version).schema
            walk(referenced)
            texts.setdefault(ref.name or "", referenced.schema_str or "")

    walk(schema)
    return tuple(texts.items())


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
        # the serialized form compiled here from the registry's text (protobuf_text.py)
        serialized = client.get_schema(registered.schema_id, registered.subject, SERIALIZED)
        pool, file_proto = _confluent.protobuf_pool(serialized, client, f"{registered.subject}.proto")
    except SchemaParseError as error:
        raise SchemaParseError(f"{where}: {error}") from None
    except Exception as error:
        raise ConfigError(
            f"could not load the Protobuf descriptor of {where} from {factory.config.registry_url}: {error}"
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
    """The external schema of the registered version's type (Protobuf: of `message_class`, the
    generated class, where given; else of the class built from the registry's `.proto` text, its
    file's first message: `registry_message_class`)."""
    if registered.schema_type == "AVRO":
        return factory.avro(registered.for_factory())
    if registered.schema_type == "JSON":
        return factory.json(registered.for_factory())
    if registered.schema_type == "PROTOBUF":
        if message_class is None:
            message_class = registry_message_class(factory, registered)
        return factory.protobuf(message_class)
    raise ConfigError(
        f"subject {registered.subject} has schema type {registered.schema_type}, which is not supported"
    )


class ForwardedSchemas:
    """The writer versions a job forwards to a topic, registered under that topic's own subject.

    The validation pipeline (`validate`, `ValidationJob`, `ValidateFunction`, and the Spark sink
    when it writes `data` that carries its `__schema_id`) forwards messages untouched: the same
    bytes, with the source's schema id. A consumer of the target topic with the default config
    checks that an id is registered under the topic's subject (`schema.id.subject.check`), and the
    id was registered under the source's only. A registry gives one id to one schema, so the
    version (with its rules and metadata) registered under the target's subject keeps its id: the
    id, the bytes and the subject check then agree, and the target's readers run the same data
    contract. Each (id, target subject) is registered once, before the first message with that id
    is forwarded; with `auto.register.schemas` false it must be registered already. The DEKs the
    version's ENCRYPT rules wrote under the source subject are registered under the target's
    (`rules/deks.py`): else its readers could not decrypt what is forwarded.

    A target subject that refuses the version (its compatibility) raises `IncompatibleSchemaError`
    naming both subjects and the version: nothing its readers cannot read is forwarded. GUID ids
    need nothing: they are never checked against a subject.
    """

    def __init__(self, factory: SchemaRegistrySchemaFactory, *, source_topic: str | None = None) -> None:
        self._factory = factory
        self._register = factory.config.auto_register_schemas
        self._source = topic_subject(factory, source_topic) if source_topic else None
        self._done: set[tuple[str, int]] = set()
        self._forwarded: set[tuple[str, str]] = set()
        """(topic, `__schema_id` value) already seen: a message of one is a set lookup away."""
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the registry client of the factory this was made with."""
        self._factory.close()

    def forward(self, topic: str, schema_id_property: str | None, *, source_topic: str | None = None) -> None:
        """Before a message with this `__schema_id` property value is forwarded to `topic` (from
        `source_topic`): its value's (and, for a key/value id, its key's) writer version is
        registered there."""
        if not schema_id_property or (topic, schema_id_property) in self._forwarded:
            return
        id_bytes, key_value = ids.from_property(schema_id_property)
        if key_value:
            pair = ids.decode_key_value_ids(id_bytes)
            parts = [(MessageField.KEY, pair.key), (MessageField.VALUE, pair.value)]
        else:
            parts = [(MessageField.VALUE, id_bytes)]
        for field, part in parts:
            schema_id = ids.confluent_int_id(part) if part else None
            if schema_id is not None:
                self.register(topic, schema_id, field, source_topic=source_topic)
        if len(self._forwarded) >= PLAN_CACHE_SIZE:
            self._forwarded.clear()
        self._forwarded.add((topic, schema_id_property))

    def register(
        self,
        topic: str,
        schema_id: int,
        field: MessageField = MessageField.VALUE,
        *,
        source_topic: str | None = None,
    ) -> None:
        """Register the version with id `schema_id` under `topic`'s subject (once); the version
        of `source_topic`'s subject where it has one (its rules and metadata), else any."""
        subject = topic_subject(self._factory, topic, field)
        if (subject, schema_id) in self._done:
            return
        with self._lock:
            if (subject, schema_id) not in self._done:
                source = topic_subject(self._factory, source_topic, field) if source_topic else self._source
                self._adopt(topic, subject, schema_id, source)
                self._done.add((subject, schema_id))

    def _adopt(self, topic: str, subject: str, schema_id: int, preferred: str | None) -> None:
        client = self._factory.registry_client
        url = self._factory.config.registry_url
        source: str = subject
        version: int | None = None
        try:
            versions = _confluent.schema_versions(client, schema_id)
            chosen = next(((s, v) for s, v in versions if s == preferred), None)
            here = next((v for s, v in versions if s == subject), None)
            if here is not None:  # registered there already (a pipeline that validates in place, a rerun)
                if chosen is not None and chosen[0] != subject:
                    schema = client.get_version(subject, here).schema
                    share_deks(client, schema, chosen[0], subject, topic=topic, url=url)
                return
            if chosen is None and not versions:
                raise UnknownSchemaIdError(
                    f"schema id {schema_id} is registered under no subject at {url}",
                    topic=topic,
                    subject=subject,
                )
            source, version = chosen or versions[0]
            schema = client.get_version(source, version).schema  # with its rules and metadata
            if self._register:
                registered_id = client.register_schema_full_response(subject, schema).schema_id
            else:
                registered_id = client.lookup_schema(subject, schema).schema_id
            if registered_id == schema_id:
                share_deks(client, schema, source, subject, topic=topic, url=url)
        except ExternalSchemaError:
            raise
        except Exception as error:
            raise self._failure(error, topic, subject, schema_id, source, version) from None
        if registered_id != schema_id:
            raise ConfigError(
                f"version {version} of {source} (schema id {schema_id}) has id {registered_id} under "
                f"{subject}: the registry changed it there (a defaultRuleSet, overrideRuleSet or metadata "
                f"of {subject}?), so messages forwarded with id {schema_id} would not pass the subject "
                "check of the topic's readers; no message with that id was forwarded",
                topic=topic,
                subject=subject,
            )

    def _failure(
        self, error: Exception, topic: str, subject: str, schema_id: int, source: str, version: int | None
    ) -> ExternalSchemaError:
        url = self._factory.config.registry_url
        what = f"version {version} of {source} (schema id {schema_id})"
        kind = failure_kind(error)
        if kind == "unavailable":
            failed = registry_error(
                error, f"could not register {what} under {subject}", url, topic=topic, subject=subject
            )
            assert failed is not None
            return failed
        if kind == "not found" and not self._register:
            return SubjectNotFoundError(
                f"{what} is not registered under {subject}, and auto.register.schemas is false: register "
                f"it there before forwarding messages of it to {topic}; no message of it was forwarded",
                topic=topic,
                subject=subject,
            )
        if is_conflict(error):
            return IncompatibleSchemaError(
                f"{subject} refuses {what}, which messages forwarded to {topic} are written with: "
                f"{describe(error)}; no message of it was forwarded. Let {subject}'s compatibility "
                "accept it, or forward to a topic whose subject does",
                [],
                topic=topic,
                subject=subject,
            )
        return ConfigError(
            f"could not register {what} under {subject} at {url}: {describe(error)}; "
            "no message of it was forwarded",
            topic=topic,
            subject=subject,
        )
