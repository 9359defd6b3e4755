"""The input schema Pulsar's Python function runtime builds from `--custom-schema-inputs`.

The runtime imports the class named by `schemaType` and calls `cls(record_cls, schema_properties)`
(it counts the parameters of `__init__`, so there are exactly these two), subscribes with it, and
calls `msg.value()` before the function runs. An exception there makes the runtime negatively
acknowledge the message, which comes back forever; so a message that cannot be decoded (bad bytes,
an unknown schema id, a failed rule) is delivered as a `Rejected` value instead, which
`ExternalFunction` dead-letters. Only a registry outage raises: redelivery is the cure for that.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulsar

from .._pulsar_client import BYTES, raw_client
from ..deadletter import RULE_TOPIC
from ..errors import ConfigError, EncodeError, ExternalSchemaError, RegistryUnavailableError
from ..factory import SchemaRegistrySchemaFactory
from ..schema import ExternalSchema
from ..topic_schemas import import_message_class, registered_schema, schema_for, topic_subject

#: Schema properties that are not package config keys.
MESSAGE_CLASS_PROPERTY = "protobuf.message.class"


@dataclass(frozen=True)
class Rejected:
    """What a function receives instead of a value when its message could not be decoded."""

    error: ExternalSchemaError
    """What went wrong, naming topic, subject, schema id and rule."""
    message: Any
    """The message as received (`data()`, `properties()`, `topic_name()`, `message_id()`, ...)."""

    @property
    def topic(self) -> str:
        return str(self.message.topic_name())

    @property
    def data(self) -> bytes:
        return bytes(self.message.data())

    def __str__(self) -> str:
        return f"rejected message {self.message.message_id()}: {self.error}"


def is_protobuf_class(cls: Any) -> bool:
    return isinstance(cls, type) and hasattr(cls, "DESCRIPTOR") and hasattr(cls, "FromString")


class FunctionSchema(pulsar.schema.Schema):  # type: ignore[misc]
    """An external schema for a Pulsar Function's input topics.

    `schema_properties` are this package's config keys (`schema.registry.url`, ...), as strings,
    plus, optionally, `protobuf.message.class` for Protobuf topics (or the runtime's record class,
    when it is a generated message class; without either, the message class is built from the
    registry's `.proto` text). The format of each topic is the type of its subject's registered
    schema, looked up once per subject; values are dicts (Avro, JSON Schema) or messages (Protobuf).
    """

    def __init__(self, record_cls: Any, schema_properties: Mapping[str, Any] | None) -> None:
        super().__init__(bytes, BYTES, None, "BYTES")
        properties = dict(schema_properties or {})
        class_path = properties.pop(MESSAGE_CLASS_PROPERTY, None)
        if is_protobuf_class(record_cls):
            self._message_class: Any = record_cls
        elif class_path:
            self._message_class = import_message_class(
                str(class_path), f"schema property {MESSAGE_CLASS_PROPERTY!r}"
            )
        else:
            self._message_class = None
        self._factory = SchemaRegistrySchemaFactory(properties, rule_actions=self._rule_actions())
        self._schemas: dict[str, ExternalSchema] = {}  # by subject
        self._by_topic: dict[str, ExternalSchema] = {}
        self._lock = threading.Lock()
        self._pulsar_client: Any = None

    def _rule_actions(self) -> list[Any] | None:
        """Rule actions replacing the factory's (none here: the DLQ action publishes itself)."""
        return None

    @property
    def factory(self) -> SchemaRegistrySchemaFactory:
        return self._factory

    def attach_client(self, client: Any) -> None:
        """Called by pulsar-client on subscribe: the client a rule's DLQ copy is written with."""
        self._pulsar_client = raw_client(client)
        super().attach_client(self._pulsar_client)
        with self._lock:
            for schema in self._schemas.values():
                schema.attach_client(self._pulsar_client)

    def schema_for_topic(self, topic: str) -> ExternalSchema:
        """The external schema of `topic`, built from its subject's registered schema on first use.

        Looked up by topic name first (the per-message path), then by subject, so that partitions
        and topics sharing a subject share one schema and one registry lookup."""
        found = self._by_topic.get(topic)
        if found is not None:
            return found
        subject = topic_subject(self._factory, topic)
        with self._lock:
            found = self._schemas.get(subject)
        if found is None:
            made = schema_for(self._factory, registered_schema(self._factory, topic), self._message_class)
            if self._pulsar_client is not None:
                made.attach_client(self._pulsar_client)
            with self._lock:
                found = self._schemas.setdefault(subject, made)
            if found is not made:  # another thread won the race
                made.close()
        self._by_topic[topic] = found
        return found

    def decode_message(self, msg: Any, *, trust_rule_properties: bool = True) -> Any:
        """Called by `msg.value()`: the decoded value, or `Rejected` when the message is bad.

        A registry outage (`RegistryUnavailableError`) and a topic whose subject has no registered
        schema (`ConfigError`) raise instead: the runtime redelivers the message until the registry
        is back or the configuration is fixed, rather than dead-letter every message.
        """
        # A DLQ copy is read with the schema of the topic it failed on, as ExternalSchema does.
        failed_on = msg.properties().get(RULE_TOPIC) if trust_rule_properties else None
        try:
            return self.schema_for_topic(failed_on or msg.topic_name()).decode_message(
                msg, trust_rule_properties=trust_rule_properties
            )
        except (RegistryUnavailableError, ConfigError):
            raise
        except ExternalSchemaError as error:
            return Rejected(error, msg)

    def decode(self, data: bytes) -> Any:
        raise ExternalSchemaError(
            "FunctionSchema decodes whole messages (msg.value()), which carry the topic and the schema id"
        )

    def encode(self, obj: Any) -> bytes:
        raise EncodeError(
            "FunctionSchema is an input schema; publish outputs with ExternalFunction.publish(...), which "
            "sets the __schema_id property"
        )

    def close(self) -> None:
        with self._lock:
            schemas, self._schemas, self._by_topic = list(self._schemas.values()), {}, {}
        for schema in schemas:
            schema.close()
        self._factory.close()

    def __str__(self) -> str:
        return f"FunctionSchema({self._factory.config.registry_url})"
