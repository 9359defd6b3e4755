"""The native extension's JSON codec (`native/src/json.rs`) held to the Python path it stands in
for (`codec/json.py`, `codec/json_validation.py`).

It must answer only what the Python path would answer the same way: jsonschema-rs's verdict on
plain JSON values (Hypothesis draws schemas under each draft, and values in and around them),
orjson's bytes for what it writes and orjson's value for what it reads; everything else goes to
the Python path, which decides and words it. Last, a JSON `ExternalSchema` gives the same bytes,
values and errors with the extension and without it.
"""

from __future__ import annotations

import decimal
import enum
import json
import math
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from contracts import contract, mock_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_schemas import drafted_schemas, json_values, reference_for, values
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from pulsar_external_schema import _native
from pulsar_external_schema.codec import WritePlan
from pulsar_external_schema.codec.json_validation import fast_validator
from pulsar_external_schema.codec.value_checks import json_dumps, json_loads
from pulsar_external_schema.errors import ExternalSchemaError

extension = _native.extension()
pytestmark = pytest.mark.usefixtures("native_extension")


def _plain(value: Any, depth: int = 0) -> bool:
    """The module docstring's plain JSON, said in Python."""
    kind = type(value)
    if value is None or kind is bool or (kind is str and _encodable(value)):
        return True
    if kind is int:
        return bool(-(2**63) <= value < 2**64)
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        return depth < 64 and all(_plain(item, depth + 1) for item in value)
    if kind is dict:
        return depth < 64 and all(
            type(k) is str and _encodable(k) and _plain(v, depth + 1) for k, v in value.items()
        )
    return False


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _check(schema: dict[str, Any], registry: Registry | None = None) -> Any:
    """The validator the codec builds, which carries the native check."""
    validator = fast_validator(schema, registry or Registry(), reference_for(schema, registry))
    assert validator.native is not None
    return validator


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=drafted_schemas, value=values)
def test_the_native_check_gives_jsonschema_rs_verdict_on_plain_json(
    schema: dict[str, Any], value: Any
) -> None:
    validator = _check(schema)
    if _plain(value):
        assert validator.native.takes(value) is validator.fast_is_valid(value)
    else:
        assert validator.native.takes(value) is False  # the Python path's to decide


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        ({"multipleOf": 0.1}, 0.3, True),  # jsonschema-rs reads a float as its shortest text
        ({"multipleOf": 0.01}, 0.07, True),
        ({"type": "integer"}, 1.0, True),
        ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}, 1.0, False),
        ({"maximum": 9007199254740993}, 9007199254740992, True),
        ({"minimum": 9007199254740993}, 9007199254740992, False),
        ({"type": "integer", "maximum": 2**64 - 1}, 2**64 - 1, True),
        ({"type": "integer", "minimum": -(2**63)}, -(2**63), True),
        ({"maxLength": 2}, "éé", True),  # code points, not bytes
        ({"maxLength": 1}, "😀", True),
        ({"enum": [1, "a", None, [1, {"b": 2}]]}, [1.0, {"b": 2}], True),
        ({"const": {"a": [1, 2]}}, {"a": [1, 2]}, True),
        ({"const": {"a": [1, 2]}}, {"a": [2, 1]}, False),
        ({"uniqueItems": True}, [1, 1.0], False),
        ({"uniqueItems": True}, [{"a": 1}, {"a": 2}], True),
        ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"ab": 1, "Ab": 2}, False),
        ({"patternProperties": {"^x": {"type": "string"}}}, {"xa": "1", "y": 2}, True),
        ({"patternProperties": {"^x": {"type": "string"}}}, {"xa": 1}, False),
        ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
        ({"required": ["a", "b", "c"]}, {"c": 1, "b": None, "a": 0}, True),
        ({"required": ["a", "b", "c"]}, {"c": 1, "b": None, "x": 0}, False),
        ({"type": "boolean"}, 1, False),  # a Python bool is an int, not the other way
        ({"type": "integer"}, True, False),
        ({"format": "email"}, "not an email", True),  # formats are annotations, as in Python
    ],
)
def test_the_native_check_on_the_cases_where_representations_differ(
    schema: dict[str, Any], value: Any, valid: bool
) -> None:
    validator = _check(schema)
    assert validator.fast_is_valid(value) is valid
    assert validator.native.takes(value) is valid


