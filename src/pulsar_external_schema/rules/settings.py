"""The rule engine's settings: what `rules/rule_registry.py` builds its executors and actions from.

`ExternalSchemaConfig` (config.py) reads every key in its one typed table and hands the rule
engine's part here: `rule.executors` / `rule.actions` with their `rule.<section>.<name>.class` and
`.param.<k>` keys (the Java client's form, `_default_` params going to every built-in), and the
`cel.*`, `jsonata.*` and `dlq.*` keys every executor and action is configured with. The rule
engine owns what they mean; the config only spells and types them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .._secrets import masked, shown
from ..errors import ConfigError

__all__ = [
    "CEL_ENGINES",
    "COMPONENT_KEY",
    "DEFAULT_COMPONENT",
    "RuleComponent",
    "RuleSettings",
    "parse_rule_settings",
]

#: The CEL engines (rules/cel.py): compiled cel-cpp, and confluent-kafka's interpreter.
CEL_ENGINES = ("cel-expr-python", "cel-python")

#: `rule.executors.<name>.class`, `rule.actions.<name>.param.<k>`: the Java client's form.
COMPONENT_KEY = re.compile(r"^rule\.(executors|actions)\.([^.]+)\.(class|param\.(.+))$")
#: The name whose params go to every executor and action (Java's `_default_`).
DEFAULT_COMPONENT = "_default_"


@dataclass(frozen=True)
class RuleComponent:
    """A rule executor or action declared in the config: a class to import, and its params."""

    name: str
    class_name: str
    params: dict[str, str] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"RuleComponent({self.name!r}, {self.class_name!r}, params={masked(self.params)!r})"


@dataclass(frozen=True)
class RuleSettings:
    """The rule engine's part of the config."""

    executors: dict[str, RuleComponent] = field(default_factory=dict)
    actions: dict[str, RuleComponent] = field(default_factory=dict)
    conf: dict[str, Any] = field(default_factory=dict, repr=False)
    """What every executor and action is configured with: `dlq.*`, `cel.*`, `jsonata.*` keys and
    `_default_` params."""

    @property
    def referenced(self) -> bool:
        """`rules.referenced`: whether the domain rules of referenced schemas run by default."""
        return bool(self.conf.get("rules.referenced", False))

    def __repr__(self) -> str:
        conf = masked(self.conf)
        return f"RuleSettings(executors={self.executors!r}, actions={self.actions!r}, conf={conf!r})"


def parse_rule_settings(rule_keys: dict[str, Any], components: dict[str, Any]) -> RuleSettings:
    """Check `rule.executors.<name>.*` keys against the declared names and build the settings."""
    conf = {k: v for k, v in rule_keys.items() if k not in ("rule.executors", "rule.actions")}
    engine = conf.get("cel.engine")
    if engine is not None and engine not in CEL_ENGINES:
        raise ConfigError(
            f"config key 'cel.engine' takes {' or '.join(map(repr, CEL_ENGINES))}, not {engine!r}"
        )
    for key in ("jsonata.timeout.ms", "jsonata.max.depth"):
        if key in conf and conf[key] <= 0:
            raise ConfigError(f"config key {key!r} takes a positive integer, not {conf[key]!r}")
    found: dict[str, dict[str, dict[str, Any]]] = {"executors": {}, "actions": {}}
    for key, value in components.items():
        match = COMPONENT_KEY.match(key)
        assert match is not None
        section, name, param = match.group(1), match.group(2), match.group(4)
        entry = found[section].setdefault(name, {"params": {}})
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"config key {key!r} takes a string, not {shown(key, value)}")
        if param is None:
            entry["class"] = str(value)
        else:
            entry["params"][param] = str(value)
    settings: dict[str, dict[str, RuleComponent]] = {"executors": {}, "actions": {}}
    for section in ("executors", "actions"):
        declared = rule_keys.get(f"rule.{section}", [])
        for name, entry in found[section].items():
            if name == DEFAULT_COMPONENT:
                if "class" in entry:
                    raise ConfigError(
                        f"config key 'rule.{section}.{DEFAULT_COMPONENT}.class': {DEFAULT_COMPONENT} only "
                        "takes params, which go to every built-in executor and action"
                    )
                conf.update(entry["params"])
            elif name not in declared:
                raise ConfigError(
                    f"config keys 'rule.{section}.{name}.*' configure {name!r}, which is not listed in "
                    f"'rule.{section}' (add it: 'rule.{section}': '{','.join([*declared, name])}')"
                )
        for name in declared:
            entry = found[section].get(name, {})
            if "class" not in entry:
                raise ConfigError(
                    f"config key 'rule.{section}' lists {name!r} but 'rule.{section}.{name}.class' is "
                    "missing (the import path of its class, e.g. mypackage.rules.MyExecutor)"
                )
            settings[section][name] = RuleComponent(name, entry["class"], entry["params"])
    return RuleSettings(settings["executors"], settings["actions"], conf)
