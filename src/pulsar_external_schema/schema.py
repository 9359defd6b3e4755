"""`ExternalSchema`: a `pulsar.schema.Schema` whose schemas live in a Confluent-compatible registry.

The Python counterpart of PIP-420's external schema, and the adapter between pulsar-client's
`Schema` interface and the package's per-message path. Serialization, registry lookups, caching
and data-contract rules are one part's business (`codec/bridge.py`: the compiled codec, and
confluent-kafka's serdes behind it, `codec/serdes.py`); this module decides where the schema id
travels:

* metadata mode (default): the serializer's schema id is captured instead of being prefixed, and
  returned as `EncodeData.schema_id`; producers put it in the `__schema_id` property
  (see `schema_id.py`), consumers read it back from there.
* prefix mode: the Confluent wire format (magic byte + id inside the payload), as on Kafka.

Decoding accepts both, metadata first, so data bridged from Kafka reads the same way. A key/value
schema splits Pulsar's INLINE key/value payload and hands each half to its part.

One corridor a direction, whoever calls (a producer, pulsar-client's `Message.value()`, Spark,
Functions, the console): `encode(topic, value)` and `encode_for` end in `_encode_planned`, and
`decode`, `decode_message` and `decode_batch` in `_decode`, which take the part's compiled plan
(`codec/part.py`), else confluent-kafka's serdes. With the native extension, the plan's everyday
message is one native call before them (native/src/direct.rs): the instance's `encode` and
`encode_for` are its `Encoder`, which takes the part's kept `DirectWriter`, and `_decode` tries
the part's kept `DirectReader` first (without the extension, the kept reader is the plan's own
Python read); a message these do not take goes the long way here, which decides the same with or
without the extension.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, overload

import pulsar
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField

from . import _confluent, _native
from . import schema_id as ids
from ._pulsar_client import BYTES, raw_client
from .codec import FALLBACK, Columnar, ColumnarWrite
from .codec.bridge import FieldSerde
from .config import ExternalSchemaConfig
from .deadletter import RULE_NAME, RULE_PREFIX, RULE_TOPIC
from .errors import ConfigError, DecodeError, EncodeError, ExternalSchemaError, SchemaIdError
from .protobuf_text import new_client
from .rules.context import MessageContext

__all__ = [
    "EncodeData",
    "ExternalSchema",
    "KeyValue",
    "KeyValueExternalSchema",
    "SharedRegistryClient",
    "check_external_schema",
]


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


class SharedRegistryClient:
    """The registry clients (and their caches) shared by a factory and the schemas it made.

    Two confluent-kafka clients, because its cache keys a schema by id and keeps whatever filled
    it first: `client` registers and looks up the producers' local schemas (and caches them as
    given, without the rule set the registry holds for them); `reader` only caches schemas as the
    registry returns them, with their metadata and rule sets, for deserializers and for the
    serializers' rule lookup (Protobuf in the `serialized` format). Closed when the last holder
    releases them, so `schema.close()` never pulls a client from under another schema.
    """

    def __init__(self, config: ExternalSchemaConfig, on_close: Callable[[], None] | None = None) -> None:
        self.client = new_client(config.registry)
        in_memory = config.registry_url.startswith("mock://")  # one store: nothing to keep apart
        self.reader = self.client if in_memory else new_client(config.registry)
        self._on_close = on_close
        self.url = config.registry_url
        self._holders = 0
        self._lock = threading.Lock()

    def acquire(self) -> SchemaRegistryClient:
        with self._lock:
            self._holders += 1
        return self.client

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            last = self._holders == 0
        if last:
            if self._on_close is not None:
                self._on_close()
            self.client.close()
            if self.reader is not self.client:
                self.reader.close()


class ExternalSchema(pulsar.schema.Schema):  # type: ignore[misc]
    """A Pulsar schema backed by a schema registry; make one with `SchemaRegistrySchemaFactory`.

    Works with the stock pulsar-client: `client.subscribe(topic, sub, schema=schema)` (and
    readers, and `pulsar.asyncio`) decode `msg.value()` with the schema id from the message.
    Producing needs the topic and sets a message property, which `Producer.send(value)` cannot
    do: send through `create_producer(client, topic, schema)`, or use prefix mode with a schema
    bound to its topic (`schema.for_topic(topic)`).

    Data contracts: the rule set of the writer (or reader) schema runs on every encode and decode.
    A rule with the DLQ action writes to a Pulsar topic through the client this schema was last
    used with (`create_producer`, `subscribe`, `create_reader` hand it over), else the factory's.
    """

    is_key_value = False

    def __init__(
        self,
        part: FieldSerde,
        config: ExternalSchemaConfig,
        registry: SharedRegistryClient,
        topic: str | None = None,
        make_part: Callable[[MessageField], FieldSerde] | None = None,
    ) -> None:
        super().__init__(bytes, BYTES, None, "BYTES")
        self._part = part
        self._make_part = make_part
        self._config = config
        self._registry = registry
        self._registry.acquire()
        self._topic = topic
        self._prefix = config.schema_id_location == "prefix"
        self._closed = False
        self._pulsar_client: Any = None
        self._read_as: str | None = None
        self._keep_encoders()

    def _keep_encoders(self) -> None:
        """With the native extension, this instance's `encode` and `encode_for` are its `Encoder`s
        (native/src/direct.rs): the everyday message, `(topic, value)`, is the part's kept writer
        in one native call, and every other call is this class's method. They hold this schema,
        which holds them: `close` drops them, else the cycle collector frees the lot. Without
        the extension, and for a key/value schema (which encodes two parts), the class's methods
        serve."""
        codec = self._part.codec
        native = _native.extension()
        if codec is None or native is None or type(self) is not ExternalSchema:
            return
        for name, other in (("encode", ExternalSchema.encode), ("encode_for", ExternalSchema.encode_for)):
            self.__dict__[name] = native.Encoder(
                self,
                writers=codec.writers,
                encode_data=EncodeData,
                with_id=not self._prefix,
                with_context=name == "encode_for",
                planned=ExternalSchema._encode_planned,
                other=other,
            )

    def attach_client(self, client: Any) -> None:
        """Called by pulsar-client when it subscribes or creates a reader with this schema (and by
        `create_producer`): the client a DLQ copy goes through."""
        self._pulsar_client = raw_client(client)
        super().attach_client(self._pulsar_client)

    @property
    def pulsar_client(self) -> Any:
        """The `_pulsar.Client` this schema was last used with (None before any)."""
        return self._pulsar_client

    def message_context(
        self, topic: str, properties: dict[str, str] | None = None, **fields: Any
    ) -> MessageContext:
        """What the rules see of one message (its properties, key, ...), with this schema's client."""
        return MessageContext(topic, properties, pulsar_client=self._pulsar_client, **fields)

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
        copy = ExternalSchema(self._part, self._config, self._registry, topic, self._make_part)
        copy._pulsar_client = self._pulsar_client
        return copy

    def reading_as(self, topic: str) -> ExternalSchema:
        """A copy (bound to `topic`, as `for_topic`) whose `decode_message` decodes every message
        as if it were on `topic`: with its subject, its schema ids and its rules.

        For topics that hold another topic's messages with their original schema ids: the
        `validate` job's `--valid` output, a DLQ topic, a mirror. Close the copy too."""
        copy = self.for_topic(topic)
        copy._read_as = topic
        return copy

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

    def encode_for(self, topic: str, value: Any, context: MessageContext | None = None) -> EncodeData:
        """`encode(topic, value)`; `context` (see `message_context`) gives rules the message's
        properties and key, which a DLQ copy keeps."""
        return self._encode_planned(topic, value, context)

    def _encode_planned(self, topic: str, value: Any, context: MessageContext | None) -> EncodeData:
        """`encode_for` past the kept writer: the compiled plan, else the reference path."""
        self._check_open()
        compiled = self._part.encode_compiled(topic, value, context)
        if compiled is FALLBACK:
            compiled = self._part.encode_reference(topic, value, _or_new(context, self, topic))
        elif context is None:
            self._part.learn_writer(topic)  # the `Encoder` takes the next message of `topic`
        payload, id_bytes = compiled
        return tuple.__new__(EncodeData, (payload, None if self._prefix else id_bytes))

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

    def decode(
        self,
        topic: str,
        data: bytes,
        schema_id: bytes | None = None,
        context: MessageContext | None = None,
    ) -> Any:
        """Decode `data` of `topic`; `schema_id` with or without its PIP-420 magic byte, or None
        for a payload in the Confluent prefix form. `context`: the message's properties for the
        rules (a `__rule.name` property skips that rule, as for a replayed DLQ copy)."""
        return self._decode(topic, data, schema_id, context, None, None, None)

    def _decode(
        self,
        topic: str,
        data: bytes,
        schema_id: bytes | None,
        context: MessageContext | None,
        msg: Any,
        properties: Mapping[str, str] | None,
        raw: str | None,
    ) -> Any:
        """The one way in for a message to decode: `decode`, `decode_message` and `decode_batch`
        parse their inputs and call this. The direct reader (the extension's, or the plan's own
        read) kept for the message's topic and id as it came (bytes, or the `__schema_id`
        property `raw`), else the compiled plan (which keeps one for the next message; a payload
        the kept reader did not take comes here too, and is worded here), else the reference
        path: confluent-kafka's deserializer with the plan's rules, given the message's context.
        A message that needs its context before (a `context`, a `__rule.name` property) takes
        the reference path at once.

        `msg` (pulsar-client's message, with its `properties`): its schema id is parsed and its
        context built only where a step needs them (`_message_id`, `_message_context`)."""
        plain = context is None and (properties is None or RULE_NAME not in properties)
        kept = raw if msg is not None else schema_id if type(schema_id) is bytes else None
        if plain and kept is not None and not self._closed:
            value = self._part.direct_value((topic, kept), data)  # the usual message
            if value is not FALLBACK:
                return value
        self._check_open()
        if msg is not None:
            schema_id = self._message_id(topic, msg, properties or {}, raw)
        _check_decode_arguments(topic, data, schema_id)
        id_bytes = self._part.metadata_id(topic, schema_id)
        if plain and id_bytes and type(schema_id) is bytes:
            forms: tuple[bytes | str, ...] = (schema_id,) if raw is None else (schema_id, raw)
            value = self._part.decode_compiled(topic, data, id_bytes, kept_as=forms)
            if value is not FALLBACK:
                return value
        if msg is not None:
            context = self._message_context(topic, msg, properties or {})
        return self._part.decode(topic, data, id_bytes, _or_new(context, self, topic))

    def _message_id(
        self, topic: str, msg: Any, properties: Mapping[str, str], raw: str | None
    ) -> bytes | None:
        """The schema id of pulsar-client's message `msg`: its `__schema_id` property (`raw`, or
        another spelling of it), parsed; a malformed one is an error naming the message."""
        try:
            if raw is None:
                raw = ids.property_form(properties)
            return ids.parse_hex(raw) if raw is not None else None
        except SchemaIdError as error:
            raise SchemaIdError(
                f"message {msg.message_id()}: {error.reason}", topic=topic, subject=self.subject(topic)
            ) from None

    def _message_context(self, topic: str, msg: Any, properties: Mapping[str, str]) -> MessageContext:
        """What the rules see of pulsar-client's message `msg`."""
        return self.message_context(
            topic,
            dict(properties),
            original_data=msg.data(),
            partition_key=msg.partition_key() or None,
            ordering_key=msg.ordering_key() or None,
            event_timestamp=msg.event_timestamp() or None,
            message_id=msg.message_id(),
        )

    def decode_batch(
        self, topic: str, messages: Iterable[tuple[bytes, bytes | None, Mapping[str, str] | None]]
    ) -> list[Any]:
        """Decode many messages of `topic`: (data, schema id, properties) each, as `decode` does
        with a context of those properties.

        Returns one entry per message, in order: its value, or the `ExternalSchemaError` that
        decoding it raised (one message's fault raises nothing)."""
        self._check_open()
        results: list[Any] = []
        for data, schema_id, properties in messages:
            try:
                context = self.message_context(topic, dict(properties)) if properties else None
                results.append(self._decode(topic, data, schema_id, context, None, None, None))
            except ExternalSchemaError as error:
                results.append(error)
        return results

    def read_into(self, schema_id: int, subject: str | None, version: int | None) -> None:
        """Decode every message into the registered schema `schema_id` (with `subject` and
        `version`: that version, its rules included), whatever is latest when a message comes:
        the Spark source's executors read into the version the driver fixed its columns from."""
        self._check_open()
        _confluent.pin_schema_id(self._part.deserializer, schema_id, subject, version)

    def columnar(self, topic: str, schema_id: int) -> Columnar | None:
        """How a columnar decoder (the Spark source's native reader) reads this schema's values of
        `topic` written with the Confluent numeric id `schema_id` into the values `decode` gives
        (`codec.plans.Columnar`); None where it cannot: those messages take `decode`."""
        codec = self._part.codec
        if codec is None or self.is_key_value:
            return None
        self._check_open()
        # a Protobuf id names a message too: the plan of the file's first one, which a decoder
        # holds the payloads' own indexes to (`Columnar.references`)
        indexes = _confluent.message_indexes([0]) if self.schema_type == "PROTOBUF" else b""
        return codec.columnar(topic, ids.confluent_id(schema_id, indexes))

    def columnar_writer(self, topic: str) -> ColumnarWrite | None:
        """How a columnar encoder (`arrow.write_table`'s native one) writes this schema's values of
        `topic` into the payloads `encode` gives (`codec.plans.ColumnarWrite`): once a value of
        the topic has been encoded (its plan learnt), where the plan's rules are conditions in the
        everyday CEL subset (or none). None: values take `encode`."""
        codec = self._part.codec
        if codec is None or self.is_key_value:
            return None
        self._check_open()
        return codec.columnar_writer(topic)

    def decode_message(
        self, msg: Any, *, trust_rule_properties: bool = True, properties: Mapping[str, str] | None = None
    ) -> Any:
        """Called by pulsar-client's `Message.value()`: schema id from the message properties.

        A DLQ copy (a `__rule.topic` property) is decoded with the subject of the topic it failed on,
        and the rule its `__rule.name` names is skipped; a schema made by `reading_as(topic)`
        decodes every message with the subject of that topic. A validator must not let a producer choose
        that: with `trust_rule_properties=False` the `__rule.*` properties are ignored.
        `properties`: `msg.properties()`, where the caller has them already (each call builds a
        dict from the C++ message).
        """
        if properties is None:
            properties = msg.properties()
        if not trust_rule_properties and any(key.startswith(RULE_PREFIX) for key in properties):
            properties = {k: v for k, v in properties.items() if not k.startswith(RULE_PREFIX)}
        topic = self._read_as or properties.get(RULE_TOPIC) or msg.topic_name()
        # the usual message's id as it came: its kept reader is found past the property's parsing
        return self._decode(
            topic, msg.data(), None, None, msg, properties, properties.get(ids.SCHEMA_ID_PROPERTY)
        )

    def _check_open(self) -> None:
        if self._closed:
            raise ExternalSchemaError("this schema was closed")

    def close(self) -> None:
        """Release the registry client (closed once no schema of its factory uses it)."""
        if not self._closed:
            self._closed = True
            for name in ("encode", "encode_for"):  # the class's methods say it is closed
                native = self.__dict__.pop(name, None)
                if native is not None:
                    native.close()  # and so does one a caller holds
            self._registry.release()

    def __str__(self) -> str:
        return f"ExternalSchema({self.schema_type}, {self._config.schema_id_location}, {self._registry.url})"


