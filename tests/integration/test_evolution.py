"""Creek-style JSON Schema evolution on the real registry and broker.

The walk-through of Creek's article: producer v1 {id, name}; v2 adds an optional `checked`; a v3
consumer expects an optional `status` enum; producer v3 drops `checked` and adds `status`;
consumers of every version, rolled back or not, read every message. Then the negative cases.
"""

from __future__ import annotations

import copy
import json
import traceback
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from contracts import drain, subscribe

from pulsar_external_schema import (
    SCHEMA_ID_PROPERTY,
    DecodeError,
    IncompatibleSchemaError,
    JsonSchemaEvolution,
    create_producer,
)
from pulsar_external_schema.evolution import Direction
from pulsar_external_schema.schema_id import to_property
from pulsar_external_schema.subjects import topic_name_strategy

STATUS = {"type": "string", "enum": ["pending", "passed", "failed"]}


def producer_schema(**extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, **extra},
        "required": ["id", "name"],
    }


P1 = producer_schema()
P2 = producer_schema(checked={"type": "boolean"})
P3 = producer_schema(status=STATUS)
CONSUMER_V3 = {**producer_schema(status=STATUS), "additionalProperties": True}


def schemas_subject(topic: str) -> str:
    return topic_name_strategy(SerializationContext(topic, MessageField.VALUE), None)


def text(schema: dict[str, Any]) -> str:
    return json.dumps(schema)


@pytest.fixture
def evolution(services: Any) -> Any:
    with JsonSchemaEvolution({"schema.registry.url": services.registry_url}) as made:
        yield made


def kinds(error: IncompatibleSchemaError) -> list[tuple[str, str, Direction | None]]:
    return [(d.kind, d.path, d.direction) for d in error.differences]


def test_creek_walk_through_with_the_checker(
    evolution: JsonSchemaEvolution, registry_client: SchemaRegistryClient, subject: str
) -> None:
    p1 = evolution.ensure_producer_schema(subject, text(P1))
    assert (
        registry_client.get_compatibility(subject) == "NONE"
    )  # the client-side checks replace the registry's
    assert evolution.ensure_producer_schema(subject, text(P1)) == p1  # already registered: same id

    p2 = evolution.ensure_producer_schema(subject, text(P2))  # adds an optional property
    assert p2 != p1
    assert evolution.ensure_consumer_schema(subject, text(P1)) == p1
    assert evolution.ensure_consumer_schema(subject, text(P2)) == p2

    # A v3 consumer, built before producer v3, expects an optional `status`: it reads v1 and v2 data.
    assert evolution.check_consumer_schema(subject, text(CONSUMER_V3)) == []

    p3 = evolution.ensure_producer_schema(subject, text(P3))  # drops `checked`, adds `status`
    assert registry_client.get_versions(subject) == [1, 2, 3]

    # Rolling a consumer back to any version stays safe: each is derived from a registered producer.
    for producer, schema_id in ((P1, p1), (P2, p2), (P3, p3)):
        assert evolution.ensure_consumer_schema(subject, text(producer)) == schema_id
        assert evolution.check_consumer_schema(subject, {**producer, "additionalProperties": True}) == []


def test_changing_a_property_type_is_rejected_both_ways_and_registers_nothing(
    evolution: JsonSchemaEvolution, registry_client: SchemaRegistryClient, subject: str
) -> None:
    evolution.ensure_producer_schema(subject, text(P1))
    evolution.ensure_producer_schema(subject, text(P2))
    checked_as_enum = producer_schema(checked=STATUS)

    with pytest.raises(IncompatibleSchemaError) as raised:
        evolution.ensure_producer_schema(subject, text(checked_as_enum))

    assert kinds(raised.value) == [
        ("TYPE_CHANGED", "#/properties/checked", Direction.BACKWARD),
        ("TYPE_CHANGED", "#/properties/checked", Direction.FORWARD),
    ]
    assert {(d.version, d.schema_id) for d in raised.value.differences} == {
        (2, registry_client.get_version(subject, 2).schema_id)
    }
    assert raised.value.subject == subject
    assert "TYPE_CHANGED at #/properties/checked [backward, version 2" in str(raised.value)
    assert registry_client.get_versions(subject) == [1, 2]


def test_a_consumer_expectation_cannot_hijack_the_producers_type(
    evolution: JsonSchemaEvolution, registry_client: SchemaRegistryClient, subject: str
) -> None:
    evolution.ensure_producer_schema(subject, text(P1))
    status_as_integer = producer_schema(status={"type": "integer"})

    # A consuming team's own idea of `status` reads today's data, but it is not registered ...
    assert evolution.check_consumer_schema(subject, {**status_as_integer, "additionalProperties": True}) == []
    with pytest.raises(IncompatibleSchemaError, match="is not registered") as refused:
        evolution.ensure_consumer_schema(subject, text(status_as_integer))
    assert refused.value.differences == []  # it could read what is registered; it is just not a producer's
    assert registry_client.get_versions(subject) == [1]

    # ... so the producing team stays in control and registers `status` as its enum,
    evolution.ensure_producer_schema(subject, text(P3))
    # and it is the consumer that learns its expectation no longer holds.
    found = evolution.check_consumer_schema(subject, {**status_as_integer, "additionalProperties": True})
    assert [(d.kind, d.path, d.version) for d in found] == [("TYPE_CHANGED", "#/properties/status", 2)]


