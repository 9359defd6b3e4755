"""The extension's Avro encoder (`native/src/encode.rs`, `write_table`'s `value` rows) held to the
Python path's writer: every body it gives is fastavro's for the row's Python value, and only for a
value the Python path's check takes; what it is not sure of gets no body (the row), or no encoder
(the column)."""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from avro_schemas import record_of
from contracts import contract, mock_factory, rule
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from native_support import required_extension

from pulsar_external_schema.codec.avro import standalone
from pulsar_external_schema.codec.value_checks import explain_avro
from pulsar_external_schema.reading.types import avro_type
from pulsar_external_schema.writing.python_values import python_values

CLICK = {
    "type": "record",
    "name": "Click",
    "namespace": "app",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "user", "type": ["null", "string"]},
        {"name": "ms", "type": "int"},
        {"name": "score", "type": "double"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 2}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attributes", "type": {"type": "map", "values": "long"}},
        {"name": "again", "type": ["null", "app.Kind"]},
    ],
}


def fastavro_body(parsed: Any, value: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, value)
    return out.getvalue()


def held_to_fastavro(schema: Any, column: pa.Array, prefix: bytes = b"") -> list[bytes | None]:
    """The encoder's bodies of `column`, each checked against fastavro's for the row's value."""
    module = required_extension()
    parsed = fastavro.parse_schema(schema)
    text = standalone(parsed)
    assert text is not None
    bodies: list[bytes | None] = module.AvroEncoder(text, column.type, prefix).encode(column).to_pylist()
    for value, body in zip(python_values(column), bodies, strict=True):
        if body is not None:
            assert explain_avro(parsed, value) is None, "a body for a value the Python path refuses"
            assert body == prefix + fastavro_body(parsed, value)
    return bodies


def click(i: int, **changes: Any) -> dict[str, Any]:
    row = {
        "id": i,
        "user": f"user-{i}" if i % 3 else None,
        "ms": i % 3000,
        "score": i / 7,
        "kind": "BUY" if i % 2 else "VIEW",
        "digest": b"\x00\x01",
        "tags": ["a", "b"][: i % 3],
        "attributes": [("n", i)] if i % 2 else [],
        "again": None if i % 2 else "VIEW",
    }
    return {**row, **changes}


CLICK_TYPE = pa.struct(
    [
        ("id", pa.int64()),
        ("user", pa.string()),
        ("ms", pa.int64()),
        ("score", pa.float64()),
        ("kind", pa.string()),
        ("digest", pa.binary(2)),
        ("tags", pa.list_(pa.string())),
        ("attributes", pa.map_(pa.string(), pa.int64())),
        ("again", pa.string()),
    ]
)


def test_every_row_of_a_record_the_python_path_takes_gets_fastavros_body() -> None:
    column = pa.array([click(i) for i in range(200)], CLICK_TYPE)
    bodies = held_to_fastavro(CLICK, column, b"\x00\x00\x00\x00\x07")
    assert all(body is not None for body in bodies)


@pytest.mark.parametrize(
    "changes",
    [
        {"id": None},  # a null where the schema takes none
        {"ms": 2**31},  # outside an Avro int
        {"kind": "SELL"},  # no symbol of the enum
        {"again": "SELL"},
        {"tags": ["a", None]},
        {"attributes": [("n", 1), ("n", 2)]},  # a key twice: a dict keeps one
    ],
)
def test_a_row_it_is_not_sure_of_gets_no_body_and_its_neighbours_do(changes: dict[str, Any]) -> None:
    column = pa.array([click(1), click(2, **changes), click(3)], CLICK_TYPE)
    assert [body is None for body in held_to_fastavro(CLICK, column)] == [False, True, False]


@pytest.mark.parametrize(
    ("schema", "column"),
    [
        (  # a field the record does not name, which the Python path refuses
            {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]},
            pa.array([{"a": 1, "b": 2}]),
        ),
        (  # a missing field, whose default the Python path writes
            {"type": "record", "name": "R", "fields": [{"name": "b", "type": "long", "default": 0}]},
            pa.array([{"a": 1}]),
        ),
        (  # a naive datetime: fastavro reads it in the process's time zone
            {"type": "long", "logicalType": "local-timestamp-micros"},
            pa.array([1], pa.timestamp("us")),
        ),
        (  # a decimal of another scale
            {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
            pa.array([1], pa.decimal128(10, 3)),
        ),
        (["null", "string", "long"], pa.array(["a"])),
        ("bytes", pa.array([b"a"])),  # written as the bytes themselves
        ("string", pa.array([b"a"])),
        ("float", pa.array([1.5])),  # a double rounded
        ("long", pa.array([1], pa.uint64())),
        ({"type": "long", "logicalType": "timestamp-millis"}, pa.array([1], pa.timestamp("ms"))),
    ],
)
def test_a_pair_it_is_not_sure_of_has_no_encoder(schema: Any, column: pa.Array) -> None:
    module = required_extension()
    with pytest.raises(module.NativeError):
        module.AvroEncoder(json.dumps(schema), column.type, b"")


