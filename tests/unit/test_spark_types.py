"""Column types from schemas (reading/types.py, as the Spark source takes them): Avro, JSON Schema
and Protobuf, as Spark's own `from_avro` / `from_protobuf` map them."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

import fastavro
import pyarrow as pa
from google.protobuf import descriptor_pb2
from pyspark.sql.types import StructType
from schemas import add_fields, message_class

from pulsar_external_schema.errors import SparkTypeError
from pulsar_external_schema.reading import types


def spark(mapped: tuple[pa.DataType, Any]) -> tuple[Any, Any]:
    """The Spark type the source takes from an Arrow mapping, which pyspark maps back to the same
    Arrow type: the columns Spark's tasks are given are the mapping's own."""
    from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type

    arrow, convert = mapped
    data_type = from_arrow_type(arrow)
    assert to_arrow_type(data_type, timezone="UTC") == arrow
    return data_type, convert


def avro_type(schema: Any) -> tuple[Any, Any]:
    return spark(types.avro_type(schema))


def json_type(schema: str) -> tuple[Any, Any]:
    return spark(types.json_type(schema))


def protobuf_type(descriptor: Any) -> tuple[Any, Any]:
    return spark(types.protobuf_type(descriptor))


def test_avro_types_follow_sparks_from_avro() -> None:
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "R",
            "fields": [
                {"name": "i", "type": "int"},
                {"name": "l", "type": ["null", "long"]},
                {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
                {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}},
                {
                    "name": "d",
                    "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
                },
                {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
                {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
                {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
                {"name": "m", "type": {"type": "map", "values": "double"}},
                {"name": "a", "type": {"type": "array", "items": ["null", "string"]}},
                {"name": "either", "type": ["null", "int", "string"]},
            ],
        }
    )
    data_type, convert = avro_type(schema)
    assert data_type.simpleString() == (
        "struct<i:int,l:bigint,e:string,f:binary,d:decimal(9,2),day:date,ts:timestamp,local:timestamp_ntz,"
        "t:int,u:string,m:map<string,double>,a:array<string>,either:string>"
    )
    assert isinstance(data_type, StructType)
    assert [f.nullable for f in data_type.fields][:3] == [False, True, False]
    assert convert is not None
    import uuid

    value = {"t": dt.time(0, 0, 1, 500_000), "u": uuid.UUID(int=1), "either": 5, "d": decimal.Decimal("1.50")}
    out = convert(value)
    assert out["t"] == 1500 and out["u"] == "00000000-0000-0000-0000-000000000001" and out["either"] == "5"


def test_plain_avro_records_need_no_conversion() -> None:
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "P",
            "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}],
        }
    )
    assert avro_type(schema)[1] is None  # values go to Arrow as fastavro gives them


def test_recursive_avro_is_refused_with_a_reason() -> None:
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "Node",
            "fields": [{"name": "next", "type": ["null", "Node"]}],
        }
    )
    with pytest.raises(SparkTypeError, match="Node is recursive"):
        avro_type(schema)


def test_json_schema_types_with_refs_and_fallbacks() -> None:
    schema = {
        "$defs": {"city": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "ok": {"type": "boolean"},
            "where": {"$ref": "#/$defs/city"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "maybe": {"type": ["string", "null"]},
            "kind": {"enum": ["a", "b"]},
            "mixed": {"enum": ["a", 1]},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "any": {},
        },
    }
    data_type, convert = json_type(json.dumps(schema))
    assert data_type.simpleString() == (
        "struct<n:bigint,x:double,ok:boolean,where:struct<name:string>,tags:array<string>,"
        "counts:map<string,bigint>,maybe:string,kind:string,mixed:string,pair:string,any:string>"
    )
    assert convert is not None
    out = convert(
        {"n": 1, "x": 2, "where": {"name": "Oslo"}, "mixed": 1, "pair": ["a", 1], "any": {"k": [1]}}
    )
    assert out["mixed"] == "1" and out["pair"] == '["a",1]' and out["any"] == '{"k":[1]}' and out["x"] == 2
    with pytest.raises(TypeError, match="expected an integer"):
        convert({"n": "one"})
    with pytest.raises(TypeError, match="expected a boolean"):
        convert({"ok": 1})


def test_recursive_json_schema_is_refused() -> None:
    schema = {
        "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
        "$ref": "#/$defs/n",
    }
    with pytest.raises(SparkTypeError, match="recursive"):
        json_type(json.dumps(schema))


def _message_class() -> Any:
    label = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="unit/kinds.proto",
        package="unit",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"],
    )
    message = proto.message_type.add(name="Kinds")
    message.enum_type.add(name="Color").value.extend(
        [
            descriptor_pb2.EnumValueDescriptorProto(name="RED", number=0),
            descriptor_pb2.EnumValueDescriptorProto(name="BLUE", number=1),
        ]
    )
    optional = label.LABEL_OPTIONAL
    add_fields(
        message,
        [
            ("i", 1, label.TYPE_INT32, optional, None),
            ("u", 2, label.TYPE_UINT64, optional, None),
            ("x", 7, label.TYPE_FIXED32, optional, None),
            ("f", 3, label.TYPE_FLOAT, optional, None),
            ("b", 4, label.TYPE_BYTES, optional, None),
            ("color", 5, label.TYPE_ENUM, optional, ".unit.Kinds.Color"),
            ("at", 6, label.TYPE_MESSAGE, optional, ".google.protobuf.Timestamp"),
        ],
    )
    return message_class(proto, "unit.Kinds")


def test_protobuf_types_follow_sparks_from_protobuf() -> None:
    kinds = _message_class()
    data_type, convert = protobuf_type(kinds.DESCRIPTOR)
    assert (
        data_type.simpleString()
        == "struct<i:int,u:bigint,x:bigint,f:float,b:binary,color:string,at:timestamp>"
    )
    message = kinds(i=-3, u=7, b=b"\x00", color=1, x=4_000_000_000)
    message.at.FromSeconds(86_400)
    assert convert(message) == {
        "i": -3,
        "u": 7,
        "f": 0.0,
        "b": b"\x00",
        "color": "BLUE",
        "at": dt.datetime(1970, 1, 2, tzinfo=dt.UTC),
        "x": 4_000_000_000,
    }


@pytest.mark.parametrize(("precision", "scale"), [(39, 2), (40, 0)])
def test_a_decimal_no_column_holds_is_refused_saying_why(precision: int, scale: int) -> None:
    bytes_decimal = {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    with pytest.raises(SparkTypeError, match=rf"Avro decimal\({precision}, {scale}\) has no column type"):
        types.avro_type(fastavro.parse_schema(bytes_decimal))


def test_a_field_with_presence_that_is_not_set_is_null_and_one_without_keeps_its_default() -> None:
    # Protobuf's presence: a proto3 `optional`, a oneof member and a message are null unless set
    # (set to their default, they are that default); a plain proto3 scalar has no presence
    from schemas import Payment as payment

    data_type, convert = protobuf_type(payment.DESCRIPTOR)
    assert (
        data_type.simpleString()
        == "struct<id:bigint,card:string,iban:string,note:string,line:struct<sku:string>>"
    )
    assert convert(payment(iban="iban-2")) == {
        "id": 0,
        "card": None,
        "iban": "iban-2",
        "note": None,
        "line": None,
    }
    assert convert(payment(id=7, card="", note="")) == {
        "id": 7,
        "card": "",
        "iban": None,
        "note": "",
        "line": None,
    }
    assert convert(payment(line={})) == {
        "id": 0,
        "card": None,
        "iban": None,
        "note": None,
        "line": {"sku": ""},
    }
