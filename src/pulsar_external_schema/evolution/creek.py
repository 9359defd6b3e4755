"""Creek-style JSON Schema evolution, the checks: closed producer schemas, open consumer schemas.

Confluent's checks compare the registered versions of a subject with each other, and with JSON
Schema's content models that makes adding or removing an optional property a breaking change one
way or the other. What matters is only that every schema *reading* a subject can read what every
schema *writing* it wrote. So, as Creek's JSON serde does:

* producers register **closed** schemas (`additionalProperties: false`): they know exactly what
  they write. Only producer schemas are registered, so the producing team owns the subject;
* a consumer reads with the **open** schema derived from a registered producer schema
  (`to_consumer_schema`), or a smaller *view* of it;
* a new producer schema is checked, before it is registered, against every registered one:
  backward (its consumer schema reads what each wrote) and forward (each one's consumer schema
  reads what it writes). The subject's own compatibility is set to NONE, since the registry's
  check is the one this replaces.

This module holds the checks alone, on schemas given to it; the registry side (looking up and
registering versions, the races between producers, the serdes that run the checks on a subject's
first use) is `json_evolution.py`, beside the factory. See docs/evolution.md.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from ..errors import JsonSchemaError
from .differences import Difference, Direction
from .json_diff import incompatibilities
from .json_model import load_text

__all__ = [
    "OPEN_PRODUCER_SCHEMA",
    "RegisteredVersion",
    "closed_differences",
    "open_objects",
    "parse_schema",
    "producer_differences",
    "project",
    "to_consumer_schema",
    "unreadable",
    "view_differences",
]

#: The kind reported for an object of a producer schema that is not closed.
OPEN_PRODUCER_SCHEMA = "OPEN_CONTENT_MODEL_IN_PRODUCER_SCHEMA"

_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = (
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
)


def _subschemas(schema: Mapping[str, Any], path: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Every schema object under `schema` (itself included), with its JSON-pointer path."""
    yield schema, path
    for keyword in _SCHEMA_MAPS:
        for name, sub in (schema.get(keyword) or {}).items():
            if isinstance(sub, Mapping):
                yield from _subschemas(sub, f"{path}/{keyword}/{name}")
    for keyword in _SCHEMA_LISTS:
        for index, sub in enumerate(schema.get(keyword) or []):
            if isinstance(sub, Mapping):
                yield from _subschemas(sub, f"{path}/{keyword}/{index}")
    for keyword in _SCHEMA_VALUES:
        sub = schema.get(keyword)
        if isinstance(sub, Mapping):
            yield from _subschemas(sub, f"{path}/{keyword}")
        elif isinstance(sub, list):  # draft 7 tuple `items`
            for index, item in enumerate(sub):
                if isinstance(item, Mapping):
                    yield from _subschemas(item, f"{path}/{keyword}/{index}")
    dependencies = schema.get("dependencies")
    if isinstance(dependencies, Mapping):
        for name, sub in dependencies.items():
            if isinstance(sub, Mapping):
                yield from _subschemas(sub, f"{path}/dependencies/{name}")


class RegisteredVersion(NamedTuple):
    """A registered producer schema a new one is checked against."""

    schema: dict[str, Any]
    version: int
    schema_id: int


def parse_schema(schema: str | Mapping[str, Any], what: str = "schema") -> dict[str, Any]:
    """A schema given in code, parsed (`json_model.load_text`) into a fresh dict the caller may
    change; bad input is a `JsonSchemaError`, a `ConfigError`, naming which schema."""
    parsed = load_text(schema, f"the {what}")
    if not isinstance(parsed, Mapping):
        raise JsonSchemaError(f"the {what} must be a JSON object, not {type(parsed).__name__}")
    return copy.deepcopy(dict(parsed))


def to_consumer_schema(producer_schema: str | Mapping[str, Any]) -> dict[str, Any]:
    """The open consumer schema derived from a closed producer schema.

    Every `additionalProperties: false` (and `unevaluatedProperties: false`) becomes `true`; all
    else is kept, so the consumer reads what the producer writes plus whatever later producers add.
    """
    schema = parse_schema(producer_schema, "producer schema")
    for sub, _ in _subschemas(schema, "#"):
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if sub.get(keyword) is False:
                sub[keyword] = True  # type: ignore[index]
    return schema


def open_objects(producer_schema: str | Mapping[str, Any]) -> list[str]:
    """Paths of the objects with declared properties that a producer schema leaves open.

    A producer must say exactly what it writes; an open object would let any later property be
    read as anything. Objects without `properties` (maps, free-form objects) are not flagged.
    """
    schema = parse_schema(producer_schema, "producer schema")
    found = []
    for sub, path in _subschemas(schema, "#"):
        if "properties" not in sub:
            continue
        additional = sub.get("additionalProperties", True)
        if (
            additional is True
            and sub.get("unevaluatedProperties", True) is True
            and not sub.get("patternProperties")
        ):
            found.append(path)
    return found


def closed_differences(producer: Mapping[str, Any]) -> list[Difference]:
    """One `OPEN_PRODUCER_SCHEMA` difference per object `producer` leaves open (`open_objects`)."""
    return [
        Difference(
            OPEN_PRODUCER_SCHEMA,
            path,
            "this object declares properties but accepts any other: close it with "
            '"additionalProperties": false',
        )
        for path in open_objects(producer)
    ]


def producer_differences(
    producer: Mapping[str, Any], registered: Iterable[RegisteredVersion], *, backward: bool, forward: bool
) -> list[Difference]:
    """What stops a new producer schema from joining the registered ones: backward, its consumer
    schema must read what each of them wrote; forward, each one's consumer schema must read what it
    writes. Each difference names the version and direction."""
    consumer = to_consumer_schema(producer)
    found: list[Difference] = []
    for old in registered:
        where = {"version": old.version, "schema_id": old.schema_id}
        if backward:
            found += [
                d.against(direction=Direction.BACKWARD, **where)
                for d in incompatibilities(consumer, old.schema)
            ]
        if forward:
            found += [
                d.against(direction=Direction.FORWARD, **where)
                for d in incompatibilities(to_consumer_schema(old.schema), dict(producer))
            ]
    return found


def unreadable(consumer: Mapping[str, Any], registered: Iterable[RegisteredVersion]) -> list[Difference]:
    """What stops `consumer` from reading data of each of these registered versions."""
    return [
        d.against(direction=Direction.BACKWARD, version=old.version, schema_id=old.schema_id)
        for old in registered
        for d in incompatibilities(dict(consumer), old.schema)
    ]


def view_differences(view: Mapping[str, Any], producer: str | Mapping[str, Any]) -> list[Difference]:
    """What stops a view (a subset of the properties) from reading everything the consumer schema
    derived from `producer` accepts."""
    return [
        d.against(direction=Direction.VIEW, version=None, schema_id=None)
        for d in incompatibilities(dict(view), to_consumer_schema(producer))
    ]


def project(value: Any, schema: Any) -> Any:
    """`value` with only the properties `schema` declares (in objects, nested objects and arrays)."""
    if not isinstance(schema, Mapping):
        return value
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        return {name: project(item, properties[name]) for name, item in value.items() if name in properties}
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        return [project(item, items) for item in value]
    return value
