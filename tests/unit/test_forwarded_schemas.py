"""`ForwardedSchemas`: what the validation tools forward is registered under the target's subject,
once per (id, subject), with the source version's rules; on the mock registry (the journeys and
the Spark and Functions tests show it on the real one)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contracts import contract, mock_factory, rule

from pulsar_external_schema import schema_id as ids
from pulsar_external_schema.errors import ConfigError, SubjectNotFoundError
from pulsar_external_schema.topic_schemas import ForwardedSchemas

SOURCE, TARGET = "persistent://acme/shop/orders", "persistent://acme/trusted/orders"
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
KEY = {"type": "record", "name": "OrderKey", "fields": [{"name": "k", "type": "string"}]}
RULES = {"domainRules": [rule("positive", "CONDITION", "CEL", "READ", "message.id > 0")]}


def _one_id_per_schema(factory: Any) -> Any:
    """confluent-kafka's mock registry hands out a new id on every registration; a registry gives one
    id to one schema, whatever the subject (measured on AxonOps; Confluent's semantics): so here."""
    store = factory.registry_client._store
    plain_set = store.set

    def set_once(registered: Any) -> Any:
        for known in list(store.schema_id_index.values()):
            if known.schema == registered.schema:
                registered = type(registered)(
                    schema_id=known.schema_id,
                    guid=known.guid,
                    schema=registered.schema,
                    subject=registered.subject,
                    version=registered.version,
                )
                store.subject_schemas[registered.subject].add(registered)
                return registered
        return plain_set(registered)

    store.set = set_once
    return factory


def _registered(factory: Any, subject: str, schema: dict[str, Any], **parts: Any) -> int:
    registered: int = factory.registry_client.register_schema(subject, contract(schema, **parts))
    return registered


def test_a_forwarded_version_keeps_its_id_and_rules_under_the_target_subject_once() -> None:
    factory = _one_id_per_schema(mock_factory())
    schema_id = _registered(factory, "acme.shop.orders-value", ORDER, ruleSet=RULES)
    client = factory.registry_client
    asked: list[str] = []
    real = client.register_schema_full_response

    def counting(subject: str, schema: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(subject)
        return real(subject, schema, *args, **kwargs)

    client.register_schema_full_response = counting
    forwarded = ForwardedSchemas(factory, source_topic=SOURCE)
    for _ in range(3):
        forwarded.forward(TARGET, ids.to_property(ids.confluent_id(schema_id)))
    assert asked == ["acme.trusted.orders-value"]
    stored = client.get_latest_version("acme.trusted.orders-value")
    assert stored.schema_id == schema_id
    assert [r.name for r in stored.schema.rule_set.domain_rules] == ["positive"]


def test_a_key_value_id_registers_both_parts_and_a_guid_nothing() -> None:
    factory = _one_id_per_schema(mock_factory())
    value_id = _registered(factory, "acme.shop.orders-value", ORDER)
    key_id = _registered(factory, "acme.shop.orders-key", KEY)
    pair = ids.encode_key_value_ids(ids.confluent_id(key_id), ids.confluent_id(value_id))
    ForwardedSchemas(factory).forward(TARGET, ids.to_property(pair, key_value=True))
    client = factory.registry_client
    assert client.get_latest_version("acme.trusted.orders-key").schema_id == key_id
    assert client.get_latest_version("acme.trusted.orders-value").schema_id == value_id
    ForwardedSchemas(factory).forward("persistent://acme/trusted/other", ids.to_property(b"\x01" + bytes(16)))
    assert "acme.trusted.other-value" not in client.get_subjects()


def test_without_auto_register_the_version_must_be_registered_there_already() -> None:
    factory = _one_id_per_schema(mock_factory(**{"auto.register.schemas": False}))
    schema_id = _registered(factory, "acme.shop.orders-value", ORDER)
    with pytest.raises(SubjectNotFoundError, match=r"not registered under acme\.trusted\.orders-value"):
        ForwardedSchemas(factory).register(TARGET, schema_id)
    _registered(factory, "acme.trusted.orders-value", ORDER)
    ForwardedSchemas(factory).register(TARGET, schema_id)  # found there: nothing to do
    assert json.loads(factory.registry_client.get_schema(schema_id).schema_str) == ORDER


def test_a_registry_that_gives_the_version_another_id_there_stops_the_forwarding() -> None:
    factory = mock_factory()  # as a target subject whose overrideRuleSet changes what is stored
    schema_id = _registered(factory, "acme.shop.orders-value", ORDER)
    with pytest.raises(
        ConfigError,
        match=r"has id \d+ under acme\.trusted\.orders-value.*no message with that id was forwarded",
    ):
        ForwardedSchemas(factory).register(TARGET, schema_id)
