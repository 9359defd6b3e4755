"""A registry restart, on the real registry: with `scripts/services up --durable` (PostgreSQL) the
ids survive and nothing decodes differently; with the in-memory store the ids are handed out again
to other subjects, and a message carrying a reused id is refused (`ForeignSchemaIdError`), not
read as another subject's record."""

from __future__ import annotations

import json
import os
import signal
import time
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


def _restart_registry(instance: str) -> str:
    """Kill the registry (as a crash would) and start it again; its URL afterwards."""
    pid = service_pid(instance, "registry")
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text():
        time.sleep(0.1)
    return parse_service_urls(services_script("up", "--instance", instance, "--only", "registry"))[
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
