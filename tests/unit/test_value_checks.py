"""Values outside a schema's types are refused, never changed (`codec/value_checks.py`).

The property, for generated values of every kind in every slot of a schema: the check refuses
the value, or fastavro refuses it, or fastavro reads back what was given (up to Avro's own
promotions: an int written to a double reads as a float). And the generated fast form never
accepts what the exact rules refuse, so the two cannot disagree."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import math
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from contracts import mock_factory
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_external_schema import ValueOutsideSchemaError
from pulsar_external_schema.codec.value_checks import avro_check, explain_avro, explain_json, json_dumps

NESTED = {
    "type": "record",
    "name": "Inner",
    "fields": [{"name": "n", "type": "int"}, {"name": "s", "type": ["null", "string"], "default": None}],
}
SCHEMA: Any = parse_schema(
    {
        "type": "record",
        "name": "Outer",
        "namespace": "acme",
        "fields": [
            {"name": "i", "type": "int"},
            {"name": "l", "type": "long"},
            {"name": "f", "type": "float"},
            {"name": "d", "type": "double"},
            {"name": "b", "type": "boolean"},
            {"name": "z", "type": "null"},
            {"name": "s", "type": "string"},
            {"name": "y", "type": "bytes"},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
            {"name": "x", "type": {"type": "fixed", "name": "F", "size": 2}},
            {"name": "ai", "type": {"type": "array", "items": "int"}},
            {"name": "as", "type": {"type": "array", "items": "string"}},
            {"name": "ml", "type": {"type": "map", "values": "long"}},
            {"name": "r", "type": NESTED},
            {"name": "rs", "type": {"type": "array", "items": "acme.Inner"}},
            {"name": "u", "type": ["null", "int", "string"]},
            {"name": "uf", "type": ["null", "float"]},
            {"name": "ur", "type": ["null", "acme.Inner"]},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "dflt", "type": "int", "default": 3},
        ],
    }
)
GOOD: dict[str, Any] = {
    "i": 1,
    "l": 2,
    "f": 0.5,
    "d": 1.5,
    "b": True,
    "z": None,
    "s": "s",
    "y": b"y",
    "e": "A",
    "x": b"xy",
    "ai": [1, 2],
    "as": ["a"],
    "ml": {"k": 5},
    "r": {"n": 1},
    "rs": [{"n": 2, "s": "t"}],
    "u": 7,
    "uf": None,
    "ur": {"n": 3},
    "day": datetime.date(2024, 2, 29),
    "at": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
    "dflt": 4,
}

#: Values of every kind, for any slot.
ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1]),
    st.floats(allow_nan=True),
    st.sampled_from([3.4e38, 3.5e38, -3.5e38, 1e300, 2.5]),
    st.text(max_size=3),
    st.binary(max_size=3),
    st.sampled_from(["A", "C", b"xy", "xy"]),
    st.lists(st.integers(-5, 5) | st.floats(-5, 5), max_size=2),
    st.lists(st.text(max_size=2), max_size=2).map(tuple),
    st.dictionaries(st.text(max_size=2), st.integers(-5, 5) | st.floats(-5, 5), max_size=2),
    st.fixed_dictionaries({"n": st.integers(-5, 5) | st.floats(-5, 5) | st.booleans()}),
    st.just(("acme.Inner", {"n": 2.5})),
    st.just({"a", "b"}),
    st.sampled_from(
        [
            datetime.date(2020, 1, 1),
            datetime.datetime(2020, 1, 1, 12, tzinfo=datetime.UTC),
            decimal.Decimal("1.5"),
            uuid.UUID(int=1),
        ]
    ),
)


def _read(payload: bytes) -> Any:
    return schemaless_reader(io.BytesIO(payload), SCHEMA)


def _written(value: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, SCHEMA, value)
    return out.getvalue()


def _same(given: Any, read: Any) -> bool:
    """Whether `read` is `given` as Avro returns it (lists for tuples, floats for promoted ints)."""
    if isinstance(given, float) and isinstance(read, float):
        return given == read or (math.isnan(given) and math.isnan(read)) or _as_float32(given) == read
    if isinstance(given, int) and not isinstance(given, bool) and isinstance(read, float):
        return float(given) == read or _as_float32(float(given)) == read
    if isinstance(given, (list, tuple)) and isinstance(read, list):
        return len(given) == len(read) and all(_same(g, r) for g, r in zip(given, read, strict=True))
    if isinstance(given, dict) and isinstance(read, dict):
        return all(k in read and _same(given[k], read[k]) for k in given)  # nothing left out
    if isinstance(given, bytearray):
        return bool(bytes(given) == read)
    return bool(type(given) is type(read) and given == read)


def _as_float32(number: float) -> float:
    import struct

    try:
        return float(struct.unpack("<f", struct.pack("<f", number))[0])
    except OverflowError:
        return math.nan


def _check(schema: Any) -> Callable[[Any], None]:
    check = avro_check(schema)
    assert check is not None
    return check


CHECK = _check(SCHEMA)


@given(field=st.sampled_from(sorted(GOOD)), value=ANY)
@settings(max_examples=3000, deadline=None)
def test_a_value_is_refused_or_written_unchanged(field: str, value: Any) -> None:
    record = {**GOOD, field: value}
    problem = explain_avro(SCHEMA, record)
    try:
        CHECK(record)
    except ValueOutsideSchemaError as error:
        assert problem is not None, "the fast form refused what the exact rules take"
        assert error.path.split(".")[0].split("[")[0] == field
        return
    assert problem is None, f"the fast form took {value!r} in {field}, which the rules refuse: {problem}"
    try:
        payload = _written(record)
    except Exception:  # fastavro refuses it itself (a wrong string, bytes, enum, fixed)
        return
    try:
        read = _read(payload)
    except (ValueError, OverflowError):  # a number no Python date or datetime holds: written
        assert field in ("day", "at") and isinstance(value, int)  # as given, unreadable as one here
        return
    if field in ("day", "at") and isinstance(value, int):
        # the number a date or timestamp is stored as: read back as the date, which writes the same
        assert _written({**record, field: read[field]}) == payload
        return
    assert _same(value, read[field]), f"{value!r} in {field} was written as {read[field]!r}"


def test_the_good_record_passes_and_a_missing_field_with_a_default_is_written() -> None:
    CHECK(GOOD)
    without = {key: value for key, value in GOOD.items() if key != "dflt"}
    CHECK(without)
    assert _read(_written(without))["dflt"] == 3


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("i", 2.5, "field i: a float is not an Avro int (32-bit integer)"),
        ("i", 2**31, "field i: an int is not an Avro int (32-bit integer): out of range"),
        ("b", "yes", "field b: a str is not an Avro boolean (True or False)"),
        ("as", "abc", "field as: a str is not an Avro array (a list or tuple)"),
        ("ml", {"k": 1.5}, "field ml[*]: a float is not an Avro long (64-bit integer)"),
        ("rs", [{"n": 1}, {"n": 2.5}], "field rs[1].n: a float is not an Avro int (32-bit integer)"),
        ("ur", {"n": True}, "field ur.n: a bool is not an Avro int (32-bit integer)"),
        ("uf", 1e300, "field uf: a float is not an Avro float or null: out of range"),
        ("u", 2.5, "field u: a float is not any branch of the union [null, int, string]"),
        ("r", ("acme.Inner", {"n": 2.5}), "field r: a tuple is not record acme.Inner (a dict)"),
        ("ur", ("acme.Inner", {"n": 2.5}), "field ur.n: a float is not an Avro int (32-bit integer)"),
        ("day", datetime.datetime(2020, 1, 1, 12), "pass value.date()"),
        ("e", "C", "field e: a str is not a symbol of enum acme.E"),
        ("x", b"abc", "field x: a bytes is not fixed acme.F (2 bytes): it has 3"),
        ("i", None, "field i: None is not an Avro int (32-bit integer)"),
        ("r", {"n": 1, "m": 2}, "field r.m: an int is not a field of record acme.Inner: the record has no"),
        ("rs", [{"n": 1}, {"n": 2, "N": 3}], "field rs[1].N: an int is not a field of record acme.Inner"),
    ],
)
def test_each_refusal_names_the_field_its_type_and_the_schema_type(field: str, value: Any, said: str) -> None:
    with pytest.raises(ValueOutsideSchemaError) as raised:
        CHECK({**GOOD, field: value})
    assert said in str(raised.value)
    assert raised.value.path.startswith(field)


def test_a_missing_field_without_a_default_is_named() -> None:
    without = {key: value for key, value in GOOD.items() if key != "i"}
    with pytest.raises(ValueOutsideSchemaError, match=r"field i: None is not an Avro int .*no default"):
        CHECK(without)


def test_a_record_inside_itself_is_checked_at_every_depth() -> None:
    node = parse_schema(
        {
            "type": "record",
            "name": "Node",
            "fields": [
                {"name": "v", "type": "int"},
                {"name": "kids", "type": {"type": "array", "items": "Node"}},
            ],
        }
    )
    check = _check(node)
    check({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3, "kids": []}]}]})
    with pytest.raises(ValueOutsideSchemaError, match=r"field kids\[0\]\.kids\[0\]\.v: a float"):
        check({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3.5, "kids": []}]}]})


def test_a_schema_fastavro_checks_itself_has_no_check() -> None:
    assert avro_check(parse_schema("string")) is None
    assert avro_check(parse_schema("int")) is not None
    strings = parse_schema(
        {
            "type": "record",
            "name": "S",
            "fields": [{"name": "a", "type": "string"}, {"name": "b", "type": "bytes"}],
        }
    )
    _check(strings)({"a": "x", "b": b"y"})  # a record's keys are checked: fastavro drops unknown ones
    with pytest.raises(ValueOutsideSchemaError, match="field c: a str is not a field of record S"):
        _check(strings)({"a": "x", "b": b"y", "c": "z"})


def test_a_key_the_record_does_not_name_is_refused_on_both_paths_not_left_out() -> None:
    """fastavro (and so confluent-kafka's serializer) writes a dict's known fields and drops the
    rest: `qyt` for `qty` lost the value and wrote `qty`'s default. Java's `GenericRecord` (and
    Spark's Avro writer) refuse a field the schema does not name; so does this package."""
    record = {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [{"name": "id", "type": "long"}, {"name": "qty", "type": "int", "default": 0}],
    }
    schema = mock_factory().avro(json.dumps(record))
    topic = "persistent://acme/shop/orders"
    for _ in range(2):  # the first message goes the reference path, the second the compiled one
        assert schema.encode(topic, {"id": 1, "qty": 2}).data == b"\x02\x04"
        with pytest.raises(ValueOutsideSchemaError) as raised:
            schema.encode(topic, {"id": 1, "qyt": 2})
        assert "field qyt: an int is not a field of record acme.Order" in str(raised.value)
        assert raised.value.path == "qyt" and raised.value.topic == topic


def test_json_refuses_nan_and_infinity_where_they_are() -> None:
    assert json_dumps({"a": [1, 2.5, "é"]}) == '{"a":[1,2.5,"é"]}'.encode()  # as confluent-kafka's writer
    for number in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            json_dumps({"a": {"b": [1, number]}})
        problem = explain_json({"a": {"b": [1, number]}})
        assert problem is not None and problem.path == "a.b[1]"
    assert explain_json({"a": 1.5}) is None


def test_json_schema_encode_refuses_nan_on_both_paths() -> None:
    factory = mock_factory()
    schema = factory.json(
        json.dumps({"type": "object", "properties": {"n": {"type": "number"}, "m": {"type": "number"}}})
    )
    topic = "persistent://acme/shop/measures"
    for _ in range(2):  # the first message goes the reference path, the second the compiled one
        assert schema.encode(topic, {"n": 1.5}).data == b'{"n":1.5}'
        for bad in (math.nan, math.inf):
            with pytest.raises(ValueOutsideSchemaError) as raised:
                schema.encode(topic, {"n": 1.5, "m": bad})
            assert "field m: a float is not a JSON number: NaN and Infinity are not JSON" in str(raised.value)
            assert raised.value.topic == topic and raised.value.subject == "acme.shop.measures-value"
