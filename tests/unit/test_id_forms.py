"""Every form a message's schema id takes on a Pulsar topic is read by `decode_message`: the
`__schema_id` property (PIP-420 bytes, with or without the magic byte Java 4.1.0/4.1.1 left out),
Confluent's `__value_schema_id` / `__key_schema_id` as properties (data bridged from Kafka, or
`schema.id.location=header`), then the Confluent payload prefix."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from contracts import ReceivedMessage, mock_factory

from pulsar_external_schema import KeyValue, MissingSchemaIdError
from pulsar_external_schema.producer import encode_message

TOPIC = "persistent://acme/shop/orders"
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}


def received(data: bytes, properties: dict[str, str]) -> ReceivedMessage:
    return ReceivedMessage(data, properties, TOPIC)


def test_header_location_writes_confluent_header_properties_and_reads_them_back() -> None:
    schema = mock_factory(**{"schema.id.location": "header"}).avro(json.dumps(ORDER))
    data, properties = encode_message(schema, TOPIC, {"id": 7})

    assert set(properties) == {"__value_schema_id"} and properties["__value_schema_id"].startswith("00")
    assert schema.decode_message(received(data, properties)) == {"id": 7}


def test_key_value_header_location_writes_both_header_properties() -> None:
    factory = mock_factory(**{"schema.id.location": "header"})
    schema = factory.key_value(factory.avro('"string"'), factory.avro(json.dumps(ORDER)))
    data, properties = encode_message(schema, TOPIC, KeyValue("k", {"id": 1}))

    assert set(properties) == {"__key_schema_id", "__value_schema_id"}
    assert schema.decode_message(received(data, properties)) == KeyValue("k", {"id": 1})


@pytest.mark.parametrize(
    "form",
    ["__schema_id with magic", "__schema_id without magic (Java 4.1.0)", "decimal header", "base64 header"],
)
def test_every_id_form_decodes_the_same_message(form: str) -> None:
    schema = mock_factory().avro(json.dumps(ORDER))
    data, properties = encode_message(schema, TOPIC, {"id": 3})
    metadata = bytes.fromhex(properties["__schema_id"])
    confluent = metadata[1:]
    carried: dict[str, Any] = {
        "__schema_id with magic": {"__schema_id": metadata.hex()},
        "__schema_id without magic (Java 4.1.0)": {"__schema_id": confluent.hex()},
        "decimal header": {"__value_schema_id": str(int.from_bytes(confluent[1:5], "big"))},
        "base64 header": {"__value_schema_id": base64.b64encode(confluent).decode()},
    }

    assert schema.decode_message(received(data, carried[form])) == {"id": 3}


def test_a_message_without_any_id_says_where_it_looked() -> None:
    schema = mock_factory().avro(json.dumps(ORDER))
    data, _ = encode_message(schema, TOPIC, {"id": 3})

    with pytest.raises(MissingSchemaIdError) as raised:
        schema.decode_message(received(data, {}))
    assert "__schema_id" in str(raised.value)


def test_a_guid_header_is_resolved_through_the_registry() -> None:
    """confluent-kafka writes GUIDs in its headers; the registry resolves them (`/schemas/guids/`).
    AxonOps v0.2.1 has no GUIDs, so this runs on the in-memory registry, which has."""
    factory = mock_factory()
    schema = factory.avro(json.dumps(ORDER))
    data, _ = encode_message(schema, TOPIC, {"id": 5})
    guid = factory.registry_client.get_latest_version("acme.shop.orders-value").guid
    assert guid

    assert schema.decode_message(received(data, {"__value_schema_id": guid})) == {"id": 5}
