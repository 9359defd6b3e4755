"""Rules of referenced schemas: a shared `Product` contract whose rule runs inside every `Order`.

    PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 SCHEMA_REGISTRY_URL=http://127.0.0.1:8081 \\
        python examples/referenced_rules.py

1. registers `Product` with its own rule (`pricePositive`), and `Order`, which references it and
   has no rule about products at all;
2. produces two orders with `rules.referenced` on: the second has a product without a price, so
   `Product`'s rule stops it, naming the referenced subject and where the product sits;
3. consumes the topic: only the first order is there.
"""

from __future__ import annotations

import json
import os
import uuid

import pulsar
from confluent_kafka.schema_registry import Schema

from pulsar_external_schema import RuleViolationError, SchemaRegistrySchemaFactory, consume, create_producer

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
RUN = uuid.uuid4().hex[:8]  # fresh names, so the example can run again
TOPIC = f"persistent://public/default/orders-{RUN}"
NAMESPACE = f"shop_{RUN}"
PRODUCT_SUBJECT = f"{NAMESPACE}.Product"

PRODUCT = {
    "schema": json.dumps(
        {
            "type": "record",
            "name": "Product",
            "namespace": NAMESPACE,
            "fields": [{"name": "sku", "type": "string"}, {"name": "price", "type": "double"}],
        }
    ),
    "schemaType": "AVRO",
    "ruleSet": {
        "domainRules": [
            {
                "name": "pricePositive",
                "kind": "CONDITION",
                "type": "CEL",
                "mode": "WRITE",
                "expr": "message.price > 0.0",
            }
        ]
    },
}
ORDER = {
    "schema": json.dumps(
        {
            "type": "record",
            "name": "Order",
            "namespace": NAMESPACE,
            "fields": [
                {"name": "id", "type": "int"},
                {"name": "products", "type": {"type": "array", "items": f"{NAMESPACE}.Product"}},
            ],
        }
    ),
    "schemaType": "AVRO",
    "references": [{"name": f"{NAMESPACE}.Product", "subject": PRODUCT_SUBJECT, "version": 1}],
}


def main() -> None:
    client = pulsar.Client(SERVICE_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    factory = SchemaRegistrySchemaFactory(
        {"schema.registry.url": REGISTRY_URL, "rules.referenced": True}, client=client
    )
    factory.registry_client.register_schema(PRODUCT_SUBJECT, Schema.from_dict(PRODUCT))
    orders = factory.avro(Schema.from_dict(ORDER))
    consumer = client.subscribe(TOPIC, "app", schema=orders, initial_position=pulsar.InitialPosition.Earliest)
    producer = create_producer(client, TOPIC, orders)

    producer.send({"id": 1, "products": [{"sku": "tea", "price": 3.5}]})
    print("sent order 1")
    try:
        producer.send({"id": 2, "products": [{"sku": "tea", "price": 3.5}, {"sku": "cup", "price": 0.0}]})
    except RuleViolationError as error:
        where = str(error).split(" failed", 1)[0]
        subject = (error.subject or "").replace(NAMESPACE, "shop")  # without this run's suffix
        print(f"refused order 2: {where} (subject {subject})")

    consume(consumer, lambda msg, value: print("consumed order", value["id"]), timeout_millis=3_000)

    orders.close()
    factory.close()
    client.close()


if __name__ == "__main__":
    main()
