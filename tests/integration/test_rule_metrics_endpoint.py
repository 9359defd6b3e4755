"""Rule metrics on the real broker and registry, scraped from a real `/metrics` endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_support import interruptible
from conftest import Services
from contracts import contract, drain, rule, subject_of, subscribe
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from pulsar_external_schema import DeadLetteredError, consume, create_producer, metrics
from pulsar_external_schema.metrics import prometheus

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "acme",
    "fields": [{"name": "id", "type": "int"}, {"name": "qty", "type": "int"}],
}
COMMAND = Path(sys.executable).parent / "pulsar-external-schema"


@pytest.fixture
def served() -> Iterator[str]:
    """Rule metrics on, served on a free port of this host; yields the endpoint's URL."""
    metrics.enable_rule_metrics().clear()
    server, _ = prometheus.serve_metrics(0, addr="127.0.0.1", registry=CollectorRegistry())
    yield f"http://127.0.0.1:{server.server_port}/metrics"
    server.shutdown()
    metrics.disable_rule_metrics()


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = httpx.get(url, timeout=10)
    response.raise_for_status()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_a_producer_and_a_consumer_are_counted_per_rule_outcome_and_action(
    served: str, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    dlq = f"{topic}-dlq"
    positive = rule(
        "positive", "CONDITION", "CEL", "WRITE", "message.qty > 0", onFailure="DLQ", params={"dlq.topic": dlq}
    )
    small = rule("small", "CONDITION", "CEL", "READ", "message.qty < 100")
    schema = make_factory().avro(contract(ORDER, ruleSet={"domainRules": [positive, small]}))
    dead = subscribe(pulsar_client, dlq)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    for qty in (1, 2, 3):
        producer.send({"id": qty, "qty": qty})
    with pytest.raises(DeadLetteredError):
        producer.send({"id": 0, "qty": 0})
    assert len(drain(dead, 5_000)) == 1

    read: list[int] = []
    consume(consumer, lambda msg, value: read.append(value["qty"]), max_messages=3, timeout_millis=10_000)
    assert read == [1, 2, 3]

    subject = subject_of(topic)

    def labels(name: str, mode: str, outcome: str, action: str) -> frozenset[tuple[str, str]]:
        return frozenset(
            {
                "rule": name,
                "subject": subject,
                "mode": mode,
                "topic": topic,
                "outcome": outcome,
                "action": action,
            }.items()
        )

    samples = scrape(served)
    executions = "pulsar_external_schema_rule_executions_total"
    assert samples[executions, labels("positive", "WRITE", "passed", "NONE")] == 3
    assert samples[executions, labels("positive", "WRITE", "failed", "DLQ")] == 1
    assert samples[executions, labels("small", "READ", "passed", "NONE")] == 3
    assert (
        samples["pulsar_external_schema_rule_seconds_sum", labels("positive", "WRITE", "passed", "NONE")] > 0
    )
    counted = {key for key in samples if key[0] == executions}
    assert len(counted) == 3, counted  # nothing else


def test_the_console_consumer_serves_rule_metrics_while_it_runs(
    services: Services, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    small = rule("small", "CONDITION", "CEL", "READ", "message.qty < 100")
    schema = make_factory().avro(contract(ORDER, ruleSet={"domainRules": [small]}))
    producer = create_producer(pulsar_client, topic, schema)
    for qty in (1, 2):
        producer.send({"id": qty, "qty": qty})
    env = {
        **os.environ,
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    # It reads the two messages, then waits for more: the endpoint is scraped meanwhile.
    run = subprocess.Popen(
        [str(COMMAND), "consume", topic, "--from-beginning", "--metrics-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=interruptible,
    )
    try:
        assert run.stderr is not None
        first = run.stderr.readline()
        assert first.startswith("rule metrics at http://0.0.0.0:") and first.rstrip().endswith("/metrics")
        url = first.split(" at ", 1)[1].strip().replace("0.0.0.0", "127.0.0.1")
        deadline = time.monotonic() + 60
        executions = 0.0
        while time.monotonic() < deadline and executions < 2:
            executions = sum(
                value
                for (name, labels), value in scrape(url).items()
                if name == "pulsar_external_schema_rule_executions_total" and ("rule", "small") in labels
            )
            time.sleep(0.2)
        assert executions == 2
    finally:
        run.send_signal(signal.SIGINT)
        stdout, _ = run.communicate(timeout=30)
    assert [json.loads(line)["qty"] for line in stdout.splitlines() if line.strip()] == [1, 2]
