"""Decoding limits: what a payload may make the decoder allocate, checked before it allocates.

A decoder trusts the counts a payload states. In Avro, an array block count of 2^40 costs 6 bytes
of payload; with items that take no bytes (`null`, a zero-size `fixed`, a record of those), fastavro
builds 2^40 items: gigabytes from a 6-byte message. A recursive Avro schema (a linked list, a
tree) nested a few thousand levels deep in a few kilobytes of payload overflows fastavro's C stack
and kills the process. Every message of every topic is exposed, because a schema id from another
subject selects the schema the payload is read with.

So before a payload is read, a `Guard` compares what it can cost with the limits:

- `max_bytes` (`decode.max.bytes`): an estimate of the Python objects a decoded value takes
  (CPython's sizes for dicts, lists, ints, strings; a string or bytes value counted at its length).
- `max_depth` (`decode.max.depth`): records, arrays and maps nested in one value.

What the check costs depends on the schema, analysed once (`avro_guard`):

- For most schemas a payload's cost has a bound: every item of an array or map takes at least one
  byte, so `cost <= fixed + ratio * len(payload)`, where `ratio` is the most a payload byte can
  cost. Payloads up to `(max_bytes - fixed) / ratio` bytes then pass on one comparison; only
  larger ones are walked.
- A schema with items that take no bytes, or a recursive one, has no such bound: its payloads are
  walked before fastavro reads them (recursive ones only when longer than `max_depth` bytes, since
  every level takes a byte).

The walk reads only lengths and counts (zero-size items are counted, not visited) and stops at
the first limit crossed, or when the payload turns out malformed: fastavro then refuses the same
bytes itself, having read no further than the walk did.

JSON and Protobuf cost at most a small multiple of their payload (every value takes bytes of its
own, and no count is taken on trust). JSON payloads are checked on an estimate from the counts of
their structural characters; a JSON value nested deeper than the interpreter's recursion limit
fails in the `json` module with RecursionError, reported as `decode.max.depth` too. Protobuf
payloads are checked on their length: the worst shape measured (a repeated empty message, two
bytes each) parses into 10.2 bytes of the runtime's memory per payload byte, so `PROTOBUF_RATIO`
is 12; the runtime refuses messages nested deeper than 100 levels itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._signal import InternalSignal
from ..config import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH


@dataclass(frozen=True, slots=True)
class Guard:
    """Payloads up to `longest` bytes pass on that comparison alone (made inline on the
    per-message path, no call); longer ones go through `check`, which raises LimitExceeded."""

    longest: int
    check: Callable[[bytes], None]

    def __call__(self, payload: bytes) -> None:
        if len(payload) > self.longest:
            self.check(payload)


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


DEFAULT_LIMITS = DecodeLimits()


class LimitExceeded(InternalSignal):
    """A payload would decode into more than a limit allows (the message says which, and the
    config key that raises it)."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


def _too_big(estimate: int, length: int, limits: DecodeLimits) -> LimitExceeded:
    return LimitExceeded(
        f"its {length} bytes would decode into more than {limits.max_bytes} bytes of objects "
        f"(estimated {estimate} or more); raise 'decode.max.bytes' if this message is expected",
        "decode.max.bytes",
    )


def _too_deep(limits: DecodeLimits) -> LimitExceeded:
    return LimitExceeded(
        f"it nests records, arrays or maps more than {limits.max_depth} levels deep; "
        "raise 'decode.max.depth' if this message is expected",
        "decode.max.depth",
    )


def recursion_error() -> LimitExceeded:
    """A value nested beyond the interpreter's recursion limit (the `json` module's own check)."""
    return LimitExceeded(
        f"it nests arrays or objects deeper than Python's recursion limit ({sys.getrecursionlimit()})",
        "decode.max.depth",
    )


# -- sizes of what fastavro builds (CPython, 64-bit) ---------------------------------------------

_POINTER = 8
_INT = sys.getsizeof(2**62)
_FLOAT = sys.getsizeof(1.0)
_STR = sys.getsizeof("")
_BYTES = sys.getsizeof(b"")
_LIST = sys.getsizeof([])
_TUPLE = sys.getsizeof((None, None))  # a union branch with `return_record_name`
_LOGICAL = 128  # Decimal, UUID, datetime: the object a logical type makes
_MAP_ENTRY = 64  # a dict's index and entry slots for one key, with its growth slack


