"""The Spark source and sink on a Pulsar that lets in only clients with a token (`secured`).

`pulsar.auth.token` goes to every connection a query makes: the planner's admin calls, each task's
Pulsar client on the Python path and the native reader's connection. Each is shown here by a
broker that refuses a client without it; a query without the token, or with a wrong one, fails
with an error that says what the broker answered, and the token is in no error."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services
from contracts import unique
from native_support import required_extension
from secured_support import SecuredPulsar
from spark_support import Produced, produce_orders, register_v3_contract, source_options

FORMAT = "pulsar-external"


def secured_services(secured: SecuredPulsar) -> Services:
    return Services(secured.pulsar_url, secured.admin_url, secured.registry_url, "script")


@pytest.fixture(scope="module")
def secured_client(secured: SecuredPulsar) -> Iterator[Any]:
    import pulsar

    client = pulsar.Client(
        secured.pulsar_url,
        authentication=pulsar.AuthenticationToken(secured.token),
        operation_timeout_seconds=30,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
    )
    yield client
    client.close()


@pytest.fixture(scope="module")
def secured_orders(secured: SecuredPulsar, secured_client: Any) -> Produced:
    """A 2-partition topic on the secured broker: 30 orders of v1, then 30 of v3 with its READ
    rule (every 10th order fails it)."""
    topic = f"persistent://public/default/{unique('tokens')}"
    request = urllib.request.Request(
        f"{secured.admin_url}/admin/v2/persistent/{topic.removeprefix('persistent://')}/partitions",
        data=b"2",
        method="PUT",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {secured.token}"},
    )
    urllib.request.urlopen(request, timeout=30).close()
    services = secured_services(secured)
    produced = produce_orders(services, secured_client, topic, 1, 30, 1)
    register_v3_contract(services, topic)
    more = produce_orders(services, secured_client, topic, 31, 30, 3)
    produced.valid.update(more.valid)
    produced.rule_failures |= more.rule_failures
    return produced


def options(secured: SecuredPulsar, **extra: str) -> dict[str, str]:
    return source_options(secured_services(secured), **extra)


@pytest.mark.usefixtures("reader_path")
def test_a_query_with_the_token_reads_every_message(
    spark: Any, secured: SecuredPulsar, secured_orders: Produced
) -> None:
    df = (
        spark.read.format(FORMAT)
        .options(**options(secured, topic=secured_orders.topic, **{"pulsar.auth.token": secured.token}))
        .load()
    )
    rows = df.collect()

    assert len(rows) == secured_orders.total
    assert {r.value.id: r.value.asDict() for r in rows if r._valid} == secured_orders.valid
    assert {int(r.key) for r in rows if r._rule == "checkName"} == secured_orders.rule_failures


@pytest.mark.parametrize("token", ["none", "wrong"])
def test_a_query_without_the_token_or_with_a_wrong_one_says_what_the_broker_answered(
    spark: Any, secured: SecuredPulsar, secured_orders: Produced, token: str
) -> None:
    given = {} if token == "none" else {"pulsar.auth.token": secured.wrong_token}

    with pytest.raises(Exception) as failed:
        spark.read.format(FORMAT).options(
            **options(secured, topic=secured_orders.topic, **given)
        ).load().collect()

    text = str(failed.value)
    assert "401" in text and secured.admin_url in text
    assert secured.wrong_token not in text and secured.token not in text


def test_the_native_reader_with_a_wrong_token_fails_at_once_with_the_brokers_answer(
    secured: SecuredPulsar, secured_orders: Produced
) -> None:
    """The planner's admin calls refuse a wrong token before any task runs; the native reader's
    own connection is shown refusing it too (with the right one it reads, above)."""
    extension = required_extension()
    client = extension.Client(secured.pulsar_url, auth_token=secured.wrong_token, operation_timeout_ms=10_000)
    with pytest.raises(Exception) as failed:
        extension._testing.drain(client, f"{secured_orders.topic}-partition-0")

    text = str(failed.value)
    assert "authentic" in text.lower()
    assert secured.wrong_token not in text


def test_the_sink_sends_with_the_token_and_declares_the_topic_external_with_it(
    spark: Any, secured: SecuredPulsar
) -> None:
    """`pulsar.auth.token` is the admin API's token too, where the sink declares its topic
    EXTERNAL (`pulsar.admin.url`)."""
    import httpx
    from spark_support import register_contract

    topic = f"persistent://public/default/{unique('tokens-sink')}"
    schema = {"type": "record", "name": "Note", "fields": [{"name": "text", "type": "string"}]}
    register_contract(secured_services(secured), topic, schema, [])
    df = spark.createDataFrame([({"text": f"note {i}"},) for i in range(20)], "value struct<text:string>")
    token = {"pulsar.auth.token": secured.token}

    df.write.format(FORMAT).mode("append").options(
        **options(secured, topic=topic, **token, **{"pulsar.admin.url": secured.admin_url})
    ).save()

    read = spark.read.format(FORMAT).options(**options(secured, topic=topic, **token)).load()
    assert sorted(r.value.text for r in read.collect()) == sorted(f"note {i}" for i in range(20))
    stored = httpx.get(
        f"{secured.admin_url}/admin/v2/schemas/{topic.removeprefix('persistent://')}/schema",
        headers={"Authorization": f"Bearer {secured.token}"},
    )
    assert stored.status_code == 200 and stored.json()["type"] == "EXTERNAL"
