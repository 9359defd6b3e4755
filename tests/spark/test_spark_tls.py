"""The Spark source, sink and validation job on Pulsars that speak TLS only (`tls_pulsar`), that
want a client certificate (`mtls_pulsar`) or an OAuth2 issuer's token (`oauth2_pulsar`), given
the cluster's `client.conf` as the option `pulsar.client.conf` (or its keys as
`pulsar.client.<key>`), which every connection of a query uses: the planner's admin calls, each
task's Pulsar client or native connection, the sink's declaration. Reads and writes run on both
paths (`reader_path`): the native reader and sender speak TLS with rustls, and read what the
Python path reads, row for row."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

import pulsar
from contracts import unique
from native_support import required_extension
from secured_support import TlsPulsar
from spark_support import (
    COMMAND,
    Produced,
    Spy,
    assert_same,
    produce_orders,
    register_contract,
    register_v3_contract,
)

from pulsar_external_schema.connections import ClientConf, connect

FORMAT = "pulsar-external"
NOTE = {"type": "record", "name": "Note", "fields": [{"name": "text", "type": "string"}]}

pytestmark = pytest.mark.spark


@pytest.fixture(params=["tls", "mtls", "oauth2"], scope="module")
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
    from spark_support import READER

    return {
        "service.url": secured.pulsar_url,
        "admin.url": secured.admin_url,
        "schema.registry.url": secured.registry_url,
        "pulsar.client.conf": secured.client_conf,
        "reader": READER["path"],
        "writer": READER["path"],
        **extra,
    }


@pytest.mark.usefixtures("reader_path")
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


@pytest.mark.usefixtures("reader_path")
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
        headers=conf.admin_headers(),
    )
    assert stored.status_code == 200 and stored.json()["type"] == "EXTERNAL"


# The job hands the one client.conf to the same connections on every cluster (its admin calls,
# the reader's and the sender's); each cluster's own handshake (the trust file, the client
# certificate, the issuer's token) is the query's and the sink's tests' above, on every cluster.
# So the job runs on the one whose client.conf carries the most: TLS and an OAuth2 issuer.
@pytest.mark.parametrize("secured", ["oauth2"], indirect=True)
def test_the_validation_job_takes_the_client_conf(
    secured: TlsPulsar, orders: Produced, client: Any, tmp_path: Path
) -> None:
    """The console's `validate`, with only `--client-conf` for the cluster (its URLs too), on the
    native reader and sender."""
    validation_job_takes_the_client_conf(secured, orders, client, tmp_path, "auto")


@pytest.mark.parametrize("secured", ["tls"], indirect=True)
def test_the_validation_job_takes_the_client_conf_on_the_python_path(
    secured: TlsPulsar, orders: Produced, client: Any, tmp_path: Path
) -> None:
    """The same job on pulsar-client's reader and producer: the job hands them the client.conf as
    it hands it to the native ones (pulsar-client's own mutual TLS and OAuth2 are read and written
    with on each cluster in this module, without a job: one cluster is enough here)."""
    validation_job_takes_the_client_conf(secured, orders, client, tmp_path, "python")


def validation_job_takes_the_client_conf(
    secured: TlsPulsar, orders: Produced, client: Any, tmp_path: Path, path: str
) -> None:
    import os

    valid, dlq = f"{orders.topic}-valid-{path}", f"{orders.topic}-dlq-{path}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PULSAR_")},
        "SCHEMA_REGISTRY_URL": secured.registry_url,
    }
    done = subprocess.run(
        [
            str(COMMAND), "validate", "--master", "local[2]", "--client-conf", secured.client_conf,
            "--input", orders.topic, "--valid", valid, "--dead-letter-topic", dlq,
            "--checkpoint", str(tmp_path / "checkpoint"), "-p", f"reader={path}", "-p", f"writer={path}",
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


# -- the native reader and sender over TLS -----------------------------------------------------


def native_and_python(secured: TlsPulsar, topic: str, partition_topic: str) -> tuple[Any, Any]:
    """One partition read whole by the native reader and by the Python path, as tables."""
    import pyarrow as pa

    from pulsar_external_schema.reading import native, rows
    from pulsar_external_schema.reading.decoders import arrow_value_type
    from pulsar_external_schema.reading.planning import Planner, TopicPartitionRange
    from pulsar_external_schema.tasks.columns import read_schema
    from pulsar_external_schema.tasks.offsets import EARLIEST
    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.tasks.schemas import resolve_reader_schema

    source = SourceOptions.parse(options(secured, topic=topic))
    reader = resolve_reader_schema(source, topic)
    value_type, _ = arrow_value_type(reader, source)
    assert native.why_not(source, reader, value_type) is None  # TLS reads natively
    admin = Planner(source).admin()
    part = TopicPartitionRange(partition_topic, EARLIEST, admin.last_message(partition_topic))
    admin.close()
    schema = read_schema(value_type, source.include_data)

    def table(batches: Iterator[Any]) -> Any:
        return pa.Table.from_batches(list(batches), schema=schema).combine_chunks()

    return (
        table(native.read_partition(source, reader, value_type, part)),
        table(rows.read_partition(source, reader, value_type, part)),
    )


def test_the_native_reader_reads_over_tls_what_the_python_path_reads(
    secured: TlsPulsar, orders: Produced, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    total = 0
    for index in range(2):
        native_table, python_table = native_and_python(
            secured, orders.topic, f"{orders.topic}-partition-{index}"
        )
        assert_same(native_table, python_table)
        total += python_table.num_rows

    assert total == orders.total
    assert spy.native_rows == orders.total  # every row decoded natively, none left to Python


def native_client(secured: TlsPulsar, **changes: Any) -> Any:
    extension = required_extension()
    conf = ClientConf.read(secured.client_conf)
    given = {**conf.native_options(), "operation_timeout_ms": 10_000, **changes}
    return extension.Client(secured.pulsar_url, **given)


def test_the_native_reader_refuses_a_broker_whose_ca_it_does_not_trust_at_once(
    secured: TlsPulsar, orders: Produced
) -> None:
    """certifi's CAs, not the broker's: one try (a retry cannot mend it), the trust file named."""
    import time

    import certifi

    client = native_client(secured, tls_trust_certs_file_path=certifi.where())
    drain = required_extension()._testing.drain
    started = time.monotonic()
    with pytest.raises(Exception) as failed:
        drain(client, f"{orders.topic}-partition-0")

    assert time.monotonic() - started < 5  # a bound on the wait: one try, not retries for 10 s
    text = str(failed.value)
    assert "the TLS handshake with 127.0.0.1 failed" in text and "UnknownIssuer" in text
    assert "not signed by a CA of tlsTrustCertsFilePath" in text


def test_the_native_reader_without_a_client_certificate_on_mutual_tls_says_so(mtls_pulsar: TlsPulsar) -> None:
    topic = f"persistent://public/default/{unique('mtls-native')}"
    native = native_client(mtls_pulsar, tls_certificate_file_path=None, tls_key_file_path=None)
    drain = required_extension()._testing.drain

    with pytest.raises(Exception) as failed:
        drain(native, topic)

    text = str(failed.value)
    assert "the broker wants a client certificate of its CA" in text, text
    assert "BEGIN" not in text


def test_the_native_extension_names_a_trust_file_that_does_not_read(
    secured: TlsPulsar, tmp_path: Path
) -> None:
    with pytest.raises(
        Exception, match=f"tlsTrustCertsFilePath: cannot read certificates from {tmp_path}/absent"
    ):
        native_client(secured, tls_trust_certs_file_path=str(tmp_path / "absent"))


def test_the_native_sender_sends_over_tls_as_pulsar_client_does(secured: TlsPulsar, client: Any) -> None:
    """A task's `data` rows sent by the native extension over TLS (a client certificate on the
    mutual one), each once, keyed as given."""
    import pyarrow as pa

    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.writing.rows import TaskWriter

    topic = f"persistent://public/default/{unique('tls-native-send')}"
    count = 1_500
    rows = pa.RecordBatch.from_pydict(
        {
            "key": [str(i) for i in range(count)],
            "data": [b"%d" % i for i in range(count)],
            "properties": pa.array([[]] * count, pa.map_(pa.string(), pa.string())),
        }
    )
    task = TaskWriter(SourceOptions.parse(options(secured, topic=topic, writer="native")), 0, 0)
    task.write(rows)

    assert task.finish().sent == count
    assert next(iter(task.native.values()), None) is not None  # the extension sent them
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    received = []
    while reader.has_message_available():
        message = reader.read_next(10_000)
        received.append((message.partition_key(), message.data()))
    reader.close()
    assert received == [(str(i), b"%d" % i) for i in range(count)]
