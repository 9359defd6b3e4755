"""JSON Schema evolution with closed producer schemas and open consumer schemas (docs/evolution.md).

    PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 SCHEMA_REGISTRY_URL=http://127.0.0.1:8081 \\
        python examples/json_evolution.py

1. producer v1 writes {id, name}; v2 adds an optional `checked`: both pass the client-side checks
   and are registered (the subject's own compatibility is set to NONE);
2. a consumer built on v1 reads the v2 messages too: it reads with the open form of v1;
3. a "fix" that turns `checked` into an enum is refused before anything is registered or sent,
   with every difference listed;
4. a consumer with a view schema reads only the properties it declares.
"""

from __future__ import annotations

import json
import os
import uuid

import pulsar

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.evolution import IncompatibleSchemaError

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
TOPIC = f"persistent://public/default/checks-{uuid.uuid4().hex[:8]}"


def producer_schema(**extra: dict[str, object]) -> str:
    """A closed producer schema: the producer says exactly what it writes."""
    return json.dumps(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, **extra},
            "required": ["id", "name"],
        }
    )


V1 = producer_schema()
V2 = producer_schema(checked={"type": "boolean"})
CHECKED_AS_ENUM = producer_schema(checked={"type": "string", "enum": ["pending", "passed", "failed"]})
VIEW = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]})


def main() -> None:
    # One key opts in: producers check and register their schema, consumers read with its open form.
    factory = SchemaRegistrySchemaFactory(
        {"schema.registry.url": REGISTRY_URL, "json.evolution": "producer-consumer"}
    )
    client = pulsar.Client(SERVICE_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        consumer_v1 = client.subscribe(
            TOPIC, "v1", schema=factory.json(V1), initial_position=pulsar.InitialPosition.Earliest
        )
        viewer = client.subscribe(
            TOPIC,
            "view",
            schema=factory.json(V2, view=VIEW),
            initial_position=pulsar.InitialPosition.Earliest,
        )
        with create_producer(client, TOPIC, factory.json(V1)) as producer:
            producer.send({"id": 1, "name": "first"})
        with create_producer(client, TOPIC, factory.json(V2)) as producer:
            producer.send({"id": 2, "name": "second", "checked": True})
        print("producers v1 and v2 registered and sent")

        try:
            with create_producer(client, TOPIC, factory.json(CHECKED_AS_ENUM)) as producer:
                producer.send({"id": 3, "name": "third", "checked": "passed"})
        except IncompatibleSchemaError as error:
            print(f"refused: {error.summary}")
            for difference in error.differences:
                print(f"  {difference}")

        for name, consumer in (("consumer v1", consumer_v1), ("view", viewer)):
            for _ in range(2):
                message = consumer.receive(timeout_millis=10_000)
                print(f"{name} read {message.value()}")
                consumer.acknowledge(message)
    finally:
        client.close()
        factory.close()


if __name__ == "__main__":
    main()
