"""Rules of referenced schemas on the real broker and registry: Avro nested twice (Order ->
LineItem -> Product), JSON Schema through `$ref`, Protobuf through an import."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from contracts import drain, rule, subscribe, unique
from schemas import referencing_protobuf_classes

from pulsar_external_schema import DeadLetteredError, RuleViolationError, create_producer
from pulsar_external_schema.deadletter import RULE_NAME, RULE_PATH, RULE_SUBJECT
from pulsar_external_schema.protobuf_text import render_proto


def registered(
    client: SchemaRegistryClient,
    subject: str,
    body: dict[str, Any],
    schema_type: str,
    rules: list[dict[str, Any]] | None = None,
    references: list[tuple[str, str]] | None = None,
) -> Schema:
    parts: dict[str, Any] = {"schema": json.dumps(body), "schemaType": schema_type}
    if rules:
        parts["ruleSet"] = {"domainRules": rules}
    if references:
        parts["references"] = [{"name": n, "subject": s, "version": 1} for n, s in references]
    schema = Schema.from_dict(parts)
    client.register_schema(subject, schema)
    return schema


def test_avro_parts_nested_twice_run_their_rules_and_dead_letter_with_their_path(
    registry_client: SchemaRegistryClient, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    ns = unique("acme").replace("-", "_")
    product_subject, line_subject = f"{ns}.Product", f"{ns}.LineItem"
    dlq = f"{topic}-dlq"
    priced = rule(
        "priced",
        "CONDITION",
        "CEL",
        "WRITE",
        "message.price > 0.0",
        onFailure="DLQ",
        params={"dlq.topic": dlq},
    )
    marked = rule("marked", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'sku' ; value + '*'")
    product = {
        "type": "record",
        "name": "Product",
        "namespace": ns,
        "fields": [{"name": "sku", "type": "string"}, {"name": "price", "type": "double"}],
    }
    line = {
        "type": "record",
        "name": "LineItem",
        "namespace": ns,
        "fields": [{"name": "qty", "type": "int"}, {"name": "product", "type": f"{ns}.Product"}],
    }
    order = {
        "type": "record",
        "name": "Order",
        "namespace": ns,
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "items", "type": {"type": "array", "items": f"{ns}.LineItem"}},
        ],
    }
    registered(registry_client, product_subject, product, "AVRO", [marked, priced])
    registered(registry_client, line_subject, line, "AVRO", [], [(f"{ns}.Product", product_subject)])
    root = registered(
        registry_client,
        f"public.default.{topic.rsplit('/', 1)[1]}-value",
        order,
        "AVRO",
        [rule("marked", "CONDITION", "CEL", "WRITE", "message.items.all(i, i.product.sku.endsWith('*'))")],
        [(f"{ns}.LineItem", line_subject)],
    )
    schema = make_factory(**{"rules.referenced": "true"}).avro(root)
    dead = subscribe(pulsar_client, dlq)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    def items(*prices: float) -> list[dict[str, Any]]:
        return [{"qty": 1, "product": {"sku": f"p{i}", "price": p}} for i, p in enumerate(prices)]

    producer.send({"id": 1, "items": items(1.0, 2.0)})
    with pytest.raises(DeadLetteredError) as failed:
        producer.send({"id": 2, "items": items(1.0, -3.0)})
    assert (failed.value.rule, failed.value.subject) == ("priced", product_subject)
    producer.send({"id": 3, "items": items(4.0)})

    values = [m.value() for m in drain(consumer, 5_000)]
    assert [[i["product"]["sku"] for i in v["items"]] for v in values] == [["p0*", "p1*"], ["p0*"]]
    (copy,) = drain(dead, 5_000)
    properties = copy.properties()
    assert (properties[RULE_NAME], properties[RULE_SUBJECT], properties[RULE_PATH]) == (
        "priced",
        product_subject,
        "Order.items[1].product",
    )
    assert json.loads(copy.data())["id"] == 2  # the whole order, not the part


def test_json_schema_parts_through_their_ref(
    registry_client: SchemaRegistryClient, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    product_subject = unique("product")
    product = {"type": "object", "properties": {"sku": {"type": "string"}, "price": {"type": "number"}}}
    registered(
        registry_client,
        product_subject,
        product,
        "JSON",
        [rule("priced", "CONDITION", "CEL", "WRITEREAD", "message.price > 0.0")],
    )
    order = {
        "type": "object",
        "title": "Order",
        "properties": {
            "id": {"type": "integer"},
            "lines": {"type": "array", "items": {"$ref": "product.json"}},
        },
    }
    root = registered(
        registry_client,
        f"public.default.{topic.rsplit('/', 1)[1]}-value",
        order,
        "JSON",
        None,
        [("product.json", product_subject)],
    )
    schema = make_factory(**{"rules.referenced": "true"}).json(root)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"id": 1, "lines": [{"sku": "a", "price": 2}]})
    with pytest.raises(
        RuleViolationError, match=r"rule 'priced' \(CONDITION CEL, WRITE\) on Order\.lines\[1\] failed"
    ):
        producer.send({"id": 2, "lines": [{"sku": "a", "price": 2}, {"sku": "b", "price": 0}]})

    assert [m.value()["id"] for m in drain(consumer, 5_000)] == [1]


def test_protobuf_parts_are_the_messages_of_the_imported_file(
    registry_client: SchemaRegistryClient, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    package = unique("shop").replace("-", "_")
    product_file, order_file, order_class = referencing_protobuf_classes(package)
    product_subject = f"{package}-product"
    priced = rule("priced", "CONDITION", "CEL", "WRITEREAD", "message.price > 0.0")
    marked = rule("marked", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'sku' ; value + '*'")
    registry_client.register_schema(
        product_subject,
        Schema.from_dict(
            {
                "schema": render_proto(product_file),
                "schemaType": "PROTOBUF",
                "ruleSet": {"domainRules": [priced, marked]},
            }
        ),
    )
    root = Schema.from_dict(
        {
            "schema": render_proto(order_file),
            "schemaType": "PROTOBUF",
            "references": [{"name": product_file.name, "subject": product_subject, "version": 1}],
        }
    )
    schema = make_factory(**{"rules.referenced": "true"}).protobuf(order_class, schema=root)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    def order_of(ident: int, *prices: float) -> Any:
        value = order_class(id=ident)
        for i, price in enumerate(prices):
            item = value.items.add(qty=1)
            item.product.sku, item.product.price = f"p{i}", price
        value.gift.sku, value.gift.price = "g", 9.0
        return value

    producer.send(order_of(1, 1.0, 2.0))
    with pytest.raises(RuleViolationError, match=r"on Order\.items\[1\]\.product failed") as failed:
        producer.send(order_of(2, 1.0, 0.0))
    assert failed.value.subject == product_subject

    (received,) = [m.value() for m in drain(consumer, 5_000)]
    assert [item.product.sku for item in received.items] == ["p0*", "p1*"] and received.gift.sku == "g*"
