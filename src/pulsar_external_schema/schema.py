"""`ExternalSchema`: a `pulsar.schema.Schema` whose schemas live in a Confluent-compatible registry.

The Python counterpart of PIP-420's external schema. Serialization, registry lookups, caching
and (later) data-contract rules are confluent-kafka's own serializers and deserializers; this
module only decides where the schema id travels:

* metadata mode (default): the serializer's schema id is captured instead of being prefixed, and
  returned as `EncodeData.schema_id`; producers put it in the `__schema_id` property
  (see `schema_id.py`), consumers read it back from there.
* prefix mode: the Confluent wire format (magic byte + id inside the payload), as on Kafka.

Decoding accepts both, metadata first, so data bridged from Kafka reads the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple, overload

import _pulsar
import pulsar
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from . import schema_id as ids
from .config import ExternalSchemaConfig
from .errors import (
    DecodeError,
    EncodeError,
    ExternalSchemaError,
    MissingSchemaIdError,
    RegistryUnavailableError,
    SchemaIdError,
    UnknownSchemaIdError,
)
from .subjects import SubjectNameStrategy

try:  # confluent-kafka talks to the registry through httpx2 when installed, else httpx
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the environment
    import httpx as _http  # type: ignore[no-redef]

Serializer = Callable[[Any, SerializationContext], bytes | None]
Deserializer = Callable[[bytes | None, SerializationContext], Any]

# Where our schema.id.serializer hooks leave the Confluent id during one serialization call.
_ID_HEADER = "__pes_confluent_schema_id"


class EncodeData(NamedTuple):
    """What `ExternalSchema.encode(topic, value)` returns, as PIP-420's `EncodeData`.

    `schema_id` is the schema-level id (a Confluent id, or a key/value id), without the PIP-420
    magic byte that the producer adds in the message metadata; None in prefix mode, where the
    id is inside `data`.
    """

    data: bytes
    schema_id: bytes | None


class KeyValue(NamedTuple):
    """A key/value message for `KeyValueExternalSchema`."""

    key: Any
    value: Any


def capture_schema_id(payload: bytes, ctx: SerializationContext | None, schema_id: Any) -> bytes:
    """`schema.id.serializer` for metadata mode: keep the payload bare, hand the id to the caller."""
    assert ctx is not None and isinstance(ctx.headers, dict)
    ctx.headers[_ID_HEADER] = schema_id.id_to_bytes()
    return payload


def prefix_and_capture_schema_id(payload: bytes, ctx: SerializationContext | None, schema_id: Any) -> bytes:
    """`schema.id.serializer` for prefix mode: Confluent framing, and the id for the caller."""
    id_bytes: bytes = schema_id.id_to_bytes()
    if ctx is not None and isinstance(ctx.headers, dict):
        ctx.headers[_ID_HEADER] = id_bytes
    return id_bytes + payload


class SharedRegistryClient:
    """One `SchemaRegistryClient` (and its caches) shared by a factory and the schemas it made.

    Closed when the last holder releases it, so `schema.close()` never pulls the client from
    under another schema.
    """

    def __init__(self, config: ExternalSchemaConfig) -> None:
        self.client = SchemaRegistryClient(dict(config.registry))
        self.url = config.registry_url
        self._config = config
        self._serialized_client: SchemaRegistryClient | None = None
        self._holders = 0
        self._lock = threading.Lock()

    @property
    def serialized_client(self) -> SchemaRegistryClient:
        """A second client for Protobuf deserializers, which fetch schemas in the `serialized`
        format: confluent-kafka's cache keys schemas by id only, so sharing a cache with a
        serializer that registered `.proto` text would hand them the text."""
        with self._lock:
            if self._serialized_client is None:
                self._serialized_client = SchemaRegistryClient(dict(self._config.registry))
            return self._serialized_client

    def acquire(self) -> SchemaRegistryClient:
        with self._lock:
            self._holders += 1
        return self.client

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            last = self._holders == 0
        if last:
            self.client.close()
            if self._serialized_client is not None:
                self._serialized_client.close()


class _Part:
    """The serializer, deserializer and subject naming of one field (the value, or a key)."""

    def __init__(
        self,
        serializer: Serializer,
        deserializer: Deserializer,
        field: MessageField,
        strategy: SubjectNameStrategy,
        schema_type: str,
        registry_url: str,
    ) -> None:
        self.serializer = serializer
        self.deserializer = deserializer
        self.field = field
        self.strategy = strategy
        self.schema_type = schema_type
        self.registry_url = registry_url

    def subject(self, topic: str) -> str | None:
        try:
            return self.strategy(SerializationContext(topic, self.field), None)
        except ValueError:
            return None

    def encode(self, topic: str, value: Any) -> tuple[bytes, bytes]:
        """Serialize; returns (payload, Confluent id). The payload is prefixed in prefix mode."""
        captured: dict[str, bytes] = {}
        ctx = SerializationContext(topic, self.field, headers=captured)  # type: ignore[arg-type]
        try:
            payload = self.serializer(value, ctx)
        except ExternalSchemaError:
            raise
        except Exception as error:
            raise self._error(EncodeError, "could not serialize the value", topic, None, error) from error
        if payload is None:
            raise EncodeError(
                "a None value cannot be sent with an external schema",
                topic=topic,
                subject=self.subject(topic),
            )
        return payload, captured[_ID_HEADER]

    def decode(self, topic: str, data: bytes, id_bytes: bytes | None) -> Any:
        """Deserialize with the id from the metadata, or else from the payload prefix.

        confluent-kafka's deserializers read the id from the payload (and refuse payloads of 5
        bytes or fewer before any hook runs), so a metadata id is put back in front of the
        payload: the Confluent framing, rebuilt in one concatenation.
        """
        if id_bytes:
            try:
                ids.check_confluent_id(id_bytes)
            except SchemaIdError as error:
                raise SchemaIdError(error.reason, topic=topic, subject=self.subject(topic)) from None
            framed = id_bytes + data
        else:
            try:
                ids.check_confluent_id(data)
            except SchemaIdError:
                first = f"0x{data[0]:02x}" if data else "none: the payload is empty"
                raise MissingSchemaIdError(
                    f"the message has no {ids.SCHEMA_ID_PROPERTY} property and its payload does not "
                    f"start with a Confluent schema id (first byte {first}); "
                    "was it produced with an external schema?",
                    topic=topic,
                    subject=self.subject(topic),
                ) from None
            id_bytes = data[: 17 if data[0] == ids.CONFLUENT_GUID_MAGIC else 5]
            framed = data
        ctx = SerializationContext(topic, self.field)
        try:
            return self.deserializer(framed, ctx)
        except ExternalSchemaError:
            raise
        except Exception as error:
            raise self._error(
                DecodeError, f"could not decode {len(data)} bytes", topic, id_bytes, error
            ) from error

    def _error(
        self,
        kind: type[ExternalSchemaError],
        what: str,
        topic: str,
        id_bytes: bytes | None,
        error: Exception,
    ) -> ExternalSchemaError:
        """Turn a confluent-kafka, registry or codec error into one that names where it happened."""
        subject = self.subject(topic)
        schema_id = ids.describe(id_bytes) if id_bytes else None
        if isinstance(error, SchemaRegistryError):
            if error.http_status_code == 404:
                detail = f"the registry at {self.registry_url} answered: {error.error_message}"
                if error.error_code in (40401, 40402, 40403):  # subject, version or schema not found
                    what = "unknown schema" if id_bytes else "the schema is not registered under this subject"
                    return UnknownSchemaIdError(
                        f"{what}: {detail}", topic=topic, subject=subject, schema_id=schema_id
                    )
            if error.http_status_code in (-1, 408, 429) or error.http_status_code >= 500:
                return RegistryUnavailableError(
                    f"{what}: the registry at {self.registry_url} failed: {error}",
                    topic=topic,
                    subject=subject,
                    schema_id=schema_id,
                )
            return kind(
                f"{what}: the registry rejected the request: {error}",
                topic=topic,
                subject=subject,
                schema_id=schema_id,
            )
        if isinstance(error, _http.TransportError | ConnectionError | TimeoutError):
            return RegistryUnavailableError(
                f"{what}: cannot reach the registry at {self.registry_url}: {error or type(error).__name__}",
                topic=topic,
                subject=subject,
                schema_id=schema_id,
            )
        cause = str(error) or type(error).__name__
        return kind(
            f"{what} as {self.schema_type}: {cause}", topic=topic, subject=subject, schema_id=schema_id
        )


class ExternalSchema(pulsar.schema.Schema):  # type: ignore[misc]
    """A Pulsar schema backed by a schema registry; make one with `SchemaRegistrySchemaFactory`.

    Works with the stock pulsar-client: `client.subscribe(topic, sub, schema=schema)` (and
    readers, and `pulsar.asyncio`) decode `msg.value()` with the schema id from the message.
    Producing needs the topic and sets a message property, which `Producer.send(value)` cannot
    do: send through `create_producer(client, topic, schema)`, or use prefix mode with a schema
    bound to its topic (`schema.for_topic(topic)`).
    """

    is_key_value = False

    def __init__(
        self,
        part: _Part,
        config: ExternalSchemaConfig,
        registry: SharedRegistryClient,
        topic: str | None = None,
        make_part: Callable[[MessageField], _Part] | None = None,
    ) -> None:
        super().__init__(bytes, _pulsar.SchemaType.BYTES, None, "BYTES")
        self._part = part
        self._make_part = make_part
        self._config = config
        self._registry = registry
        self._registry.acquire()
        self._topic = topic
        self._closed = False

    @property
    def config(self) -> ExternalSchemaConfig:
        return self._config

    @property
    def schema_type(self) -> str:
        """AVRO, JSON or PROTOBUF."""
        return self._part.schema_type

    def subject(self, topic: str) -> str | None:
        """The registry subject of this schema's values on `topic`."""
        return self._part.subject(topic)

    def for_topic(self, topic: str) -> ExternalSchema:
        """A copy bound to `topic`, so that the one-argument `encode(value)` knows its subject.

        The copy shares the serdes and the registry client, and holds the client like any schema:
        close it too."""
        return ExternalSchema(self._part, self._config, self._registry, topic, self._make_part)

    @overload
    def encode(self, topic: str, value: Any, /) -> EncodeData: ...
    @overload
    def encode(self, value: Any, /) -> bytes: ...
    def encode(self, topic_or_value: Any, *value: Any) -> EncodeData | bytes:
        """`encode(topic, value) -> EncodeData` (PIP-420); `encode(value) -> bytes` is what
        pulsar-client's own `Producer.send` calls, and only works in prefix mode on a bound schema."""
        if value:
            if len(value) != 1 or not isinstance(topic_or_value, str):
                raise TypeError("use encode(topic, value)")
            return self.encode_for(topic_or_value, value[0])
        return self._encode_without_topic(topic_or_value)

    def encode_for(self, topic: str, value: Any) -> EncodeData:
        self._check_open()
        payload, id_bytes = self._part.encode(topic, value)
        if self._config.schema_id_location == "prefix":
            return EncodeData(payload, None)
        return EncodeData(payload, id_bytes)

    def _encode_without_topic(self, value: Any) -> bytes:
        if self._config.schema_id_location == "metadata":
            raise EncodeError(
                "pulsar-client's Producer.send() cannot set the __schema_id property that an external "
                "schema in metadata mode needs; send through "
                "pulsar_external_schema.create_producer(client, topic, schema), or configure "
                "schema.id.location=prefix and use schema.for_topic(topic)"
            )
        if self._topic is None:
            raise EncodeError(
                "encode(value) without a topic cannot name the subject; use schema.for_topic(topic) "
                "or create_producer(client, topic, schema)"
            )
        return self.encode_for(self._topic, value).data

    def decode(self, topic: str, data: bytes, schema_id: bytes | None = None) -> Any:
        """Decode `data` of `topic`; `schema_id` with or without its PIP-420 magic byte, or None
        for a payload in the Confluent prefix form."""
        self._check_open()
        id_bytes = self._value_id(topic, schema_id)
        return self._part.decode(topic, data, id_bytes)

    def decode_message(self, msg: Any) -> Any:
        """Called by pulsar-client's `Message.value()`: schema id from the message properties."""
        topic = msg.topic_name()
        raw = msg.properties().get(ids.SCHEMA_ID_PROPERTY)
        try:
            schema_id = ids.parse_hex(raw) if raw is not None else None
        except SchemaIdError as error:
            raise SchemaIdError(
                f"message {msg.message_id()}: {error.reason}", topic=topic, subject=self.subject(topic)
            ) from None
        return self.decode(topic, msg.data(), schema_id)

    def _value_id(self, topic: str, schema_id: bytes | None) -> bytes | None:
        if not schema_id:
            return None
        id_bytes, key_value = ids.from_metadata(schema_id)
        if key_value:
            raise SchemaIdError(
                "the message carries a key/value schema id (0xfe) but this is a value schema; "
                "consume it with factory.key_value(...)",
                topic=topic,
                subject=self.subject(topic),
                schema_id=schema_id.hex(),
            )
        return id_bytes

    def _check_open(self) -> None:
        if self._closed:
            raise ExternalSchemaError("this schema was closed")

    def close(self) -> None:
        """Release the registry client (closed once no schema of its factory uses it)."""
        if not self._closed:
            self._closed = True
            self._registry.release()

    def __str__(self) -> str:
        return f"ExternalSchema({self.schema_type}, {self._config.schema_id_location}, {self._registry.url})"