class Colour(enum.Enum):
    RED = "red"


class Text(str):
    pass


class Number(int):
    pass


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        (1, 2),
        Text("a"),
        Number(1),
        Colour.RED,
        decimal.Decimal("1.5"),
        math.nan,
        -math.inf,
        2**64,
        -(2**63) - 1,
        {1: "an int key"},
        {Text("k"): 1},
        "\ud800",
        {"\ud800": 1},
        _deep(65),
        object(),
        {"a": [{"b": {1, 2}}]},
        bytearray(b"x"),
    ],
    ids=lambda value: "object()" if type(value) is object else repr(value),  # the same on every worker
)
def test_values_other_than_plain_json_go_the_python_way(value: Any) -> None:
    """What jsonschema-rs and orjson each treat in their own way (a tuple, an enum, a NaN orjson
    writes as null, an integer orjson refuses) is never answered natively, even where the schema
    takes anything."""
    assert _check({}).native.takes(value) is False
    assert _check({}).native.takes({"nested": [value]}) is False
    assert _check({}).native.takes(_deep(64)) is True


def _codec(schema: dict[str, Any], calls: list[Any]) -> Any:
    def read_otherwise(payload: Any) -> Any:
        calls.append(("read", payload))
        return "the python path's"

    def write_otherwise(value: Any) -> Any:
        calls.append(("write", value))
        return b"the python path's"

    return extension.JsonCodec(  # type: ignore[union-attr]
        _check(schema).native,
        loads=orjson.loads,
        dumps=orjson.dumps,
        read_otherwise=read_otherwise,
        write_otherwise=write_otherwise,
    )


PERSON = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "name": {"type": ["string", "null"]}},
    "required": ["id"],
}


def test_a_read_is_orjsons_value_where_the_check_takes_it_and_the_python_paths_elsewhere() -> None:
    calls: list[Any] = []
    codec = _codec(PERSON, calls)
    assert codec.read(b'{"id": 7, "name": "\\u00e9"}') == {"id": 7, "name": "é"}
    assert codec.read(b'{"id": 7, "name": null}') == {"id": 7, "name": None}
    assert calls == []
    left = [
        b'{"id": "7"}',  # the schema refuses it: the Python path raises its error
        b'{"id": 12345678901234567890}',  # 19 digits or more: orjson may read a double
        b'{"id": 1, "name": "1234567890123456789"}',  # in a string too (cheap, safe)
        b'{"id": NaN}',  # orjson refuses it; Python's json reads it
        b'{"id": 1, "name": "\\ud800"}',  # a lone surrogate: the same
        b"{",
        b"",
        bytearray(b'{"id": 1}'),  # not bytes
    ]
    for payload in left:
        assert codec.read(payload) == "the python path's"
    assert calls == [("read", payload) for payload in left]


def test_a_read_answers_with_the_python_paths_error_where_it_raises() -> None:
    def refuse(payload: Any) -> Any:
        raise ValueError("refused by the Python path")

    codec = extension.JsonCodec(  # type: ignore[union-attr]
        _check(PERSON).native,
        loads=orjson.loads,
        dumps=orjson.dumps,
        read_otherwise=refuse,
        write_otherwise=None,
    )
    with pytest.raises(ValueError, match="refused by the Python path"):
        codec.read(b'{"id": "7"}')


#: Plain JSON (64-bit integers): what the extension answers.
plain_values = json_values(-(2**63), 2**64 - 1)


@settings(max_examples=500, deadline=None)
@given(plain_values)
def test_what_it_writes_and_reads_is_what_the_python_path_does(value: Any) -> None:
    calls: list[Any] = []
    assert _codec({}, calls).write(value) == json_dumps(value)
    assert calls == []
    text = json_dumps(value)
    native = _check({}).native
    read = extension.JsonCodec(  # type: ignore[union-attr]
        native, loads=orjson.loads, dumps=orjson.dumps, read_otherwise=json_loads, write_otherwise=None
    ).read
    assert read(text) == json_loads(text)
    assert type(read(text)) is type(json_loads(text))


