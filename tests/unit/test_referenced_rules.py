"""Rules of referenced schemas (`rules/referenced.py`), on confluent-kafka's in-memory registry.

The same on the real broker and registry: tests/integration/test_referenced_rules_on_pulsar.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from contracts import FakePulsarClient, mock_factory, rule
from schemas import referencing_protobuf_classes

from pulsar_external_schema import (
    ConfigError,
    DeadLetteredError,
    RuleViolationError,
    SchemaRegistrySchemaFactory,
)
from pulsar_external_schema.deadletter import RULE_PATH, RULE_SUBJECT
from pulsar_external_schema.rules.referenced import Referenced, protobuf_walker

TOPIC = "persistent://acme/shop/orders"
PRODUCT = {
    "type": "record",
    "name": "Product",
    "namespace": "acme",
    "fields": [{"name": "sku", "type": "string"}, {"name": "price", "type": "double"}],
}
LINE_ITEM = {
    "type": "record",
    "name": "LineItem",
    "namespace": "acme",
    "fields": [{"name": "qty", "type": "int"}, {"name": "product", "type": "acme.Product"}],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "acme",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "items", "type": {"type": "array", "items": "acme.LineItem"}},
        {"name": "gift", "type": ["null", "acme.Product"], "default": None},
    ],
}
PRICED = rule("priced", "CONDITION", "CEL", "WRITE", "message.price > 0.0")
MARKED = rule("marked", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'sku' ; value + '*'")


def register(
    factory: SchemaRegistrySchemaFactory,
    product_rules: list[dict[str, Any]],
    line_rules: list[dict[str, Any]] | None = None,
    order_rules: list[dict[str, Any]] | None = None,
    order_metadata: dict[str, str] | None = None,
) -> Schema:
    """Product, LineItem (referencing Product) and Order (referencing both) in the registry; the
    Order schema to produce with."""
    client = factory.registry_client

    def schema(
        body: dict[str, Any], rules: list[dict[str, Any]] | None, refs: list[SchemaReference]
    ) -> Schema:
        parts: dict[str, Any] = {"schema": json.dumps(body), "schemaType": "AVRO"}
        if rules:
            parts["ruleSet"] = {"domainRules": rules}
        if refs:
            parts["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]
        return Schema.from_dict(parts)

    client.register_schema("acme.Product", schema(PRODUCT, product_rules, []))
    client.register_schema(
        "acme.LineItem", schema(LINE_ITEM, line_rules, [SchemaReference("acme.Product", "acme.Product", 1)])
    )
    order = schema(
        ORDER,
        order_rules,
        [
            SchemaReference("acme.LineItem", "acme.LineItem", 1),
            SchemaReference("acme.Product", "acme.Product", 1),
        ],
    )
    if order_metadata:
        order = Schema.from_dict({**order.to_dict(), "metadata": {"properties": order_metadata}})
    return order


def order(*prices: float, gift: float | None = None) -> dict[str, Any]:
    return {
        "id": 7,
        "items": [{"qty": 1, "product": {"sku": f"p{i}", "price": p}} for i, p in enumerate(prices)],
        "gift": None if gift is None else {"sku": "g", "price": gift},
    }


def test_off_by_default_as_confluent() -> None:
    factory = mock_factory()
    schema = factory.avro(register(factory, [PRICED]))
    for _ in range(3):  # the reference path, then the compiled one
        encoded = schema.encode(TOPIC, order(1.0, -5.0))
    assert schema.decode(TOPIC, encoded.data, encoded.schema_id)["items"][1]["product"]["price"] == -5.0


def test_a_referenced_condition_runs_on_each_part_of_its_type_and_says_where() -> None:
    factory = mock_factory(**{"rules.referenced": "true"})
    schema = factory.avro(register(factory, [PRICED]))
    for _ in range(3):
        schema.encode(TOPIC, order(1.0, 2.0, gift=3.0))

    with pytest.raises(RuleViolationError) as failed:
        schema.encode(TOPIC, order(1.0, -5.0))
    error = failed.value
    assert (error.rule, error.subject, error.path) == ("priced", "acme.Product", "Order.items[1].product")
    assert "rule 'priced' (CONDITION CEL, WRITE) on Order.items[1].product failed" in str(error)
    with pytest.raises(RuleViolationError, match=r"on Order\.gift failed"):
        schema.encode(TOPIC, order(1.0, gift=0.0))


def test_nested_twice_the_parts_rules_run_before_the_roots_on_write() -> None:
    # LineItem checks what Product's transform wrote, and Order what both did: inner first.
    line_checks = rule("sawMark", "CONDITION", "CEL", "WRITE", "message.product.sku.endsWith('*')")
    order_checks = rule(
        "allMarked", "CONDITION", "CEL", "WRITE", "message.items.all(i, i.product.sku.endsWith('*'))"
    )
    factory = mock_factory(**{"rules.referenced": "true"})
    schema = factory.avro(register(factory, [MARKED], [line_checks], [order_checks]))
    value = order(1.0, 2.0)
    for _ in range(3):
        encoded = schema.encode(TOPIC, value)
    decoded = schema.decode(TOPIC, encoded.data, encoded.schema_id)

    assert [item["product"]["sku"] for item in decoded["items"]] == ["p0*", "p1*"]
    assert value["items"][0]["product"]["sku"] == "p0"  # the caller's value is not changed


def test_read_rules_of_parts_run_after_the_roots() -> None:
    # On READ the root sees the value before the parts' transforms (they nest the other way).
    unmarked = rule(
        "unmarked", "CONDITION", "CEL", "READ", "message.items.all(i, !i.product.sku.endsWith('!'))"
    )
    bang = rule("bang", "TRANSFORM", "CEL_FIELD", "READ", "name == 'sku' ; value + '!'")
    factory = mock_factory(**{"rules.referenced": "true"})
    schema = factory.avro(register(factory, [bang], None, [unmarked]))
    encoded = schema.encode(TOPIC, order(1.0))
    for _ in range(3):
        decoded = schema.decode(TOPIC, encoded.data, encoded.schema_id)
    assert decoded["items"][0]["product"]["sku"] == "p0!"


def test_a_root_schema_opts_in_or_out_with_its_metadata() -> None:
    factory = mock_factory()
    schema = factory.avro(register(factory, [PRICED], order_metadata={"rules.referenced": "true"}))
    with pytest.raises(RuleViolationError, match="priced"):
        schema.encode(TOPIC, order(-1.0))

    factory = mock_factory(**{"rules.referenced": "true"})
    schema = factory.avro(register(factory, [PRICED], order_metadata={"rules.referenced": "false"}))
    assert schema.encode(TOPIC, order(-1.0)).data


def test_a_dead_letter_copy_names_the_referenced_subject_and_the_path() -> None:
    to_dlq = rule(
        "priced",
        "CONDITION",
        "CEL",
        "WRITE",
        "message.price > 0.0",
        onFailure="DLQ",
        params={"dlq.topic": "bad"},
    )
    factory = mock_factory(**{"rules.referenced": "true"})
    schema = factory.avro(register(factory, [to_dlq]))
    schema._pulsar_client = client = FakePulsarClient()
    with pytest.raises(DeadLetteredError):
        schema.encode(TOPIC, order(1.0, -2.0))

    (copy,) = client.sent
    assert copy["properties"][RULE_SUBJECT] == "acme.Product"
    assert copy["properties"][RULE_PATH] == "Order.items[1].product"
    assert json.loads(copy["data"])["items"][1]["product"]["price"] == -2.0  # the whole message


def test_json_schema_parts_are_found_through_their_ref_and_a_cycle_is_refused() -> None:
    factory = mock_factory(**{"rules.referenced": "true"})
    client = factory.registry_client
    product = {"type": "object", "properties": {"sku": {"type": "string"}, "price": {"type": "number"}}}
    client.register_schema(
        "product",
        Schema.from_dict(
            {"schema": json.dumps(product), "schemaType": "JSON", "ruleSet": {"domainRules": [PRICED]}}
        ),
    )
    order_body = {
        "type": "object",
        "title": "Order",
        "properties": {
            "id": {"type": "integer"},
            "lines": {"type": "array", "items": {"$ref": "product.json"}},
        },
    }
    refs = [{"name": "product.json", "subject": "product", "version": 1}]
    root = Schema.from_dict({"schema": json.dumps(order_body), "schemaType": "JSON", "references": refs})
    schema = factory.json(root)
    assert schema.encode(TOPIC, {"id": 1, "lines": [{"sku": "a", "price": 2}]}).data
    with pytest.raises(RuleViolationError, match=r"on Order\.lines\[0\] failed"):
        schema.encode(TOPIC, {"id": 1, "lines": [{"sku": "a", "price": 0}]})

    # product v2 references the order subject, whose v2 references product v2: back to a subject
    client.register_schema("cyclic-order", root)
    client.register_schema(
        "product",
        Schema.from_dict(
            {
                "schema": json.dumps(product),
                "schemaType": "JSON",
                "ruleSet": {"domainRules": [PRICED]},
                "references": [{"name": "order.json", "subject": "cyclic-order", "version": 1}],
            }
        ),
    )
    looping = Schema.from_dict(
        {
            "schema": json.dumps(order_body),
            "schemaType": "JSON",
            "references": [{"name": "product.json", "subject": "product", "version": 2}],
        }
    )
    client.register_schema("cyclic-order", looping)
    cyclic = factory.json(looping)
    with pytest.raises(
        ConfigError, match=r"schema references form a cycle \(product -> cyclic-order -> product\)"
    ):
        cyclic.encode("persistent://acme/shop/cyclic", {"id": 1, "lines": []})


def test_protobuf_parts_are_the_messages_of_the_imported_file() -> None:
    """The walk alone (confluent-kafka's mock registry serves no serialized descriptors, which its
    Protobuf serdes read references as; the real registry runs the whole path in
    tests/integration/test_referenced_rules_on_pulsar.py)."""
    product_file, _, _, order_class = referencing_protobuf_classes("shopwalk")
    value = order_class(id=1)
    for price in (1.0, 2.0):
        value.items.add(qty=1).product.price = price
    value.gift.sku = "g"
    graph = {product_file.name: Referenced(product_file.name, "shopwalk-product", 1, Schema("", "PROTOBUF"))}

    parts = list(protobuf_walker(None, Schema("", "PROTOBUF"))(value, graph))

    assert [(path, name) for path, _, _, name in parts] == [
        (".items[0].product", product_file.name),
        (".items[1].product", product_file.name),
        (".gift", product_file.name),
    ]
    _, part, put, _ = parts[2]
    replacement = type(part)(sku="new", price=3.0)
    put(replacement)  # a rule that gives a new message: copied into the part, in place
    assert (value.gift.sku, value.gift.price) == ("new", 3.0)
