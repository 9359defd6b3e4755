"""The rule engines on the real broker and registry: the CEL engine choice and JSONata's limits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from contracts import PERSON, contract, drain, rule, subscribe

from pulsar_external_schema import RuleViolationError, consume, create_producer
from pulsar_external_schema.deadletter import resolve_dlq_topic

pytestmark = pytest.mark.integration

QUICK_START = {
    "type": "record",
    "name": "QuickStart",
    "namespace": "engines",
    "fields": [{"name": "f1", "type": "string"}],
}


@pytest.mark.parametrize("engine", ["cel-expr-python", "cel-python"])
def test_both_cel_engines_give_the_quick_start_verdicts_on_the_broker(
    engine: str, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    check = rule("checkLen", "CONDITION", "CEL", "WRITE", "size(message.f1) < 10")
    factory = make_factory(**{"cel.engine": engine})
    schema = factory.avro(contract(QUICK_START, ruleSet={"domainRules": [check]}))
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"f1": "success"})
    with pytest.raises(RuleViolationError, match=r"rule 'checkLen' .*size\(message.f1\) < 10"):
        producer.send({"f1": "this will fail"})
    assert [message.value() for message in drain(consumer)] == [{"f1": "success"}]
    assert factory.rules.executor("CEL").engine == engine


def test_a_runaway_jsonata_rule_is_dead_lettered_and_the_consumer_goes_on(
    make_factory: Any, registry_client: SchemaRegistryClient, pulsar_client: Any, topic: str
) -> None:
    writer = make_factory().avro(json.dumps(PERSON))
    producer = create_producer(pulsar_client, topic, writer)
    for name in ("Ann", "loop", "Cid"):
        producer.send({"name": name, "ssn": "123456789", "occupation": ""}, partition_key=name)

    bad = "runaway-data"
    runaway = "name = 'loop' ? ($f := function($x){ $f($x) }; $f(1)) : $"
    registry_client.register_schema(
        writer.subject(topic),
        contract(
            PERSON,
            ruleSet={
                "domainRules": [
                    rule(
                        "normalize",
                        "TRANSFORM",
                        "JSONATA",
                        "READ",
                        runaway,
                        params={"dlq.topic": bad},
                        onFailure="DLQ",
                    )
                ]
            },
        ),
    )
    reader = make_factory(**{"use.latest.version": True, "jsonata.timeout.ms": 300}).avro(json.dumps(PERSON))
    handled: list[str] = []
    result = consume(
        subscribe(pulsar_client, topic, reader),
        lambda msg, value: handled.append(value["name"]),
        timeout_millis=3_000,
    )
    assert handled == ["Ann", "Cid"]
    assert (result.processed, result.dead_lettered, result.redelivered) == (2, 1, 0)

    [copy] = drain(subscribe(pulsar_client, resolve_dlq_topic(bad, topic)))
    assert copy.partition_key() == "loop"
    assert copy.properties()["__rule.name"] == "normalize"
    # the limit stopped it (without it, the loop would hold the consumer for jsonata's minute)
    assert "ran longer than jsonata.timeout.ms=300" in copy.properties()["__rule.exception"]
