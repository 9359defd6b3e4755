"""Registry schemas as Spark types, and decoded values as rows of those types.

Avro follows Spark's own `from_avro` mapping (records are structs, enums strings, logical types
dates, timestamps and decimals). JSON Schema objects with `properties` are structs, `integer` is a
long, `number` a double. Protobuf messages follow Spark's `from_protobuf` (enums as their names,
`google.protobuf.Timestamp` as a timestamp). What Spark cannot type (an Avro union of several
non-null types, a JSON value without one type, a tuple) is a string column holding the value as
JSON text, so nothing is lost. Recursive types are refused: Spark has no recursive struct.

Each mapping comes with a converter from the decoded Python value to what Arrow takes for that
type, `None` where the value already fits (most Avro values), so decoding stays fast.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..errors import SparkTypeError
from ..evolution import json_model as jm

#: Turns a decoded value into one Arrow accepts for the mapped type; None means "as it is".
Converter = Callable[[Any], Any] | None


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


def avro_type(schema: Any) -> tuple[DataType, Converter]:
    """The Spark type of a parsed Avro schema (`fastavro.parse_schema` output) and its converter."""
    return _avro(schema, (), {})


def _avro(schema: Any, seen: tuple[str, ...], named: dict[str, Any]) -> tuple[DataType, Converter]:
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
        return DecimalType(int(schema["precision"]), int(schema.get("scale", 0))), None
    if logical == "date" and kind == "int":
        return DateType(), None
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return TimestampType(), None
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
        return TimestampNTZType(), None
    if logical == "time-millis" and kind == "int":
        return IntegerType(), _time_to(1_000)
    if logical == "time-micros" and kind == "long":
        return LongType(), _time_to(1_000_000)
    if logical == "uuid" and kind == "string":
        return StringType(), lambda v: None if v is None else str(v)
    primitive = _AVRO_PRIMITIVES.get(kind)
    if primitive is not None:
        return primitive, None
    if kind == "enum":
        return StringType(), None
    if kind == "fixed":
        return BinaryType(), None
    if kind == "array":
        element, conv = _avro(schema["items"], seen, named)
        return ArrayType(element, _nullable(schema["items"])), conv and _list_of(conv)
    if kind == "map":
        value, conv = _avro(schema["values"], seen, named)
        return MapType(StringType(), value, _nullable(schema["values"])), conv and _map_of(conv)
    if kind in ("record", "error"):
        name = schema.get("name", "")
        if name in seen:
            raise SparkTypeError(
                f"Avro record {name} is recursive; Spark has no recursive struct type "
                "(read the value as bytes with the BYTES schema instead)"
            )
        fields: list[StructField] = []
        converters: dict[str, Callable[[Any], Any]] = {}
        for field in schema["fields"]:
            data_type, conv = _avro(field["type"], (*seen, name), named)
            fields.append(StructField(field["name"], data_type, _nullable(field["type"])))
            if conv is not None:
                converters[field["name"]] = conv
        return StructType(fields), _struct_of(converters) if converters else None
    raise SparkTypeError(f"Avro type {kind!r} has no Spark type")


_AVRO_PRIMITIVES: dict[str, DataType] = {
    "null": StringType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}


def _avro_union(
    branches: list[Any], seen: tuple[str, ...], named: dict[str, Any]
) -> tuple[DataType, Converter]:
    others = [b for b in branches if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")]
    if len(others) == 1:
        return _avro(others[0], seen, named)
    for branch in others:  # still refuse recursion hidden in a union
        if isinstance(branch, str) and branch in seen:
            _avro(branch, seen, named)
    return StringType(), _json_text  # several non-null types: JSON text, as nothing else holds them all


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
) -> tuple[DataType, Converter]:
    """The Spark type of a JSON Schema (with its named references) and its value converter."""
    node = jm.parse_json_schema(schema, references)
    return _json(node, ())


def _json(node: jm.Node, seen: tuple[int, ...]) -> tuple[DataType, Callable[[Any], Any]]:
    node = jm.resolve(node)
    if id(node) in seen:
        raise SparkTypeError("the JSON Schema is recursive; Spark has no recursive struct type")
    if isinstance(node, jm.StringNode):
        return StringType(), _checked(str, "a string")
    if isinstance(node, jm.NumberNode):
        if node.requires_integer:
            return LongType(), _checked(int, "an integer")
        return DoubleType(), _number
    if isinstance(node, jm.BooleanNode):
        return BooleanType(), _checked(bool, "a boolean")
    if isinstance(node, jm.EnumNode) and all(isinstance(v, str) for v in _enum_values(node)):
        return StringType(), _checked(str, "a string")
    if isinstance(node, jm.ObjectNode) and node.properties:
        fields: list[StructField] = []
        converters: dict[str, Callable[[Any], Any]] = {}
        for name, child in node.properties.items():
            data_type, conv = _json(child, (*seen, id(node)))
            fields.append(StructField(name, data_type, True))
            converters[name] = conv
        return StructType(fields), _struct_of(converters)
    if isinstance(node, jm.ObjectNode) and node.additional_schema is not None and not node.pattern_properties:
        value, conv = _json(node.additional_schema, (*seen, id(node)))
        return MapType(StringType(), value, True), _mapping(conv)
    if isinstance(node, jm.ArrayNode) and node.all_items is not None and node.item_list is None:
        element, conv = _json(node.all_items, (*seen, id(node)))
        return ArrayType(element, True), _sequence(conv)
    if isinstance(node, jm.CombinedNode) and node.criterion in ("anyOf", "oneOf"):
        others = [s for s in node.subschemas if not isinstance(jm.resolve(s), jm.NullNode)]
        if len(others) == 1:
            return _json(others[0], seen)
    return StringType(), _json_text


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


def protobuf_type(descriptor: Any) -> tuple[DataType, Callable[[Any], Any]]:
    """The Spark struct of a Protobuf message descriptor, and a converter from a message to a dict."""
    return _protobuf_message(descriptor, ())


def _protobuf_message(descriptor: Any, seen: tuple[str, ...]) -> tuple[StructType, Callable[[Any], Any]]:
    if descriptor.full_name in seen:
        raise SparkTypeError(
            f"Protobuf message {descriptor.full_name} is recursive; Spark has no recursive struct type"
        )
    fields: list[StructField] = []
    converters: list[tuple[str, Any, Callable[[Any], Any]]] = []
    for field in descriptor.fields:
        data_type, conv = _protobuf_field(field, (*seen, descriptor.full_name))
        fields.append(StructField(field.name, data_type, True))
        converters.append((field.name, field, conv))

    def convert(message: Any) -> Any:
        if message is None:
            return None
        out: dict[str, Any] = {}
        for name, field, conv in converters:
            if _is_singular_message(field) and not message.HasField(name):
                out[name] = None
            else:
                out[name] = conv(getattr(message, name))
        return out

    return StructType(fields), convert


def _is_singular_message(field: Any) -> bool:
    return bool(field.message_type is not None and not _is_repeated(field))


def _is_repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf 6+; `label` is gone in 7
    return bool(repeated if repeated is not None else field.label == field.LABEL_REPEATED)


def _protobuf_field(field: Any, seen: tuple[str, ...]) -> tuple[DataType, Callable[[Any], Any]]:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        key_type, key_conv = _protobuf_scalar(message.fields_by_name["key"], seen)
        value_type, value_conv = _protobuf_scalar(message.fields_by_name["value"], seen)
        return MapType(key_type, value_type, True), lambda m: {
            key_conv(k): value_conv(v) for k, v in m.items()
        }
    element, conv = _protobuf_scalar(field, seen)
    if _is_repeated(field):
        return ArrayType(element, False), lambda values: [conv(v) for v in values]
    return element, conv


def _protobuf_scalar(field: Any, seen: tuple[str, ...]) -> tuple[DataType, Callable[[Any], Any]]:
    if field.message_type is not None:
        if field.message_type.full_name == _PB_TIMESTAMP:
            return TimestampType(), lambda ts: ts.ToDatetime(tzinfo=dt.UTC)
        return _protobuf_message(field.message_type, seen)
    if field.enum_type is not None:
        enum = field.enum_type

        def enum_name(number: int) -> str:
            value = enum.values_by_number.get(number)
            return value.name if value is not None else str(number)

        return StringType(), enum_name
    kind = field.type
    if kind in _PB_INT32:
        return IntegerType(), _same
    if kind in (3, 16, 18, 7, 13, 6, 4):  # int64, sfixed64, sint64, fixed32, uint32, fixed64, uint64
        return LongType(), _same
    if kind == 1:
        return DoubleType(), _same
    if kind == 2:
        return FloatType(), _same
    if kind == 8:
        return BooleanType(), _same
    if kind == 9:
        return StringType(), _same
    if kind == 12:
        return BinaryType(), _same
    raise SparkTypeError(f"Protobuf field {field.full_name} has type {kind}, which has no Spark type")


def _same(value: Any) -> Any:
    return value