def test_adding_a_required_property_breaks_backward_only(
    evolution: JsonSchemaEvolution, registry_client: SchemaRegistryClient, subject: str
) -> None:
    evolution.ensure_producer_schema(subject, text(P1))
    with_region = copy.deepcopy(P1)
    with_region["properties"]["region"] = {"type": "string"}
    with_region["required"].append("region")

    with pytest.raises(IncompatibleSchemaError) as raised:
        evolution.ensure_producer_schema(subject, text(with_region))

    assert kinds(raised.value) == [
        ("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/region", Direction.BACKWARD)
    ]
    evolution.ensure_producer_schema(subject, text(with_region), backward=False, forward=True)
    assert registry_client.get_versions(subject) == [1, 2]


def test_removing_a_required_property_breaks_forward_only(
    evolution: JsonSchemaEvolution, registry_client: SchemaRegistryClient, subject: str
) -> None:
    evolution.ensure_producer_schema(subject, text(P1))
    without_name = copy.deepcopy(P1)
    del without_name["properties"]["name"]
    without_name["required"] = ["id"]

    with pytest.raises(IncompatibleSchemaError) as raised:
        evolution.ensure_producer_schema(subject, text(without_name))

    assert kinds(raised.value) == [
        ("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/name", Direction.FORWARD)
    ]
    evolution.ensure_producer_schema(subject, text(without_name), backward=True, forward=False)
    assert registry_client.get_versions(subject) == [1, 2]


def test_open_producer_schema_is_refused(evolution: JsonSchemaEvolution, subject: str) -> None:
    open_schema = {**P1, "additionalProperties": True}

    with pytest.raises(IncompatibleSchemaError, match="closed content model") as raised:
        evolution.ensure_producer_schema(subject, text(open_schema))

    assert [(d.kind, d.path) for d in raised.value.differences] == [
        ("OPEN_CONTENT_MODEL_IN_PRODUCER_SCHEMA", "#")
    ]


def test_view_schema_must_be_a_subset_of_the_consumer_schema(
    evolution: JsonSchemaEvolution, subject: str
) -> None:
    p2 = evolution.ensure_producer_schema(subject, text(P2))
    view = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    wrong = {"type": "object", "properties": {"id": {"type": "string"}}}

    assert evolution.ensure_consumer_view_schema(subject, text(P2), view) == p2
    with pytest.raises(IncompatibleSchemaError) as raised:
        evolution.ensure_consumer_view_schema(subject, text(P2), wrong)
    assert kinds(raised.value) == [("TYPE_CHANGED", "#/properties/id", Direction.VIEW)]
    with pytest.raises(IncompatibleSchemaError, match="not registered"):
        evolution.ensure_consumer_view_schema(subject, text(P3), view)


def test_a_registration_race_is_caught_on_the_next_start(
    evolution: JsonSchemaEvolution, registry_client: SchemaRegistryClient, subject: str
) -> None:
    """Another producer registered a conflicting schema without seeing ours (simulated by registering
    it directly): ours, already registered, now fails on start instead of producing."""
    evolution.ensure_producer_schema(subject, text(P1))
    evolution.ensure_producer_schema(subject, text(P2))
    registry_client.register_schema(subject, Schema(text(producer_schema(checked=STATUS)), "JSON"))

    with pytest.raises(IncompatibleSchemaError, match="registration race") as raised:
        evolution.ensure_producer_schema(subject, text(P2))

    assert {(d.kind, d.version) for d in raised.value.differences} == {("TYPE_CHANGED", 3)}


# -- through the factory, on the broker ----------------------------------------------------------------


def test_producers_and_consumers_of_every_version_on_the_broker(
    make_factory: Any, pulsar_client: Any, registry_client: SchemaRegistryClient, topic: str
) -> None:
    evolving = {"json.evolution": "producer-consumer"}
    schemas = {name: make_factory(**evolving).json(text(p)) for name, p in (("v1", P1), ("v2", P2))}
    view = {"type": "object", "properties": {"id": {"type": "integer"}, "status": STATUS}, "required": ["id"]}
    consumers = {name: subscribe(pulsar_client, topic, schema, name) for name, schema in schemas.items()}

    create_producer(pulsar_client, topic, schemas["v1"]).send({"id": 1, "name": "one"})
    create_producer(pulsar_client, topic, schemas["v2"]).send({"id": 2, "name": "two", "checked": True})
    schemas["v3"] = make_factory(**evolving).json(text(P3))
    create_producer(pulsar_client, topic, schemas["v3"]).send({"id": 3, "name": "three", "status": "passed"})
    viewer = subscribe(pulsar_client, topic, make_factory(**evolving).json(text(P3), view=view), "view")

    expected = [
        {"id": 1, "name": "one"},
        {"id": 2, "name": "two", "checked": True},
        {"id": 3, "name": "three", "status": "passed"},
    ]
    for name, consumer in consumers.items():  # v1 is the rolled-back consumer
        assert [m.value() for m in drain(consumer)] == expected, name
    assert [m.value() for m in drain(viewer)] == [{"id": 1}, {"id": 2}, {"id": 3, "status": "passed"}]
    subject = schemas_subject(topic)
    assert registry_client.get_versions(subject) == [1, 2, 3]
    assert registry_client.get_compatibility(subject) == "NONE"


