"""The JSON Schema checker, case by case: each change, where it is reported, and its verdict.

`compare(writer, reader)` lists differences as `KIND path`; a case is compatible when the reader
reads everything the writer wrote (Confluent's STRICT policy unless the case says otherwise).
"""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_external_schema.evolution import (
    COMPATIBLE_STRICT,
    Difference,
    JsonChange,
    JsonSchemaError,
    compare,
    incompatibilities,
)

D7 = "http://json-schema.org/draft-07/schema#"
D2020 = "https://json-schema.org/draft/2020-12/schema"
D4 = "http://json-schema.org/draft-04/schema#"


def obj(properties: dict[str, Any], required: list[str] | None = None, **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], **more}


def closed(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return obj(properties, required, additionalProperties=False)


def opened(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return obj(properties, required, additionalProperties=True)


STR = {"type": "string"}
INT = {"type": "integer"}

# (case, writer, reader, differences, compatible)
CASES: list[tuple[str, Any, Any, list[str], bool]] = [
    ("identical", closed({"a": STR}), closed({"a": STR}), [], True),
    ("anything reads as the empty schema", obj({"a": STR}), {}, [], True),
    ("nothing written by false", False, STR, [], True),
    # -- types
    ("string to integer", STR, INT, ["TYPE_CHANGED #/"], False),
    ("integer to number widens", INT, {"type": "number"}, ["TYPE_EXTENDED #/"], True),
    ("number to integer narrows", {"type": "number"}, INT, ["TYPE_NARROWED #/"], False),
    (
        "boolean to string enum",
        {"type": "boolean"},
        {"type": "string", "enum": ["a"]},
        ["TYPE_CHANGED #/"],
        False,
    ),
    ("nullable reader", STR, {"type": ["string", "null"]}, ["SUM_TYPE_EXTENDED #/"], True),
    ("nullable writer, strict reader", {"type": ["string", "null"]}, STR, ["TYPE_CHANGED #/"], False),
    (
        "title, description, default are compatible",
        {"type": "string", "title": "a", "default": "x"},
        {"type": "string", "title": "b", "description": "d", "default": "y"},
        ["TITLE_CHANGED #/", "DESCRIPTION_CHANGED #/", "DEFAULT_CHANGED #/"],
        True,
    ),
    # -- strings and numbers
    (
        "maxLength decreased",
        {"type": "string", "maxLength": 10},
        {"type": "string", "maxLength": 5},
        ["MAX_LENGTH_DECREASED #/maxLength"],
        False,
    ),
    (
        "maxLength increased",
        {"type": "string", "maxLength": 5},
        {"type": "string", "maxLength": 10},
        ["MAX_LENGTH_INCREASED #/maxLength"],
        True,
    ),
    ("minLength added", STR, {"type": "string", "minLength": 1}, ["MIN_LENGTH_ADDED #/minLength"], False),
    (
        "pattern changed",
        {"type": "string", "pattern": "^a"},
        {"type": "string", "pattern": "^b"},
        ["PATTERN_CHANGED #/pattern"],
        False,
    ),
    ("pattern removed", {"type": "string", "pattern": "^a"}, STR, ["PATTERN_REMOVED #/pattern"], True),
    (
        "maximum decreased",
        {"type": "number", "maximum": 10},
        {"type": "number", "maximum": 5},
        ["MAXIMUM_DECREASED #/maximum"],
        False,
    ),
    (
        "minimum decreased",
        {"type": "number", "minimum": 5},
        {"type": "number", "minimum": 1},
        ["MINIMUM_DECREASED #/minimum"],
        True,
    ),
    (
        "exclusiveMaximum added",
        {"type": "number"},
        {"type": "number", "exclusiveMaximum": 3},
        ["EXCLUSIVE_MAXIMUM_ADDED #/exclusiveMaximum"],
        False,
    ),
    (
        "draft 4 boolean exclusiveMaximum",
        {"$schema": D4, "type": "number", "maximum": 3},
        {"$schema": D4, "type": "number", "maximum": 3, "exclusiveMaximum": True},
        ["MAXIMUM_REMOVED #/maximum", "EXCLUSIVE_MAXIMUM_ADDED #/exclusiveMaximum"],
        False,
    ),
    (
        "multipleOf expanded",
        {"type": "number", "multipleOf": 2},
        {"type": "number", "multipleOf": 4},
        ["MULTIPLE_OF_EXPANDED #/multipleOf"],
        False,
    ),
    (
        "multipleOf reduced",
        {"type": "number", "multipleOf": 4},
        {"type": "number", "multipleOf": 2},
        ["MULTIPLE_OF_REDUCED #/multipleOf"],
        True,
    ),
    (
        "multipleOf 0.5 equals 0.50",
        {"type": "number", "multipleOf": 0.5},
        {"type": "number", "multipleOf": 0.50},
        [],
        True,
    ),
    # -- enums and const
    ("enum extended", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, ["ENUM_ARRAY_EXTENDED #/enum"], True),
    ("enum narrowed", {"enum": ["a", "b"]}, {"enum": ["a"]}, ["ENUM_ARRAY_NARROWED #/enum"], False),
    ("enum changed", {"enum": ["a", "b"]}, {"enum": ["a", "c"]}, ["ENUM_ARRAY_CHANGED #/enum"], False),
    ("enum order does not matter", {"enum": ["a", "b"]}, {"enum": ["b", "a"]}, [], True),
    ("enum keeps 1 and true apart", {"enum": [1]}, {"enum": [True]}, ["ENUM_ARRAY_CHANGED #/enum"], False),
    ("const changed", {"const": 1}, {"const": 2}, ["ENUM_ARRAY_CHANGED #/const"], False),
    # -- objects: required
    (
        "optional becomes required",
        obj({"a": STR}),
        obj({"a": STR}, ["a"]),
        ["REQUIRED_ATTRIBUTE_ADDED #/required/a"],
        False,
    ),
    (
        "optional becomes required with a default",
        obj({"a": STR}),
        obj({"a": {"type": "string", "default": "x"}}, ["a"]),
        ["REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED #/required/a", "DEFAULT_CHANGED #/properties/a"],
        True,
    ),
    (
        "required becomes optional",
        obj({"a": STR}, ["a"]),
        obj({"a": STR}),
        ["REQUIRED_ATTRIBUTE_REMOVED #/required/a"],
        True,
    ),
    # -- objects: content models
    (
        "optional property added to a closed writer",
        closed({"a": STR}),
        closed({"a": STR, "b": STR}),
        ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"],
        True,
    ),
    (
        "required property added to a closed writer",
        closed({"a": STR}),
        closed({"a": STR, "b": STR}, ["b"]),
        ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"],
        False,
    ),
    (
        "optional property added to an open writer",
        opened({"a": STR}),
        opened({"a": STR, "b": STR}),
        ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"],
        False,
    ),
    (
        "required property added to an open writer",
        opened({"a": STR}),
        opened({"a": STR, "b": STR}, ["b"]),
        ["REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"],
        False,
    ),
    (
        "property with empty schema added to an open writer",
        opened({"a": STR}),
        opened({"a": STR, "b": {}}),
        ["PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"],
        True,
    ),
    (
        "property removed by an open reader",
        closed({"a": STR, "b": STR}),
        opened({"a": STR}),
        [
            "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/b",
            "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties",
        ],
        True,
    ),
    (
        "property removed by a closed reader",
        closed({"a": STR, "b": STR}),
        closed({"a": STR}),
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"],
        False,
    ),
    (
        "property that was false removed by a closed reader",
        closed({"a": STR, "b": False}),
        closed({"a": STR}),
        ["PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"],
        True,
    ),
    (
        "property removed, covered by the reader's additionalProperties",
        closed({"a": STR, "b": STR}),
        obj({"a": STR}, additionalProperties=STR),
        [
            "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
            "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties",
        ],
        True,
    ),
    (
        "property removed, not covered by the reader's patternProperties",
        closed({"a": STR, "n_b": STR}),
        obj({"a": STR}, patternProperties={"^n_": INT}, additionalProperties=False),
        [
            "TYPE_CHANGED #/properties/n_b",
            "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/n_b",
        ],
        False,
    ),
    (
        "property added, covered by the writer's patternProperties",
        obj({"a": STR}, patternProperties={"^n_": INT}, additionalProperties=False),
        obj({"a": STR, "n_b": INT}, patternProperties={"^n_": INT}, additionalProperties=False),
        [
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/n_b",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/n_b",
        ],
        True,
    ),
    (
        "reader closes an open writer",
        opened({"a": STR}),
        closed({"a": STR}),
        ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"],
        False,
    ),
    (
        "reader narrows additionalProperties",
        opened({}),
        obj({}, additionalProperties=STR),
        ["ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"],
        False,
    ),
    (
        "maxProperties added",
        obj({}),
        obj({}, maxProperties=3),
        ["MAX_PROPERTIES_ADDED #/maxProperties"],
        False,
    ),
    (
        "dependency array extended",
        obj({}, dependencies={"a": ["b"]}),
        obj({}, dependencies={"a": ["b", "c"]}),
        ["DEPENDENCY_ARRAY_EXTENDED #/dependencies/a"],
        False,
    ),
    (
        "dependency schema removed",
        obj({}, dependencies={"a": {"required": ["b"]}}),
        obj({}),
        ["DEPENDENCY_SCHEMA_REMOVED #/dependencies/a"],
        True,
    ),
    # -- nested objects and arrays
    (
        "nested property type changed",
        closed({"address": closed({"zip": STR})}),
        closed({"address": closed({"zip": INT})}),
        ["TYPE_CHANGED #/properties/address/properties/zip"],
        False,
    ),
    (
        "nested required added",
        closed({"address": closed({"zip": STR})}),
        closed({"address": closed({"zip": STR}, ["zip"])}),
        ["REQUIRED_ATTRIBUTE_ADDED #/properties/address/required/zip"],
        False,
    ),
    (
        "array items changed",
        {"type": "array", "items": STR},
        {"type": "array", "items": INT},
        ["TYPE_CHANGED #/items"],
        False,
    ),
    (
        "array of objects gains an optional property",
        {"type": "array", "items": closed({"a": STR})},
        {"type": "array", "items": closed({"a": STR, "b": INT})},
        ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/items/properties/b"],
        True,
    ),
    (
        "minItems increased",
        {"type": "array", "minItems": 1},
        {"type": "array", "minItems": 2},
        ["MIN_ITEMS_INCREASED #/minItems"],
        False,
    ),
    (
        "uniqueItems added",
        {"type": "array"},
        {"type": "array", "uniqueItems": True},
        ["UNIQUE_ITEMS_ADDED #/uniqueItems"],
        False,
    ),
    (
        "draft 7 tuple item added to a closed tuple",
        {"type": "array", "items": [STR], "additionalItems": False},
        {"type": "array", "items": [STR, INT], "additionalItems": False},
        ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"],
        True,
    ),
    (
        "draft 7 tuple item removed by a closed tuple",
        {"type": "array", "items": [STR, INT], "additionalItems": False},
        {"type": "array", "items": [STR], "additionalItems": False},
        ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"],
        False,
    ),
    (
        "2020-12 prefixItems item changed",
        {"$schema": D2020, "type": "array", "prefixItems": [STR, INT], "items": False},
        {"$schema": D2020, "type": "array", "prefixItems": [STR, STR], "items": False},
        ["TYPE_CHANGED #/items/1"],
        False,
    ),
    (
        "2020-12 open tuple reader drops an item",
        {"$schema": D2020, "type": "array", "prefixItems": [STR, INT], "items": False},
        {"$schema": D2020, "type": "array", "prefixItems": [STR]},
        ["ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL #/items/1", "ADDITIONAL_ITEMS_ADDED #/additionalItems"],
        True,
    ),
    # -- oneOf / anyOf / allOf / not
    (
        "oneOf alternative added",
        {"oneOf": [STR, INT]},
        {"oneOf": [STR, INT, {"type": "boolean"}]},
        ["SUM_TYPE_EXTENDED #/"],
        True,
    ),
    ("oneOf alternative removed", {"oneOf": [STR, INT]}, {"oneOf": [STR]}, ["SUM_TYPE_NARROWED #/"], False),
    ("oneOf reordered", {"oneOf": [STR, INT]}, {"oneOf": [INT, STR]}, [], True),
    ("anyOf to oneOf", {"anyOf": [STR, INT]}, {"oneOf": [STR, INT]}, ["COMBINED_TYPE_CHANGED #/"], False),
    ("oneOf to anyOf", {"oneOf": [STR, INT]}, {"anyOf": [STR, INT]}, ["COMBINED_TYPE_EXTENDED #/"], True),
    ("single type read as a oneOf", STR, {"oneOf": [STR, INT]}, ["SUM_TYPE_EXTENDED #/"], True),
    (
        "oneOf subschema changed inside",
        {"oneOf": [closed({"kind": {"const": "a"}, "x": STR}), closed({"kind": {"const": "b"}})]},
        {"oneOf": [closed({"kind": {"const": "a"}, "x": INT}), closed({"kind": {"const": "b"}})]},
        ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/", "TYPE_CHANGED #/oneOf/0/properties/x"],
        False,
    ),
    (
        "anyOf of objects gains an optional property",
        {"anyOf": [closed({"a": STR}), STR]},
        {"anyOf": [closed({"a": STR, "b": STR}), STR]},
        ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/anyOf/0/properties/b"],
        True,
    ),
    (
        "allOf constraint dropped",
        {"allOf": [STR, {"maxLength": 3}]},
        {"allOf": [STR]},
        ["PRODUCT_TYPE_NARROWED #/"],
        True,
    ),
    (
        "allOf constraint added",
        {"allOf": [STR]},
        {"allOf": [STR, {"maxLength": 3}]},
        ["PRODUCT_TYPE_EXTENDED #/"],
        False,
    ),
    (
        "not narrowed",
        {"not": STR},
        {"not": {"type": "string", "maxLength": 3}},
        ["NOT_TYPE_NARROWED #/not"],
        True,
    ),
    (
        "not extended",
        {"not": {"type": "string", "maxLength": 3}},
        {"not": STR},
        ["NOT_TYPE_EXTENDED #/not"],
        False,
    ),
    # -- 2020-12 content models
    (
        "2020-12 unevaluatedProperties false closes the reader",
        {"$schema": D2020, **obj({"a": STR})},
        {"$schema": D2020, **obj({"a": STR}, unevaluatedProperties=False)},
        ["UNEVALUATED_PROPERTIES_REMOVED #/unevaluatedProperties"],
        False,
    ),
    (
        "2020-12 optional property added to a writer closed by unevaluatedProperties",
        {"$schema": D2020, **obj({"a": STR}, unevaluatedProperties=False)},
        {"$schema": D2020, **obj({"a": STR, "b": STR}, unevaluatedProperties=False)},
        ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"],
        True,
    ),
    (
        "2020-12 dependentRequired added",
        {"$schema": D2020, **obj({})},
        {"$schema": D2020, **obj({}, dependentRequired={"a": ["b"]})},
        ["DEPENDENCY_ARRAY_ADDED #/dependencies/a"],
        False,
    ),
]


def _render(differences: list[Difference]) -> list[str]:
    return [f"{d.kind} {d.path}" for d in differences]


@pytest.mark.parametrize(
    ("writer", "reader", "expected", "compatible"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_case(writer: Any, reader: Any, expected: list[str], compatible: bool) -> None:
    differences = compare(writer, reader)

    assert sorted(_render(differences)) == sorted(expected)
    assert (incompatibilities(reader, writer) == []) is compatible
    assert all(d.kind in COMPATIBLE_STRICT for d in differences) is compatible


# -- Creek's table: forward = old schema reads new data, backward = new schema reads old data --------


def _producer(required: list[str], optional: list[str]) -> dict[str, Any]:
    return closed({name: STR for name in [*required, *optional]}, required)


def _consumer(producer: dict[str, Any]) -> dict[str, Any]:
    return {**producer, "additionalProperties": True}


CREEK_TABLE = [
    # change, old producer, new producer, forward compatible, backward compatible
    ("add required", _producer(["a"], []), _producer(["a", "b"], []), True, False),
    ("add optional", _producer(["a"], []), _producer(["a"], ["b"]), True, True),
    ("remove required", _producer(["a", "b"], []), _producer(["a"], []), False, True),
    ("remove optional", _producer(["a"], ["b"]), _producer(["a"], []), True, True),
    ("optional -> required", _producer(["a"], ["b"]), _producer(["a", "b"], []), True, False),
    ("required -> optional", _producer(["a", "b"], []), _producer(["a"], ["b"]), False, True),
]


@pytest.mark.parametrize(
    ("old", "new", "forward", "backward"), [c[1:] for c in CREEK_TABLE], ids=[c[0] for c in CREEK_TABLE]
)
def test_creek_table(old: dict[str, Any], new: dict[str, Any], forward: bool, backward: bool) -> None:
    """Closed producers and open consumers give exactly the compatibility Creek's article asks for."""
    assert (incompatibilities(_consumer(old), new) == []) is forward
    assert (incompatibilities(_consumer(new), old) == []) is backward


def test_confluent_model_breaks_optional_property_changes_that_creek_allows() -> None:
    """The problem Creek solves: with one open schema for both sides, adding an optional property
    is backward incompatible and removing one forward incompatible, under STRICT."""
    v1, v2 = opened({"a": STR}), opened({"a": STR, "b": STR})

    assert _render(incompatibilities(v2, v1)) == [
        "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"
    ]
    assert incompatibilities(v2, v1, policy="lenient") == []


# -- $ref -------------------------------------------------------------------------------------------


def test_ref_to_definitions_is_compared_where_it_is_used() -> None:
    writer = {"$schema": D7, "definitions": {"Zip": STR}, **closed({"zip": {"$ref": "#/definitions/Zip"}})}
    reader = {"$schema": D7, "definitions": {"Zip": INT}, **closed({"zip": {"$ref": "#/definitions/Zip"}})}

    assert _render(compare(writer, reader)) == ["TYPE_CHANGED #/properties/zip"]


def test_ref_to_defs_in_2020_12_and_inline_schema_compare_alike() -> None:
    writer = {"$schema": D2020, "$defs": {"Zip": STR}, **closed({"zip": {"$ref": "#/$defs/Zip"}})}
    reader = {"$schema": D2020, **closed({"zip": STR})}

    assert compare(writer, reader) == []


def test_2020_12_ref_with_siblings_is_their_allof_and_draft_7_ignores_them() -> None:
    schema = {"$defs": {"S": STR}, "$ref": "#/$defs/S", "maxLength": 3}

    modern = compare(
        {"$schema": D2020, **schema}, {"$schema": D2020, "$defs": {"S": STR}, "$ref": "#/$defs/S"}
    )
    legacy = compare({"$schema": D7, **schema, "definitions": {"S": STR}, "$ref": "#/definitions/S"}, STR)

    assert _render(modern) == ["PRODUCT_TYPE_NARROWED #/"]
    assert legacy == []


def test_named_references_resolve_as_the_registry_gives_them() -> None:
    address_v1 = closed({"zip": STR})
    address_v2 = closed({"zip": INT})
    schema = closed({"address": {"$ref": "address.json"}})

    differences = compare(
        schema,
        schema,
        writer_references={"address.json": address_v1},
        reader_references={"address.json": address_v2},
    )

    assert _render(differences) == ["TYPE_CHANGED #/properties/address/properties/zip"]


def test_unresolvable_ref_is_a_clear_error() -> None:
    with pytest.raises(JsonSchemaError, match=r"\$ref 'address.json' does not resolve"):
        compare(closed({"address": {"$ref": "address.json"}}), {})


def _tree(value_type: dict[str, Any]) -> dict[str, Any]:
    node = closed(
        {"value": value_type, "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}
    )
    return {"$schema": D7, "definitions": {"Node": node}, "$ref": "#/definitions/Node"}


def test_recursive_schema_terminates_and_finds_a_change() -> None:
    assert compare(_tree(STR), _tree(STR)) == []
    assert _render(incompatibilities(_tree(INT), _tree(STR))) == ["TYPE_CHANGED #/properties/value"]


def test_mutually_recursive_oneof_terminates() -> None:
    def schema(branches: int, id_type: dict[str, Any]) -> dict[str, Any]:
        definitions: dict[str, Any] = {
            f"T{b}": closed(
                {
                    "id": id_type if b == 0 else STR,
                    **{f"p{p}": {"$ref": "#/definitions/Node"} for p in range(5)},
                }
            )
            for b in range(branches)
        }
        definitions["Node"] = {"oneOf": [{"$ref": f"#/definitions/T{b}"} for b in range(branches)]}
        return {"definitions": definitions, "$ref": "#/definitions/Node"}

    assert compare(schema(12, STR), schema(12, STR)) == []
    assert incompatibilities(schema(12, INT), schema(12, STR)) != []


# -- reporting --------------------------------------------------------------------------------------


def test_every_difference_says_what_it_means() -> None:
    """More than its kind's name: a reader of the report learns what breaks, and for whom."""
    for change in JsonChange:
        (difference,) = _sample(change)
        bare = change.value.lower().replace("_", " ")
        assert difference.message and difference.message != bare, change


@pytest.mark.parametrize(
    ("change", "meaning"),
    [
        ("PATTERN_CHANGED", "the reader and the writer require different patterns"),
        ("MULTIPLE_OF_CHANGED", "the reader and the writer require different multiples"),
        ("DEPENDENCY_ARRAY_CHANGED", "the reader and the writer have different property dependencies"),
    ],
)
def test_a_change_with_its_own_meaning_is_explained_in_its_words(change: str, meaning: str) -> None:
    (difference,) = _sample(JsonChange[change])
    assert difference.message == meaning


def _sample(change: JsonChange) -> list[Difference]:
    from pulsar_external_schema.evolution.json_changes import difference

    return [difference(change, ("properties", "x"))]


def test_difference_text_names_kind_path_and_where_it_was_found() -> None:
    from pulsar_external_schema.evolution import Direction

    (difference,) = incompatibilities(closed({"a": INT}), closed({"a": STR}))
    found = difference.against(version=3, schema_id=17, direction=Direction.FORWARD)

    assert str(found) == (
        "TYPE_CHANGED at #/properties/a [forward, version 3, id 17]: "
        "the reader expects another type than the writer wrote"
    )


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"type": "strin"}', '{"properties": []}'])
def test_a_schema_that_cannot_be_read_is_a_clear_error(text: str) -> None:
    with pytest.raises(JsonSchemaError):
        compare(text, "{}")


def test_schemas_are_accepted_as_text() -> None:
    assert _render(compare('{"type": "string"}', '{"type": "integer"}')) == ["TYPE_CHANGED #/"]
