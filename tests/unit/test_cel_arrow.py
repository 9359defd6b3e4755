"""READ conditions over an Arrow column (tasks/conditions.py), held to the Python form.

The column is what the Spark source builds (fastavro's values through the source's converters);
the records the Python form sees are fastavro's own values. Where the column form gives True or
False, the Python form (held to cel-cpp by test_cel_subset.py) must give the same, without
raising `Unsupported`: a row the column form passes is never judged again. Generated
expressions over generated records of a schema with every kind of field."""

from __future__ import annotations

import datetime as dt
import io
import uuid
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

import fastavro
import pyarrow as pa
from cel_conditions import subset_conditions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_external_schema.rules.cel_subset import Unsupported, compile_condition
from pulsar_external_schema.tasks.conditions import avro_kinds, compile_conditions, passing

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "R",
    "fields": [
        {"name": "i", "type": "long"},
        {"name": "k", "type": "int"},
        {"name": "n", "type": ["null", "long"]},
        {"name": "f", "type": "double"},
        {"name": "g", "type": "float"},
        {"name": "s", "type": "string"},
        {"name": "ns", "type": ["null", "string"]},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "b", "type": "bytes"},
        {"name": "x", "type": {"type": "fixed", "name": "X", "size": 2}},
        {"name": "t", "type": "boolean"},
        {"name": "l", "type": {"type": "array", "items": "long"}},
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {"name": "r", "type": {"type": "record", "name": "In", "fields": [
            {"name": "a", "type": "long"}, {"name": "s", "type": ["null", "string"]}]}},
        {"name": "nr", "type": ["null", {"type": "record", "name": "In2", "fields": [
            {"name": "a", "type": "long"}]}]},
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "z", "type": "null"},
    ],
}  # fmt: skip
PARSED = fastavro.parse_schema(SCHEMA)
FIELDS = [f["name"] for f in SCHEMA["fields"]] + ["r.a", "r.s", "nr.a", "absent", "r.absent"]

small_ints = st.integers(-3, 3)
records = st.fixed_dictionaries(
    {
        "i": st.one_of(small_ints, st.integers(-(2**63), 2**63 - 1)),
        "k": st.integers(-(2**31), 2**31 - 1) | small_ints,
        "n": st.none() | small_ints,
        "f": st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1.5, 2.0]),
        "g": st.floats(width=32) | st.sampled_from([0.1, 1.5]),
        "s": st.text(max_size=4) | st.sampled_from(["", "a", "ab", "é", "zz"]),
        "ns": st.none() | st.sampled_from(["", "a", "é"]),
        "e": st.sampled_from(["A", "B"]),
        "b": st.binary(max_size=3),
        "x": st.binary(min_size=2, max_size=2),
        "t": st.booleans(),
        "l": st.lists(small_ints, max_size=3),
        "m": st.dictionaries(st.sampled_from(["a", "b", "\x00"]), small_ints, max_size=2),
        "r": st.fixed_dictionaries({"a": small_ints, "s": st.none() | st.sampled_from(["", "a"])}),
        "nr": st.none() | st.fixed_dictionaries({"a": small_ints}),
        "d": st.dates(dt.date(1970, 1, 1), dt.date(2100, 1, 1)),
        "u": st.uuids(),
        "z": st.none(),
    }
)
literals = st.one_of(
    st.sampled_from(["0", "1", "2", "-1", "3", "0.0", "1.5", "-2.5", "1e3", "0.1", "true", "false", "null"]),
    st.sampled_from(["''", "'a'", '"ab"', "'é'", "'A'", "'zz'"]),
)
expressions = subset_conditions(
    FIELDS, literals, ["message.t", "true", "message.n == null", "message.nr.a > 0"]
)


def column(values: list[dict[str, Any]]) -> tuple[list[Any], Any]:
    """fastavro's values (through the wire) and the Spark source's column of them."""
    from pulsar_external_schema.reading.types import avro_type

    decoded = []
    for value in values:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, PARSED, value)
        decoded.append(fastavro.schemaless_reader(io.BytesIO(out.getvalue()), PARSED, None))
    arrow, converter = avro_type(PARSED)
    converted = [converter(v) if converter else v for v in decoded]
    return decoded, pa.array(converted, arrow)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, min_size=1, max_size=6), st.lists(expressions, min_size=1, max_size=2))
