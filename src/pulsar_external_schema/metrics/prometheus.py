"""Rule metrics for Prometheus, through `prometheus_client` (the `prometheus` extra).

    from pulsar_external_schema.metrics import prometheus
    prometheus.register_rule_metrics()   # into prometheus_client's default registry
    prometheus.serve_metrics(9464)       # /metrics on its own port, if nothing serves it yet

What a scrape shows (labels: rule, subject, mode, topic, outcome, action):

    pulsar_external_schema_rule_executions_total      counter, one per rule execution
    pulsar_external_schema_rule_seconds_sum / _count  summary of the rules' evaluation time

and, from the Spark validation job, `pulsar_external_schema_validated_messages_total` (labels:
topic, verdict, rule). The values are read from the package's store at scrape time (a custom
collector): recording costs nothing on prometheus_client's side.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError
from . import RuleMetrics, enable_rule_metrics

try:
    from prometheus_client import REGISTRY, CollectorRegistry, start_http_server
    from prometheus_client.core import CounterMetricFamily, SummaryMetricFamily
    from prometheus_client.registry import Collector
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "rule metrics for Prometheus need prometheus_client: pip install 'pulsar-external-schema[prometheus]'"
    ) from error

__all__ = ["RuleMetricsCollector", "register_rule_metrics", "serve_metrics"]

_RULE_LABELS = ["rule", "subject", "mode", "topic", "outcome", "action"]


class RuleMetricsCollector(Collector):
    """Reads the rule counts at each scrape."""

    def __init__(self, store: RuleMetrics) -> None:
        self._store = store

    def collect(self) -> Iterator[Any]:
        executions = CounterMetricFamily(
            "pulsar_external_schema_rule_executions",
            "Data-contract rule executions, by outcome (passed, failed, error) and the action that followed",
            labels=_RULE_LABELS,
        )
        seconds = SummaryMetricFamily(
            "pulsar_external_schema_rule_seconds",
            "Time data-contract rules took to evaluate (their actions not included)",
            labels=_RULE_LABELS,
        )
        for stat in self._store.snapshot():
            labels = [stat.rule, stat.subject, stat.mode, stat.topic, stat.outcome, stat.action]
            executions.add_metric(labels, stat.count)
            seconds.add_metric(labels, count_value=stat.count, sum_value=stat.seconds)
        validated = CounterMetricFamily(
            "pulsar_external_schema_validated_messages",
            "Messages the validation job passed on (valid) or dead-lettered, with the failing rule",
            labels=["topic", "verdict", "rule"],
        )
        for verdict in self._store.validated():
            validated.add_metric([verdict.topic, verdict.verdict, verdict.rule], verdict.count)
        yield executions
        yield seconds
        yield validated


_registered: dict[int, RuleMetricsCollector] = {}


def register_rule_metrics(registry: CollectorRegistry | None = None) -> RuleMetricsCollector:
    """Turn rule metrics on and export them through `registry` (default: prometheus_client's
    global one, which `start_http_server` and most frameworks serve). Idempotent per registry."""
    target = registry if registry is not None else REGISTRY
    collector = _registered.get(id(target))
    if collector is None:
        collector = RuleMetricsCollector(enable_rule_metrics())
        target.register(collector)
        _registered[id(target)] = collector
    return collector


def serve_metrics(
    port: int, addr: str = "0.0.0.0", registry: CollectorRegistry | None = None
) -> tuple[Any, Any]:
    """Register the rule metrics and serve `registry` at `http://<addr>:<port>/metrics` from a
    daemon thread; returns prometheus_client's (server, thread). Port 0 picks a free port
    (`server.server_port` says which)."""
    target = registry if registry is not None else REGISTRY
    register_rule_metrics(target)
    try:
        server, thread = start_http_server(port, addr=addr, registry=target)
    except OSError as error:
        raise ConfigError(f"cannot serve metrics on {addr}:{port}: {error.strerror or error}") from None
    return server, thread
