"""Hostile input on the real broker and registry: a payload that states billions of items, or
nests deeper than the decoder's stack, is dead-lettered with the limit it broke, and the consumer
goes on with the next message."""

from __future__ import annotations

import json
from typing import Any

from contracts import drain, subscribe
from schemas import SHOP_ORDER as ORDER
from schemas import SHOP_REFUND as REFUND

from pulsar_external_schema import SCHEMA_ID_PROPERTY, consume, create_producer

PINGS = {
    "type": "record",
    "name": "Pings",
    "namespace": "acme.hardening",
    "fields": [
        {"name": "n", "type": "int"},
        {"name": "pings", "type": {"type": "array", "items": "null"}},
        {"name": "next", "type": ["null", "Pings"], "default": None},
    ],
}


def test_payloads_over_the_decoding_limits_are_dead_lettered_and_the_consumer_goes_on(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    schema = make_factory().avro(json.dumps(PINGS))
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"n": 1, "pings": [None], "next": None})
    id_property = {"__schema_id": schema.encode(topic, {"n": 0, "pings": []}).schema_id.hex()}
    raw = pulsar_client.create_producer(topic)
    # n=0, then an array block count of 2^31 - 1 null items: 7 bytes of payload.
    raw.send(b"\x00\xfe\xff\xff\xff\x0f\x00", properties=id_property)
    # 5,000 nested records: fastavro would overflow its C stack and kill the consumer.
    raw.send(b"\x00\x00\x02" * 5_000 + b"\x00\x00\x00", properties=id_property)
    producer.send({"n": 2, "pings": [], "next": {"n": 3, "pings": [None, None], "next": None}})

    poison = f"{topic}-poison"
    errors: list[Any] = []
    handled: list[int] = []
    result = consume(
        subscribe(pulsar_client, topic, schema),
        lambda msg, value: handled.append(value["n"]),
        timeout_millis=3_000,
        dead_letter_topic=poison,
        on_error=lambda msg, error: errors.append(error),
    )
    assert handled == [1, 2]
    assert (result.processed, result.dead_lettered) == (2, 2)
    assert [type(error).__name__ for error in errors] == ["DecodeLimitError", "DecodeLimitError"]
    assert [error.key for error in errors] == ["decode.max.bytes", "decode.max.depth"]
    assert all(error.topic == topic and error.schema_id for error in errors)
    copies = drain(subscribe(pulsar_client, poison))
    assert [copy.data()[:7] for copy in copies] == [
        b"\x00\xfe\xff\xff\xff\x0f\x00",
        b"\x00\x00\x02\x00\x00\x02\x00",
    ]
    assert all("decode.max" in copy.properties()["__rule.exception"] for copy in copies)
    assert SCHEMA_ID_PROPERTY in copies[0].properties()


def test_a_message_with_another_subjects_schema_id_is_dead_lettered_not_misread(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    factory = make_factory()
    orders = factory.avro(json.dumps(ORDER))
    producer = create_producer(pulsar_client, topic, orders)
    producer.send({"id": 1, "item": "A1"})
    # The refunds topic's schema has the same shape; its id on the orders topic is what a
    # registry that lost its store (and handed the ids out again) would leave behind.
    refund = factory.avro(json.dumps(REFUND)).encode(f"{topic}-refunds", {"code": -2, "label": "A2"})
    pulsar_client.create_producer(topic).send(
        refund.data, properties={SCHEMA_ID_PROPERTY: refund.schema_id.hex()}
    )
    producer.send({"id": 3, "item": "A3"})

    errors: list[Any] = []
    handled: list[Any] = []
    result = consume(
        subscribe(pulsar_client, topic, orders),
        lambda msg, value: handled.append(value),
        timeout_millis=3_000,
        dead_letter_topic=f"{topic}-poison",
        on_error=lambda msg, error: errors.append(error),
    )
    assert handled == [{"id": 1, "item": "A1"}, {"id": 3, "item": "A3"}]
    assert (result.processed, result.dead_lettered) == (2, 1)
    [error] = errors
    assert type(error).__name__ == "ForeignSchemaIdError"
    assert f"not under {error.subject}" in str(error) and "-refunds-value" in str(error)
    [copy] = drain(subscribe(pulsar_client, f"{topic}-poison"))
    assert copy.data() == refund.data


def test_the_same_schema_registered_under_two_subjects_decodes_on_both(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    schema = make_factory().avro(json.dumps(ORDER))
    other = f"{topic}-copy"
    first = schema.encode(other, {"id": 1, "item": "x"})
    assert schema.encode(topic, {"id": 1, "item": "x"}).schema_id == first.schema_id  # one id
    assert schema.decode(topic, first.data, first.schema_id) == {"id": 1, "item": "x"}
