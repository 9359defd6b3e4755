"""A custom rule executor and action, loaded by import path from the config in the tests."""

from __future__ import annotations

from typing import Any

from confluent_kafka.schema_registry.serde import RuleAction, RuleContext, RuleExecutor

#: What RecordingAction saw: (action config param, rule name, mode, error or None).
RECORDED: list[tuple[str | None, str | None, str, str | None]] = []


class Suffix(RuleExecutor):
    """TRANSFORM type SUFFIX: appends its `suffix` param (from the config) to the `name` field."""

    def __init__(self) -> None:
        self.suffix = ""

    def type(self) -> str:
        return "SUFFIX"

    def configure(self, client_conf: dict[str, Any], rule_conf: dict[str, Any]) -> None:
        self.suffix = rule_conf.get("suffix", self.suffix)

    def transform(self, ctx: RuleContext, message: Any) -> Any:
        return {**message, "name": message["name"] + self.suffix}

    def close(self) -> None:
        pass


class RecordingAction(RuleAction):
    """Action type RECORD: remembers each run (think: send an email when a card expires)."""

    def __init__(self) -> None:
        self.channel: str | None = None

    def type(self) -> str:
        return "RECORD"

    def configure(self, client_conf: dict[str, Any], rule_conf: dict[str, Any]) -> None:
        self.channel = rule_conf.get("channel", self.channel)

    def run(self, ctx: RuleContext, message: Any, ex: Exception | None) -> None:
        RECORDED.append((self.channel, ctx.rule.name, ctx.rule_mode.value, str(ex) if ex else None))

    def close(self) -> None:
        pass


class RecordingDlq(RecordingAction):
    """A DLQ action of one's own, for the rule it is named after (the others keep Pulsar's)."""

    def type(self) -> str:
        return "DLQ"
