"""`ExternalSchema`: a `pulsar.schema.Schema` whose schemas live in a Confluent-compatible registry.

The Python counterpart of PIP-420's external schema. Serialization, registry lookups, caching
and data-contract rules are confluent-kafka's own serializers and deserializers (see
`rules/serdes.py`); this module decides where the schema id travels:

* metadata mode (default): the serializer's schema id is captured instead of being prefixed, and
  returned as `EncodeData.schema_id`; producers put it in the `__schema_id` property
  (see `schema_id.py`), consumers read it back from there.
* prefix mode: the Confluent wire format (magic byte + id inside the payload), as on Kafka.

Decoding accepts both, metadata first, so data bridged from Kafka reads the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from time import monotonic
from typing import Any, NamedTuple, overload

import pulsar
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from . import _confluent
from . import schema_id as ids
from ._pulsar_client import BYTES, raw_client
from .codec import (
    FALLBACK,
    PLAN_CACHE_SIZE,
    Columnar,
    ForeignSchema,
    LimitExceeded,
    PartCodec,
    PayloadError,
    recursion_error,
)
from .codec import json as json_codec
from .config import ExternalSchemaConfig
from .deadletter import RULE_NAME, RULE_PREFIX, RULE_TOPIC
from .errors import (
    ConfigError,
    DeadLetteredError,
    DecodeError,
    DecodeLimitError,
    EncodeError,
    ExternalSchemaError,
    ForeignSchemaIdError,
    MissingSchemaIdError,
    RuleViolationError,
    SchemaIdError,
    ValueOutsideSchemaError,
)
from .redaction import redact, scrub, sensitive_fields, sensitive_values
from .registry import failure_kind, new_client, registry_error
from .rules.context import MessageContext
from .subjects import SubjectNameStrategy

Serializer = Callable[[Any, SerializationContext], bytes | None]
Deserializer = Callable[[bytes | None, SerializationContext], Any]


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
    assert ctx is not None and isinstance(ctx.headers, MessageContext)
    ctx.headers.schema_id = schema_id.id_to_bytes()
    return payload


def prefix_and_capture_schema_id(payload: bytes, ctx: SerializationContext | None, schema_id: Any) -> bytes:
    """`schema.id.serializer` for prefix mode: Confluent framing, and the id for the caller."""
    id_bytes: bytes = schema_id.id_to_bytes()
    if ctx is not None and isinstance(ctx.headers, MessageContext):
        ctx.headers.schema_id = id_bytes
    return id_bytes + payload


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


class FieldSerde:
    """The serializer, deserializer and subject naming of one field (the value, or a key).

    `codec` is the per-message path (`codec/`); the serializer and deserializer are the
    reference path, which runs what the codec does not (a failing rule, a rule set that does not
    compile, malformed data) and resolves the writer of a topic's first message."""

    def __init__(
        self,
        serializer: Serializer,
        deserializer: Deserializer,
        field: MessageField,
        strategy: SubjectNameStrategy,
        schema_type: str,
        registry_url: str,
        codec: PartCodec | None = None,
    ) -> None:
        self.serializer = serializer
        self.deserializer = deserializer
        self.field = field
        self.strategy = strategy
        self.schema_type = schema_type
        self.registry_url = registry_url
        self.codec = codec

    def subject(self, topic: str) -> str | None:
        try:
            return self.strategy(SerializationContext(topic, self.field), None)
        except ValueError:
            return None

    def encode(self, topic: str, value: Any, context: MessageContext) -> tuple[bytes, bytes]:
        """Serialize; returns (payload, Confluent id). The payload is prefixed in prefix mode.

        `context` carries the message's properties and key to the rules (and a DLQ copy)."""
        compiled = self.encode_compiled(topic, value, context)
        return compiled if compiled is not None else self.encode_reference(topic, value, context)

    def encode_compiled(
        self, topic: str, value: Any, context: MessageContext | None
    ) -> tuple[bytes, bytes] | None:
        """The codec's (payload, id), or None where the reference path must run."""
        if self.codec is None or value is None:
            return None
        return self.codec.encode(topic, value, context)

    def encode_reference(self, topic: str, value: Any, context: MessageContext) -> tuple[bytes, bytes]:
        """confluent-kafka's serializer: the first message of a topic (the codec learns its plan
        from it), and every one the codec does not take."""
        ctx = SerializationContext(topic, self.field, headers=context)  # type: ignore[arg-type]
        try:
            payload = self.serializer(value, ctx)
            if self.codec is not None and payload is not None:
                self.codec.learn(topic, context)
        except ValueOutsideSchemaError as error:
            schema_id = ids.describe(context.schema_id) if context.schema_id else None
            raise error.placed(topic=topic, subject=self.subject(topic), schema_id=schema_id) from None
        except RuleViolationError as error:
            invalid = None if isinstance(error, DeadLetteredError) else self._outside_schema(value, context)
            if invalid is None:  # a dead-lettered value's copy is persisted: its error says so
                raise
            raise self._not_serialized(topic, value, context, invalid) from error
        except ExternalSchemaError:
            raise
        except Exception as error:
            raise self._not_serialized(topic, value, context, error) from error
        if payload is None:
            raise EncodeError(
                "a None value cannot be sent with an external schema",
                topic=topic,
                subject=self.subject(topic),
            )
        assert context.schema_id is not None
        return payload, context.schema_id

    def decode(self, topic: str, data: bytes, id_bytes: bytes | None, context: MessageContext) -> Any:
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
            payload = data
        else:
            try:
                id_bytes, payload = ids.split_prefixed(data)
            except SchemaIdError:
                first = f"0x{data[0]:02x}" if data else "none: the payload is empty"
                raise MissingSchemaIdError(
                    f"the message has no {ids.SCHEMA_ID_PROPERTY} (or {ids.VALUE_SCHEMA_ID_HEADER}) "
                    f"property and its payload does not start with a Confluent schema id (first byte "
                    f"{first}); was it produced with an external schema? A Java PIP-420 producer puts "
                    "the id in metadata field 32, which the Python client cannot read: have it set the "
                    f"{ids.SCHEMA_ID_PROPERTY} property too (docs/wire-format.md), or use prefix mode",
                    topic=topic,
                    subject=self.subject(topic),
                ) from None
        context.schema_id = id_bytes
        if context.original_data is None:
            context.original_data = data
        try:
            if self.codec is not None:
                value = self.codec.decode(topic, payload, id_bytes, context, prefixed=payload is not data)
                if value is not FALLBACK:
                    return value
            ctx = SerializationContext(topic, self.field, headers=context)  # type: ignore[arg-type]
            return self.deserializer(data if payload is not data else id_bytes + data, ctx)
        except ExternalSchemaError:
            raise
        except LimitExceeded as error:
            raise self._limit_error(error, len(data), topic, id_bytes) from None
        except ForeignSchema as error:
            raise self._foreign_id_error(error, topic, id_bytes) from None
        except Exception as error:
            cause = error.error if isinstance(error, PayloadError) else error
            if isinstance(cause, RecursionError):
                raise self._limit_error(recursion_error(), len(data), topic, id_bytes) from None
            raise self._error(
                DecodeError, f"could not decode {len(data)} bytes", topic, id_bytes, cause
            ) from cause

    def decode_compiled(self, topic: str, data: bytes, id_bytes: bytes) -> Any:
        """The codec's value of a message with a metadata id and no properties the rules read,
        where it has a plan already; else FALLBACK."""
        if self.codec is None:
            return FALLBACK
        try:
            return self.codec.decode(topic, data, id_bytes, None, build=False)
        except LimitExceeded as error:
            raise self._limit_error(error, len(data), topic, id_bytes) from None
        except ForeignSchema as error:
            raise self._foreign_id_error(error, topic, id_bytes) from None
        except PayloadError as failure:
            cause = failure.error  # the format library's own error: the same text as `decode` gives
            raise self._error(
                DecodeError, f"could not decode {len(data)} bytes", topic, id_bytes, cause
            ) from cause

    def _foreign_id_error(self, error: ForeignSchema, topic: str, id_bytes: bytes) -> ForeignSchemaIdError:
        return ForeignSchemaIdError(
            str(error), topic=topic, subject=self.subject(topic), schema_id=ids.describe(id_bytes)
        )

    def _limit_error(self, error: LimitExceeded, size: int, topic: str, id_bytes: bytes) -> DecodeLimitError:
        return DecodeLimitError(
            f"refused to decode {size} bytes: {error}",
            key=error.key,
            topic=topic,
            subject=self.subject(topic),
            schema_id=ids.describe(id_bytes),
        )

    def _not_serialized(self, topic: str, value: Any, context: MessageContext, error: Exception) -> Exception:
        values = self._sensitive_values(value, context)
        scrub(error, values)
        what = "could not serialize the value"
        return self._error(EncodeError, what, topic, context.schema_id, error, values)

    def _outside_schema(self, value: Any, context: MessageContext) -> Exception | None:
        """Why a JSON value a rule failed on is outside its writer schema (None: it is not, or
        the serializer does not validate). confluent-kafka's JSON serializer runs the rules
        before it validates, so a record missing a required field would otherwise fail on the
        first rule that reads it, in CEL's words (`Key not found in map`), not the schema's."""
        if self.schema_type != "JSON":
            return None
        schema = context.writer[1].schema if context.writer and context.writer[1] else None
        try:
            json_codec.writer(self.serializer, schema)(value)
        except Exception as error:
            return SerializationError(getattr(error, "message", None) or str(error))
        return None

    def _sensitive_values(self, value: Any, context: MessageContext) -> list[str]:
        """What `value` holds in fields its schema marks sensitive (`redaction.py`): the registered
        writer's tags and rules where the serializer resolved it, else the local schema's."""
        schema = context.writer[1].schema if context.writer and context.writer[1] else None
        if schema is None:
            schema = _confluent.local_schema(self.serializer)[0]
        return sensitive_values(value, sensitive_fields(schema))

    def _error(
        self,
        kind: type[ExternalSchemaError],
        what: str,
        topic: str,
        id_bytes: bytes | None,
        error: Exception,
        sensitive: list[str] | None = None,
    ) -> ExternalSchemaError:
        """Turn a confluent-kafka, registry or codec error into one that names where it happened."""
        subject = self.subject(topic)
        schema_id = ids.describe(id_bytes) if id_bytes else None
        if failure_kind(error) == "not found":
            what = "unknown schema" if id_bytes else "the schema is not registered under this subject"
        failed = registry_error(
            error, what, self.registry_url, topic=topic, subject=subject, schema_id=schema_id, rejected=kind
        )
        if failed is not None:
            return failed
        cause = redact(str(error), sensitive or ()) or type(error).__name__
        return kind(
            f"{what} as {self.schema_type}: {cause}", topic=topic, subject=subject, schema_id=schema_id
        )


