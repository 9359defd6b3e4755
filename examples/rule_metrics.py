"""Rule metrics: how often each rule of a data contract passed, failed and dead-lettered.

    pip install 'pulsar-external-schema[prometheus]'
    PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 SCHEMA_REGISTRY_URL=http://127.0.0.1:8081 \\
        python examples/rule_metrics.py

1. turns rule metrics on and serves them for Prometheus on a free port (`/metrics`);
2. produces ten orders under a contract whose `positiveQty` rule dead-letters orders without a
   quantity, and consumes them with a READ rule;
3. scrapes its own `/metrics` and prints the rule executions, as Prometheus would see them.
"""

from __future__ import annotations

import contextlib
import json
import os
import urllib.request
import uuid

import pulsar
from confluent_kafka.schema_registry import Schema

from pulsar_external_schema import DeadLetteredError, SchemaRegistrySchemaFactory, consume, create_producer
from pulsar_external_schema.metrics import prometheus

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
RUN = uuid.uuid4().hex[:8]  # fresh names, so the example can run again
TOPIC = f"persistent://public/default/orders-{RUN}"

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "example",
    "fields": [{"name": "id", "type": "int"}, {"name": "qty", "type": "int"}],
}
CONTRACT = {
    "schema": json.dumps(ORDER),
    "schemaType": "AVRO",
    "ruleSet": {
        "domainRules": [
            {
                "name": "positiveQty",
                "kind": "CONDITION",
                "type": "CEL",
                "mode": "WRITE",
                "expr": "message.qty > 0",
                "params": {"dlq.topic": f"orders-dlq-{RUN}"},
                "onFailure": "DLQ",
            },
            {
                "name": "sane",
                "kind": "CONDITION",
                "type": "CEL",
                "mode": "READ",
                "expr": "message.qty < 1000",
            },
        ]
    },
}


def main() -> None:
    # First, before any schema is made: plans are metered when they are built.
    server, _ = prometheus.serve_metrics(0, addr="127.0.0.1")
    url = f"http://127.0.0.1:{server.server_port}/metrics"

    client = pulsar.Client(SERVICE_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": REGISTRY_URL}, client=client)
    orders = factory.avro(Schema.from_dict(CONTRACT))
    consumer = client.subscribe(TOPIC, "app", schema=orders, initial_position=pulsar.InitialPosition.Earliest)
    producer = create_producer(client, TOPIC, orders)
    for i in range(10):
        with contextlib.suppress(DeadLetteredError):  # every fourth order has no quantity: DLQ
            producer.send({"id": i, "qty": i % 4})
    result = consume(consumer, lambda msg, value: None, timeout_millis=3_000)
    print(f"consumed {result.processed}")

    with urllib.request.urlopen(url, timeout=10) as response:
        scraped = response.read().decode()
    for line in scraped.splitlines():
        if line.startswith("pulsar_external_schema_rule_executions_total{"):
            labels, value = line.rsplit(" ", 1)
            fields = dict(part.split("=", 1) for part in labels[labels.index("{") + 1 : -1].split(","))
            shown = " ".join(f"{k}={fields[k]}" for k in ("rule", "mode", "outcome", "action"))
            print(f"{shown} {float(value):.0f}")

    orders.close()
    factory.close()
    client.close()
    server.shutdown()


if __name__ == "__main__":
    main()
