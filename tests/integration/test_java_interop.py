"""One topic, this package and a Java PIP-420 client (Pulsar's Java client 4.2, from the broker's
own jars) with an external schema backed by the same registry: tests/interop/
ExternalSchemaInterop.java, run as a single source file. What each side reads of the other:

- Python producer -> Java consumer: Pulsar's Python client cannot set metadata field 32, so the
  Java consumer finds no id there and reads the `__schema_id` property (the recipe a Java team
  uses until it can); the broker accepts its EXTERNAL schema only on a topic declared EXTERNAL
  (`pulsar.admin.url`), and refuses it on an active topic written without a schema.
- Java producer -> Python consumer: the id is in field 32 only, which Python cannot read:
  `MissingSchemaIdError`, saying what the Java producer must add; with `__schema_id` set too, the
  message decodes.

Skipped, with the reason, where no `java` runs or the broker's jars are not on this machine (the
Docker path runs the broker in a container)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pulsar
import pytest
from conftest import REPO, Services

from pulsar_external_schema import MissingSchemaIdError, SchemaRegistrySchemaFactory, create_producer

PROGRAM = REPO / "tests" / "interop" / "ExternalSchemaInterop.java"
RECORD = '{"type": "record", "name": "r", "fields": [{"name": "f1", "type": "string"}]}'


def pulsar_lib() -> Path | None:
    cache = Path(os.environ.get("PES_CACHE_DIR", Path.home() / ".cache" / "pulsar-external-schema"))
    found = sorted(cache.glob("pulsar-4.*/lib/pulsar-client-original-*.jar"))
    return found[-1].parent if found else None


LIB = pulsar_lib()
pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or LIB is None,
    reason="needs `java` and the Pulsar jars scripts/services resolves (not on the Docker path)",
)


def java(services: Services, command: str, *args: str) -> list[str]:
    """The program's result lines (the Java client logs to stdout too)."""
    program = [str(PROGRAM), command, services.pulsar_url, services.registry_url, *args]
    done = subprocess.run(
        ["java", "-cp", f"{LIB}/*", *program], capture_output=True, text=True, timeout=180, check=False
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"java {command} failed ({done.returncode}): {output[-3000:]}")
    return [line.removeprefix("RESULT ") for line in done.stdout.splitlines() if line.startswith("RESULT ")]


def factory(services: Services, **config: Any) -> SchemaRegistrySchemaFactory:
    return SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url, **config})


def test_python_producer_to_java_consumer(services: Services, topic: str, pulsar_client: Any) -> None:
    schema = factory(services, **{"pulsar.admin.url": services.admin_url}).avro(RECORD)
    producer = create_producer(pulsar_client, topic, schema)  # declares the topic EXTERNAL
    producer.send({"f1": "from python"})

    assert java(services, "consume", topic, "java", "1") == ['{"f1": "from python"} property']


def test_a_java_external_consumer_is_refused_on_an_undeclared_topic_python_wrote(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    create_producer(pulsar_client, topic, factory(services).avro(RECORD)).send({"f1": "x"})

    with pytest.raises(AssertionError) as refused:
        java(services, "consume", topic, "java", "1")
    assert "Failed to add schema to an active topic with empty(BYTES) schema" in str(refused.value)


def test_java_producer_to_python_consumer(services: Services, topic: str, pulsar_client: Any) -> None:
    schema = factory(services).avro(RECORD)
    subject = schema.subject(topic)
    assert subject is not None
    schema.encode(topic, {"f1": "registers the schema"})
    sent = java(
        services, "produce", topic, subject, json.dumps({"f1": "field 32 only"}),
        "--property", json.dumps({"f1": "and __schema_id"}),
    )  # fmt: skip
    assert len(sent) == 2

    consumer = pulsar_client.subscribe(
        topic, "python", schema=schema, initial_position=pulsar.InitialPosition.Earliest
    )
    only_field32 = consumer.receive(10_000)
    with pytest.raises(MissingSchemaIdError) as raised:
        only_field32.value()
    assert "A Java PIP-420 producer puts the id in metadata field 32" in str(raised.value)
    assert consumer.receive(10_000).value() == {"f1": "and __schema_id"}
    # The Java side reads both from field 32, which its client wrote.
    assert java(services, "consume", topic, "java", "2") == [
        '{"f1": "field 32 only"} field32',
        '{"f1": "and __schema_id"} field32',
    ]
