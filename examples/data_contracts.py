"""A data contract on Pulsar: Confluent's `checkSsnLen` rule, with bad records sent to a DLQ topic.

    PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 SCHEMA_REGISTRY_URL=http://127.0.0.1:8081 \\
        python examples/data_contracts.py

1. registers a schema whose rule set says an `ssn` has 9 characters, else DLQ to `bad-data`;
2. produces three people, one with a bad ssn: that send raises `DeadLetteredError`, and the
   record (as JSON, with `__rule.*` properties saying why) is in the `bad-data` topic;
3. consumes the topic with `consume()` and reads the DLQ topic back.
"""

from __future__ import annotations

import json
import os
import uuid

import pulsar
from confluent_kafka.schema_registry import Schema

from pulsar_external_schema import DeadLetteredError, SchemaRegistrySchemaFactory, consume, create_producer

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
RUN = uuid.uuid4().hex[:8]  # fresh names, so the example can run again
TOPIC = f"persistent://public/default/people-{RUN}"
BAD_DATA = f"bad-data-{RUN}"

PERSON = {
    "type": "record",
    "name": "Person",
    "namespace": "example",
    "fields": [{"name": "name", "type": "string"}, {"name": "ssn", "type": "string"}],
}
CONTRACT = {
    "schema": json.dumps(PERSON),
    "schemaType": "AVRO",
    "metadata": {"properties": {"owner": "people-team"}},
    "ruleSet": {
        "domainRules": [
            {
                "name": "checkSsnLen",
                "kind": "CONDITION",
                "type": "CEL",
                "mode": "WRITE",
                "expr": "size(message.ssn) == 9",
                "params": {"dlq.topic": BAD_DATA},
                "onFailure": "DLQ",
            }
        ]
    },
}


def main() -> None:
    client = pulsar.Client(SERVICE_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": REGISTRY_URL}, client=client)
    # The producer registers the contract (auto.register.schemas); its rules run on every send.
    people = factory.avro(Schema.from_dict(CONTRACT))
    consumer = client.subscribe(TOPIC, "app", schema=people, initial_position=pulsar.InitialPosition.Earliest)
    dlq = client.subscribe(
        f"persistent://public/default/{BAD_DATA}", "ops", initial_position=pulsar.InitialPosition.Earliest
    )

    producer = create_producer(client, TOPIC, people)
    for name, ssn in (("Ann", "123456789"), ("Bob", "12-34"), ("Cid", "987654321")):
        try:
            producer.send({"name": name, "ssn": ssn}, partition_key=name)
            print(f"sent {name}")
        except DeadLetteredError as error:
            print(f"rejected {name}: rule {error.rule} failed; copy in {error.dlq_topic}")

    result = consume(consumer, lambda msg, value: print("consumed", value), timeout_millis=3_000)
    print(f"consume: {result.processed} processed, {result.dead_lettered} dead-lettered")

    copy = dlq.receive(timeout_millis=10_000)
    dlq.acknowledge(copy)
    reason = {k: v for k, v in copy.properties().items() if k.startswith("__rule.")}
    print("dead letter", copy.partition_key(), copy.data().decode(), json.dumps(reason, sort_keys=True))

    people.close()
    factory.close()
    client.close()


if __name__ == "__main__":
    main()
