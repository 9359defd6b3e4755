"""The hardening cases, replayed on the real services with small counts: a registry that hangs
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
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Services, parse_service_urls, service_pid, services_script
from contracts import contract, drain, rule, subscribe

from pulsar_external_schema import (
    RegistryUnavailableError,
    SchemaRegistrySchemaFactory,
    consume,
    create_producer,
)

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
