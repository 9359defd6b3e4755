"""The consume paths that dead-letter beside `consume`: asyncio (`consume_async`), and a factory's
schemas used without a subscription (the factory's own client persists the copy)."""

from __future__ import annotations

import asyncio
from typing import Any

import pulsar
import pulsar.asyncio
from contracts import contract, drain, rule, subscribe, unique

from pulsar_external_schema import DeadLetteredError, consume_async, create_producer
from pulsar_external_schema.deadletter import resolve_dlq_topic


def failing_read_rule(dlq: str) -> dict[str, Any]:
    return rule(
        "positive",
        "CONDITION",
        "CEL",
        "READ",
        "message.amount > 0",
        params={"dlq.topic": dlq},
        onFailure="DLQ",
    )


AMOUNT = {"type": "record", "name": "Payment", "fields": [{"name": "amount", "type": "int"}]}


def test_asyncio_consume_dead_letters_and_acknowledges(
    make_factory: Any, services: Any, pulsar_client: Any, topic: str
) -> None:
    bad = unique("bad-reads")
    schema = make_factory().avro(contract(AMOUNT, ruleSet={"domainRules": [failing_read_rule(bad)]}))
    producer = create_producer(pulsar_client, topic, schema)
    for amount in (5, -1, 7):
        producer.send({"amount": amount})

    async def run() -> tuple[list[int], Any]:
        client = pulsar.asyncio.Client(services.pulsar_url)
        try:
            consumer = await client.subscribe(
                topic, "async-app", schema=schema, initial_position=pulsar.InitialPosition.Earliest
            )
            seen: list[int] = []

            async def handle(msg: Any, value: Any) -> None:
                seen.append(value["amount"])

            result = await consume_async(consumer, handle, max_messages=3)
            await consumer.close()
            return seen, result
        finally:
            await client.close()

    seen, result = asyncio.run(run())
    assert seen == [5, 7]
    assert (result.processed, result.dead_lettered, result.redelivered) == (2, 1, 0)
    [copy] = drain(subscribe(pulsar_client, resolve_dlq_topic(bad, topic)))
    assert copy.properties()["__rule.name"] == "positive"
    assert drain(subscribe(pulsar_client, topic, schema, name="async-app")) == []  # all acknowledged


def test_a_factory_client_dead_letters_for_schemas_used_without_a_subscription(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    # e.g. a Spark job or a Pulsar Function decoding payloads with schema.decode(...)
    bad = unique("bad-reads")
    contract_schema = contract(AMOUNT, ruleSet={"domainRules": [failing_read_rule(bad)]})
    writer = make_factory().avro(contract_schema)
    encoded = writer.encode(topic, {"amount": -3})
    reader = make_factory(client=pulsar_client).avro(contract_schema)
    try:
        reader.decode(topic, encoded.data, encoded.schema_id)
    except DeadLetteredError as error:
        assert error.dlq_topic == resolve_dlq_topic(bad, topic)
    else:
        raise AssertionError("the READ rule should have dead-lettered the value")
    [copy] = drain(subscribe(pulsar_client, resolve_dlq_topic(bad, topic)))
    assert copy.data() == encoded.data
