"""Data contracts on Pulsar: Confluent's documented examples, run on the real broker and registry.

Each rule set is written as Confluent's documentation writes it (JSON), registered in the real
registry, and enforced by our producers and consumers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from contracts import PERSON, contract, drain, rule, subscribe, unique

from pulsar_external_schema import (
    DeadLetteredError,
    RuleViolationError,
    consume,
    create_producer,
)
from pulsar_external_schema.deadletter import resolve_dlq_topic

# -- the quick start and checkSsnLen ---------------------------------------------------------


def test_quick_start_rule_accepts_success_and_rejects_this_will_fail(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    # As the console producer in Confluent's quick start: the producer registers the schema with
    # its rule set (auto.register.schemas), and the rule runs on every send.
    schema = make_factory().avro(
        contract(
            {"type": "record", "name": "myrecord", "fields": [{"name": "f1", "type": "string"}]},
            ruleSet={
                "domainRules": [
                    rule("checkLen", "CONDITION", "CEL", "WRITE", "size(message.f1) < 10", onFailure="ERROR")
                ]
            },
        )
    )
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"f1": "success"})
    with pytest.raises(RuleViolationError) as failure:
        producer.send({"f1": "this will fail"})

    error = failure.value
    assert (error.rule, error.mode, error.topic) == ("checkLen", "WRITE", topic)
    assert error.subject == schema.subject(topic)
    assert error.schema_id is not None and error.schema_id.isdigit()
    message = str(error)
    for part in (
        "checkLen",
        "WRITE",
        topic,
        str(error.subject),
        f"schema id {error.schema_id}",
        "size(message.f1) < 10",
    ):
        assert part in message, (part, message)
    assert [m.value() for m in drain(consumer)] == [{"f1": "success"}]


def test_check_ssn_len_with_error_on_a_schema_registered_with_its_rules(
    make_factory: Any, registry_client: SchemaRegistryClient, pulsar_client: Any, topic: str
) -> None:
    factory = make_factory()
    schema = factory.avro(json.dumps(PERSON))
    registry_client.register_schema(
        schema.subject(topic),
        contract(
            PERSON,
            ruleSet={
                "domainRules": [rule("checkSsnLen", "CONDITION", "CEL", "WRITE", "size(message.ssn) == 9")]
            },
        ),
    )
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"name": "Ann", "ssn": "123456789", "occupation": "pilot"})
    with pytest.raises(RuleViolationError, match=r"checkSsnLen.*size\(message.ssn\) == 9"):
        producer.send({"name": "Bob", "ssn": "12345", "occupation": "cook"})
    assert [m.value()["name"] for m in drain(consumer)] == ["Ann"]


def test_check_ssn_len_with_dlq_to_bad_data(
    make_factory: Any, registry_client: SchemaRegistryClient, pulsar_client: Any, topic: str
) -> None:
    bad_data = unique("bad-data")
    schema = make_factory().avro(json.dumps(PERSON))
    registry_client.register_schema(
        schema.subject(topic),
        contract(
            PERSON,
            ruleSet={
                "domainRules": [
                    rule(
                        "checkSsnLen",
                        "CONDITION",
                        "CEL",
                        "WRITE",
                        "size(message.ssn) == 9",
                        params={"dlq.topic": bad_data},
                        onFailure="DLQ",
                    )
                ]
            },
        ),
    )
    dlq = subscribe(pulsar_client, resolve_dlq_topic(bad_data, topic))
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"name": "Ann", "ssn": "123456789", "occupation": "pilot"})
    with pytest.raises(DeadLetteredError) as failure:
        producer.send(
            {"name": "Bob", "ssn": "12345", "occupation": "cook"},
            properties={"trace": "t-1"},
            partition_key="bob",
        )

    assert failure.value.dlq_topic == f"persistent://public/default/{bad_data}"
    assert [m.value()["name"] for m in drain(consumer)] == ["Ann"]
    [copy] = drain(dlq)
    assert json.loads(copy.data()) == {"name": "Bob", "ssn": "12345", "occupation": "cook"}
    assert copy.partition_key() == "bob"
    properties = copy.properties()
    assert properties["trace"] == "t-1"
    assert properties["__rule.name"] == "checkSsnLen"
    assert properties["__rule.mode"] == "WRITE"
    assert properties["__rule.subject"] == schema.subject(topic)
    assert properties["__rule.topic"] == topic
    assert "size(message.ssn) == 9" in properties["__rule.exception"]
    assert "__schema_id" not in properties  # the copy is JSON, not an encoded value
    assert copy.message_id() == failure.value.dlq_message_id


# -- consume: DLQ on read, nothing lost, nothing blocked, replay skips the rule -----------------


def test_consume_dead_letters_failed_reads_acks_them_and_replay_skips_the_rule(
    make_factory: Any, registry_client: SchemaRegistryClient, pulsar_client: Any, topic: str
) -> None:
    bad = unique("bad-reads")
    # The producer is on an older contract; the consumer's contract checks on READ.
    writer = make_factory().avro(json.dumps(PERSON))
    producer = create_producer(pulsar_client, topic, writer)
    for name, ssn in (("Ann", "123456789"), ("Bob", "1"), ("Cid", "987654321")):
        producer.send({"name": name, "ssn": ssn, "occupation": ""}, partition_key=name)
    registry_client.register_schema(
        writer.subject(topic),
        contract(
            PERSON,
            ruleSet={
                "domainRules": [
                    rule(
                        "ssnOnRead",
                        "CONDITION",
                        "CEL",
                        "READ",
                        "size(message.ssn) == 9",
                        params={"dlq.topic": bad},
                        onFailure="DLQ",
                    )
                ]
            },
        ),
    )

    # READ rules come from the reader schema: the latest version, with its rules (as Confluent's).
    reader = make_factory(**{"use.latest.version": True}).avro(json.dumps(PERSON))
    consumer = subscribe(pulsar_client, topic, reader, name="app")
    handled: list[str] = []
    result = consume(consumer, lambda msg, value: handled.append(value["name"]), timeout_millis=3_000)

    assert handled == ["Ann", "Cid"]
    assert (result.processed, result.dead_lettered, result.redelivered) == (2, 1, 0)
    consumer.close()
    assert drain(subscribe(pulsar_client, topic, reader, name="app")) == []  # all acknowledged

    [copy] = drain(subscribe(pulsar_client, resolve_dlq_topic(bad, topic)))
    assert copy.partition_key() == "Bob"
    assert copy.properties()["__rule.name"] == "ssnOnRead"
    assert copy.properties()["__rule.mode"] == "READ"
    assert copy.properties()["__schema_id"]  # the original bytes, decodable again
    # Replaying the copy with the same schema skips the rule that sent it to the DLQ.
    replay = subscribe(pulsar_client, resolve_dlq_topic(bad, topic), reader, name="replay")
    assert replay.receive(timeout_millis=10_000).value() == {"name": "Bob", "ssn": "1", "occupation": ""}


def test_consume_copies_undecodable_messages_to_its_dead_letter_topic(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    schema = make_factory().avro(json.dumps(PERSON))
    create_producer(pulsar_client, topic, schema).send({"name": "Ann", "ssn": "123456789", "occupation": ""})
    raw = pulsar_client.create_producer(topic)
    raw.send(b"not avro at all", properties={"origin": "legacy"})
    create_producer(pulsar_client, topic, schema).send({"name": "Cid", "ssn": "987654321", "occupation": ""})

    poison = f"{topic}-poison"
    errors: list[str] = []
    handled: list[str] = []
    result = consume(
        subscribe(pulsar_client, topic, schema),
        lambda msg, value: handled.append(value["name"]),
        timeout_millis=3_000,
        dead_letter_topic=poison,
        on_error=lambda msg, error: errors.append(type(error).__name__),
    )
    assert handled == ["Ann", "Cid"]
    assert (result.processed, result.dead_lettered, errors) == (2, 1, ["MissingSchemaIdError"])
    [copy] = drain(subscribe(pulsar_client, poison))
    assert copy.data() == b"not avro at all"
    assert copy.properties()["origin"] == "legacy"
    assert copy.properties()["__rule.topic"] == topic
    assert "__schema_id" in copy.properties()["__rule.exception"]
