"""Rule metrics for OpenTelemetry (the `opentelemetry` extra: `opentelemetry-api`; the SDK and an
exporter are the application's choice).

    from opentelemetry import metrics as otel
    from pulsar_external_schema.metrics import opentelemetry
    opentelemetry.register_rule_metrics(otel.get_meter_provider())

Instruments, on the meter `pulsar_external_schema` (attributes: rule, subject, mode, topic,
outcome, action):

    pulsar_external_schema.rule.executions   observable counter, {execution}
    pulsar_external_schema.rule.duration     observable counter, s: the rules' evaluation time
    pulsar_external_schema.validated.messages  observable counter (topic, verdict, rule)

They are observed from the package's store when the SDK's reader collects: recording costs
nothing on OpenTelemetry's side.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._version import VERSION
from . import RuleMetrics, enable_rule_metrics

try:
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation, get_meter_provider
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "rule metrics for OpenTelemetry need opentelemetry-api: "
        "pip install 'pulsar-external-schema[opentelemetry]'"
    ) from error

__all__ = ["register_rule_metrics"]


def _attributes(stat: Any) -> dict[str, str]:
    return {
        "rule": stat.rule,
        "subject": stat.subject,
        "mode": stat.mode,
        "topic": stat.topic,
        "outcome": stat.outcome,
        "action": stat.action,
    }


_registered: set[int] = set()


def register_rule_metrics(meter_provider: MeterProvider | None = None) -> RuleMetrics:
    """Turn rule metrics on and observe them through `meter_provider` (default: the global one).
    Returns the store they are read from. Idempotent per meter provider."""
    store = enable_rule_metrics()
    provider = meter_provider or get_meter_provider()
    if id(provider) in _registered:
        return store
    _registered.add(id(provider))
    meter = provider.get_meter("pulsar_external_schema", VERSION)

    def executions(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(stat.count, _attributes(stat)) for stat in store.snapshot()]

    def duration(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(stat.seconds, _attributes(stat)) for stat in store.snapshot()]

    def validated(options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(stat.count, {"topic": stat.topic, "verdict": stat.verdict, "rule": stat.rule})
            for stat in store.validated()
        ]

    meter.create_observable_counter(
        "pulsar_external_schema.rule.executions",
        callbacks=[executions],
        unit="{execution}",
        description="Data-contract rule executions, by outcome and the action that followed",
    )
    meter.create_observable_counter(
        "pulsar_external_schema.rule.duration",
        callbacks=[duration],
        unit="s",
        description="Time data-contract rules took to evaluate (their actions not included)",
    )
    meter.create_observable_counter(
        "pulsar_external_schema.validated.messages",
        callbacks=[validated],
        unit="{message}",
        description="Messages the validation job passed on (valid) or dead-lettered",
    )
    return store
