"""Rules of referenced schemas on the real broker and registry: Avro nested twice (Order ->
LineItem -> Product), JSON Schema through `$ref`, Protobuf through an import."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from contracts import LOCAL_KMS_SECRET, drain, encrypt_rule, rule, subscribe, unique
from schemas import order_of_products, priced_product, referencing_protobuf_classes

from pulsar_external_schema import ConfigError, DeadLetteredError, RuleViolationError, create_producer
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
    assert failed.value.path == "Order.items[1].product"
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


def test_json_schema_parts_nested_twice_through_their_refs_and_a_cycle_refused(
    registry_client: SchemaRegistryClient, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    product_subject, line_subject = unique("product"), unique("line-item")
    product = {"type": "object", "properties": {"sku": {"type": "string"}, "price": {"type": "number"}}}
    registered(
        registry_client,
        product_subject,
        product,
        "JSON",
        [rule("priced", "CONDITION", "CEL", "WRITEREAD", "message.price > 0.0")],
    )
    line = {"type": "object", "properties": {"qty": {"type": "integer"}, "product": {"$ref": "product.json"}}}
    registered(
        registry_client,
        line_subject,
        line,
        "JSON",
        [rule("counted", "CONDITION", "CEL", "WRITE", "message.qty > 0")],
        [("product.json", product_subject)],
    )
    order = {
        "type": "object",
        "title": "Order",
        "properties": {
            "id": {"type": "integer"},
            "lines": {"type": "array", "items": {"$ref": "line-item.json"}},
        },
    }
    root = registered(
        registry_client,
        f"public.default.{topic.rsplit('/', 1)[1]}-value",
        order,
        "JSON",
        None,
        [("line-item.json", line_subject)],
    )
    schema = make_factory(**{"rules.referenced": "true"}).json(root)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    def lines(*prices: float) -> list[dict[str, Any]]:
        return [{"qty": 1, "product": {"sku": f"p{i}", "price": p}} for i, p in enumerate(prices)]

    producer.send({"id": 1, "lines": lines(2)})
    with pytest.raises(
        RuleViolationError,
        match=r"rule 'priced' \(CONDITION CEL, WRITE\) on Order\.lines\[1\]\.product failed",
    ):
        producer.send({"id": 2, "lines": lines(2, 0)})
    with pytest.raises(RuleViolationError, match=r"rule 'counted' .* on Order\.lines\[0\] failed"):
        producer.send({"id": 3, "lines": [{"qty": 0, "product": {"sku": "a", "price": 1}}]})
    assert [m.value()["id"] for m in drain(consumer, 5_000)] == [1]

    # product v2 references the order subject's v1; order v2 references product v2: a cycle
    order_subject = unique("cyclic-order")
    registered(registry_client, order_subject, order, "JSON", None, [("line-item.json", line_subject)])
    registry_client.register_schema(
        product_subject,
        Schema.from_dict(
            {
                "schema": json.dumps(product),
                "schemaType": "JSON",
                "references": [{"name": "order.json", "subject": order_subject, "version": 1}],
            }
        ),
    )
    looping = Schema.from_dict(
        {
            "schema": json.dumps(
                {**order, "properties": {"id": {"type": "integer"}, "p": {"$ref": "product.json"}}}
            ),
            "schemaType": "JSON",
            "references": [{"name": "product.json", "subject": product_subject, "version": 2}],
        }
    )
    cyclic = make_factory(**{"rules.referenced": "true"}).json(looping)
    with pytest.raises(ConfigError, match="schema references form a cycle"):
        cyclic.encode(f"persistent://public/default/{order_subject}", {"id": 1})


def test_protobuf_parts_nested_twice_are_the_messages_of_the_imported_files(
    registry_client: SchemaRegistryClient, make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    package = unique("shop").replace("-", "_")
    product_file, line_file, order_file, order_class = referencing_protobuf_classes(package)
    product_subject, line_subject = f"{package}-product", f"{package}-line-item"
    priced = rule("priced", "CONDITION", "CEL", "WRITEREAD", "message.price > 0.0")
    marked = rule("marked", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'sku' ; value + '*'")
    counted = rule("counted", "CONDITION", "CEL", "WRITE", "message.qty > 0")

    def proto(made: Any, rules: list[dict[str, Any]], references: list[tuple[Any, str]]) -> Schema:
        return Schema.from_dict(
            {
                "schema": render_proto(made),
                "schemaType": "PROTOBUF",
                "ruleSet": {"domainRules": rules},
                "references": [
                    {"name": f.name, "subject": subject, "version": 1} for f, subject in references
                ],
            }
        )

    registry_client.register_schema(product_subject, proto(product_file, [priced, marked], []))
    registry_client.register_schema(
        line_subject, proto(line_file, [counted], [(product_file, product_subject)])
    )
    root = proto(order_file, [], [(line_file, line_subject), (product_file, product_subject)])
    schema = make_factory(**{"rules.referenced": "true"}).protobuf(order_class, schema=root)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    def order_of(ident: int, *prices: float, qty: int = 1) -> Any:
        value = order_class(id=ident)
        for i, price in enumerate(prices):
            item = value.items.add(qty=qty)
            item.product.sku, item.product.price = f"p{i}", price
        value.gift.sku, value.gift.price = "g", 9.0
        return value

    producer.send(order_of(1, 1.0, 2.0))
    with pytest.raises(RuleViolationError, match=r"on Order\.items\[1\]\.product failed") as failed:
        producer.send(order_of(2, 1.0, 0.0))
    assert failed.value.subject == product_subject
    with pytest.raises(RuleViolationError, match=r"rule 'counted' .* on Order\.items\[0\] failed"):
        producer.send(order_of(3, 1.0, qty=0))

    (received,) = [m.value() for m in drain(consumer, 5_000)]
    assert [item.product.sku for item in received.items] == ["p0*", "p1*"] and received.gift.sku == "g*"


@pytest.mark.parametrize("failing", ["a part's rule", "the root's rule"])
def test_a_referenced_schemas_encrypted_fields_are_redacted_in_every_dlq_copy(
    registry_client: SchemaRegistryClient, make_factory: Any, pulsar_client: Any, topic: str, failing: str
) -> None:
    """Product carries [priced CEL DLQ, hideCost ENCRYPT tags=PII]; Order references it. Whichever
    rule fails, the DLQ copy holds `<REDACTED>` for every item's cost: never the clear value (the
    failing item's, not yet encrypted) nor ciphertext (the items before it)."""
    ns = unique("acme").replace("-", "_")
    product_subject = f"{ns}.Product"
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
    product = priced_product(ns)
    order = order_of_products(ns)
    registered(
        registry_client,
        product_subject,
        product,
        "AVRO",
        [priced, encrypt_rule(unique("kek"), name="hideCost")],
    )
    small = rule(
        "small",
        "CONDITION",
        "CEL",
        "WRITE",
        "size(message.items) < 3",
        onFailure="DLQ",
        params={"dlq.topic": dlq},
    )
    root = registered(
        registry_client,
        f"public.default.{topic.rsplit('/', 1)[1]}-value",
        order,
        "AVRO",
        [small],
        [(f"{ns}.Product", product_subject)],
    )
    schema = make_factory(**{"rules.referenced": "true", **LOCAL_KMS_SECRET}).avro(root)
    dead = subscribe(pulsar_client, dlq)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    def item(n: int, price: float) -> dict[str, Any]:
        return {"sku": f"p{n}", "price": price, "cost": f"clear-cost-{n}"}

    producer.send({"id": 1, "items": [item(0, 1.0)]})
    failed: dict[str, Any] = {"id": 2, "items": [item(1, 1.0), item(2, -1.0)]}  # item 2 fails `priced`
    if failing == "the root's rule":
        failed = {"id": 2, "items": [item(1, 1.0), item(2, 2.0), item(3, 3.0)]}  # 3 items fail `small`
    with pytest.raises(DeadLetteredError) as raised:
        producer.send(failed)
    assert raised.value.rule == ("priced" if failing == "a part's rule" else "small")
    assert "clear-cost" not in str(raised.value)

    assert [m.value() for m in drain(consumer, 5_000)] == [{"id": 1, "items": [item(0, 1.0)]}]
    (copy,) = drain(dead, 5_000)
    assert b"clear-cost" not in copy.data()
    dead_lettered = json.loads(copy.data())
    assert dead_lettered["id"] == 2
    assert [i["cost"] for i in dead_lettered["items"]] == ["<REDACTED>"] * len(failed["items"])
    assert [i["sku"] for i in dead_lettered["items"]] == [i["sku"] for i in failed["items"]]
    assert "clear-cost" not in json.dumps(copy.properties())
