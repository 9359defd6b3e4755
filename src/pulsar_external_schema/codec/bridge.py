"""The serde bridge of one part of an external schema (its value, or a key): the per-message path
and the reference path behind it, and the schema id's way between them.

`FieldSerde` is what `ExternalSchema` (`schema.py`, the `pulsar.schema.Schema` adapter) calls for a
part. A message goes down, never back up:

    encode: PartCodec.writers[topic]    with the native extension: the codec's direct writer,
                                        kept by `learn_writer`, which the schema's `Encoder` takes
            -> encode_compiled          the part codec's plan (`part.py`)
            -> encode_reference         confluent-kafka's serializer (`codec/serdes.py`), which
                                        resolves a topic's first writer; the codec learns it
    decode: FieldSerde.direct_value     the codec's direct reader (the extension's, or the plan's
                                        own read), kept per (topic, id as it came)
            -> metadata_id              the id parsed once (`schema_id.py`)
            -> decode_compiled          a plan built before (its direct reader then kept)
            -> decode                   the plan built, or confluent-kafka's deserializer

Each step answers FALLBACK (`part.py`) where the next one decides.

The reference path runs what the codec does not (a failing rule, a rule set that does not
compile, malformed data), so every error, rule action and DLQ copy is the serde's; `_error` turns
what it raises into the package's error naming topic, subject and schema id.
"""

from __future__ import annotations

