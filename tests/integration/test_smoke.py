"""Smoke tests: the real broker carries bytes and properties; the real registry keeps data contracts."""

from __future__ import annotations

import json
from typing import Any

import pulsar
from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Rule,
    RuleKind,
    RuleMode,
    RuleParams,
    RuleSet,
    Schema,
    SchemaRegistryClient,
)

AVRO_SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Customer",
        "namespace": "example",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
        ],
    }
)


def _rule(name: str, expr: str) -> Rule:
    return Rule(
        name=name,
        doc="SSN must have 9 digits",
        kind=RuleKind.CONDITION,
        mode=RuleMode.WRITE,
        type="CEL",
        tags=None,
        params=RuleParams({"dlq.topic": "bad-data"}),
        expr=expr,
        on_success="NONE",
        on_failure="DLQ",
        disabled=False,
    )


def test_bytes_and_properties_round_trip_through_the_broker(pulsar_client: Any, topic: str) -> None:
    consumer = pulsar_client.subscribe(topic, "smoke", initial_position=pulsar.InitialPosition.Earliest)
    producer = pulsar_client.create_producer(topic)
    sent = [
        (f"payload-{i}".encode() + bytes([0, 255, i]), {"__schema_id": f"ff00{i:08x}"}) for i in range(10)
    ]
    for data, properties in sent:
        producer.send(data, properties=properties)

    received = []
    for _ in sent:
        message = consumer.receive(timeout_millis=10_000)
        received.append((message.data(), message.properties()))
        consumer.acknowledge(message)

    assert received == sent
    producer.close()
    consumer.close()


def test_registry_keeps_metadata_and_rule_set(registry_client: SchemaRegistryClient, subject: str) -> None:
    rule_set = RuleSet(migration_rules=None, domain_rules=[_rule("checkSsnLen", "size(message.ssn) == 9")])
    metadata = Metadata(
        tags=MetadataTags({"example.Customer.ssn": ["PII"]}),
        properties=MetadataProperties({"owner": "Bob Jones", "email": "bob@acme.com"}),
        sensitive=None,
    )
    schema = Schema(AVRO_SCHEMA, "AVRO", metadata=metadata, rule_set=rule_set)

    schema_id = registry_client.register_schema(subject, schema)

    # Registering the same contract again is idempotent and returns the same id.
    assert registry_client.register_schema(subject, schema) == schema_id
    looked_up = registry_client.lookup_schema(subject, schema)
    assert looked_up.schema_id == schema_id
    assert looked_up.version == 1

    for fetched in (
        # Rule sets are per subject-version: ask by id *with* the subject, as Confluent's serdes do.
        registry_client.get_schema(schema_id, subject_name=subject),
        registry_client.get_latest_version(subject).schema,
    ):
        assert fetched.schema_str is not None
        assert json.loads(fetched.schema_str) == json.loads(AVRO_SCHEMA)
        assert fetched.schema_type == "AVRO"
        assert fetched.rule_set is not None
        assert fetched.rule_set.domain_rules is not None
        (rule,) = fetched.rule_set.domain_rules
        assert (rule.name, rule.kind, rule.mode, rule.type) == (
            "checkSsnLen",
            RuleKind.CONDITION,
            RuleMode.WRITE,
            "CEL",
        )
        assert rule.expr == "size(message.ssn) == 9"
        assert rule.on_failure == "DLQ"
        assert rule.params is not None
        assert rule.params.params == {"dlq.topic": "bad-data"}
        stored = fetched.metadata
        assert stored is not None
        assert stored.properties is not None
        assert stored.properties.properties["owner"] == "Bob Jones"
        assert stored.tags is not None
        assert stored.tags.tags == {"example.Customer.ssn": ["PII"]}


def test_registry_finds_latest_version_by_metadata(
    registry_client: SchemaRegistryClient, subject: str
) -> None:
    versions = {}
    for major in (1, 2):
        fields = [{"name": "f1", "type": "string"}]
        if major == 2:
            fields.append({"name": "f2", "type": "string", "default": ""})
        schema_str = json.dumps({"type": "record", "name": "R", "fields": fields})
        metadata = Metadata(None, MetadataProperties({"application.major.version": str(major)}), None)
        versions[major] = registry_client.register_schema(
            subject, Schema(schema_str, "AVRO", metadata=metadata)
        )

    assert versions[1] != versions[2]
    pinned = registry_client.get_latest_with_metadata(subject, {"application.major.version": "1"})
    assert pinned.schema_id == versions[1]
    assert registry_client.get_latest_version(subject).schema_id == versions[2]
