"""What the journeys (tests/journeys/) share: an order contract whose producers run a WRITE rule and
whose validation runs a READ rule, and the messages a day of producing leaves on the source topic."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulsar
import pytest
from contracts import drain, rule, subscribe

from pulsar_external_schema import (
    EncodeError,
    ExternalSchema,
    RuleViolationError,
    SchemaRegistrySchemaFactory,
    create_producer,
)
from pulsar_external_schema import schema_id as ids

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "acme.journey",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "qty", "type": "int"},
    ],
}
#: The same order as a JSON Schema (draft 7), for the journeys of JSON topics.
JSON_ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["id", "item", "qty"],
}


def avro_order(factory: SchemaRegistrySchemaFactory) -> ExternalSchema:
    return factory.avro(json.dumps(ORDER))


def json_order(factory: SchemaRegistrySchemaFactory) -> ExternalSchema:
    return factory.json(json.dumps(JSON_ORDER))


#: How a journey's producers and readers make their schema of the order topic.
MakeSchema = Callable[[SchemaRegistrySchemaFactory], ExternalSchema]

#: Producers refuse orders of nothing; the validation job refuses orders without an item.
POSITIVE = rule("positive", "CONDITION", "CEL", "WRITE", "message.qty > 0")
NAMED = rule("named", "CONDITION", "CEL", "READ", "size(message.item) > 0")
#: A day of orders: each of its kinds of message.
ORDERS = [
    {"id": 1, "item": "tea", "qty": 2},
    {"id": 2, "item": "", "qty": 1},  # passes the producer's rule, fails the validation's
    {"id": 3, "item": "jam", "qty": 0},  # the producer's rule refuses it
    {"id": 4, "item": "pie", "qty": 2.5},  # not an int: refused, never written as 2
    {"id": 5, "item": "ham", "qty": 3},
]
#: What producing `ORDERS` refuses, by id.
REFUSED = {3: "RuleViolationError", 4: "ValueOutsideSchemaError"}
#: The same on a JSON Schema topic: the schema's validation refuses `qty` 2.5 in `jsonschema`'s
#: words (docs/operations.md), as confluent-kafka's serializer does.
JSON_REFUSED = {3: "RuleViolationError", 4: "EncodeError"}


@dataclass
class Day:
    """What producing a day's orders left on a topic, message by message."""

    topic: str
    sent: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Orders on the topic, by id (valid or not, as the validation job will judge)."""
    refused: dict[int, str] = field(default_factory=dict)
    """Orders the producer refused, by id: the error's class."""
    raw: dict[str, tuple[bytes, dict[str, str]]] = field(default_factory=dict)
    """Every message on the topic by partition key: its bytes and properties."""

    @property
    def valid(self) -> list[int]:
        return sorted(i for i, order in self.sent.items() if order["item"])

    @property
    def invalid(self) -> list[int]:
        return sorted(i for i, order in self.sent.items() if not order["item"])


def produce_a_day(
    pulsar_client: Any,
    registry_url: str,
    topic: str,
    orders: list[dict[str, Any]],
    make: MakeSchema = avro_order,
) -> Day:
    """Each order through a producer with the default config (the registered WRITE rule runs), and
    one message of garbage under an id no registry holds; then what the topic holds."""
    day = Day(topic)
    with SchemaRegistrySchemaFactory({"schema.registry.url": registry_url}) as factory:
        producer = create_producer(pulsar_client, topic, make(factory))
        for order in orders:
            try:
                producer.send(order, partition_key=str(order["id"]))
            except (RuleViolationError, EncodeError) as error:
                day.refused[order["id"]] = type(error).__name__
            else:
                day.sent[order["id"]] = order
        producer.close()
    raw = pulsar_client.create_producer(topic)
    unknown = ids.to_property(ids.confluent_id(987_654_321))
    raw.send(b"\x02\x04ab", properties={ids.SCHEMA_ID_PROPERTY: unknown}, partition_key="garbage")
    raw.close()
    day.raw = messages_by_key(pulsar_client, topic)
    return day


def messages_by_key(
    pulsar_client: Any, topic: str, name: str = "audit"
) -> dict[str, tuple[bytes, dict[str, str]]]:
    consumer = subscribe(pulsar_client, topic, name=name)
    found = {m.partition_key(): (m.data(), m.properties()) for m in drain(consumer)}
    consumer.close()
    return found


def stock_consumer(
    pulsar_client: Any, registry_url: str, topic: str, name: str = "app", make: MakeSchema = avro_order
) -> Any:
    """What a new reader of a topic writes: the topic's schema from a factory with the default
    config, on a plain `client.subscribe`."""
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": registry_url})
    return pulsar_client.subscribe(
        topic,
        name,
        schema=make(factory),
        initial_position=pulsar.InitialPosition.Earliest,
    )


def read_values(consumer: Any, timeout_millis: int = 3_000) -> list[tuple[str, Any, bytes, dict[str, str]]]:
    """(key, value, bytes, properties) of each message, in order; a message that does not decode
    fails the test with its error."""
    read = []
    for message in drain(consumer, timeout_millis):
        try:
            value = message.value()
        except Exception as error:  # the journey must say which message broke, and how
            pytest.fail(
                f"message {message.partition_key()} of {message.topic_name()} did not decode: {error}"
            )
        read.append((message.partition_key(), value, message.data(), message.properties()))
    return read
