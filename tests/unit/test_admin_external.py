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
from pulsar_external_schema.admin import PulsarAdmin, PulsarAdminError, UnsupportedBrokerError
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


NO_EXTERNAL = "No enum constant org.apache.pulsar.common.schema.SchemaType.EXTERNAL"  # 4.0.7's words


@pytest.mark.parametrize(
    ("version_answer", "runs"),
    [
        (httpx.Response(200, text="4.0.7"), "runs Pulsar 4.0.7"),
        (httpx.Response(200, text="3.3.9"), "runs Pulsar 3.3.9"),
        # a proxy in front that does not pass the call: the broker's own words say it
        (httpx.Response(404, text="Not Found"), "has no EXTERNAL schema type"),
    ],
)
def test_a_broker_before_4_1_refuses_the_declaration_in_one_line_naming_its_version(
    version_answer: httpx.Response, runs: str
) -> None:
    answers = {
        ("GET", SCHEMA_PATH): httpx.Response(404, json={"reason": "Schema not found"}),
        ("POST", SCHEMA_PATH): httpx.Response(
            500, json={"reason": f"\n --- error ---\nMessage: {NO_EXTERNAL}"}
        ),
        ("GET", "/admin/v2/brokers/version"): version_answer,
    }
    with pytest.raises(UnsupportedBrokerError) as raised:
        admin(answers, []).declare_external("acme/shop/orders")
    assert str(raised.value) == (
        f"cannot declare persistent://acme/shop/orders EXTERNAL: the broker at http://admin:8080 {runs}, "
        "and the EXTERNAL schema type (PIP-420) needs Pulsar 4.1 or newer; leave out 'pulsar.admin.url' "
        "to go on without the declaration"
    )
    assert isinstance(raised.value, PulsarAdminError)
    assert raised.value.broker_version == (runs.split()[-1] if "Pulsar" in runs else None)


@pytest.mark.parametrize("version", ["4.1.0", "4.2.4", "5.0.1-SNAPSHOT"])
@pytest.mark.parametrize("reason", ["Metadata store timed out", f"Metadata store timed out ({NO_EXTERNAL})"])
def test_a_4_1_broker_refusing_the_declaration_is_not_called_too_old(version: str, reason: str) -> None:
    answers = {
        ("GET", SCHEMA_PATH): httpx.Response(404, json={"reason": "Schema not found"}),
        ("POST", SCHEMA_PATH): httpx.Response(500, json={"reason": reason}),
        ("GET", "/admin/v2/brokers/version"): httpx.Response(200, text=version),
    }
    with pytest.raises(PulsarAdminError) as raised:
        admin(answers, []).declare_external("acme/shop/orders")
    assert not isinstance(raised.value, UnsupportedBrokerError)
    assert f"HTTP 500 {reason}" in str(raised.value)


@pytest.mark.parametrize(
    ("version", "refused"), [("4.0.7", True), ("3.0.7", True), ("4.1.0", False), (None, False)]
)
def test_the_driver_asks_the_broker_once_before_any_declaration(version: str | None, refused: bool) -> None:
    """Spark's writers and the validation job (`require_external_type`): a broker that says it is
    older than 4.1 is refused; one that does not say its version passes (its declarations say it)."""
    answer = httpx.Response(200, text=version) if version else httpx.Response(401, text="Unauthorized")
    asked: list[tuple[str, str, object]] = []
    if refused:
        with pytest.raises(
            UnsupportedBrokerError, match=f"cannot declare topics EXTERNAL: .* runs Pulsar {version}"
        ):
            admin({("GET", "/admin/v2/brokers/version"): answer}, asked).require_external_type()
    else:
        admin({("GET", "/admin/v2/brokers/version"): answer}, asked).require_external_type()
    assert [(method, path) for method, path, _ in asked] == [("GET", "/admin/v2/brokers/version")]


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
