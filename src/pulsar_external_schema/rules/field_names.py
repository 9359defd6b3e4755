"""Field names a rule set's expressions use, checked against the schema they are registered with.

The registry takes any expression that compiles, and a CEL rule on a field the schema does not
have (`message.f2`), or a CEL_FIELD guard naming no field (`name == 'emial'`), is registered and
then fails on every record, or never fires. `check_rule_fields` finds them before registering:

* a CEL condition's `message.a.b` chains, walked through the schema's records (a chain stops at a
  map, an array, a scalar or a method call: what follows is not a field name);
* a CEL_FIELD guard's comparisons of `name` with a string, against every field name of the schema.

Avro records are closed, so every unknown name is refused. JSON Schema objects are open unless
`additionalProperties` is false: there a name that is not declared is refused only when it is
close to a declared one (a typo), since the record may carry it. Protobuf schemas, and JSON
schemas the walk cannot follow (`$ref` elsewhere, `allOf`...), are not checked.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RuleSetError
from .cel import IGNORE_GUARD_SEPARATOR

__all__ = ["check_rule_fields"]

_STRING = re.compile(
    r"""[rR]?(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')"""
)
_CHAIN = re.compile(r"(?<![.\w])message((?:\s*\.\s*[A-Za-z_]\w*)+)(\s*\()?")
_GUARD_NAME = re.compile(
    r"""(?<![.\w])name\s*[!=]=\s*(?P<a>"[^"]*"|'[^']*')|(?P<b>"[^"]*"|'[^']*')\s*[!=]=\s*name\b"""
)


@dataclass
class _Record:
    """The fields of one record (or object) of a schema; `closed`: no other names can occur."""

    fields: dict[str, Any] = field(default_factory=dict)
    closed: bool = True


@dataclass
class _Shape:
    root: _Record | None
    names: set[str]
    closed: bool


def check_rule_fields(rule_set: Mapping[str, Any], schema_type: str, schema_text: str) -> None:
    """A `RuleSetError` for the first field name a rule uses that the schema does not have."""
    shape = _shape(schema_type, schema_text)
    if shape is None:
        return
    for section in ("domainRules", "migrationRules"):
        for index, rule in enumerate(rule_set.get(section) or []):
            if not isinstance(rule, Mapping) or not isinstance(rule.get("expr"), str):
                continue
            where = f"rule {rule.get('name')!r} ({section}[{index}])"
            if section == "domainRules" and rule.get("type") == "CEL":
                _check_chains(_code(rule["expr"]), shape, where)
            elif rule.get("type") == "CEL_FIELD":
                guard, sep, _body = rule["expr"].partition(";")
                ignored = str((rule.get("params") or {}).get(IGNORE_GUARD_SEPARATOR, "")).lower() == "true"
                if sep and not ignored:
                    _check_guard(guard, shape, where)


def _code(expr: str) -> str:
    """The expression with its string literals blanked (a `message.x` inside one is text)."""
    return _STRING.sub('""', expr)


def _check_chains(code: str, shape: _Shape, where: str) -> None:
    for match in _CHAIN.finditer(code):
        names = [part.strip() for part in match.group(1).split(".")[1:]]
        if match.group(2):  # message.a.size(): the last name is a method
            names = names[:-1]
        record = shape.root
        path = "message"
        for name in names:
            if record is None:
                break
            if name not in record.fields:
                _refuse(f"{path}.{name}", name, list(record.fields), record.closed, where, "field")
                break
            path = f"{path}.{name}"
            record = record.fields[name]


def _check_guard(guard: str, shape: _Shape, where: str) -> None:
    for match in _GUARD_NAME.finditer(guard):
        name = (match.group("a") or match.group("b"))[1:-1]
        if name not in shape.names:
            _refuse(f"name == {name!r}", name, sorted(shape.names), shape.closed, where, "field named")


def _refuse(used: str, name: str, known: list[str], closed: bool, where: str, what: str) -> None:
    close = difflib.get_close_matches(name, known, n=1)
    if not closed and not close:
        return  # an open object may carry it
    hint = f"; did you mean {close[0]!r}?" if close else f" (it has {', '.join(map(repr, known[:8]))})"
    raise RuleSetError(f"{where}: {used}: the schema has no {what} {name!r}{hint}")


# -- the schemas' shapes ---------------------------------------------------------------------------


def _shape(schema_type: str, text: str) -> _Shape | None:
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if schema_type == "AVRO":
        return _avro_shape(document)
    if schema_type == "JSON":
        return _json_shape(document)
    return None


def _avro_shape(document: Any) -> _Shape | None:
    named: dict[str, Any] = {}
    names: set[str] = set()

    def walk(schema: Any, namespace: str) -> _Record | None:
        """The record `schema` is (through a union with null), else None."""
        if isinstance(schema, str):
            return named.get(schema) or named.get(f"{namespace}.{schema}")
        if isinstance(schema, list):
            records = [walk(branch, namespace) for branch in schema if branch != "null"]
            return records[0] if len(records) == 1 else None
        if not isinstance(schema, Mapping):
            return None
        kind = schema.get("type")
        if kind in ("array", "map"):
            walk(schema.get("items" if kind == "array" else "values"), namespace)  # its names count
            return None
        if kind != "record":
            return walk(kind, namespace) if isinstance(kind, list | Mapping) else None
        space = schema.get("namespace", namespace)
        record = _Record()
        for key in (str(schema.get("name", "")), f"{space}.{schema.get('name', '')}"):
            named[key] = record
        for entry in schema.get("fields") or []:
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                names.add(entry["name"])
                record.fields[entry["name"]] = walk(entry.get("type"), space)
        return record

    root = walk(document, "")
    return _Shape(root, names, True) if root is not None else None


def _json_shape(document: Any) -> _Shape | None:
    if not isinstance(document, Mapping):
        return None
    names: set[str] = set()
    closed = [True]

    def resolve(schema: Any) -> Any:
        reference = schema.get("$ref") if isinstance(schema, Mapping) else None
        if isinstance(reference, str):
            for prefix in ("#/definitions/", "#/$defs/"):
                if reference.startswith(prefix):
                    return (document.get(prefix[2:-1]) or {}).get(reference[len(prefix) :])
            return None
        return schema

    def walk(schema: Any, depth: int = 0) -> _Record | None:
        schema = resolve(schema)
        if not isinstance(schema, Mapping) or depth > 32 or not isinstance(schema.get("properties"), Mapping):
            return None
        if any(key in schema for key in ("allOf", "anyOf", "oneOf", "patternProperties", "if")):
            return None
        record = _Record(closed=schema.get("additionalProperties") is False)
        closed[0] = closed[0] and record.closed
        for name, child in schema["properties"].items():
            names.add(name)
            record.fields[name] = walk(child, depth + 1)
        return record

    root = walk(document)
    return _Shape(root, names, closed[0]) if root is not None else None