def _dict_size(fields: int) -> int:
    record: dict[int, None] = {}
    for index in range(fields):
        record[index] = None
    return sys.getsizeof(record)


class _Malformed(InternalSignal):
    """The payload ends early or states a negative length: fastavro will refuse it itself."""


class _Unknown(InternalSignal):
    """The schema names a type the analysis cannot find: its payloads are not checked."""


# -- the Avro analysis -----------------------------------------------------------------------------


@dataclass
class _Shape:
    """What one type costs: `cost` (bytes of objects outside any collection's items), `least`
    (fewest payload bytes it can take), `ratio` (most bytes of objects per payload byte in the
    items of the collections inside it)."""

    cost: int
    least: int
    ratio: float


_PRIMITIVES = {
    "null": (0, 0),
    "boolean": (0, 1),
    "int": (_INT, 1),
    "long": (_INT, 1),
    "float": (_FLOAT, 4),
    "double": (_FLOAT, 8),
    "string": (_STR, 1),
    "bytes": (_BYTES, 1),
}


class _AvroAnalysis:
    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.recursive = False
        self.zero_size_items = False
        self._open: set[str] = set()
        self._done: dict[str, _Shape] = {}

    def shape(self, schema: Any) -> _Shape:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                cost, least = _PRIMITIVES[schema]
                return _Shape(cost, least, 0.0)
            return self._named(schema)
        if isinstance(schema, list):
            branches = [self.shape(branch) for branch in schema]
            return _Shape(
                max(b.cost for b in branches) + _TUPLE,
                1 + min(b.least for b in branches),
                max(b.ratio for b in branches),
            )
        kind = schema.get("type")
        if schema.get("logicalType") and (kind in _PRIMITIVES or kind == "fixed"):
            base = self.shape(kind) if kind != "fixed" else self._fixed(schema)
            return _Shape(base.cost + _LOGICAL, base.least, 0.0)
        if kind == "record" or kind == "error":
            name = schema.get("name")
            if name in self._done:
                return self._done[name]
            if name:
                self._open.add(name)
            fields = [self.shape(field["type"]) for field in schema.get("fields", ())]
            if name:
                self._open.discard(name)
            shape = _Shape(
                _dict_size(len(fields)) + sum(f.cost for f in fields),
                sum(f.least for f in fields),
                max((f.ratio for f in fields), default=0.0),
            )
            if name:
                self._done[name] = shape
            return shape
        if kind == "enum":
            return _Shape(0, 1, 0.0)
        if kind == "fixed":
            return self._fixed(schema)
        if kind == "array":
            return self._collection(self.shape(schema["items"]), _LIST, 0, _POINTER + 1)
        if kind == "map":
            return self._collection(self.shape(schema["values"]), _dict_size(0), 1, _STR + _MAP_ENTRY)
        if isinstance(kind, (str, list, dict)):
            return self.shape(kind)  # {"type": "string"} and the like
        raise _Unknown(repr(kind))

    def _fixed(self, schema: Any) -> _Shape:
        size = int(schema.get("size", 0))
        return _Shape(_BYTES + size, size, 0.0)

    def _collection(self, item: _Shape, base: int, key_least: int, slot: int) -> _Shape:
        least = item.least + key_least
        if least == 0:
            self.zero_size_items = True
            ratio = float("inf")
        else:
            ratio = max((item.cost + slot) / least, item.ratio)
        return _Shape(base, 1, ratio)

    def _named(self, name: str) -> _Shape:
        if name in self._done:
            return self._done[name]
        if name in self._open:
            self.recursive = True
            return _Shape(0, 1, 0.0)  # the cycle is walked per payload, not bounded here
        if name not in self.named:
            raise _Unknown(name)
        return self.shape(self.named[name])