class KeyValueExternalSchema(ExternalSchema):
    """Key and value each with their own external schema, Pulsar's INLINE key/value layout.

    Payload: int32 BE key length + key bytes + int32 BE value length + value bytes (-1 for None),
    as Pulsar's `KeyValue.encode`; schema id: the key/value id of PIP-420 (`0xFE` in metadata).
    """

    is_key_value = True

    def __init__(
        self,
        key_part: _Part,
        value_part: _Part,
        config: ExternalSchemaConfig,
        registry: SharedRegistryClient,
        topic: str | None = None,
    ) -> None:
        super().__init__(value_part, config, registry, topic)
        self._key_part = key_part

    def for_topic(self, topic: str) -> KeyValueExternalSchema:
        return KeyValueExternalSchema(self._key_part, self._part, self._config, self._registry, topic)

    @property
    def schema_type(self) -> str:
        return f"KEY_VALUE<{self._key_part.schema_type},{self._part.schema_type}>"

    def key_subject(self, topic: str) -> str | None:
        return self._key_part.subject(topic)

    def encode_for(self, topic: str, value: Any) -> EncodeData:
        self._check_open()
        key, val = value  # a KeyValue or any (key, value) pair
        key_bytes, key_id = self._key_part.encode(topic, key) if key is not None else (None, b"")
        value_bytes, value_id = self._part.encode(topic, val) if val is not None else (None, b"")
        payload = ids.join_length_prefixed_pair(key_bytes, value_bytes)
        if self._config.schema_id_location == "prefix":
            return EncodeData(payload, None)
        return EncodeData(payload, ids.encode_key_value_ids(key_id, value_id))

    def decode(self, topic: str, data: bytes, schema_id: bytes | None = None) -> KeyValue:
        self._check_open()
        key_id: bytes | None = None
        value_id: bytes | None = None
        if schema_id:
            if schema_id[0] == ids.VALUE_MAGIC:
                raise SchemaIdError(
                    "the message carries a value schema id but this is a key/value schema",
                    topic=topic,
                    subject=self.subject(topic),
                    schema_id=schema_id.hex(),
                )
            raw, _ = ids.from_metadata(schema_id)
            try:
                key_id, value_id = ids.decode_key_value_ids(raw)
            except SchemaIdError as error:
                raise SchemaIdError(error.reason, topic=topic, subject=self.subject(topic)) from None
        try:
            key_bytes, value_bytes = ids.split_length_prefixed_pair(data, allow_null=True)
        except ValueError as error:
            raise DecodeError(
                f"key/value payload: {error}", topic=topic, subject=self.subject(topic)
            ) from None
        key = self._key_part.decode(topic, key_bytes, key_id or None) if key_bytes is not None else None
        val = self._part.decode(topic, value_bytes, value_id or None) if value_bytes is not None else None
        return KeyValue(key, val)

    def __str__(self) -> str:
        location = self._config.schema_id_location
        return f"KeyValueExternalSchema({self.schema_type}, {location}, {self._registry.url})"
