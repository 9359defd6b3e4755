"""The rule executors and actions one factory's schemas run, registered once, explicitly.

Every factory gets its own confluent-kafka `RuleRegistry` (never the process-global one), holding:

* the built-in executors: CEL and CEL_FIELD on a compiled engine (`cel.py`), JSONATA with runaway
  limits (`jsonata.py`), ENCRYPT (field level) and ENCRYPT_PAYLOAD;
* the DLQ action writing to Pulsar (ERROR and NONE are built into the serdes, see `serdes.py`);
* executors and actions declared in the config, Java-style
  (`rule.executors=checkSsnLen`, `rule.executors.checkSsnLen.class=pkg.Class`,
  `rule.executors.checkSsnLen.param.k=v`), or handed over in code.

As in the Java client, an executor or action declared with a name serves the rules of that name;
rules of its type with other names use the built-in one, or any declared one if there is no
built-in. KMS drivers (local-kms always; AWS, Azure, GCP and HashiCorp Vault when their libraries
are installed) are registered process-wide, which is where confluent-kafka looks them up; the KMS
clients they make are not: each executor's comes from its own config
(`_confluent.bind_kms_clients_to_their_config`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import (
    EncryptionExecutor,
    FieldEncryptionExecutor,
)
from confluent_kafka.schema_registry.serde import RuleAction, RuleContext, RuleExecutor

from .. import _confluent
from .._imports import import_object
from ..errors import ConfigError
from .actions import PulsarDlqAction
from .cel import CelExecutor, CelFieldExecutor
from .jsonata import JsonataExecutor
from .settings import RuleComponent, RuleSettings

log = logging.getLogger(__name__)

RuleExecutors = Mapping[str, RuleExecutor] | Iterable[RuleExecutor]
RuleActions = Mapping[str, RuleAction] | Iterable[RuleAction]

#: KMS drivers: module, class, and the extra that installs what they import.
_KMS_DRIVERS = (
    ("confluent_kafka.schema_registry.rules.encryption.localkms.local_driver", "LocalKmsDriver", None),
    ("confluent_kafka.schema_registry.rules.encryption.awskms.aws_driver", "AwsKmsDriver", "aws"),
    ("confluent_kafka.schema_registry.rules.encryption.azurekms.azure_driver", "AzureKmsDriver", "azure"),
    ("confluent_kafka.schema_registry.rules.encryption.gcpkms.gcp_driver", "GcpKmsDriver", "gcp"),
    (
        "confluent_kafka.schema_registry.rules.encryption.hcvault.hcvault_driver",
        "HcVaultKmsDriver",
        "hcvault",
    ),
)
_kms_lock = threading.Lock()
_kms_registered: dict[str, str | None] = {}


def register_kms_drivers() -> dict[str, str | None]:
    """Register every KMS driver whose libraries import; returns driver -> None, or why it is missing."""
    with _kms_lock:
        if not _kms_registered:
            _confluent.bind_kms_clients_to_their_config()
            for module, name, extra in _KMS_DRIVERS:
                try:
                    import_object(f"{module}.{name}").register()
                    _kms_registered[name] = None
                except ImportError as error:
                    _kms_registered[name] = (
                        f"{error}; install pulsar-external-schema[{extra}]" if extra else str(error)
                    )
        return dict(_kms_registered)


class _ByRuleName(RuleExecutor, RuleAction):
    """All executors (or actions) of one type: the one named after the rule, else the default."""

    def __init__(self, type_name: str) -> None:
        self._type = type_name
        self.default: Any = None
        self.named: dict[str, Any] = {}
        self.params: dict[str, dict[str, str]] = {}

    def type(self) -> str:
        return self._type

    def members(self) -> list[Any]:
        return [member for member in (self.default, *self.named.values()) if member is not None]

    def pick(self, ctx: RuleContext) -> Any:
        member = self.named.get(ctx.rule.name) if ctx.rule.name else None
        if member is None:
            member = self.default if self.default is not None else next(iter(self.named.values()))
        return member

    def configure(self, client_conf: dict[str, Any], rule_conf: dict[str, Any]) -> None:
        if self.default is not None:
            self.default.configure(client_conf, rule_conf)
        for name, member in self.named.items():
            member.configure(client_conf, {**rule_conf, **self.params.get(name, {})})

    def transform(self, ctx: RuleContext, message: Any) -> Any:
        return self.pick(ctx).transform(ctx, message)

    def run(self, ctx: RuleContext, message: Any, ex: Exception | None) -> None:
        self.pick(ctx).run(ctx, message, ex)

    def close(self) -> None:
        for member in self.members():
            try:
                member.close()
            except Exception as error:  # one failing close must not skip the others
                log.warning("could not close rule %s %r: %s", self._type, member, error)


def rule_executor(registry: RuleRegistry, ctx: RuleContext) -> Any:
    """The executor that runs `ctx.rule` in `registry` (None if its type has none)."""
    if ctx.rule.type is None:
        return None
    executor = registry.get_executor(ctx.rule.type.upper())
    return executor.pick(ctx) if isinstance(executor, _ByRuleName) else executor


class RuleEngine:
    """One factory's rule registry, the configuration its serdes hand to the rules, and the DLQ action."""

    def __init__(
        self,
        settings: RuleSettings,
        *,
        executors: RuleExecutors | None = None,
        actions: RuleActions | None = None,
        pulsar_client: Any = None,
    ) -> None:
        register_kms_drivers()
        self.registry = RuleRegistry()  # type: ignore[no-untyped-call]
        self.rule_conf: dict[str, Any] = dict(settings.conf)
        self.dlq = PulsarDlqAction()
        if pulsar_client is not None:
            self.dlq.attach_client(pulsar_client)
        self._executors: dict[str, _ByRuleName] = {}
        self._actions: dict[str, _ByRuleName] = {}
        for builtin in (
            CelExecutor(),
            CelFieldExecutor(),
            JsonataExecutor(),
            FieldEncryptionExecutor(),
            EncryptionExecutor(),
        ):
            self._add(self._executors, builtin, None, {})
        self._add(self._actions, self.dlq, None, {})
        for component in settings.executors.values():
            self._add(self._executors, _instantiate(component, "executors"), component.name, component.params)
        for component in settings.actions.values():
            self._add(self._actions, _instantiate(component, "actions"), component.name, component.params)
        for name, executor in _named(executors, "rule_executors"):
            self._add(self._executors, executor, name, {})
        for name, action in _named(actions, "rule_actions"):
            if action.type() in ("ERROR", "NONE"):
                raise ConfigError(f"the {action.type()} action is built in and cannot be replaced")
            self._add(self._actions, action, name, {})
        for group in self._executors.values():
            self.registry.register_executor(group)
        for group in self._actions.values():
            self.registry.register_action(group)

    def executor(self, type_name: str) -> Any:
        """The built-in (or default) executor of a rule type, e.g. `executor("CEL")`."""
        group = self._executors.get(type_name.upper())
        if group is None:
            raise KeyError(
                f"no executor of rule type {type_name!r}; types: {', '.join(sorted(self._executors))}"
            )
        return group.default if group.default is not None else next(iter(group.named.values()))

    @staticmethod
    def _add(groups: dict[str, _ByRuleName], member: Any, name: str | None, params: dict[str, str]) -> None:
        type_name = str(member.type()).upper()
        group = groups.setdefault(type_name, _ByRuleName(type_name))
        if name is None:
            group.default = member
        else:
            group.named[name] = member
            group.params[name] = params

    def close(self) -> None:
        for group in (*self._actions.values(), *self._executors.values()):
            group.close()


