"""`PulsarAdmin.declare_external` against a fake admin API (httpx's MockTransport): what it asks,
and what each answer of the broker becomes. The real broker's answers are in
tests/integration/test_external_declaration.py."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from pulsar_external_schema.admin import PulsarAdmin, PulsarAdminError

SCHEMA_PATH = "/admin/v2/schemas/acme/shop/orders/schema"


def admin(
    answers: dict[tuple[str, str], httpx.Response], asked: list[tuple[str, str, object]]
) -> PulsarAdmin:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        asked.append((request.method, request.url.path, body))
        return answers[(request.method, request.url.path)]

    return PulsarAdmin("http://admin:8080", transport=httpx.MockTransport(handle))


def test_a_topic_without_a_schema_is_declared_external_for_all_its_partitions() -> None:
    asked: list[tuple[str, str, object]] = []
    answers = {
        ("GET", SCHEMA_PATH): httpx.Response(404, json={"reason": "Schema not found"}),
        ("POST", SCHEMA_PATH): httpx.Response(200, json={"version": {"version": 0}}),
    }
    assert admin(answers, asked).declare_external("persistent://acme/shop/orders-partition-3") is True
    assert asked[-1] == ("POST", SCHEMA_PATH, {"type": "EXTERNAL", "schema": "", "properties": {}})


def test_a_topic_already_external_is_left_as_it_is() -> None:
    asked: list[tuple[str, str, object]] = []
    answers = {("GET", SCHEMA_PATH): httpx.Response(200, json={"type": "EXTERNAL", "data": ""})}
    assert admin(answers, asked).declare_external("acme/shop/orders") is True
    assert [method for method, _, _ in asked] == ["GET"]


def test_a_topic_with_a_native_schema_is_an_error_that_says_what_to_do() -> None:
    answers = {
        ("GET", SCHEMA_PATH): httpx.Response(200, json={"type": "AVRO", "data": "{}"}),
        ("POST", SCHEMA_PATH): httpx.Response(
            409, text="<html><title>Error 409 Incompatible schema: exists schema type AVRO</title></html>"
        ),
    }
    with pytest.raises(PulsarAdminError) as raised:
        admin(answers, []).declare_external("persistent://acme/shop/orders")
    message = str(raised.value)
    assert "persistent://acme/shop/orders already has a schema of type AVRO" in message
    assert "Incompatible schema: exists schema type AVRO" in message and "<html>" not in message


def test_a_broker_before_4_1_is_a_warning_and_no_declaration(caplog: pytest.LogCaptureFixture) -> None:
    reason = "No enum constant org.apache.pulsar.common.schema.SchemaType.EXTERNAL"
    answers = {
        ("GET", SCHEMA_PATH): httpx.Response(404, json={"reason": "Schema not found"}),
        ("POST", SCHEMA_PATH): httpx.Response(500, json={"reason": reason}),
    }
    with caplog.at_level(logging.WARNING, logger="pulsar_external_schema.admin"):
        assert admin(answers, []).declare_external("acme/shop/orders") is False
    assert "has no EXTERNAL schema type (Pulsar before 4.1)" in caplog.text


def test_an_unreachable_admin_api_is_an_error_naming_it() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused")

    broken = PulsarAdmin("http://admin:8080", transport=httpx.MockTransport(refuse))
    with pytest.raises(PulsarAdminError, match="cannot reach the Pulsar admin API at http://admin:8080"):
        broken.declare_external("acme/shop/orders")