#: A direct reader of `ExternalSchema._direct` and its expiry (0: never).
_Direct = tuple[Callable[[bytes], Any] | None, float]
#: `ExternalSchema._direct`'s answer for a (topic, id) it keeps nothing for.
_NO_DIRECT: tuple[None, float] = (None, 0.0)


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
        self._direct: dict[tuple[str, bytes | str], _Direct] = {}
        """(topic, metadata schema id) -> the codec's direct reader and its expiry (`decode`); also
        (topic, the id as a `__schema_id` value, as it came) for `decode_message`."""
        self._writers: dict[str, tuple[Callable[[Any], tuple[bytes, bytes] | None] | None, float]] = {}
        """topic -> the codec's direct writer and its expiry (`encode_for`)."""

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
        if context is None:
            # The usual message: the codec's writer of the topic, kept by `_learn_writer`. A
            # message it does not take goes the whole way below, which reports it.
            writer, expires = self._writers.get(topic, _NO_DIRECT)
            if writer is not None and (not expires or expires > monotonic()):
                written = writer(value)
                if written is not None:
                    # EncodeData(payload, id) without the NamedTuple's argument handling
                    return tuple.__new__(EncodeData, (written[0], None if self._prefix else written[1]))
        self._check_open()
        compiled = self._part.encode_compiled(topic, value, context)
        if compiled is None:
            compiled = self._part.encode_reference(topic, value, _or_new(context, self, topic))
        elif context is None:
            self._learn_writer(topic)
        payload, id_bytes = compiled
        return tuple.__new__(EncodeData, (payload, None if self._prefix else id_bytes))

    def _learn_writer(self, topic: str) -> None:
        """Keep the codec's writer of `topic` for `encode_for` (bounded as plans are)."""
        codec = self._part.codec
        if codec is None or self._closed:
            return
        if len(self._writers) >= PLAN_CACHE_SIZE:
            self._writers.clear()
        self._writers[topic] = codec.direct_writer(topic)

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
        if context is None and type(schema_id) is bytes:
            value = self._decode_compiled(topic, data, schema_id)
            if value is not FALLBACK:
                return value
        self._check_open()
        _check_decode_arguments(topic, data, schema_id)
        return self._part.decode(topic, data, self._value_id(topic, schema_id), _or_new(context, self, topic))

    def _decode_compiled(self, topic: str, data: bytes, schema_id: bytes, alias: str | None = None) -> Any:
        """The value of a message with a metadata id and no properties the rules read, from the
        compiled plan; FALLBACK where that plan does not take it (the caller goes the whole way,
        which reports what is wrong).

        The usual message is one lookup of the direct reader kept for (topic, id as it came),
        past the id's parsing and the plan lookup; the first message of a (topic, id) finds the
        plan through the part and keeps its direct reader. `alias`: the `__schema_id` property
        the id was parsed from, under which the reader is kept too (`decode_message`)."""
        value = self._direct_value((topic, schema_id), data)
        if value is FALLBACK:
            self._check_open()
            id_bytes = self._value_id(topic, schema_id)
            if not id_bytes:
                return FALLBACK
            value = self._part.decode_compiled(topic, data, id_bytes)
            if value is FALLBACK:
                return value
            self._learn_direct(topic, schema_id, id_bytes)
        if alias is not None:
            kept = self._direct.get((topic, schema_id))
            if kept is not None and kept[0] is not None:
                self._keep_direct((topic, alias), kept)
        return value

    def _direct_value(self, key: tuple[str, bytes | str], data: bytes) -> Any:
        """The value from the direct reader kept under `key`; FALLBACK when none is kept, it
        expired, or it does not take the payload (the long way says why)."""
        direct, expires = self._direct.get(key, _NO_DIRECT)
        if direct is None or (expires and expires <= monotonic()):
            return FALLBACK
        try:
            return direct(data)
        except Exception:
            return FALLBACK

    def _learn_direct(self, topic: str, schema_id: Any, id_bytes: bytes) -> None:
        """Keep the codec's direct reader of (topic, metadata id) for `decode`."""
        codec = self._part.codec
        if codec is None or not isinstance(schema_id, bytes):
            return
        key = (topic, schema_id)
        found = self._direct.get(key)
        if found is not None and (not found[1] or found[1] > monotonic()):
            return  # kept already (a message it did not take came this way)
        self._keep_direct(key, codec.direct(topic, id_bytes))

    def _keep_direct(self, key: tuple[str, bytes | str], entry: _Direct) -> None:
        """`_direct[key] = entry`, bounded as plans are; nothing once closed."""
        if self._closed:
            return
        if len(self._direct) >= PLAN_CACHE_SIZE:
            self._direct.clear()
        self._direct[key] = entry

    def decode_batch(
        self, topic: str, messages: Iterable[tuple[bytes, bytes | None, Mapping[str, str] | None]]
    ) -> list[Any]:
        """Decode many messages of `topic`: (data, schema id, properties) each, as for `decode`.

        Returns one entry per message, in order: its value, or the `ExternalSchemaError` that
        decoding it raised (one message's fault raises nothing). Consecutive messages with one
        schema id share one plan lookup; a message the compiled path does not take (a rule that
        fails, a replayed DLQ copy, a schema id seen for the first time) goes through `decode`.
        """
        self._check_open()
        results: list[Any] = []
        last: bytes | object | None = FALLBACK  # the schema id `read` was looked up for
        read: Callable[[bytes], Any] | None = None
        for data, schema_id, properties in messages:
            if schema_id != last:
                last, read = schema_id, self._compiled_reader(topic, schema_id)
            value = FALLBACK
            if read is not None and not (properties and RULE_NAME in properties):
                try:
                    value = read(data)
                except (PayloadError, LimitExceeded):
                    value = FALLBACK  # `decode` raises it as a DecodeError that names the message
            if value is FALLBACK:
                try:
                    context = self.message_context(topic, dict(properties) if properties else None)
                    value = self.decode(topic, data, schema_id, context)
                except ExternalSchemaError as error:
                    value = error
                last = FALLBACK  # a plan may have been built: look again for the next message
            results.append(value)
        return results

    def columnar(self, topic: str, schema_id: int) -> Columnar | None:
        """How a columnar decoder (the Spark source's native reader) reads this schema's values of
        `topic` written with the Confluent numeric id `schema_id` into the values `decode` gives
        (`codec.plans.Columnar`); None where it cannot: those messages take `decode`."""
        codec = self._part.codec
        if codec is None or self.is_key_value:
            return None
        self._check_open()
        return codec.columnar(topic, ids.confluent_id(schema_id))

    def _compiled_reader(self, topic: str, schema_id: bytes | None) -> Callable[[bytes], Any] | None:
        codec = self._part.codec
        if codec is None or not schema_id:
            return None
        try:
            id_bytes = self._value_id(topic, schema_id)
        except SchemaIdError:
            return None  # `decode` raises it, message by message
        return codec.direct(topic, id_bytes)[0] if id_bytes else None

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
        raw = properties.get(ids.SCHEMA_ID_PROPERTY)  # the usual message: no second look
        if raw is not None and RULE_NAME not in properties:
            # The usual message: the direct reader kept for its (topic, property as it came), past
            # the property's parsing (~0.4 us of hex checks, the same answer every time).
            value = self._direct_value((topic, raw), msg.data())
            if value is not FALLBACK:
                return value
        try:
            if raw is None:
                raw = ids.property_form(properties)
            schema_id = ids.parse_hex(raw) if raw is not None else None
        except SchemaIdError as error:
            raise SchemaIdError(
                f"message {msg.message_id()}: {error.reason}", topic=topic, subject=self.subject(topic)
            ) from None
        if schema_id and not self.is_key_value and RULE_NAME not in properties:
            # The compiled path reads nothing else of the message: no context unless it falls back.
            value = self._decode_compiled(topic, msg.data(), schema_id, alias=raw)
            if value is not FALLBACK:
                return value
        context = self.message_context(
            topic,
            dict(properties),
            original_data=msg.data(),
            partition_key=msg.partition_key() or None,
            ordering_key=msg.ordering_key() or None,
            event_timestamp=msg.event_timestamp() or None,
            message_id=msg.message_id(),
        )
        return self.decode(topic, context.original_data or b"", schema_id, context)

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
            self._direct, self._writers = {}, {}  # the short ways do not check that it is open
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

    def _compiled_reader(self, topic: str, schema_id: bytes | None) -> Callable[[bytes], Any] | None:
        return None  # a key/value payload is split first: `decode` does it

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

    def decode(
        self,
        topic: str,
        data: bytes,
        schema_id: bytes | None = None,
        context: MessageContext | None = None,
    ) -> KeyValue:
        self._check_open()
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
