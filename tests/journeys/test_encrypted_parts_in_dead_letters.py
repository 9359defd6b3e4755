"""Journey 4: an order whose line items are a referenced `Product` schema carrying [priced CEL
(DLQ), hideCost ENCRYPT (PII)]; producers and the application hold the KEK's secret, the operator
who reads the dead letters does not.

- an order with an unpriced item is dead-lettered on produce, as JSON; the operator reads the DLQ
  with `pulsar-external-schema consume --raw` and finds every item's cost `<REDACTED>`;
- an order whose item the application cannot accept (a READ rule of `Product`, DLQ) is
  dead-lettered on consume with its original bytes; the operator reads that copy and the topic
  itself without the secret: the costs are ciphertext, never clear;
- the application reads every good order decrypted.

Fails on the code before issue 34: the produce-side DLQ copy held the failing item's cost in clear
and the other items' as ciphertext. Walks a path no test walked: referenced rules, encryption and
both kinds of DLQ copy together, read by someone without the key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_support import cli, read_all, records
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from conftest import Services
from contracts import LOCAL_KMS_SECRET, drain, encrypt_rule, rule, subject_of, subscribe, unique
from schemas import order_of_products, priced_product

from pulsar_external_schema import DeadLetteredError, SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.deadletter import RULE_MODE, RULE_NAME, RULE_PATH


def product_rules(kek: str, dlq: str) -> list[dict[str, Any]]:
    return [
        rule(
            "priced",
            "CONDITION",
            "CEL",
            "WRITE",
            "message.price > 0.0",
            onFailure="DLQ",
            params={"dlq.topic": dlq},
        ),
        rule(
            "inStock",
            "CONDITION",
            "CEL",
            "READ",
            "message.sku != 'gone'",
            onFailure="DLQ",
            params={"dlq.topic": dlq},
        ),
        encrypt_rule(kek, name="hideCost"),
    ]


def test_an_operator_without_the_key_reads_dead_letters_and_never_sees_an_encrypted_field(
    services: Services, pulsar_client: Any
) -> None:
    ns = unique("acme").replace("-", "_")
    topic = f"persistent://public/default/{unique('orders')}"
    dlq = f"{topic}-dlq"
    registry = SchemaRegistryClient({"url": services.registry_url})
    product = priced_product(ns)
    registry.register_schema(
        f"{ns}.Product",
        Schema.from_dict(
            {
                "schema": json.dumps(product),
                "schemaType": "AVRO",
                "ruleSet": {"domainRules": product_rules(unique("kek"), dlq)},
            }
        ),
    )
    order = order_of_products(ns)
    # The root opts in to its references' rules itself: every reader runs them, whatever its config.
    root = Schema.from_dict(
        {
            "schema": json.dumps(order),
            "schemaType": "AVRO",
            "references": [{"name": f"{ns}.Product", "subject": f"{ns}.Product", "version": 1}],
            "metadata": {"properties": {"rules.referenced": "true"}},
        }
    )
    registry.register_schema(subject_of(topic), root)

    def item(n: int, price: float, sku: str = "") -> dict[str, Any]:
        return {"sku": sku or f"p{n}", "price": price, "cost": f"clear-cost-{n}"}

    keyed = {"schema.registry.url": services.registry_url, **LOCAL_KMS_SECRET}
    with SchemaRegistrySchemaFactory(
        {**keyed, "use.latest.version": True, "auto.register.schemas": False}
    ) as factory:
        producer = create_producer(pulsar_client, topic, factory.avro(root))
        producer.send({"id": 1, "items": [item(1, 1.0), item(2, 2.0)]}, partition_key="1")
        with pytest.raises(DeadLetteredError) as unpriced:
            producer.send({"id": 2, "items": [item(3, 3.0), item(4, -1.0), item(5, 5.0)]}, partition_key="2")
        producer.send({"id": 3, "items": [item(6, 6.0, sku="gone")]}, partition_key="3")
        producer.close()
    assert "clear-cost" not in str(unpriced.value)

    # The application holds the secret: good orders decrypted; order 3 fails its READ rule.
    with SchemaRegistrySchemaFactory(keyed) as factory:
        app = subscribe(pulsar_client, topic, factory.avro(root), name="app")
        first = app.receive(timeout_millis=10_000)
        assert first.value() == {"id": 1, "items": [item(1, 1.0), item(2, 2.0)]}
        third = app.receive(timeout_millis=10_000)
        with pytest.raises(DeadLetteredError) as gone:
            third.value()
        assert gone.value.rule == "inStock" and gone.value.path == "Order.items[0]"
        app.acknowledge(first)
        app.acknowledge(third)

    # The operator, without the secret: the produce-side copy (JSON) and the consume-side one (bytes).
    copies = drain(subscribe(pulsar_client, dlq, name="audit"))
    assert [(c.partition_key(), c.properties()[RULE_NAME], c.properties()[RULE_MODE]) for c in copies] == [
        ("2", "priced", "WRITE"),
        ("3", "inStock", "READ"),
    ]
    assert copies[0].properties()[RULE_PATH] == "Order.items[1]"
    raw = read_all(services, dlq, "--raw")
    assert raw.returncode == 0, raw.stderr
    written, read = records(raw)
    assert [i["cost"] for i in json.loads(written["data"])["items"]] == ["<REDACTED>"] * 3
    assert [i["sku"] for i in json.loads(written["data"])["items"]] == ["p3", "p4", "p5"]
    assert read["properties"][RULE_NAME] == "inStock"
    everything_seen = raw.stdout + raw.stderr
    # Reading the topic without the secret: ENCRYPT's READ action is NONE, so costs stay
    # ciphertext; order 3 fails `inStock` again (its DLQ action fires for this reader too).
    topic_seen = cli(services, "consume", "--topic", topic, "--from-beginning", "--timeout-ms", "3000")
    [first_seen] = records(topic_seen)
    assert first_seen["id"] == 1 and [i["sku"] for i in first_seen["items"]] == ["p1", "p2"]
    assert all(i["cost"] and not i["cost"].startswith("clear") for i in first_seen["items"])
    assert "rule 'inStock' (CONDITION CEL, READ) on Order.items[0] failed" in topic_seen.stderr
    # The consume-side copy, decoded as the topic's message (skipping the rule it failed).
    replayed = read_all(services, dlq)
    assert [order["id"] for order in records(replayed)][:1] == [3]
    assert not records(replayed)[0]["items"][0]["cost"].startswith("clear")
    everything_seen += topic_seen.stdout + topic_seen.stderr + replayed.stdout + replayed.stderr
    assert "clear-cost" not in everything_seen