def test_a_write_the_check_does_not_take_goes_the_python_way() -> None:
    calls: list[Any] = []
    codec = _codec(PERSON, calls)
    assert codec.write({"id": 1, "name": None}) == b'{"id":1,"name":null}'
    for value in ({"id": "1"}, {"id": math.nan}, {"id": 1, "name": Text("x")}, {"id": 2**64}):
        assert codec.write(value) == b"the python path's"
    assert [call[0] for call in calls] == ["write"] * 4


def test_references_resolve_to_the_given_versions_and_to_nothing_else() -> None:
    address = {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}
    schema = {"type": "object", "properties": {"to": {"$ref": "address.json"}}, "required": ["to"]}
    registry = Registry().with_resource("address.json", Resource.from_contents(address, DRAFT202012))
    native = _check(schema, registry).native
    assert native.takes({"to": {"zip": "12345"}}) is True
    assert native.takes({"to": {"zip": 12345}}) is False
    with pytest.raises(ValueError, match=r"example\.com"):
        extension.JsonSchemaCheck(  # type: ignore[union-attr]
            json.dumps({"properties": {"to": {"$ref": "https://example.com/address.json"}}}),
            [],
            "json-schema:///",
        )


# -- through an ExternalSchema -------------------------------------------------------------------

TOPIC = "persistent://public/default/people"
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "maxLength": 8},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id"],
}


@pytest.fixture
def both(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """A JSON ExternalSchema with the extension, and one without it (their plans are built on
    their first messages: the reference path's, then the compiled one's)."""

    def warm(schema: Any) -> Any:
        for _ in range(2):
            encoded = schema.encode_for(TOPIC, {"id": 1})
            schema.decode(TOPIC, encoded.data, encoded.schema_id)
        return schema

    with_it = warm(mock_factory().json(contract(SCHEMA, "JSON")))
    with monkeypatch.context() as patched:
        patched.setattr(_native, "extension", lambda: None)
        without = warm(mock_factory().json(contract(SCHEMA, "JSON")))
    yield with_it, without


def _outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except ExternalSchemaError as error:
        return ("error", type(error).__name__, str(error))


def test_the_extension_writes_and_reads_the_plans_values(both: tuple[Any, Any]) -> None:
    with_it, without = both
    native = [p.write for p in with_it._part.codec.writes.plans.values() if type(p) is WritePlan]
    python = [p.write for p in without._part.codec.writes.plans.values() if type(p) is WritePlan]
    assert [type(w).__name__ for w in native] == ["builtin_function_or_method"]  # JsonCodec.write
    assert [type(w).__name__ for w in python] == ["function"]
    reads = [p.read for p in with_it._part.codec.reads.plans.values()]
    assert [getattr(r, "__qualname__", "") for r in reads] == ["JsonCodec.read"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.fixed_dictionaries(
        {},
        optional={
            "id": st.integers(-(2**70), 2**70) | st.text(max_size=2) | st.none(),
            "name": st.text(max_size=10) | st.integers(),
            "score": st.floats() | st.integers(),
            "tags": st.lists(st.text(max_size=3), max_size=2) | st.tuples(st.text(max_size=3)) | st.just([1]),
        },
    )
)
def test_a_json_schema_gives_the_same_with_the_extension_and_without(
    both: tuple[Any, Any], value: Any
) -> None:
    with_it, without = both
    written = _outcome(lambda: tuple(with_it.encode_for(TOPIC, value)))
    assert written == _outcome(lambda: tuple(without.encode_for(TOPIC, value)))
    payload = json.dumps(value, allow_nan=True).encode()  # what another producer may have sent
    schema_id = b"\x00\x00\x00\x00\x01"
    read = _outcome(lambda: with_it.decode(TOPIC, payload, schema_id))
    assert read == _outcome(lambda: without.decode(TOPIC, payload, schema_id))
    if written[0] == "ok":
        assert _outcome(lambda: with_it.decode(TOPIC, written[1][0], written[1][1])) == (
            "ok",
            json_loads(written[1][0]),
        )