def test_an_incompatible_producer_fails_before_sending_and_names_topic_and_subject(
    make_factory: Any, pulsar_client: Any, registry_client: SchemaRegistryClient, topic: str
) -> None:
    evolving = make_factory(**{"json.evolution": "producer-consumer"})
    create_producer(pulsar_client, topic, evolving.json(text(P2))).send(
        {"id": 1, "name": "a", "checked": True}
    )
    bad = create_producer(pulsar_client, topic, evolving.json(text(producer_schema(checked=STATUS))))

    with pytest.raises(IncompatibleSchemaError) as raised:
        bad.send({"id": 2, "name": "b", "checked": "passed"})

    assert raised.value.topic == topic and raised.value.subject == schemas_subject(topic)
    assert f"topic {topic}" in str(raised.value) and "TYPE_CHANGED at #/properties/checked" in str(
        raised.value
    )
    assert registry_client.get_versions(schemas_subject(topic)) == [1]
    assert len(drain(subscribe(pulsar_client, topic, name="raw"))) == 1


def test_a_consumer_of_an_unregistered_producer_schema_fails_clearly(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    evolving = make_factory(**{"json.evolution": "producer-consumer"})
    create_producer(pulsar_client, topic, evolving.json(text(P1))).send({"id": 1, "name": "a"})
    consumer = subscribe(pulsar_client, topic, evolving.json(text(P3)))

    message = consumer.receive(timeout_millis=5_000)
    with pytest.raises(IncompatibleSchemaError, match="is not registered") as raised:
        message.value()

    assert raised.value.topic == topic
    consumer.negative_acknowledge(message)  # nothing is lost: the message is still there to read


def test_data_that_breaks_the_consumer_schema_is_a_decode_error(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    """Data written outside the model (here: by a producer without the checks, under the registered
    schema's id) is not silently passed on: the consumer schema rejects it, naming where."""
    plain = make_factory(**{"auto.register.schemas": False}).json(text(P1))
    evolving = make_factory(**{"json.evolution": "producer-consumer"})
    create_producer(pulsar_client, topic, evolving.json(text(P1))).send({"id": 1, "name": "a"})
    payload = b'{"id": "not a number", "name": "b"}'
    good = plain.encode(topic, {"id": 2, "name": "b"})
    assert good.schema_id is not None
    raw = pulsar_client.create_producer(topic)
    raw.send(payload, properties={SCHEMA_ID_PROPERTY: to_property(good.schema_id)})
    consumer = subscribe(pulsar_client, topic, evolving.json(text(P1)))

    assert consumer.receive(timeout_millis=5_000).value() == {"id": 1, "name": "a"}
    with pytest.raises(
        DecodeError, match=r"does not match the consumer schema at id: 'not a number'"
    ) as raised:
        consumer.receive(timeout_millis=5_000).value()
    assert raised.value.topic == topic and raised.value.schema_id


def test_a_pii_value_that_breaks_the_consumer_schema_is_redacted_in_its_decode_error(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    """As above, on a field tagged PII: the consumer schema's refusal names where, never the value
    (the tag is found through the wrapped deserializer and the producer schema given)."""
    tagged = producer_schema(ssn={"type": "string", "maxLength": 11, "confluent:tags": ["PII"]})
    plain = make_factory(**{"auto.register.schemas": False}).json(text(tagged))
    evolving = make_factory(**{"json.evolution": "producer-consumer"})
    create_producer(pulsar_client, topic, evolving.json(text(tagged))).send({"id": 1, "name": "a"})
    good = plain.encode(topic, {"id": 2, "name": "b"})
    raw = pulsar_client.create_producer(topic)
    raw.send(
        b'{"id": 3, "name": "c", "ssn": "987-65-4321 and more"}',
        properties={SCHEMA_ID_PROPERTY: to_property(good.schema_id)},
    )
    consumer = subscribe(pulsar_client, topic, evolving.json(text(tagged)))
    assert consumer.receive(timeout_millis=5_000).value() == {"id": 1, "name": "a"}
    with pytest.raises(DecodeError, match=r"consumer schema at ssn: '<REDACTED>' is too long") as raised:
        consumer.receive(timeout_millis=5_000).value()
    said = "".join(traceback.format_exception(raised.value))
    assert "987-65-4321" not in said
