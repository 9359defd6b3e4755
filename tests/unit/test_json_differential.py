"""jsonschema-rs + orjson held to jsonschema + json (`codec/json_validation.py`, `codec/value_checks.py`).

Hypothesis draws schemas from the keywords users write (types, properties, required, enums,
bounds, lengths, patterns, items, combinators, refs to definitions) under each draft, and values
in and around them; the package's validator must give the verdict `jsonschema` gives, and, where
it refuses, `jsonschema`'s own error. The cases where jsonschema-rs decides otherwise are listed
at the end, each one settled by the specification.
"""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest
import referencing.exceptions
from hypothesis import HealthCheck, given, settings
from json_schemas import drafted_schemas, json_values, reference_for, values
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from pulsar_external_schema.codec.json_validation import JsonValidator, fast_validator
from pulsar_external_schema.codec.value_checks import json_dumps, json_loads


def natively(validator: JsonValidator) -> bool:
    """jsonschema-rs decides (else `jsonschema` alone: a schema jsonschema-rs cannot build)."""
    return type(validator._fast).__module__.startswith("jsonschema_rs")


def verdict(validator: Any, value: Any) -> str | None:
    """None if valid; else the message of the error `validate` raises."""
    try:
        validator.validate(value)
    except jsonschema.ValidationError as error:
        return str(error.message)
    return None


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=drafted_schemas, value=values)
def test_the_same_verdict_and_error_as_jsonschema(schema: dict[str, Any], value: Any) -> None:
    reference = reference_for(schema)
    ours = fast_validator(schema, Registry(), reference)
    assert isinstance(ours, JsonValidator) and natively(ours)  # every schema drawn builds natively
    assert verdict(ours, value) == verdict(reference, value)
    assert ours.is_valid(value) is reference.is_valid(value)


def test_references_resolve_to_the_given_versions_by_name_and_to_nothing_else() -> None:
    address = {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}
    schema = {"type": "object", "properties": {"to": {"$ref": "address.json"}}, "required": ["to"]}
    registry = Registry().with_resource("address.json", Resource.from_contents(address, DRAFT202012))
    reference = reference_for(schema, registry)
    ours = fast_validator(schema, registry, reference)

    assert isinstance(ours, JsonValidator) and natively(ours)
    assert verdict(ours, {"to": {"zip": "12345"}}) is None
    assert verdict(ours, {"to": {"zip": 12345}}) == verdict(reference, {"to": {"zip": 12345}}) is not None

    remote = {"properties": {"to": {"$ref": "https://example.com/address.json"}}}
    fetched: list[str] = []

    def fetch(uri: str) -> Resource[Any]:  # what confluent-kafka's registry does: over HTTP
        fetched.append(uri)
        return Resource.from_contents(address, DRAFT202012)

    fetching = Registry(retrieve=fetch)  # type: ignore[call-arg]
    unresolvable = fast_validator(remote, fetching, reference_for(remote, fetching))
    assert not natively(unresolvable)  # jsonschema judges it, over the given versions only
    with pytest.raises(referencing.exceptions.Unresolvable, match=r"https://example\.com/address\.json"):
        unresolvable.validate({"to": {"zip": "1"}})
    assert fetched == []  # never fetched


def test_python_values_json_has_no_type_for_are_judged_by_jsonschema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array"}}}
    reference = reference_for(schema)
    ours = fast_validator(schema, Registry(), reference)
    for value in ({1: "int key"}, {"a": object()}, {"a": {1, 2}}):
        assert verdict(ours, value) == verdict(reference, value)


def test_where_the_libraries_part_the_specification_decides() -> None:
    """NaN and Infinity are not JSON numbers (RFC 8259; JSON Schema's `number` is a JSON number):
    jsonschema takes a Python NaN for one, jsonschema-rs does not, and its refusal stands."""
    schema = {"type": "object", "properties": {"x": {"type": "number"}}}
    reference = reference_for(schema)
    ours = fast_validator(schema, Registry(), reference)
    for number in (math.nan, math.inf):
        assert reference.is_valid({"x": number})
        with pytest.raises(jsonschema.ValidationError) as refused:
            ours.validate({"x": number})
        assert list(refused.value.path) == ["x"]


def test_a_tuple_is_the_array_it_is_written_as() -> None:
    """jsonschema's `array` is a Python list only; a tuple is written as a JSON array, and
    jsonschema-rs validates it as one (the written JSON is what the specification judges)."""
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    reference = reference_for(schema)
    ours = fast_validator(schema, Registry(), reference)
    assert not reference.is_valid({"a": (1, 2)})
    assert verdict(ours, {"a": (1, 2)}) is None
    assert verdict(ours, {"a": (1, "x")}) is not None


any_json = json_values(-(2**80), 2**80)


@settings(max_examples=800, deadline=None)
@given(any_json)
def test_orjson_writes_and_reads_what_json_does(value: Any) -> None:
    written = json_dumps(value)
    reference = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert json.loads(written) == json.loads(reference) == value  # the same value, exact integers
    assert json_loads(written) == json_loads(reference) == json.loads(reference)
    assert type(json_loads(reference)) is type(json.loads(reference))


def test_what_orjson_alone_would_change_or_refuse() -> None:
    assert json_dumps({"big": 2**64, 1: "a"}) == b'{"big":18446744073709551616,"1":"a"}'
    assert json_loads(b"[18446744073709551616, -9223372036854775809]") == [2**64, -(2**63) - 1]
    assert json_loads('"\\ud800"') == "\ud800"  # orjson refuses a lone surrogate; json reads it
    assert json_dumps({"a": [1.0e16, 1e-7]}) == b'{"a":[1e+16,1e-7]}'  # json: 1e-07, the same number
    assert json_dumps({"text": "null", "x": None}) == b'{"text":"null","x":null}'
    for number in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="not JSON compliant"):
            json_dumps({"a": [None, number]})


def test_both_serdes_and_the_compiled_path_validate_with_jsonschema_rs() -> None:
    """A JSON ExternalSchema's values are judged by jsonschema-rs on the way out and back in,
    seen where its verdict is not jsonschema's (a tuple; a NaN), and explained by jsonschema."""
    from contracts import contract, mock_factory

    from pulsar_external_schema.errors import DecodeError, EncodeError

    person = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}, "score": {"type": "number"}},
        "required": ["id"],
    }
    schema = mock_factory().json(contract(person, "JSON"))
    topic = "persistent://public/default/people"

    for _ in range(2):  # the reference path, then the compiled one
        encoded = schema.encode_for(topic, {"id": 2**64, "tags": (1, 2)})
        assert schema.decode(topic, encoded.data, encoded.schema_id) == {"id": 2**64, "tags": [1, 2]}
        with pytest.raises(EncodeError, match="'id' is a required property"):  # jsonschema's words
            schema.encode_for(topic, {"tags": []})
    assert encoded.schema_id is not None  # metadata mode: the body is the whole payload
    for _ in range(2):
        with pytest.raises(DecodeError, match=r"field score: .*NaN and Infinity are not JSON") as refused:
            schema.decode(topic, b'{"id": 1, "score": NaN}', encoded.schema_id)
        assert "null" not in str(refused.value)  # jsonschema-rs's own words call a NaN null
