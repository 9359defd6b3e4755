"""Registry schemas as Arrow types, and decoded values as rows of those types: the `value`
column of a read, whoever reads (the Spark source takes its Spark type from it, through pyspark's
own `from_arrow_type`).

Avro follows Spark's own `from_avro` mapping (records are structs, enums strings, logical types
dates, timestamps and decimals). JSON Schema objects with `properties` are structs, `integer` is a
long, `number` a double. Protobuf messages follow Spark's `from_protobuf` (enums as their names,
`google.protobuf.Timestamp` as a timestamp). What a column cannot type (an Avro union of several
non-null types, a JSON value without one type, a tuple) is a string column holding the value as
JSON text, so nothing is lost. Recursive types are refused: Arrow (and Spark) have no recursive
struct. The Arrow types are the ones Spark's `to_arrow_type` gives for its mapping: timestamps
in microseconds (UTC, or without a zone for Avro's local timestamps), lists of `element`, maps
of non-null keys, every struct field nullable unless the schema says it cannot be null.

Each mapping comes with a converter from the decoded Python value to what Arrow takes for that
type, `None` where the value already fits (most Avro values), so decoding stays fast.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from ..errors import SparkTypeError
from ..evolution import json_model as jm

__all__ = ["Converter", "avro_type", "json_type", "protobuf_type"]

#: Turns a decoded value into one Arrow accepts for the mapped type; None means "as it is".
Converter = Callable[[Any], Any] | None

#: Spark's decimal, and Arrow's 128-bit one, hold up to 38 digits.
_MAX_DECIMAL_DIGITS = 38


def _list(element: pa.DataType, contains_null: bool) -> pa.DataType:
    return pa.list_(pa.field("element", element, nullable=contains_null))


def _map(key: pa.DataType, value: pa.DataType, value_contains_null: bool) -> pa.DataType:
    return pa.map_(
        pa.field("key", key, nullable=False), pa.field("value", value, nullable=value_contains_null)
    )


def _decimal(precision: int, scale: int) -> pa.DataType:
    if not 0 < precision <= _MAX_DECIMAL_DIGITS or not 0 <= scale <= precision:
        raise SparkTypeError(
            f"Avro decimal({precision}, {scale}) has no column type: a decimal column holds 1 to "
            f"{_MAX_DECIMAL_DIGITS} digits, and a scale of 0 to its precision"
        )
    return pa.decimal128(precision, scale)


_TIMESTAMP = pa.timestamp("us", tz="UTC")
_LOCAL_TIMESTAMP = pa.timestamp("us")


def _json_text(value: Any) -> Any:
    if value is None:
        return None
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _list_of(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda values: None if values is None else [convert(v) for v in values]


def _map_of(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda values: None if values is None else {k: convert(v) for k, v in values.items()}


def _struct_of(converters: dict[str, Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        out = dict(value)
        for name, conv in converters.items():
            if name in out:
                out[name] = conv(out[name])
        return out

    return convert


# -- Avro ------------------------------------------------------------------------------------


def avro_type(schema: Any) -> tuple[pa.DataType, Converter]:
    """The Arrow type of a parsed Avro schema (`fastavro.parse_schema` output) and its converter."""
    return _avro(schema, (), {})


def _avro(schema: Any, seen: tuple[str, ...], named: dict[str, Any]) -> tuple[pa.DataType, Converter]:
    if isinstance(schema, list):
        return _avro_union(schema, seen, named)
    if isinstance(schema, str):
        if schema in seen:
            raise SparkTypeError(
                f"Avro record {schema} is recursive; Spark has no recursive struct type "
                "(read the value as bytes with the BYTES schema instead)"
            )
        if schema in named:  # a reference to a type defined earlier in the schema
            return _avro(named[schema], seen, named)
        schema = {"type": schema}
    if isinstance(schema.get("type"), str) and schema.get("name"):
        named[schema["name"]] = schema
    kind = schema["type"]
    logical = schema.get("logicalType")
    if isinstance(kind, dict | list):
        return _avro(kind, seen, named)
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return _decimal(int(schema["precision"]), int(schema.get("scale", 0))), None
    if logical == "date" and kind == "int":
        return pa.date32(), None
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return _TIMESTAMP, None
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
        return _LOCAL_TIMESTAMP, None
    if logical == "time-millis" and kind == "int":
        return pa.int32(), _time_to(1_000)
    if logical == "time-micros" and kind == "long":
        return pa.int64(), _time_to(1_000_000)
    if logical == "uuid" and kind == "string":
        return pa.string(), lambda v: None if v is None else str(v)
    primitive = _AVRO_PRIMITIVES.get(kind)
    if primitive is not None:
        return primitive, None
    if kind == "enum":
        return pa.string(), None
    if kind == "fixed":
        return pa.binary(), None
    if kind == "array":
        element, conv = _avro(schema["items"], seen, named)
        return _list(element, _nullable(schema["items"])), conv and _list_of(conv)
    if kind == "map":
        value, conv = _avro(schema["values"], seen, named)
        return _map(pa.string(), value, _nullable(schema["values"])), conv and _map_of(conv)
    if kind in ("record", "error"):
        name = schema.get("name", "")
        if name in seen:
            raise SparkTypeError(
                f"Avro record {name} is recursive; Spark has no recursive struct type "
                "(read the value as bytes with the BYTES schema instead)"
            )
        fields: list[pa.Field] = []
        converters: dict[str, Callable[[Any], Any]] = {}
        for field in schema["fields"]:
            data_type, conv = _avro(field["type"], (*seen, name), named)
            fields.append(pa.field(field["name"], data_type, _nullable(field["type"])))
            if conv is not None:
                converters[field["name"]] = conv
        return pa.struct(fields), _struct_of(converters) if converters else None
    raise SparkTypeError(f"Avro type {kind!r} has no Spark type")


_AVRO_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.string(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


def _avro_union(
    branches: list[Any], seen: tuple[str, ...], named: dict[str, Any]
) -> tuple[pa.DataType, Converter]:
    others = [b for b in branches if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")]
    if len(others) == 1:
        return _avro(others[0], seen, named)
    for branch in others:  # still refuse recursion hidden in a union
        if isinstance(branch, str) and branch in seen:
            _avro(branch, seen, named)
    return pa.string(), _json_text  # several non-null types: JSON text, as nothing else holds them all


def _nullable(schema: Any) -> bool:
    return (isinstance(schema, list) and any(b == "null" for b in schema)) or schema == "null"


def _time_to(per_second: int) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if not isinstance(value, dt.time):
            return value
        seconds = value.hour * 3600 + value.minute * 60 + value.second
        return seconds * per_second + value.microsecond * per_second // 1_000_000

    return convert


# -- JSON Schema -----------------------------------------------------------------------------


def json_type(
    schema: str | Mapping[str, Any], references: Mapping[str, Any] | None = None
) -> tuple[pa.DataType, Converter]:
    """The Arrow type of a JSON Schema (with its named references) and its value converter."""
    node = jm.parse_json_schema(schema, references)
    return _json(node, (), [])


def json_typed(schema: str | Mapping[str, Any], references: Mapping[str, Any] | None = None) -> bool:
    """Whether every node of a JSON Schema has a typed column: none is read as JSON text (what
    the native reader writes)."""
    untyped: list[jm.Node] = []
    _json(jm.parse_json_schema(schema, references), (), untyped)
    return not untyped


def _json(
    node: jm.Node, seen: tuple[int, ...], untyped: list[jm.Node]
) -> tuple[pa.DataType, Callable[[Any], Any]]:
    """`untyped`: where the nodes read as JSON text (`_json_text`) are put."""
    node = jm.resolve(node)
    if id(node) in seen:
        raise SparkTypeError("the JSON Schema is recursive; Spark has no recursive struct type")
    if isinstance(node, jm.StringNode):
        return pa.string(), _checked(str, "a string")
    if isinstance(node, jm.NumberNode):
        if node.requires_integer:
            return pa.int64(), _checked(int, "an integer")
        return pa.float64(), _number
    if isinstance(node, jm.BooleanNode):
        return pa.bool_(), _checked(bool, "a boolean")
    if isinstance(node, jm.EnumNode) and all(isinstance(v, str) for v in _enum_values(node)):
        return pa.string(), _checked(str, "a string")
    if isinstance(node, jm.ObjectNode) and node.properties:
        fields: list[pa.Field] = []
        converters: dict[str, Callable[[Any], Any]] = {}
        for name, child in node.properties.items():
            data_type, conv = _json(child, (*seen, id(node)), untyped)
            fields.append(pa.field(name, data_type, True))
            converters[name] = conv
        return pa.struct(fields), _struct_of(converters)
    if isinstance(node, jm.ObjectNode) and node.additional_schema is not None and not node.pattern_properties:
        value, conv = _json(node.additional_schema, (*seen, id(node)), untyped)
        return _map(pa.string(), value, True), _mapping(conv)
    if isinstance(node, jm.ArrayNode) and node.all_items is not None and node.item_list is None:
        element, conv = _json(node.all_items, (*seen, id(node)), untyped)
        return _list(element, True), _sequence(conv)
    if isinstance(node, jm.CombinedNode) and node.criterion in ("anyOf", "oneOf"):
        others = [s for s in node.subschemas if not isinstance(jm.resolve(s), jm.NullNode)]
        if len(others) == 1:
            return _json(others[0], seen, untyped)
    untyped.append(node)
    return pa.string(), _json_text


def _enum_values(node: jm.EnumNode) -> list[Any]:
    return [json.loads(v) for v in node.values]


def _checked(kind: type, what: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
            return value
        raise TypeError(f"expected {what}, got {json.dumps(value)[:60]}")

    return convert


def _number(value: Any) -> Any:
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    raise TypeError(f"expected a number, got {json.dumps(value)[:60]}")


def _mapping(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        return {k: convert(v) for k, v in value.items()}

    return run


def _sequence(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise TypeError(f"expected an array, got {type(value).__name__}")
        return [convert(v) for v in value]

    return run


# -- Protobuf --------------------------------------------------------------------------------

_PB_INT32 = {5, 15, 17}  # int32, sfixed32, sint32; the unsigned fixed32 and uint32 need a long
_PB_TIMESTAMP = "google.protobuf.Timestamp"


def protobuf_type(descriptor: Any) -> tuple[pa.DataType, Callable[[Any], Any]]:
    """The Arrow struct of a Protobuf message descriptor, and a converter from a message to a dict."""
    return _protobuf_message(descriptor, ())


def _protobuf_message(descriptor: Any, seen: tuple[str, ...]) -> tuple[pa.DataType, Callable[[Any], Any]]:
    if descriptor.full_name in seen:
        raise SparkTypeError(
            f"Protobuf message {descriptor.full_name} is recursive; Spark has no recursive struct type"
        )
    fields: list[pa.Field] = []
    converters: list[tuple[str, bool, Callable[[Any], Any]]] = []
    for field in descriptor.fields:
        data_type, conv = _protobuf_field(field, (*seen, descriptor.full_name))
        fields.append(pa.field(field.name, data_type, True))
        converters.append((field.name, _has_presence(field), conv))

    def convert(message: Any) -> Any:
        if message is None:
            return None
        out: dict[str, Any] = {}
        for name, presence, conv in converters:
            if presence and not message.HasField(name):
                out[name] = None
            else:
                out[name] = conv(getattr(message, name))
        return out

    return pa.struct(fields), convert


def _has_presence(field: Any) -> bool:
    """Whether a field tells "not set" from its default, as Protobuf defines it: a singular
    message, a proto3 `optional`, a oneof's member, a proto2 `optional` (null when not set); a
    plain proto3 scalar and a repeated field do not (their default when not set)."""
    return bool(field.has_presence)


def _is_repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf 6+; `label` is gone in 7
    return bool(repeated if repeated is not None else field.label == field.LABEL_REPEATED)


def _protobuf_field(field: Any, seen: tuple[str, ...]) -> tuple[pa.DataType, Callable[[Any], Any]]:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        key_type, key_conv = _protobuf_scalar(message.fields_by_name["key"], seen)
        value_type, value_conv = _protobuf_scalar(message.fields_by_name["value"], seen)
        # a map's entries by key (protobuf iterates them in an order of its own): both readers'
        return _map(key_type, value_type, True), lambda m: {key_conv(k): value_conv(m[k]) for k in sorted(m)}
    element, conv = _protobuf_scalar(field, seen)
    if _is_repeated(field):
        return _list(element, False), lambda values: [conv(v) for v in values]
    return element, conv


def _protobuf_scalar(field: Any, seen: tuple[str, ...]) -> tuple[pa.DataType, Callable[[Any], Any]]:
    if field.message_type is not None:
        if field.message_type.full_name == _PB_TIMESTAMP:
            return _TIMESTAMP, lambda ts: ts.ToDatetime(tzinfo=dt.UTC)
        return _protobuf_message(field.message_type, seen)
    if field.enum_type is not None:
        enum = field.enum_type

        def enum_name(number: int) -> str:
            value = enum.values_by_number.get(number)
            return value.name if value is not None else str(number)

        return pa.string(), enum_name
    kind = field.type
    if kind in _PB_INT32:
        return pa.int32(), _same
    if kind in (3, 16, 18, 7, 13, 6, 4):  # int64, sfixed64, sint64, fixed32, uint32, fixed64, uint64
        return pa.int64(), _same
    if kind == 1:
        return pa.float64(), _same
    if kind == 2:
        return pa.float32(), _same
    if kind == 8:
        return pa.bool_(), _same
    if kind == 9:
        return pa.string(), _same
    if kind == 12:
        return pa.binary(), _same
    raise SparkTypeError(f"Protobuf field {field.full_name} has type {kind}, which has no Spark type")


def _same(value: Any) -> Any:
    return value