def test_generated_records_are_written_as_fastavro_writes_them() -> None:
    """Every body the encoder writes is fastavro's, for generated schemas and rows; and it writes
    bodies for many of them (an encoder that declined every case would pass the first half)."""
    module = required_extension()
    examples: list[int] = []  # per example: how many rows got a body

    @given(data=st.data())
    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def written_as_fastavro_writes_them(data: st.DataObject) -> None:
        schema, values = data.draw(record_of(itertools.count()))
        rows = data.draw(st.lists(values, min_size=1, max_size=4))
        arrow, _ = avro_type(fastavro.parse_schema(schema))
        try:  # the readers' type of the schema, or the one pyarrow infers (int64 for an int, ...)
            column = pa.array(rows) if data.draw(st.booleans()) else pa.array(rows, arrow)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            assume(False)
        try:
            bodies = held_to_fastavro(schema, column)
        except module.NativeError:  # a pair it is not sure of: the Python path's
            bodies = []
        examples.append(sum(body is not None for body in bodies))

    written_as_fastavro_writes_them()
    assert sum(1 for n in examples if n) >= len(examples) // 4, examples  # ~60% here


ITEM = {
    "type": "record",
    "name": "Item",
    "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
}


@pytest.mark.parametrize(
    ("rules", "conditions"),
    [
        ([], ()),
        ([rule("positive", "CONDITION", "CEL", "WRITE", "message.qty > 0")], ("message.qty > 0",)),
        (  # READ rules do not run on a write
            [rule("known", "CONDITION", "CEL", "READ", "size(message.sku) > 0")],
            (),
        ),
        ([rule("upper", "CONDITION", "JSONATA", "WRITE", "qty > 0")], None),
        ([rule("rewrite", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'sku' ; value + '!'")], None),
    ],
)
def test_a_plan_tells_a_columnar_encoder_its_writer_and_its_conditions_in_the_subset(
    rules: list[dict[str, Any]], conditions: tuple[str, ...] | None
) -> None:
    """`ExternalSchema.columnar_writer`: None until the topic's first value makes the plan; then
    the writer and the WRITE conditions in the everyday CEL subset, or None where a rule is
    anything else (the plan runs it on every value)."""
    with mock_factory() as factory:
        schema = factory.avro(contract(ITEM, ruleSet={"domainRules": rules}))
        topic = "persistent://public/default/items"
        assert schema.columnar_writer(topic) is None
        schema.encode(topic, {"sku": "s", "qty": 1})
        columnar = schema.columnar_writer(topic)
        if conditions is None:
            assert columnar is None
        else:
            assert columnar is not None
            assert columnar.conditions == conditions
            assert json.loads(columnar.writer)["fields"] == ITEM["fields"]
            assert columnar.schema_id == schema.encode(topic, {"sku": "s", "qty": 2}).schema_id
            assert columnar.prefix == b""
        schema.close()


def test_in_prefix_mode_each_body_starts_with_the_id() -> None:
    with mock_factory(**{"schema.id.location": "prefix"}) as factory:
        schema = factory.avro(json.dumps(ITEM))
        topic = "persistent://public/default/items"
        payload = schema.encode(topic, {"sku": "s", "qty": 1}).data
        columnar = schema.columnar_writer(topic)
        assert columnar is not None and payload.startswith(columnar.prefix) and columnar.prefix
        column = pa.array([{"sku": "s", "qty": 1}])
        assert held_to_fastavro(ITEM, column, columnar.prefix) == [payload]
        schema.close()


@pytest.mark.parametrize("logical", ["timestamp-millis", "timestamp-micros"])
@pytest.mark.parametrize("unit", ["ms", "us"])
def test_times_are_written_as_fastavro_writes_their_datetimes(logical: str, unit: str) -> None:
    """Microseconds into milliseconds rounded down (before the epoch too), as fastavro's delta
    does; a time outside Python's years 1 to 9999 is no `datetime`: left to the Python path."""
    schema = {
        "type": "record",
        "name": "T",
        "fields": [{"name": "at", "type": {"type": "long", "logicalType": logical}}],
    }
    times = [0, -1, 1, -1500, 1999, 1_700_000_000_123_456, -62_135_596_800_000_000, 253_402_300_799_999_999]
    if unit == "ms":
        times = [t // 1000 for t in times]
    column = pa.array([{"at": t} for t in times], pa.struct([("at", pa.timestamp(unit, "UTC"))]))
    assert all(body is not None for body in held_to_fastavro(schema, column))
    outside = pa.array([{"at": t} for t in (times[-2] - 1, 2**62)], column.type)
    with pytest.raises(OverflowError):  # Python has no value for them
        outside.to_pylist()
    module = required_extension()
    encoder = module.AvroEncoder(json.dumps(schema), outside.type, b"")
    assert encoder.encode(outside).to_pylist() == [None, None]


def test_dates_are_days_since_the_epoch() -> None:
    schema = {
        "type": "record",
        "name": "D",
        "fields": [{"name": "on", "type": {"type": "int", "logicalType": "date"}}],
    }
    column = pa.array(
        [{"on": d} for d in (0, -1, 19_000, -719_162, 2_932_896)], pa.struct([("on", pa.date32())])
    )
    assert all(body is not None for body in held_to_fastavro(schema, column))


def test_a_none_value_gets_no_body_even_where_the_schema_takes_null() -> None:
    """The Python path refuses a row whose whole value is None, whatever the schema."""
    column = pa.array([1, None], pa.int64())
    for schema in (["null", "long"], ["long", "null"]):
        assert held_to_fastavro(schema, column)[1] is None


def test_what_the_extension_would_read_otherwise_is_left_to_the_producers_path() -> None:
    """An extension type (Python holds a `UUID`, the extension would see 16 bytes) and a column
    the extension cannot import (bad UTF-8): every row one by one, the write not failed."""
    required_extension()
    from types import SimpleNamespace

    from pulsar_external_schema.codec.plans import ColumnarWrite
    from pulsar_external_schema.writing.rows import TaskWriter

    fixed = {"type": "fixed", "name": "Id", "size": 16}
    writer = SimpleNamespace(columnar={})
    uuids = pa.array([b"\x00" * 16], pa.uuid())
    columnar = ColumnarWrite(json.dumps(fixed), b"\x00\x00\x00\x00\x01", b"")
    assert TaskWriter._columnar_bodies(writer, "t", columnar, uuids) is None  # type: ignore[arg-type]
    assert TaskWriter._columnar_bodies(writer, "t", columnar, uuids.storage) is not None  # type: ignore[arg-type]
    bad = pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(b"\x00\x00\x00\x00\x02\x00\x00\x00"), pa.py_buffer(b"\xff\xfe")]
    )
    text = ColumnarWrite('"string"', b"\x00\x00\x00\x00\x02", b"")
    assert TaskWriter._columnar_bodies(writer, "t", text, bad) is None  # type: ignore[arg-type]


def in_a_record(schema: Any) -> dict[str, Any]:
    return {"type": "record", "name": "W", "fields": [{"name": "v", "type": schema}]}


def held_in_a_record(schema: Any, column: pa.Array) -> list[bytes | None]:
    """`held_to_fastavro` of `column` as the field of a record (a bare bytes schema, a decimal's
    too, is written as the bytes themselves)."""
    return held_to_fastavro(in_a_record(schema), pa.StructArray.from_arrays([column], ["v"]))


def test_decimals_times_uuids_and_plain_integers_of_logical_types() -> None:
    """A decimal's unscaled value in fastavro's count of bytes (a byte more at each power of two),
    one of more digits than the precision left to the Python path (which refuses it); times of a
    day; a uuid's string as it is; an integer as itself under any logical type of an int or long."""
    import datetime as dt
    import decimal

    decimal_schema = {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}
    values = ["0.00", "-0.01", "1.27", "1.28", "-1.28", "-1.29", "9999.99", "-9999.99", "327.67", "-327.68"]
    column = pa.array([decimal.Decimal(v) for v in values], pa.decimal128(6, 2))
    assert all(body is not None for body in held_in_a_record(decimal_schema, column))
    wide = pa.array([decimal.Decimal("12345.67")], pa.decimal128(7, 2))  # 7 digits for 6
    module = required_extension()
    narrower = {**decimal_schema, "precision": 7}
    assert held_in_a_record(narrower, wide) != [None]
    with pytest.raises(module.NativeError):  # a wider column than the schema's precision
        module.AvroEncoder(json.dumps(in_a_record(decimal_schema)), pa.struct([("v", wide.type)]), b"")
    for schema, kind in (("time-millis", pa.time32("ms")), ("time-micros", pa.time64("us"))):
        base = "int" if schema == "time-millis" else "long"
        times = [
            dt.time(0),
            dt.time(23, 59, 59, 999_999 if kind == pa.time64("us") else 999_000),
            dt.time(12, 0, 1),
        ]
        for source in (kind, pa.time32("ms"), pa.time64("us")):
            fitted = (
                [t.replace(microsecond=t.microsecond // 1000 * 1000) for t in times]
                if source == pa.time32("ms")
                else times
            )
            column = pa.array(fitted, source)
            assert all(b is not None for b in held_in_a_record({"type": base, "logicalType": schema}, column))
    uuid_schema = {"type": "string", "logicalType": "uuid"}
    assert held_in_a_record(uuid_schema, pa.array(["8c5b1a3e-0000-4000-8000-000000000000", "not one"])) != [
        None,
        None,
    ]
    for logical in ("date", "time-millis", "timestamp-millis", "local-timestamp-micros", "anything"):
        base = "int" if logical in ("date", "time-millis") else "long"
        assert all(
            b is not None
            for b in held_in_a_record(
                {"type": base, "logicalType": logical}, pa.array([0, -5, 7], pa.int32())
            )
        )
