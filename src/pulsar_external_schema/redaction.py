"""Values of sensitive fields never leave in an error, a log line or a DLQ property.

A field is sensitive when it is tagged `PII`, or with a tag an `ENCRYPT` / `ENCRYPT_PAYLOAD` rule of
its schema encrypts: inline (Avro and JSON Schema `confluent:tags`, Protobuf
`(confluent.field_meta).tags`) or in the schema's metadata (`"tags": {"PII": ["Person.ssn"]}`).
A format library or a rule engine may quote a value in its error (fastavro's union errors,
cel-python's `StringType('987-65-4321')`), whatever the field; so the text of every error about a
message is scrubbed before it is shown: each value the message holds in a sensitive field (and
its `repr`) becomes `<REDACTED>`. Values are matched by field name wherever they sit in the
message, so a same-named field elsewhere is redacted too (safe side); values shorter than
`SHORTEST` characters are left, since replacing every "1" would garble the text around them.

cel-python's DEBUG log traces evaluations with their values: `quiet_cel_python_debug` drops those
records at the source.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import logging
import re
from collections.abc import Collection, Iterable
from typing import Any

REDACTED = "<REDACTED>"
#: Always sensitive, whatever the rules.
PII_TAG = "PII"
#: Rule types whose tags make a field sensitive (the DLQ copy redacts the same ones).
ENCRYPTING_RULE_TYPES = ("ENCRYPT", "ENCRYPT_PAYLOAD")
#: Values shorter than this are not replaced (see the module docstring).
SHORTEST = 3

_PROTO_FIELD = re.compile(r"\b(\w+)\s*=\s*\d+\s*\[([^\]]*)\]")


def sensitive_tags(schema: Any, rule_types: Collection[str] = ENCRYPTING_RULE_TYPES) -> set[str]:
    """`PII`, and the tags the schema's encrypting rules apply to."""
    return {PII_TAG, *encrypted_tags(schema, rule_types)}


def encrypted_tags(schema: Any, rule_types: Collection[str] = ENCRYPTING_RULE_TYPES) -> set[str]:
    """The tags the schema's rules of `rule_types` (its encrypting rules) apply to."""
    tags: set[str] = set()
    rule_set = getattr(schema, "rule_set", None)
    for rules in (getattr(rule_set, "domain_rules", None), getattr(rule_set, "encoding_rules", None)):
        for rule in rules or ():
            if rule.type in rule_types:
                tags.update(rule.tags or ())
    return tags


def sensitive_fields(schema: Any, inline_tags: dict[str, Any] | None = None) -> list[str]:
    """Name patterns (fnmatch) of the schema's sensitive fields; `inline_tags`: the rule engine's
    map of field full names to tags, where it computed one."""
    if schema is None:
        return []
    tags = sensitive_tags(schema)
    found: set[str] = set()
    for full_name, field_tags in (inline_tags or {}).items():
        if tags & set(field_tags or ()):
            found.add(str(full_name).rsplit(".", 1)[-1])
    metadata = getattr(schema, "metadata", None)
    external = getattr(metadata, "tags", None)
    external = getattr(external, "tags", external)  # confluent-kafka's MetadataTags holds a dict
    for tag, paths in (external or {}).items():
        if tag in tags:
            found.update(str(path).rsplit(".", 1)[-1] for path in paths)
    text = getattr(schema, "schema_str", None) or ""
    found.update(_tagged_in_text(getattr(schema, "schema_type", None) or "AVRO", text, frozenset(tags)))
    return sorted(found)


@functools.lru_cache(maxsize=256)  # every failing message asks; a schema's text is parsed once
def _tagged_in_text(schema_type: str, text: str, tags: frozenset[str]) -> frozenset[str]:
    found: set[str] = set()
    if schema_type == "PROTOBUF":
        for name, options in _PROTO_FIELD.findall(text):
            if "field_meta" in options and any(f'"{tag}"' in options for tag in tags):
                found.add(name)
    else:
        with contextlib.suppress(ValueError):  # not JSON: nothing inline to find
            _inline(json.loads(text), set(tags), found)
    return frozenset(found)


