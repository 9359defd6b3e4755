"""The hardening cases, replayed on the real services with small counts: counts reconcile across
a SIGKILL of a consumer that dead-letters (nothing missing, no duplicate within a run); a registry that hangs
(SIGSTOP) fails requests within the configured bound and is used again once it resumes; a
payload that states 2^31 items leaves the decoding process's peak memory where it was; no planted
secret or PII value appears in anything a failing consume path writes."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from conftest import Services, parse_service_urls, service_pid, services_script
from contracts import contract, drain, rule, subscribe

from pulsar_external_schema import (
    RegistryUnavailableError,
    SchemaRegistrySchemaFactory,
    consume,
    create_producer,
)
from pulsar_external_schema.producer import encode_message

ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "acme.hostile",
        "fields": [{"name": "id", "type": "long"}],
    }
)


@pytest.fixture
def own_registry() -> Iterator[tuple[str, int]]:
    """A registry of its own (it gets stopped): (URL, pid)."""
    name = f"hostile-{uuid.uuid4().hex[:6]}"
    url = parse_service_urls(services_script("up", "--instance", name, "--only", "registry"))[
        "SCHEMA_REGISTRY_URL"
    ]
    pid = service_pid(name, "registry")
    try:
        yield url, int(pid)
    finally:
        os.kill(int(pid), signal.SIGCONT)
        services_script("down", "--instance", name)


def test_a_stopped_registry_fails_requests_within_the_bound_and_is_used_again_after(
    own_registry: tuple[str, int],
) -> None:
    url, pid = own_registry
    conf = {"schema.registry.url": url, "http.read.timeout.ms": 500, "max.retries": 1, "retries.wait.ms": 10}
    factory = SchemaRegistrySchemaFactory(conf)
    schema = factory.avro(ORDER)
    encoded = schema.encode("persistent://acme/hostile/a", {"id": 1})
    os.kill(pid, signal.SIGSTOP)  # accepts connections, never answers
    outcome: list[BaseException | None] = []

    def new_topic() -> None:
        try:
            factory.avro(ORDER.replace("Order", "Refund")).encode("persistent://acme/hostile/b", {"id": 2})
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=new_topic, daemon=True)
    worker.start()
    worker.join(timeout=60)  # the configured bound is ~1 s; without timeouts it never returns
    assert not worker.is_alive(), "a request to the stopped registry is still waiting"
    assert isinstance(outcome[0], RegistryUnavailableError)
    # What is cached keeps working during the outage.
    assert schema.decode("persistent://acme/hostile/a", encoded.data, encoded.schema_id) == {"id": 1}
    os.kill(pid, signal.SIGCONT)
    resumed = factory.avro(ORDER.replace("Order", "Refund")).encode("persistent://acme/hostile/b", {"id": 3})
    assert resumed.schema_id
    factory.close()


_DECODE_HOSTILE = """
import json, resource, sys
sys.path.insert(0, "tests")
from contracts import mock_factory
from pulsar_external_schema import DecodeLimitError
schema = mock_factory().avro(json.dumps({"type": "record", "name": "P", "fields": [
    {"name": "pings", "type": {"type": "array", "items": "null"}}]}))
schema_id = schema.encode("persistent://a/b/c", {"pings": [None]}).schema_id
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    schema.decode("persistent://a/b/c", b"\\xfe\\xff\\xff\\xff\\x0f\\x00", schema_id)
    print("decoded")
except DecodeLimitError as error:
    print("refused", error.key)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_a_payload_stating_billions_of_items_leaves_peak_memory_where_it_was() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _DECODE_HOSTILE], capture_output=True, text=True, check=True, timeout=120
    )
    verdict, growth_kib = done.stdout.split("\n")[:2]
    assert verdict == "refused decode.max.bytes"
    assert int(growth_kib) < 20 * 1024  # without the limit: 16 GiB of list slots, or MemoryError


SSN = "987-65-4321"
SECRET = "pl4nted-s3cret"
PERSON = {
    "type": "record",
    "name": "Person",
    "namespace": "acme.hostile",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
    ],
}


