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
from pulsar_external_schema.tasks.options import SourceOptions

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


TOPIC = "/admin/v2/persistent/acme/shop/orders"
NAMESPACE = "/admin/v2/namespaces/acme/shop"


def test_a_subscription_is_created_at_the_first_message_once() -> None:
    asked: list[tuple[str, str, object]] = []
    path = f"{TOPIC}/subscription/dead%20letters"
    answers = {("PUT", path.replace("%20", " ")): httpx.Response(204)}
    assert admin(answers, asked).create_subscription("persistent://acme/shop/orders", "dead letters") is True
    assert asked == [("PUT", path.replace("%20", " "), {"ledgerId": -1, "entryId": -1, "partitionIndex": -1})]
    answers = {("PUT", path.replace("%20", " ")): httpx.Response(409, json={"reason": "exists"})}
    assert admin(answers, []).create_subscription("persistent://acme/shop/orders", "dead letters") is False


def test_a_refused_subscription_names_the_topic_the_subscription_and_the_answer() -> None:
    answers = {("PUT", f"{TOPIC}/subscription/dead-letters"): httpx.Response(403, json={"reason": "no"})}
    with pytest.raises(PulsarAdminError) as raised:
        admin(answers, []).create_subscription("persistent://acme/shop/orders", "dead-letters")
    assert "create the subscription 'dead-letters' on persistent://acme/shop/orders: HTTP 403 no" in str(
        raised.value
    )


def sequenced(answers: list[httpx.Response], asked: list[str]) -> PulsarAdmin:
    """An admin API that gives `answers` in turn, one a call."""

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request.method)
        return answers[len(asked) - 1]

    return PulsarAdmin("http://admin:8080", transport=httpx.MockTransport(handle))


def test_a_call_the_broker_answers_busy_while_the_topic_moves_is_made_again_within_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # measured under topic unloads: the broker answered the dead-letter subscription's PUT with
    # 500 "ManagedLedger ... has already been closed", and the validation job stopped there
    waits: list[float] = []
    monkeypatch.setattr("pulsar_external_schema.admin.time.sleep", waits.append)
    closed = httpx.Response(
        500, json={"reason": "ManagedLedger persistent://acme/shop/orders has already been closed"}
    )
    asked: list[str] = []
    busy = sequenced([closed, httpx.Response(503, json={"reason": "unloading"}), httpx.Response(204)], asked)
    assert busy.create_subscription("persistent://acme/shop/orders", "dead-letters") is True
    assert asked == ["PUT", "PUT", "PUT"]
    assert waits == [0.25, 0.5]
    # a broker that stays busy: the last answer, after a bounded number of calls and waits
    waits.clear()
    asked = []
    always = sequenced([closed] * 10, asked)
    with pytest.raises(
        PulsarAdminError,
        match="could not create the subscription 'dead-letters' on persistent://acme/shop/orders: "
        "HTTP 500 ManagedLedger",
    ):
        always.create_subscription("persistent://acme/shop/orders", "dead-letters")
    assert len(asked) == 6
    assert sum(waits) < 10
    # measured too: the cursor's PUT answered 412 "unable to persist readPosition" while the topic
    # was unloaded, and the call made again found the subscription made
    waits.clear()
    asked = []
    unpersisted = httpx.Response(
        412, json={"reason": "Unable to find position for position specified: unable to persist readPosition"}
    )
    made = sequenced([unpersisted, httpx.Response(409, json={"reason": "exists"})], asked)
    assert made.create_subscription("persistent://acme/shop/orders", "dead-letters") is False
    assert asked == ["PUT", "PUT"]
    assert waits == [0.25]
    # what is refused for good is not asked again, and a POST (the EXTERNAL declaration, which a
    # broker before 4.1 answers 500) is made once
    asked = []
    with pytest.raises(PulsarAdminError):
        sequenced([httpx.Response(403, json={"reason": "no"})], asked).create_subscription(
            "persistent://acme/shop/orders", "dead-letters"
        )
    assert asked == ["PUT"]
    asked = []
    with pytest.raises(PulsarAdminError):
        sequenced(
            [httpx.Response(404), httpx.Response(500, json={"reason": "x"}), httpx.Response(404)], asked
        ).declare_external("acme/shop/orders")
    assert asked == ["GET", "POST", "GET"]


@pytest.mark.parametrize(
    ("subscriptions", "retention", "retention_path", "kept"),
    [
        (httpx.Response(200, json=["audit"]), None, None, True),
        (httpx.Response(200, json=[]), {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}, "topic", False),
        (httpx.Response(200, json=[]), {"retentionTimeInMinutes": 0, "retentionSizeInMB": -1}, "topic", True),
        (httpx.Response(200, json=[]), {"retentionTimeInMinutes": 60, "retentionSizeInMB": 0}, "topic", True),
        # a topic not created yet: its namespace's retention, which answers nothing when unset
        (httpx.Response(404, json={"reason": "not found"}), b"", "namespace", False),
        (httpx.Response(404, json={"reason": "not found"}), {"retentionTimeInMinutes": 5}, "namespace", True),
    ],
)
def test_whether_the_broker_keeps_a_topics_messages_unread(
    subscriptions: httpx.Response, retention: Any, retention_path: str | None, kept: bool
) -> None:
    answers = {("GET", f"{TOPIC}/subscriptions"): subscriptions}
    if retention_path is not None:
        path = f"{TOPIC}/retention" if retention_path == "topic" else f"{NAMESPACE}/retention"
        answer = (
            httpx.Response(200, content=retention)
            if retention == b""
            else httpx.Response(200, json=retention)
        )
        answers[("GET", path)] = answer
    assert admin(answers, []).kept_unread("persistent://acme/shop/orders") is kept


