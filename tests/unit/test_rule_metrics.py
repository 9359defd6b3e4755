"""Rule metrics (`metrics/`), on confluent-kafka's in-memory registry: what each outcome and action
counts as, on both paths, and what the Prometheus and OpenTelemetry exporters show.

That the compiled and the reference path count alike, case by case, is in
test_codec_differential.py; the real broker and registry, and a scraped `/metrics`, in
tests/integration/test_rule_metrics.py.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
import rule_plugins
from confluent_kafka.schema_registry import Schema
from contracts import FakePulsarClient, contract, mock_factory, rule
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pulsar_external_schema import RuleViolationError, metrics
from pulsar_external_schema.metrics import prometheus

RECORD = json.dumps(
    {
        "type": "record",
        "name": "R",
        "fields": [{"name": "f1", "type": "string"}, {"name": "n", "type": "int"}],
    }
)
TOPIC = "persistent://acme/shop/orders"
SUBJECT = "acme.shop.orders-value"


def with_rules(*rules: dict[str, Any]) -> Schema:
    return contract(RECORD, ruleSet={"domainRules": list(rules)})


@pytest.fixture
def store() -> Iterator[metrics.RuleMetrics]:
    """Metrics on, from zero, for one test (they are process-wide)."""
    store = metrics.enable_rule_metrics()
    store.clear()
    yield store
    metrics.disable_rule_metrics()
    store.clear()


def counted(store: metrics.RuleMetrics) -> dict[metrics.Key, int]:
    return store.counts()


def key(name: str, outcome: str, action: str, mode: str = "WRITE") -> metrics.Key:
    return (name, SUBJECT, mode, TOPIC, outcome, action)


def test_passing_failing_and_broken_rules_count_with_the_action_that_followed(
    store: metrics.RuleMetrics,
) -> None:
    small = rule("small", "CONDITION", "CEL", "WRITE", "message.n < 10")
    broken = rule("broken", "CONDITION", "CEL", "WRITE", "message.n / 0 > 1", onFailure="NONE")
    schema = mock_factory().avro(with_rules(small, broken))

    for n in range(5):  # the first takes the reference path, the others the compiled one
        schema.encode(TOPIC, {"f1": "x", "n": n})
    with pytest.raises(RuleViolationError):
        schema.encode(TOPIC, {"f1": "x", "n": 50})

    assert counted(store) == {
        key("small", "passed", "NONE"): 5,
        key("small", "failed", "ERROR"): 1,
        key("broken", "error", "NONE"): 5,  # division by zero on every message; NONE lets it pass
    }


def test_compiled_rules_count_with_their_time(
    store: metrics.RuleMetrics, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each execution is timed by two reads of the store's clock around the rule alone: with a
    clock that moves one millisecond a read, every execution is one millisecond, on the
    reference path (the first message) and the compiled plan alike."""
    ticks = itertools.count()
    monkeypatch.setattr(store, "clock", lambda: next(ticks) / 1000)
    small = rule("small", "CONDITION", "CEL", "WRITE", "message.n < 10")
    schema = mock_factory().avro(with_rules(small))
    for n in range(200):
        schema.encode(TOPIC, {"f1": "x", "n": n % 10})

    (stat,) = store.snapshot()
    assert (stat.rule, stat.outcome, stat.action, stat.count) == ("small", "passed", "NONE", 200)
    assert stat.seconds == pytest.approx(200 / 1000)


def test_read_rules_and_their_mode(store: metrics.RuleMetrics) -> None:
    both = rule("small", "CONDITION", "CEL", "WRITEREAD", "message.n < 10")
    schema = mock_factory().avro(with_rules(both))
    encoded = [schema.encode(TOPIC, {"f1": "x", "n": n}) for n in range(3)]
    for data in encoded:
        schema.decode(TOPIC, data.data, data.schema_id)

    assert counted(store) == {
        key("small", "passed", "NONE", "WRITE"): 3,
        key("small", "passed", "NONE", "READ"): 3,
    }