from collections.abc import Callable
from time import monotonic
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from .. import _confluent
from .. import schema_id as ids
from ..errors import (
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
from ..redaction import redact, scrub, sensitive_values
from ..registry import failure_kind, registry_error
from ..rules.context import MessageContext
from ..rules.referenced import sensitive_fields_down
from ..subjects import SubjectNameStrategy
from . import json as json_codec
from .limits import LimitExceeded, recursion_error
from .part import FALLBACK, ForeignSchema, PartCodec, PayloadError
from .plans import PLAN_CACHE_SIZE
from .value_checks import json_loads

__all__ = [
    "Deserializer",
    "FieldSerde",
    "Serializer",
    "capture_schema_id",
    "prefix_and_capture_schema_id",
]

Serializer = Callable[[Any, SerializationContext], bytes | None]
Deserializer = Callable[[bytes | None, SerializationContext], Any]


#: A direct reader or writer of `FieldSerde` and its expiry (0: never).
Direct = tuple[Callable[[Any], Any] | None, float]
#: The caches' entry for a key they keep nothing for.
_NOTHING_KEPT: tuple[None, float] = (None, 0.0)


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
        self.readers: dict[tuple[str, bytes | str], Direct] = {}
        """(topic, schema id as it came: metadata bytes, or a `__schema_id` value) -> the codec's
        direct reader and its expiry (`direct_value`)."""

    def subject(self, topic: str) -> str | None:
        try:
            return self.strategy(SerializationContext(topic, self.field), None)
        except ValueError:
            return None

    def encode(self, topic: str, value: Any, context: MessageContext) -> tuple[bytes, bytes]:
        """Serialize; returns (payload, Confluent id). The payload is prefixed in prefix mode.

        `context` carries the message's properties and key to the rules (and a DLQ copy)."""
        compiled = self.encode_compiled(topic, value, context)
        return compiled if compiled is not FALLBACK else self.encode_reference(topic, value, context)

    def encode_compiled(self, topic: str, value: Any, context: MessageContext | None) -> Any:
        """The codec's (payload, id), or FALLBACK where the reference path must run."""
        if self.codec is None or value is None:
            return FALLBACK
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
            failed = self._not_serialized(topic, value, context, invalid, cause=error)
            raise failed from failed.__cause__
        except ExternalSchemaError:
            raise
        except Exception as error:
            failed = self._not_serialized(topic, value, context, error)
            raise failed from failed.__cause__
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
                    f"{ids.SCHEMA_ID_PROPERTY} property too (docs/wire-format.md), or use prefix mode; "
                    "read_table and the Spark source read field 32 with reader='native'",
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
            sensitive = self._read_sensitive_values(topic, payload, id_bytes)
            failed = self._error(
                DecodeError, f"could not decode {len(data)} bytes", topic, id_bytes, cause, sensitive
            )
            chained = failed.__cause__
            if context.encoding_failure is not None and type(failed) is DecodeError:
                failed = DecodeError(  # what the payload was when it failed (still encrypted)
                    f"{failed.reason}; {context.encoding_failure}",
                    topic=topic,
                    subject=failed.subject,
                    schema_id=failed.schema_id,
                )
            raise _scrubbed(failed, cause, sensitive) from chained

    def decode_compiled(
        self, topic: str, data: bytes, id_bytes: bytes, kept_as: tuple[bytes | str, ...] = ()
    ) -> Any:
        """The codec's value of a message with a metadata id and no properties the rules read,
        where it has a plan already; else FALLBACK. The plan's direct reader is then kept under
        (topic, each of `kept_as`: the schema id as the message carried it), for `direct_value`."""
        if self.codec is None:
            return FALLBACK
        try:
            value = self.codec.decode(topic, data, id_bytes, None, build=False)
        except LimitExceeded as error:
            raise self._limit_error(error, len(data), topic, id_bytes) from None
        except ForeignSchema as error:
            raise self._foreign_id_error(error, topic, id_bytes) from None
        except PayloadError as failure:
            cause = failure.error  # the format library's own error: the same text as `decode` gives
            raise self._error(
                DecodeError, f"could not decode {len(data)} bytes", topic, id_bytes, cause
            ) from cause
        if value is not FALLBACK and kept_as:
            self._keep_direct(topic, id_bytes, kept_as)
        return value

    def _keep_direct(self, topic: str, id_bytes: bytes, kept_as: tuple[bytes | str, ...]) -> None:
        """Keep the codec's direct reader of (topic, id) under each (topic, form of the id), one
        entry for all of them."""
        assert self.codec is not None
        entry: Direct | None = None
        missing = []
        for form in kept_as:
            found = self.readers.get((topic, form))
            if found is not None and found[0] is not None and (not found[1] or found[1] > monotonic()):
                entry = entry or found  # kept already (a message it did not take came this way)
            else:
                missing.append(form)
        if not missing:
            return
        if entry is None:
            entry = self.codec.direct(topic, id_bytes)
            if entry[0] is None:
                return
        for form in missing:
            if len(self.readers) >= PLAN_CACHE_SIZE:
                self.readers.clear()
            self.readers[(topic, form)] = entry

    def learn_writer(self, topic: str) -> None:
        """Keep the codec's writer of `topic` (after its plan was built)."""
        if self.codec is not None:
            self.codec.keep_writer(topic)

    def metadata_id(self, topic: str, schema_id: bytes | None) -> bytes | None:
        """The Confluent id of a message's metadata schema id (with or without PIP-420's magic
        byte); a key/value id is refused: this part reads values alone."""
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

    def direct_value(self, key: tuple[str, bytes | str], data: bytes) -> Any:
        """The value from the direct reader kept under `key` (topic, schema id as it came);
        FALLBACK when none is kept, it expired or it does not take the payload (`PartCodec.direct`).
        The usual message is this one lookup and the format library's call."""
        direct = self.readers.get(key, _NOTHING_KEPT)[0]
        return FALLBACK if direct is None else direct(data)

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

    def _not_serialized(
        self,
        topic: str,
        value: Any,
        context: MessageContext,
        error: Exception,
        cause: Exception | None = None,
    ) -> Exception:
        """The error to raise for `error`, chained to `cause` (else `error`) with the chain
        scrubbed: raise it `from` its `__cause__`."""
        values = self._sensitive_values(value, context)
        what = "could not serialize the value"
        failed = self._error(EncodeError, what, topic, context.schema_id, error, values)
        return _scrubbed(failed, error if cause is None else cause, values)

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

    def _read_sensitive_values(self, topic: str, payload: bytes, id_bytes: bytes) -> list[str]:
        """What a JSON payload that did not decode holds in fields its schemas mark sensitive.

        `jsonschema` quotes the value it refuses (`'123-45-6789' does not match ...`), and a whole
        object where a combinator fails: read as the encode side's refusals are redacted, by the
        writer schema's tags (the deserializer looked it up: the registry client has it cached)
        and those of the version it is read as. Where neither can be had, every value of the
        payload counts as sensitive. Avro's and Protobuf's decoders quote no value."""
        if self.schema_type != json_codec.SCHEMA_TYPE:
            return []
        try:
            value = json_loads(payload)
        except Exception:  # not JSON (or nested past the stack): its error quotes no field
            return []
        subject = self.subject(topic)
        # A wrapper (json_evolution's consumer schema) reads through the deserializer it wraps,
        # and checks against a schema of its own, made from the producer schema it was given.
        deserializer = getattr(self.deserializer, "inner", self.deserializer)
        schemas: list[Schema | None] = [getattr(self.deserializer, "producer_schema", None)]
        try:
            schemas.append(_confluent.writer_schema(deserializer, "JSON", id_bytes, subject, None))
            if subject is not None:
                pinned = _confluent.pinned_schema(deserializer, subject, None)
                schemas.append(pinned.schema if pinned is not None else None)
        except Exception:  # the registry cannot say which fields are sensitive: all of them are
            return sensitive_values(value, ["*"])
        return sensitive_values(value, _sensitive_fields(deserializer, *schemas))

    def _sensitive_values(self, value: Any, context: MessageContext) -> list[str]:
        """What `value` holds in fields its schema marks sensitive (`redaction.py`): the registered
        writer's tags and rules where the serializer resolved it, else the local schema's."""
        schema = context.writer[1].schema if context.writer and context.writer[1] else None
        if schema is None:
            schema = _confluent.local_schema(self.serializer)[0]
        return sensitive_values(value, _sensitive_fields(self.serializer, schema))

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


def _sensitive_fields(serde: Any, *schemas: Schema | None) -> list[str]:
    """The sensitive fields of `schemas` and of every version they reference
    (`referenced.sensitive_fields_down`); all fields where the references cannot be looked up."""
    try:
        return sorted({field for schema in schemas for field in sensitive_fields_down(serde, schema)})
    except Exception:
        return ["*"]


def _scrubbed(error: Exception, cause: BaseException, sensitive: list[str]) -> Exception:
    """`error` with `cause` as its cause, the chain redacted (`redaction.scrub`): a format
    library's error may quote a sensitive value, in its text or in what its traceback prints."""
    error.__cause__ = cause
    scrub(error, sensitive)
    return error
