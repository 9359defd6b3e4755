"""A registry restart, on the real registry: with `scripts/services up --durable` (PostgreSQL) the
ids survive and nothing decodes differently; with the in-memory store the ids are handed out again
to other subjects, and a message carrying a reused id is refused (`ForeignSchemaIdError`), not
read as another subject's record."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import parse_service_urls, service_pid, services_script
from schemas import SHOP_ORDER as ORDER
from schemas import SHOP_REFUND as REFUND

from pulsar_external_schema import ForeignSchemaIdError, SchemaRegistrySchemaFactory

pytestmark = pytest.mark.slow

ORDERS = "persistent://acme/restart/orders"
REFUNDS = "persistent://acme/restart/refunds"


def _restart_registry(instance: str, *port: str) -> str:
    """Kill the registry (as a crash would) and start it again (on `port`, if given); its URL."""
    pid = service_pid(instance, "registry")
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text():
        time.sleep(0.1)
    on_port = ["--registry-port", *port] if port else []
    return parse_service_urls(services_script("up", "--instance", instance, "--only", "registry", *on_port))[
        "SCHEMA_REGISTRY_URL"
    ]


@pytest.fixture
def instance(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A registry of its own: (instance, URL); `durable` as the test's parameter."""
    name = f"restart-{uuid.uuid4().hex[:6]}"
    durable = ["--durable"] if request.param else []
    url = parse_service_urls(services_script("up", "--instance", name, "--only", "registry", *durable))
    try:
        yield name, url["SCHEMA_REGISTRY_URL"]
    finally:
        services_script("down", "--instance", name)


def _order_then_restart_then_refund(name: str, url: str) -> tuple[bytes, bytes, bytes | None, str]:
    """An order written before the restart; a refund registered after it (by another subject)."""
    before = SchemaRegistrySchemaFactory({"schema.registry.url": url})
    order = before.avro(json.dumps(ORDER)).encode(ORDERS, {"id": -2, "item": "A2"})
    before.close()
    after_url = _restart_registry(name)
    after = SchemaRegistrySchemaFactory({"schema.registry.url": after_url})
    refund_id = after.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 1, "label": "x"}).schema_id
    after.close()
    assert order.schema_id is not None
    return order.data, order.schema_id, refund_id, after_url


@pytest.mark.parametrize("instance", [True], indirect=True, ids=["durable"])
def test_a_durable_registry_keeps_its_ids_across_a_restart(instance: tuple[str, str]) -> None:
    name, url = instance
    data, order_id, refund_id, after_url = _order_then_restart_then_refund(name, url)
    assert after_url == url  # the restarted registry keeps its port
    assert refund_id != order_id  # no id is handed out twice
    reader = SchemaRegistrySchemaFactory({"schema.registry.url": after_url})
    assert reader.avro(json.dumps(ORDER)).decode(ORDERS, data, order_id) == {"id": -2, "item": "A2"}
    reader.close()


@pytest.mark.parametrize("instance", [False], indirect=True, ids=["in-memory"])
def test_an_id_reused_after_an_in_memory_restart_is_refused_not_misread(instance: tuple[str, str]) -> None:
    name, url = instance
    data, order_id, refund_id, after_url = _order_then_restart_then_refund(name, url)
    assert refund_id == order_id  # the store was lost: the refunds' schema got the orders' old id
    reader = SchemaRegistrySchemaFactory({"schema.registry.url": after_url})
    with pytest.raises(ForeignSchemaIdError) as raised:  # without the check: {'code': -2, 'label': 'A2'}
        reader.avro(json.dumps(ORDER)).decode(ORDERS, data, order_id)
    assert "registered under acme.restart.refunds-value" in str(raised.value)
    off = SchemaRegistrySchemaFactory({"schema.registry.url": after_url, "schema.id.subject.check": False})
    assert off.avro(json.dumps(ORDER)).decode(ORDERS, data, order_id) == {"code": -2, "label": "A2"}
    reader.close()
    off.close()


@pytest.mark.parametrize("instance", [False], indirect=True, ids=["in-memory"])
def test_a_running_producer_takes_the_id_the_restarted_registry_holds(instance: tuple[str, str]) -> None:
    # The probe: after the restart, a running producer went on stamping its old id, which
    # the registry had handed to another subject. `schema.id.recheck.sec` bounds how long.
    name, url = instance
    producer = SchemaRegistrySchemaFactory({"schema.registry.url": url, "schema.id.recheck.sec": 1})
    orders = producer.avro(json.dumps(ORDER))
    first = orders.encode(ORDERS, {"id": 1, "item": "A1"}).schema_id
    port = str(urllib.parse.urlsplit(url).port)
    assert _restart_registry(name, port) == url  # the same URL: the producer knows no better
    other = SchemaRegistrySchemaFactory({"schema.registry.url": url})
    assert other.avro(json.dumps(REFUND)).encode(REFUNDS, {"code": 1, "label": "x"}).schema_id == first
    other.close()
    stamped = [first]
    for n in range(600):  # at most a minute: the re-check runs a second after the last one
        sent = orders.encode(ORDERS, {"id": n, "item": f"A{n}"})
        stamped.append(sent.schema_id)
        if sent.schema_id != first:
            break
        time.sleep(0.1)
    assert stamped[-1] != first, "the producer never left the id the registry gave to the refunds"
    reader = SchemaRegistrySchemaFactory({"schema.registry.url": url})
    assert reader.avro(json.dumps(ORDER)).decode(ORDERS, sent.data, sent.schema_id) == {
        "id": n,
        "item": f"A{n}",
    }
    with pytest.raises(ForeignSchemaIdError):  # what it stamped meanwhile is refused, not misread
        reader.avro(json.dumps(ORDER)).decode(ORDERS, sent.data, first)
    reader.close()
    producer.close()
