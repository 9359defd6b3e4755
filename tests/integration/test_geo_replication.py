"""Geo-replication: two real Pulsar clusters replicate a namespace, one registry serves both.

Cluster A is the session's broker, cluster B a second standalone (tests/geo_support.py); the
namespace is replicated both ways by `scripts/services replicate`. What must hold: a message
produced in A reaches B with its payload and its `__schema_id` property byte for byte, decodes in
B through the same registry, and the registry holds one subject per topic whichever cluster
produced; a DLQ topic in the replicated namespace replicates like any other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pulsar
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from conftest import REPO, Services
from contracts import contract, drain, receive_all, rule, subject_of, subscribe
from geo_support import GeoClusters
from registry_proxy import counting_proxy
from spark_support import ORDER_V1, ORDER_V2, ORDER_V3

from pulsar_external_schema import (
    SCHEMA_ID_PROPERTY,
    KeyValue,
    RegistryUnavailableError,
    RuleViolationError,
    SchemaRegistrySchemaFactory,
    consume,
    create_producer,
)

#: Pulsar adds this property to every message a replicator writes; it is not the application's.
REPLICATION_PROPERTY = "__MSG_PROP_REPL_SOURCE_POSITION"
KEY = {"type": "record", "name": "CustomerKey", "fields": [{"name": "customer", "type": "string"}]}


def application_properties(msg: Any) -> dict[str, str]:
    return {k: v for k, v in msg.properties().items() if k != REPLICATION_PROPERTY}


def test_messages_produced_in_a_decode_in_b_with_the_same_schema_ids(
    geo: GeoClusters, services: Services, pulsar_client: Any, client_b: Any, make_factory: Any
) -> None:
    topic = geo.topic("orders")
    orders = [
        (ORDER_V1, {"id": 1, "name": "tea"}),
        (ORDER_V2, {"id": 2, "name": "cake", "amount": 2.5}),
        (ORDER_V3, {"id": 3, "name": "jam", "amount": 4.0, "note": "gift"}),
        (ORDER_V1, {"id": 4, "name": "scone"}),
    ]
    in_a = subscribe(pulsar_client, topic, name="audit")
    in_b = subscribe(client_b, topic, make_factory().avro(ORDER_V3))  # its own factory, like another app
    producing = make_factory()
    for writer_schema, value in orders:
        with create_producer(pulsar_client, topic, producing.avro(writer_schema)) as producer:
            producer.send(value)

    sent = receive_all(in_a, len(orders), timeout_millis=30_000)
    replicated = receive_all(in_b, len(orders), timeout_millis=30_000)
    assert [msg.value() for msg in replicated] == [value for _, value in orders]
    for original, copy in zip(sent, replicated, strict=True):
        assert copy.data() == original.data()
        assert copy.properties()[SCHEMA_ID_PROPERTY] == original.properties()[SCHEMA_ID_PROPERTY]
        assert application_properties(copy) == original.properties()
        # written by A's producer: it came through the replicator (whose position property,
        # REPLICATION_PROPERTY, Pulsar 4.0 adds and 3.0 does not)
        assert copy.producer_name() == original.producer_name()
    ids = [msg.properties()[SCHEMA_ID_PROPERTY] for msg in sent]
    assert len(set(ids)) == 3 and ids[0] == ids[3]  # three versions, v1 reused

    registry = SchemaRegistryClient({"url": services.registry_url})
    assert registry.get_versions(subject_of(topic)) == [1, 2, 3]
    assert not [s for s in registry.get_subjects() if topic.rsplit("/", 1)[1] in s and s != subject_of(topic)]


def test_producers_in_either_cluster_share_subject_and_ids(
    geo: GeoClusters, services: Services, pulsar_client: Any, client_b: Any, make_factory: Any
) -> None:
    topic = geo.topic("shared")
    in_a = subscribe(pulsar_client, topic, make_factory().avro(ORDER_V2))
    with create_producer(pulsar_client, topic, make_factory().avro(ORDER_V2)) as producer:
        producer.send({"id": 1, "name": "from A", "amount": 1.0})
    with create_producer(client_b, topic, make_factory().avro(ORDER_V2)) as producer:
        producer.send({"id": 2, "name": "from B", "amount": 2.0})

    both = receive_all(in_a, 2, timeout_millis=30_000)  # A's own message, and B's replicated to A
    assert sorted(msg.value()["name"] for msg in both) == ["from A", "from B"]
    assert len({msg.properties()[SCHEMA_ID_PROPERTY] for msg in both}) == 1
    registry = SchemaRegistryClient({"url": services.registry_url})
    assert registry.get_versions(subject_of(topic)) == [1]


def test_key_value_messages_replicate_with_both_ids(
    geo: GeoClusters, pulsar_client: Any, client_b: Any, make_factory: Any
) -> None:
    topic = geo.topic("keyed")
    producing, consuming = make_factory(), make_factory()
    in_b = subscribe(client_b, topic, consuming.key_value(consuming.avro(KEY), consuming.avro(ORDER_V1)))
    in_a = subscribe(pulsar_client, topic, name="audit")
    with create_producer(
        pulsar_client, topic, producing.key_value(producing.avro(KEY), producing.avro(ORDER_V1))
    ) as producer:
        producer.send(KeyValue({"customer": "ann"}, {"id": 1, "name": "tea"}))
        producer.send(KeyValue({"customer": "bob"}, None))

    sent, replicated = (
        receive_all(in_a, 2, timeout_millis=30_000),
        receive_all(in_b, 2, timeout_millis=30_000),
    )
    assert [msg.value() for msg in replicated] == [
        KeyValue({"customer": "ann"}, {"id": 1, "name": "tea"}),
        KeyValue({"customer": "bob"}, None),
    ]
    for original, copy in zip(sent, replicated, strict=True):
        assert original.properties()[SCHEMA_ID_PROPERTY].startswith("fe")  # PIP-420 key/value form
        assert copy.properties()[SCHEMA_ID_PROPERTY] == original.properties()[SCHEMA_ID_PROPERTY]
        assert copy.data() == original.data()


def test_a_dlq_topic_in_the_replicated_namespace_replicates(
    geo: GeoClusters, pulsar_client: Any, client_b: Any, make_factory: Any
) -> None:
    """A consumer in B dead-letters a message that breaks the READ rule; the DLQ copy, written in
    B, reaches A with its original bytes, schema id and reasons."""
    topic, dlq = geo.topic("checked"), geo.topic("bad-orders")
    check = rule(
        "checkName",
        "CONDITION",
        "CEL",
        "READ",
        "size(message.name) > 0",
        onFailure="DLQ",
        params={"dlq.topic": dlq},
    )
    registry = make_factory().registry_client
    registry.register_schema(subject_of(topic), contract(ORDER_V1, ruleSet={"domainRules": [check]}))
    dlq_in_a = subscribe(pulsar_client, dlq, name="audit")
    in_b = subscribe(client_b, topic, make_factory(client=client_b).avro(ORDER_V1))
    with create_producer(
        pulsar_client,
        topic,
        make_factory(**{"use.latest.version": True, "auto.register.schemas": False}).avro(ORDER_V1),
    ) as producer:
        producer.send({"id": 1, "name": "tea"})
        producer.send({"id": 2, "name": ""})

    result = consume(in_b, lambda msg, value: None, max_messages=2, timeout_millis=30_000)
    assert (result.processed, result.dead_lettered) == (1, 1)
    [copy] = receive_all(dlq_in_a, 1, timeout_millis=30_000)
    assert copy.properties()["__rule.name"] == "checkName"
    assert copy.properties()["__rule.topic"] == topic
    assert SCHEMA_ID_PROPERTY in copy.properties()
    reader = make_factory().avro(ORDER_V1)
    with pytest.raises(RuleViolationError):  # replayed without skipping the rule, it still fails
        reader.decode(topic, copy.data(), bytes.fromhex(copy.properties()[SCHEMA_ID_PROPERTY]))
    assert drain(dlq_in_a, timeout_millis=500) == []


def test_cluster_b_without_the_registry_decodes_cached_schemas_and_fails_new_ones_clearly(
    geo: GeoClusters, services: Services, pulsar_client: Any, client_b: Any, make_factory: Any
) -> None:
    """Cluster B loses its route to the registry: ids it has seen keep decoding from its cache;
    a new schema id fails with RegistryUnavailableError naming the registry, and the message is
    redelivered, not lost."""
    topic = geo.topic("outage")
    producing = make_factory()
    with counting_proxy(services.registry_url) as proxy:
        consuming = SchemaRegistrySchemaFactory({"schema.registry.url": proxy.url})
        in_b = client_b.subscribe(
            topic,
            "app",
            schema=consuming.avro(ORDER_V2),
            initial_position=pulsar.InitialPosition.Earliest,
            negative_ack_redelivery_delay_ms=100,
        )
        with create_producer(pulsar_client, topic, producing.avro(ORDER_V1)) as producer:
            producer.send({"id": 1, "name": "before"})
        assert receive_all(in_b, 1, timeout_millis=30_000)[0].value() == {"id": 1, "name": "before"}

        proxy.stop()
        with create_producer(pulsar_client, topic, producing.avro(ORDER_V1)) as producer:
            producer.send({"id": 2, "name": "known id"})
        with create_producer(pulsar_client, topic, producing.avro(ORDER_V2)) as producer:
            producer.send({"id": 3, "name": "new id", "amount": 1.0})

        seen: list[Any] = []
        errors: list[Exception] = []
        result = consume(
            in_b,
            lambda msg, value: seen.append(value),
            max_messages=4,
            timeout_millis=30_000,
            on_error=lambda msg, error: errors.append(error),
        )
        assert seen and seen[0] == {"id": 2, "name": "known id"}
        assert result.redelivered >= 1
        assert errors and all(isinstance(e, RegistryUnavailableError) for e in errors)
        assert proxy.url in str(errors[0]) and subject_of(topic) in str(errors[0])
        consuming.close()
    in_b.close()
    # Back online (the registry itself never went away): the redelivered message decodes.
    again = client_b.subscribe(
        topic, "app", schema=make_factory().avro(ORDER_V2), initial_position=pulsar.InitialPosition.Earliest
    )
    [msg] = receive_all(again, 1, timeout_millis=30_000)
    assert msg.value() == {"id": 3, "name": "new id", "amount": 1.0}


def test_the_documented_example_runs_as_written(geo: GeoClusters, services: Services) -> None:
    """docs/geo-replication.md's Python block, on the session's replicated namespace."""
    page = (REPO / "docs" / "geo-replication.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0].replace("geo/orders", geo.namespace)
    env = {
        **os.environ,
        "PULSAR_SERVICE_URL": geo.a_url,
        "B_PULSAR_SERVICE_URL": geo.b_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    # (pulsar-client's C++ core logs to stdout too)
    assert [line for line in result.stdout.splitlines() if line.startswith("{'id': 1, 'item': 'tea'} ff00")]