def test_the_column_form_answers_only_as_the_python_form_does(
    values: list[dict[str, Any]], texts: list[str]
) -> None:
    """Each condition's True and False, which the native reader trusts: True to pass a row, and
    both to give rows judged alike one outcome (`native.Finisher`)."""
    decoded, array = column(values)
    assert_answers_as_the_python_form(
        texts, compile_conditions(tuple(texts), avro_kinds(PARSED)), array, decoded
    )


def assert_answers_as_the_python_form(
    texts: list[str], evaluate: Any, array: pa.Array, records: list[dict[str, Any]]
) -> None:
    """Where the column form (`evaluate`, over `array`) gives a verdict, the Python form gives
    the same of the row's record; a row it passes, every Python form passes."""
    python = [compile_condition(text) for text in texts]
    if evaluate is None:
        return  # every row goes to the per-message path
    assert all(p is not None for p in python)  # the column form is never wider than the Python one
    verdicts = evaluate(array)
    assert len(verdicts) == len(texts)
    passed = passing(verdicts).to_pylist()
    for row, record in enumerate(records):
        results = []
        for condition, verdict in zip(python, verdicts, strict=True):
            assert condition is not None
            try:
                result = condition(record)
            except Unsupported:
                result = None
            judged = verdict[row].as_py()
            if judged is not None:
                assert judged is result, (texts, record)
            results.append(result)
        if passed[row]:
            assert all(r is True for r in results), (texts, record)


def test_fields_the_python_form_refuses_are_never_judged() -> None:
    kinds = avro_kinds(PARSED)
    assert compile_conditions(("message.d == 1",), kinds) is None  # a date
    assert compile_conditions(("size(message.u) > 0",), kinds) is None  # a UUID
    assert compile_conditions(("size(message.m) > 0",), kinds) is None  # a map (keys unchecked)
    assert compile_conditions(("message.i.foo(1)",), kinds) is None  # outside the subset


def test_records_are_not_ordered() -> None:
    _, array = column([_example()])
    evaluate = compile_conditions(("message.r < message.r", "message.l == message.l"), avro_kinds(PARSED))
    assert evaluate is not None
    assert [v.to_pylist() for v in evaluate(array)] == [[None], [None]]
    assert passing(evaluate(array)).to_pylist() == [False]


def test_the_everyday_condition() -> None:
    values = [
        {**_example(), "s": "abc", "f": 11.0},
        {**_example(), "s": "x" * 60, "f": 11.0},
        {**_example(), "s": "abc", "f": 1.0},
    ]
    _, array = column(values)
    evaluate = compile_conditions(("size(message.s) < 50 && message.f > 10.0",), avro_kinds(PARSED))
    assert evaluate is not None
    assert passing(evaluate(array)).to_pylist() == [True, False, False]
    both = compile_conditions(("size(message.s) < 50", "message.f > 10.0"), avro_kinds(PARSED))
    assert both is not None
    assert [v.to_pylist() for v in both(array)] == [[True, False, True], [True, True, False]]


def _example() -> dict[str, Any]:
    return {
        "i": 1, "k": 1, "n": None, "f": 1.0, "g": 1.0, "s": "", "ns": None, "e": "A", "b": b"",
        "x": b"ab", "t": True, "l": [], "m": {}, "r": {"a": 1, "s": None}, "nr": None,
        "d": dt.date(2024, 1, 1), "u": uuid.UUID(int=1), "z": None,
    }  # fmt: skip


JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "t": {"type": "boolean"},
        "l": {"type": "array", "items": {"type": "string"}},
        "li": {"type": "array", "items": {"type": "integer"}},
        "f": {"type": "number"},
        "o": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "m": {"type": "object", "additionalProperties": {"type": "integer"}},
        "ns": {"anyOf": [{"type": "null"}, {"type": "string"}]},
        "opt": {"type": "string"},
        "no": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
    },
    "required": ["s", "i", "t", "l", "li", "f", "o", "m", "ns"],
}
JSON_FIELDS = [*JSON_SCHEMA["properties"], "o.a", "x", "absent"]
json_objects = st.fixed_dictionaries(
    {
        "s": st.text(max_size=3) | st.sampled_from(["", "a", "é"]),
        "i": small_ints | st.integers(-(2**63), 2**63 - 1),
        "t": st.booleans(),
        "l": st.lists(st.sampled_from(["", "a", "é"]), max_size=2),
        "li": st.lists(small_ints, max_size=2),
        "f": small_ints | st.sampled_from([0.0, 1.5, -2.5, 2.0]),
        "o": st.fixed_dictionaries({}, optional={"a": small_ints, "\x00": small_ints}),
        "m": st.dictionaries(st.sampled_from(["a", "\x00"]), small_ints, max_size=2),
        "ns": st.none() | st.sampled_from(["", "a"]),
    },
    optional={
        "opt": st.sampled_from(["", "a"]),
        "no": st.none() | small_ints,
        "x": small_ints | st.just({"\x00": 1}) | st.just(2**64),
    },
)
json_expressions = subset_conditions(
    JSON_FIELDS, literals, ["message.t", "message.ns == null", "message.o.a > 0", "message.no == null"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_objects, min_size=1, max_size=6), st.lists(json_expressions, min_size=1, max_size=2))
def test_over_json_schema_values_the_column_form_answers_only_as_the_python_form_does(
    values: list[dict[str, Any]], texts: list[str]
) -> None:
    """As above, over the column of JSON Schema values (`json_type`'s, as the native reader
    builds it) and the objects the Python path reads from the same bodies: numbers held as ints
    and floats, optional keys missing, keys the schema does not name, objects with a NUL key."""
    from pulsar_external_schema.reading.types import json_type
    from pulsar_external_schema.tasks.conditions import json_kinds

    arrow, converter = json_type(JSON_SCHEMA)
    array = pa.array([converter(v) if converter else v for v in values], arrow)
    kinds = json_kinds(arrow, frozenset(JSON_SCHEMA["required"]))
    assert_answers_as_the_python_form(
        texts, compile_conditions(tuple(texts), kinds, open_record=True), array, values
    )


def test_over_json_schema_values_only_plain_fields_are_judged() -> None:
    from pulsar_external_schema.reading.types import json_type
    from pulsar_external_schema.tasks.conditions import json_kinds

    arrow, _ = json_type(JSON_SCHEMA)
    kinds = json_kinds(arrow, frozenset(JSON_SCHEMA["required"]))
    judged = (
        "size(message.s) > 0 && message.i < 3",
        "message.t || size(message.l) == 0",
        "message.ns == null",
        "message.opt == 'a'",  # optional: judged where the body has it
    )
    assert compile_conditions(judged, kinds, open_record=True) is not None
    for text in (
        "message.f > 1.5",  # a number: an int or a float to Python
        "message.o.a > 0",  # an object: its own keys unchecked
        "size(message.m) > 0",  # a map
        "message.i > 0 || message.x > 0",  # a key the schema does not name
    ):
        assert compile_conditions((text,), kinds, open_record=True) is None, text
    # an optional field is judged only where the column holds a value: a null is a missing key
    evaluate = compile_conditions(("message.opt == 'a'", "message.s == 'a'"), kinds, open_record=True)
    assert evaluate is not None
    two = pa.struct([("opt", pa.string()), ("s", pa.string())])
    rows = pa.array([{"opt": "a", "s": "a"}, {"opt": None, "s": "a"}], two)
    assert [v.to_pylist() for v in evaluate(rows)] == [[True, None], [True, True]]
    evaluate = compile_conditions(judged[:1], json_kinds(arrow, frozenset()), open_record=True)
    assert evaluate is not None  # nothing required by the writer: judged where given
    assert [v.to_pylist() for v in evaluate(pa.array([{"s": None, "i": 1}], arrow))] == [[None]]
