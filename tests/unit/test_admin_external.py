"""`PulsarAdmin.declare_external` against a fake admin API (httpx's MockTransport): what it asks,
and what each answer of the broker becomes. The real broker's answers are in
tests/integration/test_external_declaration.py."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from pulsar_external_schema import admin as admin_module
from pulsar_external_schema.admin import PulsarAdmin, PulsarAdminError
from pulsar_external_schema.config import ExternalSchemaConfig, with_broker_token
from pulsar_external_schema.spark.options import SourceOptions

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


@pytest.mark.parametrize(
    ("values", "given_as"),
    [
        (with_broker_token({}, "sekret", "--auth-token"), "--auth-token"),  # a console tool's
        (
            SourceOptions.parse(
                {
                    "service.url": "pulsar://x:6650",
                    "schema.registry.url": "http://r",
                    "pulsar.auth.token": "sekret",
                }
            ).config,
            "pulsar.auth.token",
        ),
        ({"pulsar.admin.token": "sekret"}, "pulsar.admin.token"),
        (with_broker_token({"pulsar.admin.token": "sekret"}, "other", "--auth-token"), "pulsar.admin.token"),
    ],
    ids=["--auth-token", "spark pulsar.auth.token", "pulsar.admin.token", "pulsar.admin.token wins"],
)
def test_a_refused_token_is_named_as_the_option_the_user_gave_it_with(
    monkeypatch: pytest.MonkeyPatch, values: dict[str, Any], given_as: str
) -> None:
    """The broker's token borrowed as the admin API's (`config.with_broker_token`) keeps the name
    of the option it came with, for the 401 of the EXTERNAL declaration; the token is in no error."""
    real = admin_module.PulsarAdmin

    def refusing(url: str, **kwargs: Any) -> PulsarAdmin:
        refuse = httpx.MockTransport(
            lambda _: httpx.Response(401, json={"reason": "Authentication required"})
        )
        return real(url, transport=refuse, **kwargs)

    monkeypatch.setattr(admin_module, "PulsarAdmin", refusing)
    config = ExternalSchemaConfig.from_dict(
        {"schema.registry.url": "http://registry", "pulsar.admin.url": "http://admin:8080", **values}
    )
    with pytest.raises(PulsarAdminError) as raised:
        admin_module.declare_external(config, "persistent://acme/shop/orders")
    message = str(raised.value)
    assert f"HTTP 401 Authentication required (it refused the token given with '{given_as}')" in message
    assert "sekret" not in message and "sekret" not in repr(config)


DEDUPLICATION = "/admin/v2/persistent/acme/shop/orders/deduplicationEnabled"
NAMESPACE_DEDUPLICATION = "/admin/v2/namespaces/acme/shop/deduplication"


@pytest.mark.parametrize(
    ("topic_answer", "namespace_answer", "expected"),
    [
        (httpx.Response(200, json=True), None, True),
        (httpx.Response(200, json=False), None, False),
        # a topic not created yet: its namespace's policy, unset meaning off
        (httpx.Response(404, json={"reason": "not found"}), httpx.Response(200, content=b"true"), True),
        (httpx.Response(404, json={"reason": "not found"}), httpx.Response(200, content=b""), False),
    ],
)
def test_whether_the_broker_deduplicates_a_topic(
    topic_answer: httpx.Response, namespace_answer: httpx.Response | None, expected: bool
) -> None:
    asked: list[tuple[str, str, object]] = []
    answers = {("GET", DEDUPLICATION): topic_answer}
    if namespace_answer is not None:
        answers[("GET", NAMESPACE_DEDUPLICATION)] = namespace_answer
    assert admin(answers, asked).deduplicated("persistent://acme/shop/orders") is expected


def test_the_validation_job_says_which_target_is_not_deduplicated_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("pyspark", reason="the validation job needs the spark extra")
    from pulsar_external_schema.spark import ValidationJob
    from pulsar_external_schema.spark.planning import Planner

    answers = {
        ("GET", DEDUPLICATION.replace("orders", "valid")): httpx.Response(200, json=True),
        ("GET", DEDUPLICATION.replace("orders", "dlq")): httpx.Response(200, json=False),
    }
    monkeypatch.setattr(Planner, "admin", lambda self: admin(answers, []))
    job = ValidationJob(
        input="persistent://acme/shop/orders",
        valid="persistent://acme/shop/valid",
        dead_letter_topic="persistent://acme/shop/dlq",
        checkpoint="/tmp/x",
        options={
            "service.url": "pulsar://b:6650",
            "admin.url": "http://a",
            "schema.registry.url": "http://r",
        },
    )
    with caplog.at_level(logging.WARNING):
        job._say_if_at_least_once()
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith("validate: persistent://acme/shop/dlq is not deduplicated")
    assert "pulsar-admin namespaces set-deduplication acme/shop --enable" in said
