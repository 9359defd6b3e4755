"""Values outside a schema's types are refused on the real broker and registry, never changed:
through `create_producer(...).send`, with a stock pulsar-client consumer reading what arrived."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from contracts import drain, subscribe

from pulsar_external_schema import SchemaRegistrySchemaFactory, ValueOutsideSchemaError, create_producer

COUNTS = {
    "type": "record",
    "name": "Count",
    "namespace": "acme.values",
    "fields": [{"name": "n", "type": "int"}, {"name": "ratio", "type": "float", "default": 0.0}],
}
MEASURE = {"type": "object", "properties": {"v": {"type": "number"}}, "required": ["v"]}


def test_avro_values_outside_an_int_are_refused_and_the_rest_arrive_unchanged(
    pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.avro(json.dumps(COUNTS))
    consumer = subscribe(pulsar_client, topic, factory.avro(json.dumps(COUNTS)))
    producer = create_producer(pulsar_client, topic, schema)
    sent = [
        {"n": 1},
        {"n": 2.5},
        {"n": 99999999999},
        {"n": -2147483649},
        {"n": True},
        {"n": 2, "ratio": 1e300},
    ]
    refused = []
    for value in [*sent, {"n": 2**31 - 1, "ratio": 3}]:
        try:
            producer.send(value)
        except ValueOutsideSchemaError as error:
            refused.append((error.path, error.value_type, error.schema_type))
            assert error.topic == topic and error.subject and error.subject.endswith("-value")
    assert refused == [
        ("n", "float", "an Avro int (32-bit integer)"),
        ("n", "int", "an Avro int (32-bit integer)"),
        ("n", "int", "an Avro int (32-bit integer)"),
        ("n", "bool", "an Avro int (32-bit integer)"),
        ("ratio", "float", "an Avro float"),
    ]
    assert [message.value() for message in drain(consumer)] == [
        {"n": 1, "ratio": 0.0},
        {"n": 2**31 - 1, "ratio": 3.0},  # an int promoted to float, as Avro allows
    ]


def test_json_nan_and_infinity_are_refused_and_the_rest_arrive_as_json(
    pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.json(json.dumps(MEASURE))
    consumer = subscribe(pulsar_client, topic, factory.json(json.dumps(MEASURE)))
    raw = subscribe(pulsar_client, topic, name="raw")
    producer = create_producer(pulsar_client, topic, schema)
    for value in (1.5, math.nan, math.inf, -math.inf, 2):
        if math.isfinite(value):
            producer.send({"v": value})
        else:
            with pytest.raises(ValueOutsideSchemaError, match="field v: a float is not a JSON number"):
                producer.send({"v": value})
    assert [message.value() for message in drain(consumer)] == [{"v": 1.5}, {"v": 2}]
    payloads = [message.data() for message in drain(raw)]
    assert [json.loads(payload) for payload in payloads] == [{"v": 1.5}, {"v": 2}]  # JSON any reader takes
