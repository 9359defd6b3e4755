"""The Spark source, sink and validation job on Pulsars that speak TLS only (`tls_pulsar`) and
that want a client certificate (`mtls_pulsar`), given the cluster's `client.conf` as the option
`pulsar.client.conf` (or its keys as `pulsar.client.<key>`), which every connection of a query
uses: the planner's admin calls, each task's Pulsar client, the sink's declaration.

The native reader and sender speak `pulsar://` only so far: on `pulsar+ssl://`, `reader=auto`
reads on the Python path, and says so in the log."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

import pulsar
from contracts import unique
from secured_support import TlsPulsar
from spark_support import COMMAND, Produced, produce_orders, register_contract, register_v3_contract

from pulsar_external_schema.connections import ClientConf, connect

FORMAT = "pulsar-external"
NOTE = {"type": "record", "name": "Note", "fields": [{"name": "text", "type": "string"}]}

pytestmark = pytest.mark.spark


@pytest.fixture(params=["tls", "mtls"], scope="module")
def secured(request: pytest.FixtureRequest) -> TlsPulsar:
    return request.getfixturevalue(f"{request.param}_pulsar")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def client(secured: TlsPulsar) -> Iterator[Any]:
    made = connect(secured.client_conf, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield made
    made.close()


@pytest.fixture(scope="module")
def orders(secured: TlsPulsar, client: Any) -> Produced:
    """A 2-partition topic on the secured broker: 30 orders of v1, then 30 of v3 with its READ
    rule (every 10th order fails it)."""
    import httpx

    topic = f"persistent://public/default/{unique('tls-orders')}"
    conf = ClientConf.read(secured.client_conf)
    httpx.put(
        f"{secured.admin_url}/admin/v2/persistent/{topic.removeprefix('persistent://')}/partitions",
        content=b"2",
        headers={"Content-Type": "application/json", **conf.admin_headers()},
        verify=conf.admin_tls(),
    ).raise_for_status()
    produced = produce_orders(secured.services, client, topic, 1, 30, 1)
    register_v3_contract(secured.services, topic)
    more = produce_orders(secured.services, client, topic, 31, 30, 3)
    produced.valid.update(more.valid)
    produced.rule_failures |= more.rule_failures
    return produced


def options(secured: TlsPulsar, **extra: str) -> dict[str, str]:
    return {
        "service.url": secured.pulsar_url,
        "admin.url": secured.admin_url,
        "schema.registry.url": secured.registry_url,
        "pulsar.client.conf": secured.client_conf,
        **extra,
    }


def test_a_query_given_the_client_conf_reads_every_message(
    spark: Any, secured: TlsPulsar, orders: Produced
) -> None:
    rows = spark.read.format(FORMAT).options(**options(secured, topic=orders.topic)).load().collect()

    assert len(rows) == orders.total
    assert {r.value.id: r.value.asDict() for r in rows if r._valid} == orders.valid
    assert {int(r.key) for r in rows if r._rule == "checkName"} == orders.rule_failures


def test_the_client_conf_keys_as_options_and_the_urls_from_the_file(
    spark: Any, secured: TlsPulsar, orders: Produced
) -> None:
    """`pulsar.client.<key>` (Spark lowercases them) over a file; no `service.url`/`admin.url`."""
    conf = ClientConf.read(secured.client_conf)
    given = {
        "schema.registry.url": secured.registry_url,
        "topic": orders.topic,
        "pulsar.client.conf": secured.client_conf,
        "pulsar.client.tlsTrustCertsFilePath": str(conf.tls_trust_certs_file_path),
        "pulsar.client.tlsEnableHostnameVerification": "true",
    }

    rows = spark.read.format(FORMAT).options(**given).load().collect()

    assert len(rows) == orders.total


def test_a_query_without_the_ca_says_what_the_admin_api_answered(
    spark: Any, secured: TlsPulsar, orders: Produced
) -> None:
    given = {k: v for k, v in options(secured, topic=orders.topic).items() if k != "pulsar.client.conf"}

    with pytest.raises(Exception) as failed:
        spark.read.format(FORMAT).options(**given).load().collect()

    text = str(failed.value)
    assert f"cannot reach the Pulsar admin API at {secured.admin_url}" in text
    assert "CERTIFICATE_VERIFY_FAILED" in text


def test_a_misspelt_client_key_is_refused_on_the_driver_with_the_nearest_name(
    spark: Any, secured: TlsPulsar, orders: Produced
) -> None:
    given = options(secured, topic=orders.topic, **{"pulsar.client.tlsTrustCertFilePath": "/x"})

    with pytest.raises(Exception) as failed:
        spark.read.format(FORMAT).options(**given).load().collect()

    assert "did you mean 'tlsTrustCertsFilePath'" in str(failed.value)


def test_the_sink_sends_over_tls_and_declares_the_topic_external(
    spark: Any, secured: TlsPulsar, client: Any
) -> None:
    topic = f"persistent://public/default/{unique('tls-sink')}"
    register_contract(secured.services, topic, NOTE, [])
    df = spark.createDataFrame([({"text": f"note {i}"},) for i in range(20)], "value struct<text:string>")

    df.write.format(FORMAT).mode("append").options(
        **options(secured, topic=topic, **{"pulsar.admin.url": secured.admin_url})
    ).save()

    read = spark.read.format(FORMAT).options(**options(secured, topic=topic)).load()
    assert sorted(r.value.text for r in read.collect()) == sorted(f"note {i}" for i in range(20))
    import httpx

    conf = ClientConf.read(secured.client_conf)
    stored = httpx.get(
        f"{secured.admin_url}/admin/v2/schemas/{topic.removeprefix('persistent://')}/schema",
        verify=conf.admin_tls(),
    )
    assert stored.status_code == 200 and stored.json()["type"] == "EXTERNAL"


def test_the_validation_job_takes_the_client_conf(
    secured: TlsPulsar, orders: Produced, client: Any, tmp_path: Path
) -> None:
    """The console's `validate`, with only `--client-conf` for the cluster (its URLs too)."""
    import os

    valid, dlq = f"{orders.topic}-valid", f"{orders.topic}-dlq"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PULSAR_")},
        "SCHEMA_REGISTRY_URL": secured.registry_url,
    }
    done = subprocess.run(
        [
            str(COMMAND), "validate", "--master", "local[2]", "--client-conf", secured.client_conf,
            "--input", orders.topic, "--valid", valid, "--dead-letter-topic", dlq,
            "--checkpoint", str(tmp_path / "checkpoint"),
        ],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-3000:]
    assert f"done: {len(orders.valid)} valid, {len(orders.rule_failures)} dead-lettered" in done.stderr
    reader = client.create_reader(valid, pulsar.MessageId.earliest)
    seen = 0
    while reader.has_message_available():
        reader.read_next(10_000)
        seen += 1
    reader.close()
    assert seen == len(orders.valid)