def _named(members: Mapping[str, Any] | Iterable[Any] | None, argument: str) -> list[tuple[str | None, Any]]:
    if members is None:
        return []
    if isinstance(members, Mapping):
        pairs: list[tuple[str | None, Any]] = list(members.items())
    else:
        pairs = [(None, member) for member in members]
    for _, member in pairs:
        if not callable(getattr(member, "type", None)):
            raise ConfigError(
                f"{argument} takes rule executors/actions (objects with a type() method), not {member!r}"
            )
    return pairs


def _instantiate(component: RuleComponent, section: str) -> Any:
    """Import `pkg.module.Class` (or `pkg.module:Class`) and make one with no arguments."""
    key = f"rule.{section}.{component.name}.class"
    try:
        cls = import_object(component.class_name)
    except ValueError:
        raise ConfigError(
            f"config key {key!r}: {component.class_name!r} is not an import path (pkg.module.Class)"
        ) from None
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"config key {key!r}: cannot import {component.class_name!r}: {error}") from None
    try:
        instance = cls()
    except Exception as error:
        raise ConfigError(f"config key {key!r}: {component.class_name}() failed: {error}") from None
    if not callable(getattr(instance, "type", None)):
        raise ConfigError(f"config key {key!r}: {component.class_name} has no type() method")
    return instance