def check_external_schema(schema: object, kwargs: Mapping[str, Any], caller: str) -> None:
    """What `create_producer` and `subscribe` check of their arguments, with the same words."""
    if not isinstance(schema, ExternalSchema):
        raise ConfigError(
            f"{caller} needs an ExternalSchema (from SchemaRegistrySchemaFactory), not "
            f"{type(schema).__name__}"
        )
    if "schema" in kwargs:
        raise TypeError(f"pass the ExternalSchema to {caller} as its schema argument, not as schema=")


class KeyValueExternalSchema(ExternalSchema):
    """Key and value each with their own external schema, Pulsar's INLINE key/value layout.

    Payload: int32 BE key length + key bytes + int32 BE value length + value bytes (-1 for None),
    as Pulsar's `KeyValue.encode`; schema id: the key/value id of PIP-420 (`0xFE` in metadata).
    """

    is_key_value = True

    def __init__(
        self,
        key_part: FieldSerde,
        value_part: FieldSerde,
        config: ExternalSchemaConfig,
        registry: SharedRegistryClient,
        topic: str | None = None,
    ) -> None:
        super().__init__(value_part, config, registry, topic)
        self._key_part = key_part

    def for_topic(self, topic: str) -> KeyValueExternalSchema:
        copy = KeyValueExternalSchema(self._key_part, self._part, self._config, self._registry, topic)
        copy._pulsar_client = self._pulsar_client
        return copy

    @property
    def schema_type(self) -> str:
        return f"KEY_VALUE<{self._key_part.schema_type},{self._part.schema_type}>"

    def key_subject(self, topic: str) -> str | None:
        return self._key_part.subject(topic)

    def encode_for(self, topic: str, value: Any, context: MessageContext | None = None) -> EncodeData:
        self._check_open()
        key, val = value  # a KeyValue or any (key, value) pair
        context = _or_new(context, self, topic)
        key_bytes, key_id = (None, b"") if key is None else self._key_part.encode(topic, key, context.copy())
        value_bytes, value_id = (None, b"") if val is None else self._part.encode(topic, val, context)
        payload = ids.join_length_prefixed_pair(key_bytes, value_bytes)
        if self._config.schema_id_location == "prefix":
            return EncodeData(payload, None)
        return EncodeData(payload, ids.encode_key_value_ids(key_id, value_id))

    def _decode(
        self,
        topic: str,
        data: bytes,
        schema_id: bytes | None,
        context: MessageContext | None,
        msg: Any,
        properties: Mapping[str, str] | None,
        raw: str | None,
    ) -> KeyValue:
        """The door of a key/value message: its two parts, each on its part's reference path."""
        self._check_open()
        if msg is not None:
            schema_id = self._message_id(topic, msg, properties or {}, raw)
            context = self._message_context(topic, msg, properties or {})
        _check_decode_arguments(topic, data, schema_id)
        context = _or_new(context, self, topic, original_data=data)
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
            pair, _ = ids.from_metadata(schema_id)
            try:
                key_id, value_id = ids.decode_key_value_ids(pair)
            except SchemaIdError as error:
                raise SchemaIdError(error.reason, topic=topic, subject=self.subject(topic)) from None
        try:
            key_bytes, value_bytes = ids.split_length_prefixed_pair(data, allow_null=True)
        except ValueError as error:
            raise DecodeError(
                f"key/value payload: {error}", topic=topic, subject=self.subject(topic)
            ) from None
        key = (
            self._key_part.decode(topic, key_bytes, key_id or None, context.copy())
            if key_bytes is not None
            else None
        )
        val = (
            None if value_bytes is None else self._part.decode(topic, value_bytes, value_id or None, context)
        )
        return KeyValue(key, val)

    def __str__(self) -> str:
        location = self._config.schema_id_location
        return f"KeyValueExternalSchema({self.schema_type}, {location}, {self._registry.url})"


def _or_new(
    context: MessageContext | None, schema: ExternalSchema, topic: str, **fields: Any
) -> MessageContext:
    """The caller's context (an empty dict of properties is still one), or a new one."""
    return context if context is not None else schema.message_context(topic, **fields)


def _check_decode_arguments(topic: str, data: Any, schema_id: Any) -> None:
    """`decode`'s arguments of the wrong type, as an error that says which (not an AttributeError
    from deep inside); only on the way that reports errors, so the usual message pays nothing."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DecodeError(f"decode() takes the payload as bytes, not {type(data).__name__}", topic=topic)
    if schema_id is not None and not isinstance(schema_id, bytes | bytearray):
        raise SchemaIdError(
            "decode() takes the schema id as bytes (EncodeData.schema_id, or "
            f"bytes.fromhex(msg.properties()['__schema_id'])), not {type(schema_id).__name__}",
            topic=topic,
        )