def _inline(node: Any, tags: set[str], found: set[str], name: str | None = None) -> None:
    """Avro fields and JSON Schema properties whose `confluent:tags` hold a sensitive tag."""
    if isinstance(node, dict):
        if name is not None and tags & set(node.get("confluent:tags") or ()):
            found.add(name)
        for field in node.get("fields") or ():
            if isinstance(field, dict) and isinstance(field.get("name"), str):
                _inline(field, tags, found, field["name"])
                _inline(field.get("type"), tags, found)
        for key, value in (node.get("properties") or {}).items():
            _inline(value, tags, found, key)
        for key in ("type", "items", "values", "additionalProperties", "$defs", "definitions"):
            value = node.get(key)
            if isinstance(value, dict) and key in ("$defs", "definitions"):
                for sub in value.values():
                    _inline(sub, tags, found)
            elif isinstance(value, dict | list):
                _inline(value, tags, found)
    elif isinstance(node, list):
        for item in node:
            _inline(item, tags, found)


def sensitive_values(value: Any, fields: Collection[str]) -> list[str]:
    """The text forms of every value `value` holds under a sensitive field name."""
    if not fields:
        return []
    found: list[str] = []
    _collect(value, fields, False, found, 0)
    forms = {form for item in found for form in (item, repr(item)[1:-1]) if len(form) >= SHORTEST}
    return sorted(forms, key=len, reverse=True)


def _collect(value: Any, fields: Collection[str], inside: bool, found: list[str], depth: int) -> None:
    if depth > 200:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _collect(item, fields, inside or _matches(str(key), fields), found, depth + 1)
    elif isinstance(value, list | tuple | set):
        for item in value:
            _collect(item, fields, inside, found, depth + 1)
    elif hasattr(value, "ListFields"):  # a Protobuf message
        for descriptor, item in value.ListFields():
            _collect(item, fields, inside or _matches(descriptor.name, fields), found, depth + 1)
    elif inside and value is not None and not isinstance(value, bool):
        found.append(value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value))


def _matches(name: str, fields: Iterable[str]) -> bool:
    return any(name == field or fnmatch.fnmatchcase(name, field) for field in fields)


def redact(text: str, values: Iterable[str]) -> str:
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def scrub(error: BaseException | None, values: Collection[str]) -> None:
    """Redact an exception and its causes in place, so that a traceback or `log.exception` of a
    chained error does not print what the message text no longer says. A cause that still says
    a value once its `args` are redacted (jsonschema's errors print the schema and the instance
    they refused from attributes) is replaced in the chain by a plain `Exception` holding its
    type's name and redacted text; `error` itself must take redaction through its `args` (this
    package's errors do)."""
    if error is None or not values:
        return
    _redact_args(error, values)
    for _ in range(10):
        cause = error.__cause__ or error.__context__
        if cause is None:
            return
        _redact_args(cause, values)
        text = str(cause)
        if any(value in text for value in values):
            stand_in = Exception(f"{type(cause).__name__}: {redact(text, values)}")
            stand_in.__cause__ = cause.__cause__ or cause.__context__
            error.__cause__ = stand_in  # (also hides `__context__` from tracebacks)
            cause = stand_in
        error = cause


def _redact_args(error: BaseException, values: Collection[str]) -> None:
    text = str(error)
    if any(value in text for value in values):
        error.args = (redact(text, values),)


class _NoDebug(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


def quiet_cel_python_debug() -> None:
    """cel-python logs every evaluation step with its values at DEBUG: drop those records."""
    known = ("celpy", "celpy.celpy", "celpy.Evaluator", "celpy.celpy.evaluation", "celpy.celpy.celtypes")
    existing = [name for name in logging.root.manager.loggerDict if name.startswith("celpy")]
    for name in {*known, *existing}:  # a filter acts only on its own logger's records
        logger = logging.getLogger(name)
        if not any(isinstance(f, _NoDebug) for f in logger.filters):
            logger.addFilter(_NoDebug())