def test_no_planted_secret_or_pii_value_in_errors_logs_or_dead_letter_copies(
    services: Services, pulsar_client: Any, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    writer = SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url})
    writer.registry_client.register_schema(
        f"{topic.split('://')[1].replace('/', '.')}-value",
        contract(
            PERSON,
            ruleSet={"domainRules": [rule("ssnDigits", "CONDITION", "CEL", "READ", "int(message.ssn) > 0")]},
        ),
    )
    producer = create_producer(pulsar_client, topic, writer.avro(json.dumps(PERSON)))
    producer.send({"name": "Ann", "ssn": SSN})
    # The reader's URL carries a planted password (AxonOps without auth ignores it).
    host = services.registry_url.split("://", 1)[1]
    reader = SchemaRegistrySchemaFactory(
        {
            "schema.registry.url": f"http://svc:{SECRET}@{host}",
            "cel.engine": "cel-python",
            "use.latest.version": True,
        }
    )
    errors: list[Any] = []
    with caplog.at_level(logging.DEBUG):
        result = consume(
            subscribe(pulsar_client, topic, reader.avro(json.dumps(PERSON))),
            lambda msg, value: None,
            timeout_millis=2_000,
            dead_letter_topic=f"{topic}-dlq",
            on_error=lambda msg, error: errors.append(error),
        )
    assert result.dead_lettered == 1
    [copy] = drain(subscribe(pulsar_client, f"{topic}-dlq"))
    said = [
        *(str(error) for error in errors),
        json.dumps(copy.properties()),
        repr(reader.config),
        *(record.getMessage() for record in caplog.records),
    ]
    assert "<REDACTED>" in copy.properties()["__rule.exception"]
    assert not [text for text in said if SSN in text or SECRET in text]
    writer.close()
    reader.close()


# A consumer process: `consume` with a DLQ topic on a shared subscription, writing each handled
# order's id to a file (line-buffered: a SIGKILL loses nothing the process wrote).
_CONSUMER = """
import sys, time, pulsar
from pulsar_external_schema import SchemaRegistrySchemaFactory, consume
service, registry, topic, dlq, out, idle_ms, pause, order = sys.argv[1:9]
schema = SchemaRegistrySchemaFactory({"schema.registry.url": registry}).avro(order)
client = pulsar.Client(service)
consumer = client.subscribe(topic, "reconcile", schema=schema, consumer_type=pulsar.ConsumerType.Shared)
with open(out, "a", buffering=1) as ids:
    result = consume(
        consumer,
        lambda msg, value: (ids.write(f"{value['id']}\\n"), time.sleep(float(pause))),
        timeout_millis=int(idle_ms),
        dead_letter_topic=dlq,
        client=client,
    )
print("RESULT", result.processed, result.dead_lettered)
client.close()
"""


def test_counts_reconcile_across_a_sigkill_of_the_consumer(
    services: Services, pulsar_client: Any, topic: str, tmp_path: Any
) -> None:
    # The probe, smaller: 2,000 orders, 1% of them undecodable, a consumer SIGKILLed
    # in the middle and a second one that finishes. Every valid order is handled, every bad one
    # dead-lettered, nothing is missing; duplicates only across the kill (at-least-once).
    total, dlq = 2000, f"{topic}-dlq"
    pulsar_client.subscribe(topic, "reconcile", consumer_type=pulsar.ConsumerType.Shared).close()
    dead = pulsar_client.subscribe(dlq, "check")
    schema = SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}).avro(ORDER)
    raw = pulsar_client.create_producer(topic, block_if_queue_full=True)  # else sends beyond 1,000 fail
    bad = set(range(0, total, 100))
    for n in range(total):
        data, properties = encode_message(schema, topic, {"id": n})
        if n in bad:
            data = b"\x80"  # a varint cut short: undecodable
        raw.send_async(data, None, properties={**properties, "n": str(n)})
    raw.flush()
    out = tmp_path / "handled"
    argv = [sys.executable, "-c", _CONSUMER, services.pulsar_url, services.registry_url, topic, dlq]
    # The first consumer takes 2 ms per message, so that the kill lands in the middle.
    first = subprocess.Popen([*argv, str(out), "60000", "0.002", ORDER], stdout=subprocess.DEVNULL)
    for _ in range(1200):  # until a third is handled (at most two minutes)
        if out.exists() and len(out.read_text().splitlines()) > total // 3:
            break
        time.sleep(0.1)
    first.kill()
    first.wait(timeout=60)
    killed_at = len(out.read_text().splitlines())
    assert total // 3 < killed_at < total, "the kill did not land in the middle"
    second = subprocess.run(
        [*argv, str(out), "5000", "0", ORDER], capture_output=True, text=True, timeout=300, check=True
    )
    handled = [int(line) for line in out.read_text().splitlines()]
    copies = [int(msg.properties()["n"]) for msg in drain(dead, timeout_millis=5_000)]
    valid = set(range(total)) - bad
    assert set(handled) == valid  # every valid order handled, and no bad one
    assert bad <= set(copies) <= bad  # every bad one dead-lettered, and no valid one
    before, after = handled[:killed_at], handled[killed_at:]
    assert len(set(before)) == len(before) and len(set(after)) == len(after)  # no duplicate within a run
    [result] = [line.split()[1:] for line in second.stdout.splitlines() if line.startswith("RESULT ")]
    processed, dead_lettered = map(int, result)
    assert processed == len(after) and 0 < dead_lettered <= len(copies)
