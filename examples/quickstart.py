"""Quickstart: Avro messages of two schema versions through a partitioned Pulsar topic.

    scripts/demo                      # sets everything up, then runs this
    python examples/quickstart.py     # uses PULSAR_SERVICE_URL, PULSAR_ADMIN_URL, SCHEMA_REGISTRY_URL,
                                      # or starts the local services with scripts/services

What it shows: the producer registers its schema in the registry and sends each message with the
schema id in its metadata (PIP-420, the `__schema_id` property); a stock pulsar-client consumer
decodes every message with the schema it was written with, whatever the version.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pulsar

from pulsar_external_schema import SCHEMA_ID_PROPERTY, SchemaRegistrySchemaFactory, create_producer

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "quickstart",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}
# Version 2 adds a field with a default: backward compatible, so the registry accepts it.
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "quantity", "type": "int", "default": 1}]}


def service_urls() -> tuple[str, str, str]:
    """The URLs from the environment, or from `scripts/services up` (which starts what is missing)."""
    names = ("PULSAR_SERVICE_URL", "PULSAR_ADMIN_URL", "SCHEMA_REGISTRY_URL")
    if all(os.environ.get(name) for name in names):
        return os.environ[names[0]], os.environ[names[1]], os.environ[names[2]]
    script = Path(__file__).resolve().parents[1] / "scripts" / "services"
    print("starting the local Pulsar broker and schema registry (scripts/services up) ...", flush=True)
    result = subprocess.run([sys.executable, str(script), "up"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"could not start the services:\n{result.stderr}")
    urls = dict(re.findall(r"^([A-Z_]+)=(\S+)$", result.stdout, flags=re.MULTILINE))
    return urls[names[0]], urls[names[1]], urls[names[2]]


def main() -> int:
    service_url, admin_url, registry_url = service_urls()
    topic = f"persistent://public/default/orders-{uuid.uuid4().hex[:6]}"
    partitions = 4
    httpx.put(
        f"{admin_url}/admin/v2/persistent/{topic.removeprefix('persistent://')}/partitions",
        json=partitions,
        timeout=30,
    ).raise_for_status()
    print(f"created {topic} with {partitions} partitions")

    factory = SchemaRegistrySchemaFactory({"schema.registry.url": registry_url})
    v1, v2 = factory.avro(json.dumps(ORDER_V1)), factory.avro(json.dumps(ORDER_V2))
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        # A stock pulsar-client consumer: msg.value() decodes with the id in the message metadata.
        consumer = client.subscribe(
            topic, "quickstart", schema=v2, initial_position=pulsar.InitialPosition.Earliest
        )
        sent = 0
        with create_producer(client, topic, v1) as producer:
            for i, item in enumerate(["apple", "pear", "plum"]):
                producer.send({"id": i, "item": item}, partition_key=item)
                sent += 1
        with create_producer(client, topic, v2) as producer:
            for i, item in enumerate(["fig", "kiwi", "lime"], start=3):
                producer.send({"id": i, "item": item, "quantity": i * 10}, partition_key=item)
                sent += 1

        ids_seen: dict[str, int] = {}
        received = 0
        for _ in range(sent):
            message = consumer.receive(timeout_millis=15_000)
            schema_id = message.properties()[SCHEMA_ID_PROPERTY]
            ids_seen[schema_id] = ids_seen.get(schema_id, 0) + 1
            partition = message.topic_name().rsplit("-partition-", 1)[-1]
            print(f"partition {partition}  {SCHEMA_ID_PROPERTY}={schema_id}  {message.value()}")
            consumer.acknowledge(message)
            received += 1
        consumer.close()
    finally:
        client.close()

    subject = v1.subject(topic) or ""
    versions = factory.registry_client.get_versions(subject)
    v1.close()
    v2.close()
    factory.close()
    by_id = ", ".join(f"{count} with {schema_id}" for schema_id, count in sorted(ids_seen.items()))
    print(
        f"summary: {sent} produced, {received} consumed and decoded ({by_id}); "
        f"subject {subject} has versions {versions}"
    )
    return 0 if received == sent and len(ids_seen) == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