def avro_guard(parsed: Any, limits: DecodeLimits) -> Guard:
    """The check a payload of the parsed (fastavro) writer schema passes before it is read."""
    named = dict(parsed.get("__named_schemas", {})) if isinstance(parsed, dict) else {}
    analysis = _AvroAnalysis(named)
    try:
        shape = analysis.shape(parsed)
    except _Unknown:
        return _length_guard(limits, fixed=0, ratio=1.0)  # no analysis: the length alone
    if analysis.zero_size_items:
        return Guard(-1, _AvroWalk(parsed, named, limits).check)  # every payload is walked
    if analysis.recursive:
        # Every level takes a byte: payloads no longer than the depth limit cannot nest deeper.
        return Guard(limits.max_depth, _AvroWalk(parsed, named, limits).check)
    # Strings and bytes cost their length on top of what `ratio` counts.
    return _length_guard(
        limits, fixed=shape.cost, ratio=shape.ratio + 1.0, walk=_AvroWalk(parsed, named, limits)
    )


def _length_guard(limits: DecodeLimits, *, fixed: int, ratio: float, walk: _AvroWalk | None = None) -> Guard:
    longest = max(0, int((limits.max_bytes - fixed) / ratio))
    if walk is not None:
        return Guard(longest, walk.check)

    def refuse(payload: bytes) -> None:
        raise _too_big(int(fixed + ratio * len(payload)), len(payload), limits)

    return Guard(longest, refuse)


class _AvroWalk:
    """Reads a payload's lengths and counts as fastavro would, adding up what its objects cost.
    Shared by threads: what one walk counts lives in its `_Count`."""

    def __init__(self, parsed: Any, named: dict[str, Any], limits: DecodeLimits) -> None:
        self.schema = parsed
        self.named = named
        self.limits = limits
        self.zero_size: dict[int, int] = {}
        """id of an array's item schema -> what one item costs, for items that take no bytes."""
        self._find_zero_size(parsed, set())

    def _find_zero_size(self, schema: Any, seen: set[str]) -> None:
        if isinstance(schema, str):
            if schema in self.named and schema not in seen:
                seen.add(schema)
                self._find_zero_size(self.named[schema], seen)
        elif isinstance(schema, list):
            for branch in schema:
                self._find_zero_size(branch, seen)
        elif isinstance(schema, dict):
            if schema.get("name") in seen:
                return
            if schema.get("name"):
                seen.add(schema["name"])
            if schema.get("type") == "array":
                shape = _AvroAnalysis(self.named).shape(schema["items"])
                if shape.least == 0:
                    self.zero_size[id(schema["items"])] = shape.cost
            for part in (schema.get("type"), schema.get("items"), schema.get("values")):
                if isinstance(part, (list, dict)) or (isinstance(part, str) and part in self.named):
                    self._find_zero_size(part, seen)
            for field in schema.get("fields", ()):
                self._find_zero_size(field["type"], seen)

    def check(self, payload: bytes) -> None:
        count = _Count(payload, self.limits)
        try:
            self._read(self.schema, count, 0, 0)
        except (_Malformed, IndexError, _Unknown):
            return  # fastavro refuses it on the bytes the walk read, or reads no further
        except RecursionError:
            raise _too_deep(self.limits) from None

    def _read(self, schema: Any, count: _Count, pos: int, depth: int) -> int:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _primitive(schema, count, pos)
            if schema not in self.named:
                raise _Unknown(schema)
            return self._read(self.named[schema], count, pos, depth)
        if isinstance(schema, list):
            index, pos = _long(count.payload, pos)
            if not 0 <= index < len(schema):
                raise _Malformed
            count.add(_TUPLE)
            return self._read(schema[index], count, pos, depth)
        kind = schema.get("type")
        if schema.get("logicalType"):
            count.add(_LOGICAL)
        if kind == "record" or kind == "error":
            depth += 1
            if depth > self.limits.max_depth:
                raise _too_deep(self.limits)
            fields = schema.get("fields", ())
            count.add(_dict_size(len(fields)))
            for field in fields:
                pos = self._read(field["type"], count, pos, depth)
            return pos
        if kind == "enum":
            return _long(count.payload, pos)[1]
        if kind == "fixed":
            size = int(schema.get("size", 0))
            count.add(_BYTES + size)
            return _skip(count.payload, pos, size)
        if kind == "array" or kind == "map":
            depth += 1
            if depth > self.limits.max_depth:
                raise _too_deep(self.limits)
            return self._collection(schema, kind == "map", count, pos, depth)
        if isinstance(kind, (str, list, dict)):
            return self._read(kind, count, pos, depth)
        raise _Unknown(repr(kind))

    def _collection(self, schema: Any, is_map: bool, count: _Count, pos: int, depth: int) -> int:
        item = schema["values"] if is_map else schema["items"]
        zero_size = None if is_map else self.zero_size.get(id(item))
        slot = _STR + _MAP_ENTRY if is_map else _POINTER + 1
        payload = count.payload
        count.add(_dict_size(0) if is_map else _LIST)
        while True:
            items, pos = _long(payload, pos)
            if items == 0:
                return pos
            if items < 0:
                items = -items
                pos = _long(payload, pos)[1]  # the block's size in bytes
            if zero_size is not None:
                count.add(items * (zero_size + slot))  # items that take no bytes: counted, not read
                continue
            if items > len(payload) - pos:
                raise _Malformed  # more items than bytes left: fastavro runs out of payload
            for _ in range(items):
                count.add(slot)
                if is_map:
                    pos = _primitive("string", count, pos)
                pos = self._read(item, count, pos, depth)


