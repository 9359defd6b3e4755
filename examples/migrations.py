"""Two incompatible major versions on one topic, bridged by JSONata migration rules.

    PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 SCHEMA_REGISTRY_URL=http://127.0.0.1:8081 \\
        python examples/migrations.py

Version 2 of `Person` renames `ssn` to `socialSecurityNumber`, which no compatibility level allows.
Confluent's answer (data-contracts docs, "complex schema evolution"): versions carry
`application.major.version` metadata, the subject checks compatibility only within a major version
(`compatibilityGroup`), and v2 carries UPGRADE / DOWNGRADE migration rules. Each application pins
its major version with `use.latest.with.metadata` and reads every message in that shape:

1. a v1 producer and a v2 producer write to the same topic;
2. a v1 consumer reads both as v1 (DOWNGRADE for the v2 message);
3. a v2 consumer reads both as v2 (UPGRADE for the v1 message).
"""

from __future__ import annotations

import json
import os
import uuid

import pulsar
from confluent_kafka.schema_registry import Schema, ServerConfig

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
TOPIC = f"persistent://public/default/people-{uuid.uuid4().hex[:8]}"  # fresh, so it can run again
SUBJECT = f"public.default.{TOPIC.rsplit('/', 1)[1]}-value"
MAJOR = "application.major.version"


def person(ssn_field: str) -> str:
    fields = [{"name": "name", "type": "string"}, {"name": ssn_field, "type": "string"}]
    return json.dumps({"type": "record", "name": "Person", "namespace": "example", "fields": fields})


def rename(old: str, new: str) -> str:
    """A JSONata expression: the record with field `old` renamed to `new`."""
    return f"$merge([$sift($, function($v, $k) {{$k != '{old}'}}), {{'{new}': $.'{old}'}}])"


def register_versions(factory: SchemaRegistrySchemaFactory) -> None:
    registry = factory.registry_client
    registry.set_config(
        SUBJECT, ServerConfig.from_dict({"compatibility": "BACKWARD", "compatibilityGroup": MAJOR})
    )
    registry.register_schema(
        SUBJECT, Schema.from_dict({"schema": person("ssn"), "metadata": {"properties": {MAJOR: "1"}}})
    )
    migrations = [
        {
            "name": "toV2",
            "kind": "TRANSFORM",
            "type": "JSONATA",
            "mode": "UPGRADE",
            "expr": rename("ssn", "socialSecurityNumber"),
        },
        {
            "name": "toV1",
            "kind": "TRANSFORM",
            "type": "JSONATA",
            "mode": "DOWNGRADE",
            "expr": rename("socialSecurityNumber", "ssn"),
        },
    ]
    registry.register_schema(
        SUBJECT,
        Schema.from_dict(
            {
                "schema": person("socialSecurityNumber"),
                "metadata": {"properties": {MAJOR: "2"}},
                "ruleSet": {"migrationRules": migrations},
            }
        ),
    )


def main() -> None:
    client = pulsar.Client(SERVICE_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    factories = {
        major: SchemaRegistrySchemaFactory(
            {"schema.registry.url": REGISTRY_URL, "use.latest.with.metadata": {MAJOR: major}}, client=client
        )
        for major in ("1", "2")
    }
    register_versions(factories["1"])
    # The schemas' text is the registered version's: with a version pinned, producers write with it.
    v1 = factories["1"].avro(person("ssn"))
    v2 = factories["2"].avro(person("socialSecurityNumber"))
    readers = {
        major: client.subscribe(
            TOPIC, f"app-v{major}", schema=schema, initial_position=pulsar.InitialPosition.Earliest
        )
        for major, schema in (("1", v1), ("2", v2))
    }

    create_producer(client, TOPIC, v1).send({"name": "Ann", "ssn": "123456789"})
    create_producer(client, TOPIC, v2).send({"name": "Bob", "socialSecurityNumber": "987654321"})
    print("sent Ann with major version 1, Bob with major version 2")

    for major, consumer in readers.items():
        for _ in range(2):
            msg = consumer.receive(timeout_millis=10_000)
            consumer.acknowledge(msg)
            print(f"v{major} consumer: {json.dumps(msg.value(), sort_keys=True)}")
    client.close()
    for factory in factories.values():
        factory.close()


if __name__ == "__main__":
    main()
