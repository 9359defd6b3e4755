"""Helpers for the data-contract tests: rule sets written as Confluent's documentation writes them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pulsar
from confluent_kafka.schema_registry import Schema

from pulsar_external_schema import SchemaRegistrySchemaFactory

PERSON = {
    "type": "record",
    "name": "Person",
    "namespace": "acme",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "ssn", "type": "string"},
        {"name": "occupation", "type": "string", "default": ""},
    ],
}


def contract(schema: dict[str, Any] | str, schema_type: str = "AVRO", **parts: Any) -> Schema:
    """A schema with metadata / ruleSet, in the registry's JSON shape (as Confluent's docs write it)."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return Schema.from_dict({"schema": text, "schemaType": schema_type, **parts})


def rule(name: str, kind: str, type_: str, mode: str, expr: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "type": type_, "mode": mode, "expr": expr, **extra}


def subscribe(client: Any, topic: str, schema: Any = None, name: str = "test") -> Any:
    kwargs = {"schema": schema} if schema is not None else {}
    return client.subscribe(topic, name, initial_position=pulsar.InitialPosition.Earliest, **kwargs)


def drain(consumer: Any, timeout_millis: int = 1_500) -> list[Any]:
    messages: list[Any] = []
    while True:
        try:
            message = consumer.receive(timeout_millis=timeout_millis)
        except pulsar.Timeout:
            return messages
        consumer.acknowledge(message)
        messages.append(message)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def mock_factory(factory_args: dict[str, Any] | None = None, /, **conf: Any) -> SchemaRegistrySchemaFactory:
    """A factory on a fresh in-memory registry; `factory_args` go to the factory, `conf` to its config."""
    url = f"mock://{uuid.uuid4().hex}"
    return SchemaRegistrySchemaFactory({"schema.registry.url": url, **conf}, **(factory_args or {}))


class FakeProducer:
    def __init__(self, sent: list[dict[str, Any]], topic: str) -> None:
        self._sent, self._topic = sent, topic

    def send(self, message: Any) -> str:
        self._sent.append(
            {
                "topic": self._topic,
                "data": message.data(),
                "properties": message.properties(),
                "key": message.partition_key(),
            }
        )
        return "fake-id"  # one id: the error text names it, and both paths must say the same

    def close(self) -> None:
        return None


class FakePulsarClient:
    """What the DLQ action needs of a `_pulsar.Client`: producers whose sends are recorded.
    Attach it with `schema._pulsar_client = FakePulsarClient()`."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def create_producer(self, topic: str, conf: Any) -> FakeProducer:
        return FakeProducer(self.sent, topic)
