"""Quickstart: a data contract in the registry, Avro messages through Pulsar with schema ids in metadata.

Run it with `scripts/demo` (which starts the local services), or against your own services:

    PULSAR_SERVICE_URL=pulsar://... SCHEMA_REGISTRY_URL=http://... python examples/quickstart.py

This is the smoke path of the foundation: it encodes with fastavro and carries the schema id as
the PIP-420 bytes (0xFF + Confluent's 0x00 + uint32 id) in the `__schema_id` property by hand.
"""

from __future__ import annotations

import io
import json
import os
import sys
import uuid

import fastavro
import pulsar
from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    Rule,
    RuleKind,
    RuleMode,
    RuleSet,
    Schema,
    SchemaRegistryClient,
)

SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "quickstart",
    "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": "string"}],
}


def main() -> int:
    service_url = os.environ.get("PULSAR_SERVICE_URL")
    registry_url = os.environ.get("SCHEMA_REGISTRY_URL")
    if not service_url or not registry_url:
        print("Set PULSAR_SERVICE_URL and SCHEMA_REGISTRY_URL (or run scripts/demo).", file=sys.stderr)
        return 2

    run = uuid.uuid4().hex[:8]
    topic = f"persistent://public/default/quickstart-{run}"
    subject = f"public.default.quickstart-{run}-value"
    registry = SchemaRegistryClient({"url": registry_url})
    rule = Rule(
        name="itemNotEmpty",
        doc=None,
        kind=RuleKind.CONDITION,
        mode=RuleMode.WRITE,
        type="CEL",
        tags=None,
        params=None,
        expr="size(message.item) > 0",
        on_success=None,
        on_failure="ERROR",
        disabled=False,
    )
    contract = Schema(
        json.dumps(SCHEMA),
        "AVRO",
        metadata=Metadata(None, MetadataProperties({"owner": "quickstart"}), None),
        rule_set=RuleSet(migration_rules=None, domain_rules=[rule]),
    )
    schema_id = registry.register_schema(subject, contract)
    print(f"registered {subject} -> schema id {schema_id} (rule: {rule.name}: {rule.expr})")

    pip420_id = (b"\xff\x00" + schema_id.to_bytes(4, "big")).hex()
    writer = fastavro.parse_schema(SCHEMA)
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        consumer = client.subscribe(topic, "quickstart", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic)
        orders = [{"id": i, "item": item} for i, item in enumerate(["apple", "pear", "plum"])]
        for order in orders:
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, writer, order)
            producer.send(buffer.getvalue(), properties={"__schema_id": pip420_id})

        for _ in orders:
            message = consumer.receive(timeout_millis=10_000)
            raw_id = bytes.fromhex(message.properties()["__schema_id"])
            writer_id = int.from_bytes(raw_id[2:6], "big")
            writer_schema_str = registry.get_schema(writer_id).schema_str or ""
            writer_schema = fastavro.parse_schema(json.loads(writer_schema_str))
            value = fastavro.schemaless_reader(io.BytesIO(message.data()), writer_schema, None)
            print(f"consumed {value!r} (schema id {writer_id})")
            consumer.acknowledge(message)
        print(f"summary: {len(orders)} produced, {len(orders)} consumed on {topic}")
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
