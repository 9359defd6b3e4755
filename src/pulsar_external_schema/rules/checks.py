"""A rule set or metadata document checked before it is registered, so a contract that cannot run
is refused at once instead of failing on every message.

confluent-kafka's `RuleSet.from_dict` and `Metadata.from_dict` drop what they do not know: a
misspelled `"domainRule"` registers an *empty* rule set, and a producer then reports success for
records the rule would have rejected. A CEL or JSONata expression is compiled only when the first
message meets it, so a typo is registered and fails every message after. `check_rule_set` and
`check_metadata` refuse both up front, with the rule and the key that are wrong:

- unknown keys in the rule set, a rule, or the metadata, with the closest known key;
- a rule without a name, kind, mode or type; a kind or mode that does not exist, or a mode of the
  wrong list (migration rules are UPGRADE/DOWNGRADE/UPDOWN, the others WRITE/READ/WRITEREAD);
- an action that looks like a misspelled NONE/ERROR/DLQ, or two actions on a one-way mode;
- a CEL, CEL_FIELD (guard and body) or JSONATA expression that does not compile;
- an ENCRYPT rule without its `encrypt.kek.name` parameter.

A rule type or action this package does not know is let through (another client may run it),
unless it is one edit away from a known one (`CEL_FEILD`, `EROR`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from confluent_kafka.schema_registry import Metadata, RuleSet

from ..errors import RuleSetError
from .cel import IGNORE_GUARD_SEPARATOR, CompiledCel
from .jsonata import JsonataExecutor

__all__ = ["check_metadata", "check_rule_set"]

_RULE_SET_KEYS = ("domainRules", "migrationRules", "encodingRules", "enableAt")
_RULE_KEYS = (
    "name",
    "doc",
    "kind",
    "mode",
    "type",
    "tags",
    "params",
    "expr",
    "onSuccess",
    "onFailure",
    "disabled",
)
_METADATA_KEYS = ("properties", "tags", "sensitive")
_KINDS = ("CONDITION", "TRANSFORM")
_ONE_WAY = ("WRITE", "READ", "UPGRADE", "DOWNGRADE")
_MODES = {
    "domainRules": ("WRITE", "READ", "WRITEREAD"),
    "encodingRules": ("WRITE", "READ", "WRITEREAD"),
    "migrationRules": ("UPGRADE", "DOWNGRADE", "UPDOWN"),
}
_TYPES = ("CEL", "CEL_FIELD", "JSONATA", "ENCRYPT", "ENCRYPT_PAYLOAD")
_ACTIONS = ("NONE", "ERROR", "DLQ")
_KEK_NAME = "encrypt.kek.name"


def check_rule_set(document: Any) -> RuleSet:
    """The `RuleSet` of a rule-set JSON document, or a `RuleSetError` naming what is wrong."""
    if not isinstance(document, Mapping):
        raise RuleSetError(
            f'a rule set is a JSON object such as {{"domainRules": [...]}}, not {_kind(document)}'
        )
    _known_keys(document, _RULE_SET_KEYS, "the rule set")
    for section in _MODES:
        rules = document.get(section)
        if rules is None:
            continue
        if not isinstance(rules, list):
            raise RuleSetError(f"{section} is a list of rules, not {_kind(rules)}")
        for index, rule in enumerate(rules):
            _check_rule(rule, section, f"{section}[{index}]")
    return RuleSet.from_dict(dict(document))


def check_metadata(document: Any) -> Metadata:
    """The `Metadata` of a metadata JSON document, or a `RuleSetError` naming what is wrong."""
    if not isinstance(document, Mapping):
        raise RuleSetError(
            f'metadata is a JSON object such as {{"properties": {{"owner": "team"}}}}, not {_kind(document)}'
        )
    _known_keys(document, _METADATA_KEYS, "the metadata")
    properties = document.get("properties")
    if properties is not None and (
        not isinstance(properties, Mapping) or not all(isinstance(v, str) for v in properties.values())
    ):
        raise RuleSetError('metadata "properties" maps names to strings, e.g. {"major": "2"}')
    return Metadata.from_dict(dict(document))


def _check_rule(rule: Any, section: str, where: str) -> None:
    if not isinstance(rule, Mapping):
        raise RuleSetError(f"{where} is a rule (a JSON object), not {_kind(rule)}")
    name = rule.get("name")
    if name:
        where = f"rule {name!r} ({where})"
    _known_keys(rule, _RULE_KEYS, where)
    for key in ("name", "kind", "mode", "type"):
        if not rule.get(key):
            raise RuleSetError(f"{where} has no {key!r}")
    kind, mode, rule_type = (str(rule[key]) for key in ("kind", "mode", "type"))
    _one_of(kind, _KINDS, f"{where}: kind")
    _one_of(mode, _MODES[section], f"{where}: mode (of {section})")
    _close_to_known(rule_type, _TYPES, f"{where}: type")
    for key in ("onSuccess", "onFailure"):
        _check_actions(rule.get(key), mode, f"{where}: {key}")
    params = rule.get("params") or {}
    if not isinstance(params, Mapping):
        raise RuleSetError(f"{where}: params map names to strings, not {_kind(params)}")
    _check_expression(rule_type, kind, rule.get("expr"), params, where)


def _check_expression(rule_type: str, kind: str, expr: Any, params: Mapping[str, Any], where: str) -> None:
    if rule_type == "ENCRYPT":
        if not params.get(_KEK_NAME):
            raise RuleSetError(f"{where}: an ENCRYPT rule needs the {_KEK_NAME!r} param (the KEK to use)")
        return
    if rule_type not in ("CEL", "CEL_FIELD", "JSONATA"):
        return
    if not isinstance(expr, str) or not expr.strip():
        raise RuleSetError(f"{where}: a {rule_type} rule needs an 'expr'")
    if kind == "TRANSFORM" and rule_type == "CEL":
        raise RuleSetError(f"{where}: a CEL transform is CEL_FIELD (CEL rules are conditions)")
    try:
        if rule_type == "JSONATA":
            JsonataExecutor().parse(expr)
            return
        compiled = CompiledCel(cache_size=4)
        if rule_type == "CEL":
            compiled.program(expr, False, None)
            return
        guard, sep, body = expr.partition(";")
        if sep and str(params.get(IGNORE_GUARD_SEPARATOR, "")).lower() != "true":
            if guard.strip():
                compiled.program(guard, True, None)
            compiled.program(body, True, None)
        else:
            compiled.program(expr, True, None)
    except Exception as error:  # CelCompileError, JsonataError: their text says where
        raise RuleSetError(f"{where}: {error}") from None


def _check_actions(value: Any, mode: str, where: str) -> None:
    if value is None:
        return
    actions = [part.strip() for part in str(value).split(",")]
    if len(actions) > 2 or (len(actions) == 2 and mode in _ONE_WAY):
        raise RuleSetError(
            f"{where} {value!r}: two actions (A,B) are for WRITEREAD and UPDOWN rules, one per direction"
        )
    for action in actions:
        _close_to_known(action, _ACTIONS, where)


def _known_keys(document: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in document:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            raise RuleSetError(f"{where} has an unknown key {key!r}{hint}")


def _one_of(value: str, allowed: tuple[str, ...], where: str) -> None:
    if value not in allowed:
        raise RuleSetError(f"{where} is {value!r}, not one of {', '.join(allowed)}")


def _close_to_known(value: str, known: tuple[str, ...], where: str) -> None:
    """A value this package does not run is let through, unless it is a misspelled known one."""
    if value in known:
        return
    close = difflib.get_close_matches(value.upper(), known, n=1, cutoff=0.75)
    if close or value.upper() in known:
        suggestion = close[0] if close else value.upper()
        raise RuleSetError(f"{where} is {value!r}; did you mean {suggestion!r}?")


def _kind(value: Any) -> str:
    return "null" if value is None else f"a JSON {type(value).__name__}".replace("dict", "object")
