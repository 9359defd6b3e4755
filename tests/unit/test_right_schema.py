"""`schema.id.subject.check`: a schema id is global, so a message may carry the id of another
subject's schema (a producer with another strategy, or a registry that lost its store and handed
the ids out again). Decoding it would turn the payload into the wrong record, silently; the check
refuses it once per (topic, id), with an error that says where the id is registered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contracts import ReceivedMessage, mock_factory
from schemas import SHOP_ORDER as ORDER
from schemas import SHOP_REFUND as REFUND

from pulsar_external_schema import ForeignSchemaIdError, SchemaIdError, _confluent

ORDERS = "persistent://acme/shop/orders"
REFUNDS = "persistent://acme/shop/refunds"


def test_an_id_of_another_subject_is_refused_not_decoded_into_the_wrong_record() -> None:
    factory = mock_factory()
    factory.avro(json.dumps(ORDER)).encode(ORDERS, {"id": 1, "item": "x"})  # orders' schema: id 1
    refunds = factory.avro(json.dumps(REFUND))
    refund = refunds.encode(REFUNDS, {"code": -2, "label": "A2"})  # refunds' schema: id 2
    orders = factory.avro(json.dumps(ORDER))
    with pytest.raises(ForeignSchemaIdError) as raised:
        orders.decode(ORDERS, refund.data, refund.schema_id)
    error = raised.value
    assert isinstance(error, SchemaIdError)
    assert (error.topic, error.subject, error.schema_id) == (ORDERS, "acme.shop.orders-value", "2")
    assert "registered under acme.shop.refunds-value, not under acme.shop.orders-value" in str(error)
    assert "'schema.id.subject.check'" in str(error)
    assert refunds.decode(REFUNDS, refund.data, refund.schema_id) == {"code": -2, "label": "A2"}


def test_the_check_asks_the_registry_once_per_topic_and_id(monkeypatch: pytest.MonkeyPatch) -> None:
    factory = mock_factory()
    refund = factory.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 1, "label": "a"})
    orders = factory.avro(json.dumps(ORDER))
    orders.encode(ORDERS, {"id": 1, "item": "x"})
    asked: list[int] = []
    real = _confluent.subjects_of

    def counting(serde: Any, schema_id: int) -> list[str]:
        asked.append(schema_id)
        return real(serde, schema_id)

    monkeypatch.setattr(_confluent, "subjects_of", counting)
    for _ in range(50):
        with pytest.raises(ForeignSchemaIdError):
            orders.decode(ORDERS, refund.data, refund.schema_id)
    refunds = factory.avro(json.dumps(REFUND))
    for _ in range(50):
        refunds.decode(REFUNDS, refund.data, refund.schema_id)
    assert refund.schema_id is not None
    refund_id = int.from_bytes(refund.schema_id[1:], "big")
    assert asked == [refund_id, refund_id]  # one per (topic, id), not one per message


def test_a_topic_whose_subject_has_no_versions_is_checked_too() -> None:
    # After an in-memory registry restarted, a running producer stamps an id its subject never
    # got back, while another subject holds it now.
    factory = mock_factory()
    refund = factory.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 4, "label": "d"})
    with pytest.raises(ForeignSchemaIdError, match=r"not under acme\.shop\.orders-value"):
        factory.avro(json.dumps(ORDER)).decode(ORDERS, refund.data, refund.schema_id)


def test_the_check_can_be_turned_off_for_writers_on_other_subjects() -> None:
    factory = mock_factory(**{"schema.id.subject.check": "false"})
    factory.avro(json.dumps(ORDER)).encode(ORDERS, {"id": 1, "item": "x"})
    refund = factory.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 3, "label": "c"})
    assert factory.avro(json.dumps(REFUND)).decode(ORDERS, refund.data, refund.schema_id) == {
        "code": 3,
        "label": "c",
    }


def test_decode_batch_reports_a_foreign_id_in_place() -> None:
    factory = mock_factory()
    order = factory.avro(json.dumps(ORDER)).encode(ORDERS, {"id": 1, "item": "x"})
    refund = factory.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 1, "label": "a"})
    results = factory.avro(json.dumps(ORDER)).decode_batch(
        ORDERS, [(order.data, order.schema_id, None), (refund.data, refund.schema_id, None)]
    )
    assert results[0] == {"id": 1, "item": "x"}
    assert isinstance(results[1], ForeignSchemaIdError)


def test_an_id_of_another_format_says_so() -> None:
    factory = mock_factory(**{"schema.id.subject.check": False})
    json_id = factory.json(json.dumps({"type": "object"})).encode(ORDERS, {"a": 1})
    with pytest.raises(ForeignSchemaIdError, match="names a JSON schema, and this schema reads AVRO"):
        factory.avro(json.dumps(ORDER)).decode(ORDERS, json_id.data, json_id.schema_id)
    avro_id = factory.avro(json.dumps(ORDER)).encode(REFUNDS, {"id": 1, "item": "x"})
    with pytest.raises(ForeignSchemaIdError, match="names an AVRO schema, and this schema reads JSON"):
        factory.json(json.dumps({"type": "object"})).decode(REFUNDS, avro_id.data, avro_id.schema_id)


class _Message:
    def __init__(self, properties: dict[str, str]) -> None:
        self._properties = properties

    def properties(self) -> dict[str, str]:
        return self._properties

    def topic_name(self) -> str:
        return ORDERS

    def data(self) -> bytes:
        return b"\x02\x02x"

    def message_id(self) -> str:
        return "(1,2,-1,0)"


def test_a_schema_id_property_of_only_its_magic_byte_is_reported_as_truncated() -> None:
    schema = mock_factory().avro(json.dumps(ORDER))
    with pytest.raises(SchemaIdError, match=r"only its magic byte 0xff.*truncated") as raised:
        schema.decode_message(_Message({"__schema_id": "ff"}))
    assert "no __schema_id" not in str(raised.value)


def test_reading_as_the_source_topic_decodes_its_copies_with_the_source_subject() -> None:
    factory = mock_factory()
    refunds = factory.avro(json.dumps(REFUND))
    sent = refunds.encode(REFUNDS, {"code": 3, "label": "ok"})
    assert sent.schema_id is not None
    properties = {"__schema_id": (b"\xff" + sent.schema_id).hex()}
    copy = ReceivedMessage(sent.data, properties, "persistent://acme/shop/refunds-valid")

    with pytest.raises(ForeignSchemaIdError, match=r"not under acme\.shop\.refunds-valid-value"):
        refunds.decode_message(copy)  # its own topic's subject does not hold the id
    reader = refunds.reading_as(REFUNDS)
    assert reader.decode_message(copy) == {"code": 3, "label": "ok"}
    assert reader.subject(REFUNDS) == "acme.shop.refunds-value"
    reader.close()