def test_a_dead_lettered_message_counts_as_failed_with_dlq(store: metrics.RuleMetrics) -> None:
    to_dlq = rule(
        "small", "CONDITION", "CEL", "WRITE", "message.n < 10", params={"dlq.topic": "bad"}, onFailure="DLQ"
    )
    schema = mock_factory().avro(with_rules(to_dlq))
    schema._pulsar_client = client = FakePulsarClient()
    schema.encode(TOPIC, {"f1": "x", "n": 1})
    with pytest.raises(RuleViolationError):
        schema.encode(TOPIC, {"f1": "x", "n": 99})

    assert client.sent and counted(store) == {
        key("small", "passed", "NONE"): 1,
        key("small", "failed", "DLQ"): 1,
    }


def test_a_custom_action_is_counted_under_its_name(store: metrics.RuleMetrics) -> None:
    factory = mock_factory(
        **{"rule.actions": "notify", "rule.actions.notify.class": "rule_plugins.RecordingAction"}
    )
    notify = rule("notify", "CONDITION", "CEL", "WRITE", "message.n < 10", onFailure="RECORD")
    schema = factory.avro(with_rules(notify))
    rule_plugins.RECORDED.clear()
    schema.encode(TOPIC, {"f1": "x", "n": 50})

    assert counted(store) == {key("notify", "failed", "RECORD"): 1}
    assert len(rule_plugins.RECORDED) == 1


def test_nothing_is_counted_while_metrics_are_off() -> None:
    store = metrics.enable_rule_metrics()
    metrics.disable_rule_metrics()
    store.clear()
    schema = mock_factory().avro(with_rules(rule("small", "CONDITION", "CEL", "WRITE", "message.n < 10")))
    for n in range(3):
        schema.encode(TOPIC, {"f1": "x", "n": n})

    assert metrics.recording() is None and store.counts() == {}


def test_prometheus_shows_executions_and_seconds_per_rule(store: metrics.RuleMetrics) -> None:
    registry = CollectorRegistry()
    prometheus.register_rule_metrics(registry)
    prometheus.register_rule_metrics(registry)  # idempotent: no duplicate collector error
    schema = mock_factory().avro(with_rules(rule("small", "CONDITION", "CEL", "WRITE", "message.n < 10")))
    for n in range(4):
        schema.encode(TOPIC, {"f1": "x", "n": n})
    store.count_validated(TOPIC, "dead_lettered", "small", 2)

    samples = scraped(generate_latest(registry).decode())
    labels = {"rule": "small", "subject": SUBJECT, "mode": "WRITE", "topic": TOPIC}
    passed = {**labels, "outcome": "passed", "action": "NONE"}
    assert samples[("pulsar_external_schema_rule_executions_total", frozenset(passed.items()))] == 4
    assert samples[("pulsar_external_schema_rule_seconds_count", frozenset(passed.items()))] == 4
    assert samples[("pulsar_external_schema_rule_seconds_sum", frozenset(passed.items()))] > 0
    verdict = {"topic": TOPIC, "verdict": "dead_lettered", "rule": "small"}
    assert samples[("pulsar_external_schema_validated_messages_total", frozenset(verdict.items()))] == 2


def scraped(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Prometheus' text format, read with prometheus_client's own parser."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_opentelemetry_observes_the_same_counts(store: metrics.RuleMetrics) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from pulsar_external_schema.metrics import opentelemetry

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    opentelemetry.register_rule_metrics(provider)
    opentelemetry.register_rule_metrics(provider)  # idempotent: one set of instruments
    schema = mock_factory().avro(with_rules(rule("small", "CONDITION", "CEL", "WRITE", "message.n < 10")))
    for n in (1, 2, 30):
        with contextlib.suppress(RuleViolationError):
            schema.encode(TOPIC, {"f1": "x", "n": n})

    data = reader.get_metrics_data()
    assert data is not None
    points = {
        (metric.name, (point.attributes or {})["outcome"]): point.value  # type: ignore[union-attr]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name.startswith("pulsar_external_schema.rule")
        for point in metric.data.data_points
    }
    assert points[("pulsar_external_schema.rule.executions", "passed")] == 2
    assert points[("pulsar_external_schema.rule.executions", "failed")] == 1
    assert points[("pulsar_external_schema.rule.duration", "passed")] > 0
