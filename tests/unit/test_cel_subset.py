"""The Python form of everyday CEL conditions (rules/cel_subset.py), held to cel-cpp.

Where the Python form says True, cel-cpp must say True, without an error: that is all a compiled
condition trusts. Where it says False and cel-cpp evaluates, they agree too (a False goes to
cel-cpp anyway, which may also fail: `false && <error>` is false for both, but cel-cpp cannot
take a lone surrogate at all). Generated expressions over generated records, thousands of them."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
from cel_conditions import subset_conditions
from cel_expr_python import cel as cel_cpp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_external_schema.rules.cel import (
    GIVE_UP_AFTER,
    CompiledCel,
    CompiledCondition,
    ConditionNotMet,
    _bind_message,
)
from pulsar_external_schema.rules.cel_subset import Unsupported, compile_condition

FIELDS = ("i", "f", "s", "b", "t", "n", "l", "m", "absent")
COMPILED = CompiledCel()

values = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["", "a", "ab", "é", "\x00", "\ud800", "zz"]),
    st.binary(max_size=4),
    st.booleans(),
    st.none(),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(-3, 3), max_size=2),
)
records = st.fixed_dictionaries({name: values for name in FIELDS if name != "absent"})

literals = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str),
    st.sampled_from(["0", "1", "2", "-1", "0.0", "1.5", "-2.5", "1e3", "true", "false", "null"]),
    st.sampled_from(["''", "'a'", '"ab"', "'é'", "'zz'"]),
)
expressions = subset_conditions(FIELDS, literals, ["message.t", "true"])


def cel_cpp_result(text: str, record: dict[str, Any]) -> tuple[bool, Any]:
    """(evaluated without an error, value), as the compiled engine runs the condition."""
    program = COMPILED.program(text, False, None)
    result = program.expression.eval(data={"message": _bind_message(record, program.fields)})
    if result.type() == cel_cpp.Type.ERROR:
        return False, None
    return True, result.value()


@settings(
    max_examples=int(os.environ.get("CEL_SUBSET_EXAMPLES", "3000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(expressions, records)
def test_where_the_python_form_answers_cel_cpp_gives_the_same_bool(text: str, record: dict[str, Any]) -> None:
    try:
        COMPILED.program(text, False, None)
    except Exception:
        return  # not CEL (a literal out of range, ...): never reaches a condition
    passes = compile_condition(text)
    assert passes is not None, text  # every generated expression is in the subset
    try:
        answer = passes(record)
    except Unsupported:
        return
    try:
        evaluated, value = cel_cpp_result(text, record)
    except RuntimeError:  # a value cel-expr-python cannot convert
        evaluated, value = False, None
    if answer is True:
        assert evaluated and value is True, (text, record, value)
    elif evaluated:
        assert value is answer, (text, record, answer, value)


@pytest.mark.parametrize(
    ("text", "record", "answer"),
    [
        ("size(message.name) < 50", {"name": "abc"}, True),
        ("size(message.name) < 3", {"name": "abc"}, False),
        ("size(message.name) == 2", {"name": "é\x00"}, True),  # code points, NUL included
        ("message.age >= 18 && message.name != ''", {"age": 18, "name": "a"}, True),
        ("message.score > 0.5 || message.vip", {"score": 0.1, "vip": True}, True),
        ("!(message.n == null)", {"n": None}, False),
        ("message.a.b == 'x'", {"a": {"b": "x"}}, True),
        ("message.x > -3", {"x": -2}, True),
        ("message.f != message.f", {"f": math.nan}, True),
        ("message.i > 0", {"i": 1, "a": {"b": [2**64]}}, True),  # a field not named: not converted
    ],
)
def test_everyday_conditions(text: str, record: dict[str, Any], answer: bool) -> None:
    passes = compile_condition(text)
    assert passes is not None
    assert passes(record) is answer
    assert cel_cpp_result(text, record) == (True, answer)


@pytest.mark.parametrize(
    ("text", "record"),
    [
        ("message.age > 1", {"age": 2.5}),  # double against int: CEL's heterogeneous numbers
        ("message.age > 1", {"age": True}),  # bool is not an int in CEL
        ("message.age > 1", {"age": 2**70}),  # out of int64: cel-cpp's conversion decides
        ("message.age > 1", {}),  # no such field: an error in CEL
        ("size(message.name) > 1", {"name": "\ud800x"}),  # not valid Unicode
        ("message.name == 'a'", {"name": ("string", "a")}),  # fastavro's union form
        ("message.t && message.u", {"t": True, "u": 1}),  # && of a non-bool
        # cel-cpp converts every field named before it runs: one it cannot take fails the whole
        # evaluation, even where `false &&` never reads it
        ("!(message.i < 0 && message.t)", {"i": 1, "t": 2**64}),
    ],
)
def test_records_the_python_form_leaves_to_cel_cpp(text: str, record: dict[str, Any]) -> None:
    passes = compile_condition(text)
    assert passes is not None
    with pytest.raises(Unsupported):
        passes(record)


@pytest.mark.parametrize(
    "text",
    [
        "has(message.a)",
        "message.a.startsWith('x')",
        "message.a + 1 > 2",
        "message.a in [1, 2]",
        "message.a < 2 < 3",
        "message",
        "now > message.t",
        "r'x' == message.a",
        "b'x' == message.a",
        "1u < message.a",
        "0x10 < message.a",
        "'a\\'b' == message.a",
        "message.a > 1 ? true : false",
        "9223372036854775808 > message.a",
    ],
)
def test_expressions_outside_the_subset_stay_on_cel_cpp(text: str) -> None:
    assert compile_condition(text) is None


class _Rule:
    def __init__(self, expr: str) -> None:
        self.expr, self.name = expr, "r"
        self.params: dict[str, str] = {}


class _Context:
    def __init__(self, expr: str) -> None:
        self.rule = _Rule(expr)

    def get_parameter(self, name: str) -> Any:
        return None


def test_a_compiled_condition_trusts_the_python_form_only_to_pass() -> None:
    condition = CompiledCondition(COMPILED, _Context("size(message.name) < 3"), None)  # type: ignore[arg-type]
    record = {"name": "ab"}
    assert condition(record) is record
    with pytest.raises(ConditionNotMet):
        condition({"name": "abc"})
    with pytest.raises(ConditionNotMet):  # no such field: cel-cpp's error, as before
        condition({})


def test_a_condition_stops_asking_the_python_form_when_it_never_judges_its_records() -> None:
    condition = CompiledCondition(COMPILED, _Context("message.score > 0"), None)  # type: ignore[arg-type]
    for _ in range(GIVE_UP_AFTER - 1):  # a double against an int literal: cel-cpp's to judge
        assert condition({"score": 1.5}) == {"score": 1.5}
    assert condition._passes is not None
    assert condition({"score": 2}) == {"score": 2}  # one it judges: the count starts again
    for _ in range(GIVE_UP_AFTER):
        assert condition({"score": 1.5}) == {"score": 1.5}
    assert condition._passes is None
    assert condition({"score": 2}) == {"score": 2}  # cel-cpp alone, same answers
    with pytest.raises(ConditionNotMet):
        condition({"score": -1.5})
