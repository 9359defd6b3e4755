"""`schema.id.recheck.sec`: a producer asks the registry again, now and then, whether it still
holds the schema id the producer stamps. confluent-kafka's serializers keep an id for their life,
so after an in-memory registry restarted a running producer stamped an id the registry had handed
to another subject (318 messages in the issue's probe), and consumers read them as that subject's
records. Here the mock registry loses its store; the clock is the plans' own, moved by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contracts import mock_factory
from schemas import SHOP_ORDER as ORDER
from schemas import SHOP_REFUND as REFUND

from pulsar_external_schema import (
    ConfigError,
    ExternalSchema,
    SchemaRegistrySchemaFactory,
    _confluent,
    _native,
)
from pulsar_external_schema import schema_id as ids
from pulsar_external_schema.codec import bridge, plans
from pulsar_external_schema.registry import TRANSPORT_ERRORS

ORDERS = "persistent://acme/shop/orders"
REFUNDS = "persistent://acme/shop/refunds"


class Clock:
    """The plans' clock and the part's, moved by hand: the two must agree. The native extension's
    kept writers and readers read a clock of their own, which no hand moves: the schemas here
    take the compiled plan in Python (test_native_direct.py holds the two paths to one another,
    and the kept ones to their plans' expiry)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        monkeypatch.setattr(_native, "extension", lambda: None)
        monkeypatch.setattr(plans, "monotonic", lambda: self.now)
        monkeypatch.setattr(bridge, "monotonic", lambda: self.now)


def _lose_the_store(factory: SchemaRegistrySchemaFactory) -> None:
    """What an in-memory registry's restart does: every subject and id gone, ids from 1 again."""
    store = factory.registry_client._store
    store.clear()
    store.max_id = 0


def _send(schema: ExternalSchema, order_id: int) -> bytes:
    """One order, and the id it was stamped with (after any re-check under way has answered)."""
    encoded = schema.encode(ORDERS, {"id": order_id, "item": f"I{order_id}"})
    codec = schema._part.codec
    assert codec is not None and codec.join_checks(30)
    assert encoded.schema_id is not None
    return encoded.schema_id


def test_a_producer_whose_id_the_registry_lost_registers_again(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    factory = mock_factory(**{"schema.id.recheck.sec": 30})
    orders = factory.avro(json.dumps(ORDER))
    first = _send(orders, 1)
    _lose_the_store(factory)
    refund = factory.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": -2, "label": "A2"})
    assert refund.schema_id == first  # the refunds' schema got the orders' old id
    clock.now += 10
    assert _send(orders, 2) == first  # within the interval the producer asks nothing
    clock.now += 30
    assert _send(orders, 3) == first  # the plan expired: sent with the id it had, and re-checked
    now = _send(orders, 4)
    assert now != first  # registered again, under the id the registry holds now
    stored = factory.registry_client.get_schema(int.from_bytes(now[1:], "big"))
    assert json.loads(stored.schema_str)["name"] == ORDER["name"]
    reader = factory.avro(json.dumps(ORDER))
    data = orders.encode(ORDERS, {"id": 5, "item": "I5"})
    assert reader.decode(ORDERS, data.data, data.schema_id) == {"id": 5, "item": "I5"}


def test_an_id_the_registry_still_holds_is_kept_with_one_request_per_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(monkeypatch)
    asked: list[str] = []
    real = _confluent.registered_id

    def counting(serializer: Any, subject: str, version: int | None, schema: Any) -> int:
        asked.append(subject)
        return real(serializer, subject, version, schema)

    monkeypatch.setattr(_confluent, "registered_id", counting)
    orders = mock_factory(**{"schema.id.recheck.sec": 30}).avro(json.dumps(ORDER))
    first = _send(orders, 1)
    for round_ in range(3):
        for n in range(20):
            assert _send(orders, n) == first
        clock.now += 31
        assert len(asked) == round_
    assert asked[-1] == "acme.shop.orders-value"


def test_no_answer_keeps_the_id_and_asks_again_later(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    down = True
    real = _confluent.registered_id

    def flaky(serializer: Any, subject: str, version: int | None, schema: Any) -> int:
        if down:
            raise TRANSPORT_ERRORS[0]("connection refused")
        return real(serializer, subject, version, schema)

    monkeypatch.setattr(_confluent, "registered_id", flaky)
    factory = mock_factory(**{"schema.id.recheck.sec": 30})
    orders = factory.avro(json.dumps(ORDER))
    first = _send(orders, 1)
    _lose_the_store(factory)
    factory.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 1, "label": "a"})
    clock.now += 31
    assert _send(orders, 2) == first
    assert _send(orders, 3) == first  # an outage is no answer: the producer goes on with its id
    down = False
    clock.now += 31
    _send(orders, 4)
    assert _send(orders, 5) != first  # the next interval's answer counts


def test_minus_one_never_rechecks_as_confluent_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    factory = mock_factory(**{"schema.id.recheck.sec": -1})
    orders = factory.avro(json.dumps(ORDER))
    first = _send(orders, 1)
    _lose_the_store(factory)
    clock.now += 10_000
    assert _send(orders, 2) == first
    assert _send(orders, 3) == first


@pytest.mark.parametrize("value", [0, -2, "soon"])
def test_the_interval_is_checked(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"schema\.id\.recheck\.sec"):
        mock_factory(**{"schema.id.recheck.sec": value})


def test_a_dropped_plan_stops_the_writer_the_schema_keeps() -> None:
    factory = mock_factory(**{"schema.id.recheck.sec": 30})
    orders = factory.avro(json.dumps(ORDER))
    first = _send(orders, 1)
    codec = orders._part.codec
    assert codec is not None
    assert _send(orders, 2) == first
    # the short way is in use where there is one (the extension's kept writer)
    assert (ORDERS in codec.writers) == codec.keeps_writers
    _lose_the_store(factory)
    factory.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 1, "label": "a"})  # takes id 1
    stamp = codec._stamps[ORDERS]
    # the re-check, answered now: the registry lost the id
    number = ids.confluent_int_id(stamp.schema_id)
    assert number is not None
    codec.recheck.check(stamp, number)
    assert _send(orders, 3) != first  # not the kept writer's id, though it has not expired
