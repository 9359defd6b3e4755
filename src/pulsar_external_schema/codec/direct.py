"""An external schema's everyday message in one call: the Python twin of native/src/direct.rs,
class for class and answer for answer.

    ExternalSchema.encode, encode_for  -> Encoder       the instance's own
        -> PartCodec.writers[topic]    -> DirectWriter  one plan's kept writer (`PartCodec.direct_writer`)
    ExternalSchema.decode, decode_message, decode_batch -> ExternalSchema._decode  (the one door)
        -> FieldSerde.direct_value     -> DirectReader  one plan's kept reader (`PartCodec.direct`)

`twin()` gives the extension where the gate (`_native.extension()`) finds it, else this module;
tests/unit/test_native_direct.py holds the two to the same answers. Only the glue is here: what a
message is written or read as, and every message these do not take, stay with `schema.py` and
`codec/part.py`, which decide as they would without them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from time import monotonic
from types import ModuleType
from typing import Any

from .. import _native

__all__ = ["DirectReader", "DirectWriter", "Encoder", "twin"]


def twin() -> ModuleType:
    """The module whose `Encoder`, `DirectWriter` and `DirectReader` serve: the extension's
    where the gate finds it, else this one. A schema and its codecs ask once, when made."""
    native = _native.extension()
    return native if native is not None else sys.modules[__name__]


def _deadline(expires_in: float | None) -> float | None:
    """When a plan with `expires_in` seconds left expires (None: never; none or less: now)."""
    return None if expires_in is None else monotonic() + max(expires_in, 0.0)


class DirectWriter:
    """One plan's kept writer (`PartCodec.direct_writer`).

    `write(value) -> payload`: the plan's steps and the format's writer; `prefix`: the id prefix
    of prefix mode (empty otherwise); `expires_in`: seconds the plan has left (None: no expiry);
    `key_parts`: non-empty once a key part exists, and then `clear_original_key()` runs after
    each write, as confluent-kafka's value serializer does."""

    __slots__ = ("_clear_original_key", "_deadline", "_key_parts", "_prefix", "_write", "schema_id")

    def __init__(
        self,
        write: Callable[[Any], bytes],
        *,
        prefix: bytes,
        schema_id: bytes,
        expires_in: float | None,
        key_parts: list[bool],
        clear_original_key: Callable[[], None],
    ) -> None:
        self._write = write
        self._prefix = prefix
        self.schema_id = schema_id
        self._deadline = _deadline(expires_in)
        self._key_parts = key_parts
        self._clear_original_key = clear_original_key

    def __call__(self, value: Any) -> tuple[bytes, bytes] | None:
        """`(payload, schema id)`, the payload id-prefixed in prefix mode; None where the long
        way decides (the plan expired, or the write raised)."""
        payload = self.written(value)
        return None if payload is None else (payload, self.schema_id)

    def written(self, value: Any) -> bytes | None:
        """The payload, or None for the long way."""
        deadline = self._deadline
        if deadline is not None and deadline <= monotonic():
            return None
        try:
            payload = self._write(value)
        except Exception:  # the long way runs it again and says why
            return None
        if self._key_parts:
            self._clear_original_key()
        return self._prefix + payload if self._prefix else payload


class DirectReader:
    """One read plan's kept reader (`PartCodec.direct`).

    `read(payload) -> value`: the format's reader and the plan's steps; `check(payload)`: the
    plan's guard, for a payload longer than `longest` (None: no guard); `expires_in`,
    `key_parts`, `clear_original_key`: as `DirectWriter`'s; `fallback`, `declined`: the answers
    for an expired plan and for a payload this does not take (`codec.part`'s FALLBACK and
    DECLINED)."""

    __slots__ = (
        "_check",
        "_clear_original_key",
        "_deadline",
        "_declined",
        "_fallback",
        "_key_parts",
        "_longest",
        "_read",
    )

    def __init__(
        self,
        read: Callable[[Any], Any],
        *,
        longest: int,
        check: Callable[[Any], Any] | None,
        expires_in: float | None,
        key_parts: list[bool],
        clear_original_key: Callable[[], None],
        fallback: object,
        declined: object,
    ) -> None:
        self._read = read
        self._longest = longest
        self._check = check
        self._deadline = _deadline(expires_in)
        self._key_parts = key_parts
        self._clear_original_key = clear_original_key
        self._fallback = fallback
        self._declined = declined

    def __call__(self, payload: Any) -> Any:
        """The payload's value; `fallback` once the plan has expired, `declined` where the
        payload is empty or the guard or read raised (the long way says why)."""
        deadline = self._deadline
        if deadline is not None and deadline <= monotonic():
            return self._fallback
        if not payload:
            return self._declined
        try:
            check = self._check
            if check is not None and len(payload) > self._longest:
                check(payload)
            value = self._read(payload)
        except Exception:
            return self._declined
        if self._key_parts:
            self._clear_original_key()
        return value


class Encoder:
    """An `ExternalSchema`'s `encode` or `encode_for`, as its instance keeps it.

    `schema`: the `ExternalSchema` (which holds this: the collector sees the cycle); `writers`:
    its part's kept writers by topic, `(writer, expires)` each; `encode_data`: the `EncodeData`
    class; `with_id`: False in prefix mode (the id is in the payload); `with_context`: a third
    argument None is the everyday call too (`encode_for`'s context); `planned(schema, topic,
    value, context)`: the way past a kept writer that does not take the message; `other(schema,
    *args, **kwargs)`: the class's method, for any other call and a topic with no kept
    `DirectWriter`."""

    __slots__ = (
        "_encode_data",
        "_open",
        "_other",
        "_planned",
        "_schema",
        "_with_context",
        "_with_id",
        "_writers",
    )

    def __init__(
        self,
        schema: Any,
        *,
        writers: dict[str, tuple[Any, float]],
        encode_data: type[tuple[Any, ...]],
        with_id: bool,
        with_context: bool,
        planned: Callable[..., Any],
        other: Callable[..., Any],
    ) -> None:
        if not issubclass(encode_data, tuple):
            raise TypeError("encode_data must be a tuple class")
        self._schema = schema
        self._writers = writers
        self._encode_data = encode_data
        self._with_id = with_id
        self._with_context = with_context
        self._planned = planned
        self._other = other
        self._open = True

    def close(self) -> None:
        """The schema was closed: every call goes the class's way (which says so)."""
        self._open = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The everyday call: a topic (a `str`) and a value, or with `with_context` a third
        # argument None (`encode_for`'s context), and no keywords.
        arity = len(args)
        if (
            self._open
            and not kwargs
            and (arity == 2 or (arity == 3 and self._with_context and args[2] is None))
            and type(args[0]) is str
        ):
            topic, value = args[0], args[1]
            entry = self._writers.get(topic)
            if entry is not None and isinstance(entry[0], DirectWriter):
                writer = entry[0]
                payload = writer.written(value)
                if payload is not None:
                    # EncodeData(payload, id) without the NamedTuple's argument handling
                    schema_id = writer.schema_id if self._with_id else None
                    return tuple.__new__(self._encode_data, (payload, schema_id))
                return self._planned(self._schema, topic, value, None)
        return self._other(self._schema, *args, **kwargs)
