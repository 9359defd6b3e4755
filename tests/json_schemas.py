"""JSON Schemas and values drawn by Hypothesis, for the tests that hold one JSON Schema validator
to another (tests/unit/test_json_differential.py: jsonschema-rs to jsonschema;
tests/unit/test_json_native.py: the native extension's check to jsonschema-rs).

`schemas` draws from the keywords users write (types, properties, required, enums, bounds,
lengths, patterns, items, combinators) and `values` in and around them.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import strategies as st
from referencing import Registry

DRAFTS = [
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
    None,
]

names = st.sampled_from(["id", "name", "amount", "tags", "owner", "é"])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(names, inner, max_size=4)),
    max_leaves=12,
)
types = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda t: {"type": t}, types),
        st.builds(lambda ts: {"type": ts}, st.lists(types, min_size=1, max_size=3, unique=True)),
        st.builds(lambda low: {"type": "number", "minimum": low}, st.integers(-5, 5)),
        st.builds(lambda high: {"type": "integer", "maximum": high}, st.integers(-5, 5)),
        st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 4)),
        st.builds(lambda n: {"type": "string", "minLength": n}, st.integers(0, 4)),
        st.builds(lambda e: {"enum": e}, st.lists(scalars, min_size=1, max_size=3, unique_by=json.dumps)),
        st.builds(lambda c: {"const": c}, scalars),
        st.just({"type": "string", "pattern": "^[a-z]+$"}),
        st.just({"type": "string", "format": "email"}),  # an annotation: never asserted
        st.builds(lambda m: {"type": "number", "multipleOf": m}, st.sampled_from([1, 2, 0.5])),
    )


schemas = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(
            lambda props, required, extra: {
                "type": "object",
                "properties": props,
                **({"required": sorted(set(required) & set(props))} if set(required) & set(props) else {}),
                **({} if extra is None else {"additionalProperties": extra}),
            },
            st.dictionaries(names, inner, max_size=3),
            st.lists(names, max_size=3),
            st.one_of(st.none(), st.booleans(), inner),
        ),
        st.builds(
            lambda items, n: {"type": "array", "items": items, "maxItems": n}, inner, st.integers(0, 3)
        ),
        st.builds(lambda a: {"anyOf": a}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda a: {"oneOf": a}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda a: {"allOf": a}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda a: {"not": a}, inner),
    ),
    max_leaves=6,
)


def reference_for(schema: dict[str, Any], registry: Registry | None = None) -> Any:
    """The validator confluent-kafka builds (`_get_validator`)."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=registry or Registry())


def _drafted(schema: dict[str, Any], draft: str | None) -> dict[str, Any]:
    return schema if draft is None else {"$schema": draft, **schema}


def _buildable(schema: dict[str, Any]) -> bool:
    try:
        reference_for(schema)
    except jsonschema.SchemaError:  # what confluent-kafka refuses to build (an enum of 1 and 1.0)
        return False
    return True


#: `schemas` under each draft (or none), those confluent-kafka builds.
drafted_schemas = st.builds(_drafted, schemas, st.sampled_from(DRAFTS)).filter(_buildable)


def json_values(low: int, high: int) -> st.SearchStrategy[Any]:
    """Any JSON value a Python program may write: integers within [low, high], finite floats,
    any text (keys too)."""
    return st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(min_value=low, max_value=high),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(),
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
        ),
        max_leaves=20,
    )
