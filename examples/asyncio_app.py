"""asyncio: a producer and a consumer of `pulsar.asyncio`, with a data contract on both sides.

    python examples/asyncio_app.py    # uses PULSAR_SERVICE_URL and SCHEMA_REGISTRY_URL,
                                      # or starts the local services with scripts/services

What it shows: `create_async_producer` for a `pulsar.asyncio.Client` (its `send` is awaited, and a
record that breaks a WRITE rule raises before anything is sent), and `consume_async`, the loop of
`consume` for a `pulsar.asyncio.Consumer`, with a coroutine handler: each message is decoded,
handled, then acknowledged.
"""

from __future__ import annotations

import asyncio
import json
import uuid

import pulsar
import pulsar.asyncio
from confluent_kafka.schema_registry import Schema
from quickstart import service_urls

from pulsar_external_schema import (
    RuleViolationError,
    SchemaRegistrySchemaFactory,
    consume_async,
    create_async_producer,
)

PAYMENT = {
    "type": "record",
    "name": "Payment",
    "namespace": "asyncio_app",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}],
}
POSITIVE = {
    "name": "positiveAmount",
    "kind": "CONDITION",
    "type": "CEL",
    "mode": "WRITE",
    "expr": "message.amount > 0.0",
    "onFailure": "ERROR",
}

CONTRACT = {"schemaType": "AVRO", "schema": json.dumps(PAYMENT), "ruleSet": {"domainRules": [POSITIVE]}}


async def main() -> None:
    service_url, _admin_url, registry_url = service_urls()
    topic = f"persistent://public/default/payments-{uuid.uuid4().hex[:6]}"
    client = pulsar.asyncio.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    with SchemaRegistrySchemaFactory({"schema.registry.url": registry_url}) as factory:
        schema = factory.avro(Schema.from_dict(CONTRACT))
        consumer = await client.subscribe(topic, "payments-app", schema=schema)
        async with await create_async_producer(client, topic, schema) as producer:
            for number, amount in enumerate((12.5, -3.0, 40.0)):
                try:
                    await producer.send({"id": f"p{number}", "amount": amount})
                except RuleViolationError as error:
                    print(f"refused: p{number}: rule {error.rule}")

        async def handle(msg: pulsar.Message, value: dict[str, object]) -> None:
            print(f"received: {value['id']} {value['amount']}")

        result = await consume_async(consumer, handle, max_messages=2)
        print(f"summary: {result.processed} received and acknowledged")
        await consumer.close()
    await client.close()


if __name__ == "__main__":
    asyncio.run(main())