class _Count:
    """What one walk has counted so far."""

    __slots__ = ("limits", "payload", "total")

    def __init__(self, payload: bytes, limits: DecodeLimits) -> None:
        self.payload = payload
        self.limits = limits
        self.total = 0

    def add(self, cost: int) -> None:
        self.total += cost
        if self.total > self.limits.max_bytes:
            raise _too_big(self.total, len(self.payload), self.limits)


def _primitive(kind: str, count: _Count, pos: int) -> int:
    payload = count.payload
    if kind == "null":
        return pos
    if kind == "boolean":
        return _skip(payload, pos, 1)
    if kind == "int" or kind == "long":
        count.add(_INT)
        return _long(payload, pos)[1]
    if kind == "float" or kind == "double":
        count.add(_FLOAT)
        return _skip(payload, pos, 4 if kind == "float" else 8)
    length, pos = _long(payload, pos)  # string, bytes
    if length < 0:
        raise _Malformed
    count.add((_STR if kind == "string" else _BYTES) + length)
    return _skip(payload, pos, length)


def _skip(payload: bytes, pos: int, size: int) -> int:
    end = pos + size
    if end > len(payload):
        raise _Malformed
    return end


def _long(payload: bytes, pos: int) -> tuple[int, int]:
    """An Avro zig-zag varint at `pos`: (value, position after it)."""
    shift = result = 0
    while True:
        byte = payload[pos]  # IndexError at the end: malformed
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise _Malformed


# -- Protobuf ------------------------------------------------------------------------------------

#: Most bytes of memory a Protobuf payload byte parses into (10.2 measured, with a margin).
PROTOBUF_RATIO = 12.0


def protobuf_guard(limits: DecodeLimits) -> Guard:
    return _length_guard(limits, fixed=0, ratio=PROTOBUF_RATIO)


# -- JSON ------------------------------------------------------------------------------------------

#: What one structural character of a JSON text can make: `{` or `[` a dict or list, `,` or `:` a
#: value and its slot (a key string, an int, a float), a byte of a string itself.
_JSON_OPEN = _dict_size(0) + _MAP_ENTRY
_JSON_ITEM = _STR + _MAP_ENTRY


def json_guard(limits: DecodeLimits) -> Guard:
    """Payloads whose worst case fits pass on one comparison; longer ones are estimated from the
    counts of their structural characters (bytes.count, at C speed)."""
    longest = limits.max_bytes // (_JSON_OPEN + 1)

    def check(payload: bytes) -> None:
        opens = payload.count(b"{") + payload.count(b"[")
        items = payload.count(b",") + payload.count(b":")
        estimate = len(payload) + opens * _JSON_OPEN + items * _JSON_ITEM
        if estimate > limits.max_bytes:
            raise _too_big(estimate, len(payload), limits)

    return Guard(longest, check)