def validation_job(**given: Any) -> Any:
    pytest.importorskip("pyspark", reason="the validation job needs the spark extra")
    from pulsar_external_schema.spark import ValidationJob

    return ValidationJob(
        input="persistent://acme/shop/orders",
        valid="persistent://acme/shop/valid",
        dead_letter_topic="persistent://acme/shop/dlq",
        checkpoint="/tmp/x",
        options={
            "service.url": "pulsar://b:6650",
            "admin.url": "http://a",
            "schema.registry.url": "http://r",
        },
        **given,
    )


def prepared(
    job: Any, answers: dict[tuple[str, str], httpx.Response], monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, str, object]]:
    """What the job asked the admin API before it started."""
    from pulsar_external_schema.reading.planning import Planner

    asked: list[tuple[str, str, object]] = []
    monkeypatch.setattr(Planner, "admin", lambda self: admin(answers, asked))
    job._prepare_targets()
    return asked


VALID, DLQ = TOPIC.replace("orders", "valid"), TOPIC.replace("orders", "dlq")
KEPT_AND_DEDUPLICATED = {
    ("PUT", f"{DLQ}/subscription/dead-letters"): httpx.Response(204),
    ("GET", f"{VALID}/subscriptions"): httpx.Response(200, json=["audit"]),
    ("GET", f"{VALID}/deduplicationEnabled"): httpx.Response(200, json=True),
    ("GET", f"{DLQ}/deduplicationEnabled"): httpx.Response(200, json=True),
}


def test_the_validation_job_keeps_its_dead_letters_with_a_subscription_it_makes_first(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from pulsar_external_schema.deadletter import DEAD_LETTER_SUBSCRIPTION

    with caplog.at_level(logging.WARNING):
        asked = prepared(validation_job(), KEPT_AND_DEDUPLICATED, monkeypatch)
    assert asked[0][:2] == ("PUT", f"{DLQ}/subscription/{DEAD_LETTER_SUBSCRIPTION}")
    assert caplog.records == []
    asked = prepared(
        validation_job(dead_letter_subscription="audit"),
        {**KEPT_AND_DEDUPLICATED, ("PUT", f"{DLQ}/subscription/audit"): httpx.Response(409)},
        monkeypatch,
    )
    assert asked[0][:2] == ("PUT", f"{DLQ}/subscription/audit")  # there already: fine
    asked = prepared(validation_job(dead_letter_subscription=None), KEPT_AND_DEDUPLICATED, monkeypatch)
    assert "PUT" not in [method for method, _, _ in asked]


def test_a_dead_letter_subscription_refused_fails_the_job_saying_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refused = {**KEPT_AND_DEDUPLICATED, ("PUT", f"{DLQ}/subscription/dead-letters"): httpx.Response(403)}
    with pytest.raises(PulsarAdminError) as raised:
        prepared(validation_job(), refused, monkeypatch)
    said = str(raised.value)
    assert "could not create the subscription 'dead-letters' on persistent://acme/shop/dlq: HTTP 403" in said
    assert "--dead-letter-subscription ''" in said and "retention" in said


def test_the_validation_job_says_which_target_loses_or_doubles_messages_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    answers = {
        **KEPT_AND_DEDUPLICATED,
        ("GET", f"{VALID}/subscriptions"): httpx.Response(200, json=[]),
        ("GET", f"{VALID}/retention"): httpx.Response(200, json={"retentionTimeInMinutes": 0}),
        ("GET", f"{DLQ}/deduplicationEnabled"): httpx.Response(200, json=False),
    }
    with caplog.at_level(logging.WARNING):
        prepared(validation_job(), answers, monkeypatch)
    [unread, twice] = [r.getMessage() for r in caplog.records]
    assert unread.startswith("validate: persistent://acme/shop/valid has no subscription and no retention")
    assert "pulsar-admin namespaces set-retention acme/shop --time 7d --size -1" in unread
    assert twice.startswith("validate: persistent://acme/shop/dlq is not deduplicated")
    assert "pulsar-admin namespaces set-deduplication acme/shop --enable" in twice


def test_a_retention_the_api_will_not_tell_still_leaves_the_deduplication_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    answers = {
        **KEPT_AND_DEDUPLICATED,
        ("GET", f"{VALID}/subscriptions"): httpx.Response(200, json=[]),
        ("GET", f"{VALID}/retention"): httpx.Response(405, json={"reason": "topic policies are disabled"}),
        ("GET", f"{DLQ}/deduplicationEnabled"): httpx.Response(200, json=False),
    }
    with caplog.at_level(logging.WARNING):
        prepared(validation_job(), answers, monkeypatch)
    [unknown, twice] = [r.getMessage() for r in caplog.records]
    assert unknown.startswith(
        "validate: whether persistent://acme/shop/valid keeps what is sent there is not known"
    )
    assert twice.startswith("validate: persistent://acme/shop/dlq is not deduplicated")
