"""The package on Pulsars that speak TLS only (`tls_pulsar`), that want a client certificate
(`mtls_pulsar`) or a token of an OAuth2 issuer (`oauth2_pulsar`), configured as Pulsar users
configure their clients: with the `client.conf` `scripts/services` writes for them, through
`connect`, the factory config's `pulsar.client.*` keys and the console tools' `--client-conf`. A
wrong CA, a missing certificate, a refused credential or a typo is one line that names the file,
key or issuer; no key, secret or token is shown."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pulsar
import pytest
from cli_support import cli, errors, records
from conftest import Services
from contracts import unique
from native_support import required_extension
from secured_support import TlsPulsar

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer, subscribe
from pulsar_external_schema.connections import ClientConf, connect
from pulsar_external_schema.errors import PulsarAdminError

SCHEMA = '{"type":"record","name":"Note","fields":[{"name":"text","type":"string"}]}'

pytestmark = pytest.mark.integration


@pytest.fixture(params=["tls", "mtls", "oauth2"])
def secured(request: pytest.FixtureRequest) -> TlsPulsar:
    """Each test on each: TLS, TLS with a client certificate, TLS with OAuth2."""
    return request.getfixturevalue(f"{request.param}_pulsar")  # type: ignore[no-any-return]


@pytest.fixture
def client(secured: TlsPulsar) -> Iterator[Any]:
    made = connect(secured.client_conf, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield made
    made.close()


def new_topic() -> str:
    return f"persistent://public/default/{unique('tls')}"


def admin_get(secured: TlsPulsar, path: str) -> httpx.Response:
    conf = ClientConf.read(secured.client_conf)
    return httpx.get(f"{secured.admin_url}{path}", verify=conf.admin_tls(), headers=conf.admin_headers())


@pytest.mark.usefixtures("external_type")  # it declares the topic over https: Pulsar 4.1+
def test_connect_builds_a_client_from_the_client_conf_that_sends_and_receives(
    secured: TlsPulsar, client: Any
) -> None:
    topic = new_topic()
    factory = SchemaRegistrySchemaFactory(
        {
            "schema.registry.url": secured.registry_url,
            "pulsar.admin.url": secured.admin_url,
            "pulsar.client.conf": secured.client_conf,
        }
    )
    schema = factory.avro(SCHEMA)

    producer = create_producer(client, topic, schema)  # declares the topic EXTERNAL over https
    consumer = subscribe(client, topic, "tls", schema, initial_position=pulsar.InitialPosition.Earliest)
    for i in range(3):
        producer.send({"text": f"note {i}"})

    received = [consumer.receive(10_000).value() for _ in range(3)]
    assert received == [{"text": f"note {i}"} for i in range(3)]
    declared = admin_get(secured, f"/admin/v2/schemas/{topic.removeprefix('persistent://')}/schema")
    assert declared.status_code == 200 and declared.json()["type"] == "EXTERNAL"
    factory.close()


def test_the_admin_declaration_without_the_ca_says_the_certificate_is_not_trusted(
    secured: TlsPulsar, client: Any
) -> None:
    """The factory's admin calls use `pulsar.client.*`; without the CA, the system's do not
    trust the broker's certificate."""
    factory = SchemaRegistrySchemaFactory(
        {"schema.registry.url": secured.registry_url, "pulsar.admin.url": secured.admin_url}
    )

    with pytest.raises(PulsarAdminError) as raised:
        create_producer(client, new_topic(), factory.avro(SCHEMA))

    message = str(raised.value)
    assert f"cannot reach the Pulsar admin API at {secured.admin_url}" in message
    assert "CERTIFICATE_VERIFY_FAILED" in message and "not one of the system's CAs" in message
    factory.close()


def test_a_client_that_does_not_trust_the_ca_cannot_connect(secured: TlsPulsar, tmp_path: Path) -> None:
    """The certifi bundle as the trust file: a real CA file, not the broker's."""
    import certifi

    conf = ClientConf.read(secured.client_conf).with_values(
        tls_trust_certs_file_path=certifi.where(), operation_timeout_ms=5_000
    )

    assert_refused(conf)


def assert_refused(conf: ClientConf) -> None:
    """A client of `conf` cannot create a producer (pulsar-client: a closed connection is a
    ConnectError, or a Timeout)."""
    made = conf.pulsar_client(logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises((pulsar.ConnectError, pulsar.Timeout)):
            made.create_producer(new_topic())
    finally:
        made.close()


def test_a_broker_of_mutual_tls_refuses_a_client_without_a_certificate(mtls_pulsar: TlsPulsar) -> None:
    conf = ClientConf.read(mtls_pulsar.client_conf)
    without = ClientConf(
        service_url=conf.service_url,
        tls_trust_certs_file_path=conf.tls_trust_certs_file_path,
        operation_timeout_ms=5_000,
    )

    assert_refused(without)
    # the admin API too (Pulsar 3.0's Jetty says so with TLS 1.3's CERTIFICATE_REQUIRED)
    with pytest.raises(httpx.TransportError, match=r"BAD_CERTIFICATE|CERTIFICATE_REQUIRED"):
        httpx.get(f"{mtls_pulsar.admin_url}/admin/v2/clusters", verify=without.admin_tls())


# -- the console tools ------------------------------------------------------------------------


@pytest.mark.usefixtures("external_type")  # produce declares the topic: Pulsar 4.1+
def test_produce_and_consume_take_the_client_conf_by_flag_or_environment(secured: TlsPulsar) -> None:
    topic = new_topic()
    lines = "".join(json.dumps({"text": f"note {i}"}) + "\n" for i in range(3))

    produced = cli(
        secured.services, "produce", "--topic", topic, "--value-schema", SCHEMA,
        "--client-conf", secured.client_conf, "-p", f"pulsar.admin.url={secured.admin_url}", stdin=lines,
    )  # fmt: skip
    consumed = cli(
        secured.services, "consume", "--topic", topic, "--from-beginning", "--max-messages", "3",
        "--timeout-ms", "10000", client_conf=secured.client_conf,
    )  # fmt: skip

    assert produced.returncode == 0, produced.stderr
    assert consumed.returncode == 0, consumed.stderr
    assert records(consumed) == [{"text": f"note {i}"} for i in range(3)]
    declared = admin_get(secured, f"/admin/v2/schemas/{topic.removeprefix('persistent://')}/schema")
    assert declared.json()["type"] == "EXTERNAL"


def test_the_client_conf_gives_the_urls_when_no_flag_does(secured: TlsPulsar, tmp_path: Path) -> None:
    topic = new_topic()
    empty = secured.services.__class__("", "", secured.registry_url, "script")

    produced = cli(
        empty, "produce", "--topic", topic, "--value-schema", SCHEMA, "--client-conf", secured.client_conf,
        stdin='{"text": "a"}\n',
    )  # fmt: skip

    assert produced.returncode == 0, produced.stderr


def test_a_client_conf_named_on_the_command_line_beats_the_shells_broker_and_says_so(
    services: Services, tls_pulsar: TlsPulsar
) -> None:
    """The quick start's shell exports the plaintext broker (`scripts/services env`); a command
    given `--client-conf` of the TLS cluster writes there, and one line says which URL it used
    over which: the file named on the command line is what its user meant."""
    topic = new_topic()

    produced = cli(
        services, "produce", "--topic", topic, "--value-schema", SCHEMA,
        "--client-conf", tls_pulsar.client_conf, stdin='{"text": "to the TLS cluster"}\n',
    )  # fmt: skip
    on_tls = cli(
        tls_pulsar.services, "consume", "--topic", topic, "--from-beginning", "--max-messages", "1",
        "--timeout-ms", "10000", "--client-conf", tls_pulsar.client_conf,
    )  # fmt: skip

    assert produced.returncode == 0, produced.stderr
    assert errors(produced) == [
        f"pulsar-external-schema: using brokerServiceUrl from --client-conf {tls_pulsar.client_conf} "
        f"(PULSAR_SERVICE_URL in the environment says {services.pulsar_url})"
    ]
    assert records(on_tls) == [{"text": "to the TLS cluster"}]
    assert on_tls.returncode == 0, on_tls.stderr
    stats = httpx.get(f"{services.admin_url}/admin/v2/{topic.replace('://', '/')}/stats", timeout=10)
    assert stats.status_code == 404  # nothing went to the plaintext broker


@pytest.fixture
def broken_confs(secured: TlsPulsar, tmp_path: Path) -> Iterator[dict[str, Path]]:
    """client.conf files a user could get wrong, each beside a copy of the real one."""
    original = Path(secured.client_conf).read_text()
    tls = secured.tls_dir
    made = {
        "missing CA file": original.replace(f"{tls}/ca.crt", f"{tmp_path}/absent-ca.crt"),
        "typo": original + "tlsTrustCertFilePath=/x\n",
        "wrong CA": original.replace(f"{tls}/ca.crt", _certifi()),
    }
    paths = {}
    for name, text in made.items():
        paths[name] = tmp_path / f"{name.replace(' ', '-')}.conf"
        paths[name].write_text(text)
    yield paths
    shutil.rmtree(tmp_path, ignore_errors=True)


def _certifi() -> str:
    import certifi

    return str(certifi.where())


@pytest.mark.parametrize(
    ("case", "code", "expected"),
    [
        ("missing CA file", 2,
         "'tlsTrustCertsFilePath' in {conf}: cannot read {tmp}/absent-ca.crt: No such file"),
        ("typo", 2,
         "unknown Pulsar client key 'tlsTrustCertFilePath' in {conf}; did you mean 'tlsTrustCertsFilePath'?"),
        ("wrong CA", 1, "cannot connect to the broker at {url} within 3 s"),
    ],
)  # fmt: skip
def test_a_wrong_client_conf_is_one_line_that_names_the_file_or_the_key(
    secured: TlsPulsar, broken_confs: dict[str, Path], case: str, code: int, expected: str
) -> None:
    conf = broken_confs[case]

    result = cli(
        secured.services, "produce", "--topic", new_topic(), "--value-schema", SCHEMA,
        "--client-conf", str(conf), "--connect-timeout", "3", stdin='{"text": "a"}\n',
    )  # fmt: skip

    assert result.returncode == code, result.stderr
    [line] = errors(result)
    assert expected.format(conf=conf, tmp=conf.parent, url=secured.pulsar_url) in line
    if case == "wrong CA":
        assert "tlsTrustCertsFilePath" in line
    assert "Traceback" not in result.stderr and "BEGIN" not in result.stderr


def test_consume_without_a_client_certificate_on_mutual_tls_says_what_to_check(
    mtls_pulsar: TlsPulsar, tmp_path: Path
) -> None:
    conf = tmp_path / "no-certificate.conf"
    conf.write_text(
        "\n".join(
            line
            for line in Path(mtls_pulsar.client_conf).read_text().splitlines()
            if not line.startswith(("authPlugin", "authParams"))
        )
    )

    result = cli(
        mtls_pulsar.services, "consume", "--topic", new_topic(), "--max-messages", "1",
        "--client-conf", str(conf), "--connect-timeout", "3",
    )  # fmt: skip

    assert result.returncode == 1
    [line] = errors(result)
    assert f"cannot connect to the broker at {mtls_pulsar.pulsar_url}" in line
    assert "a client certificate where the broker wants one" in line
    assert "Traceback" not in result.stderr


# -- OAuth2 ------------------------------------------------------------------------------------


@pytest.fixture
def oauth2_client(oauth2_pulsar: TlsPulsar) -> Iterator[Any]:
    made = connect(oauth2_pulsar.client_conf, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield made
    made.close()


def oauth2_conf(oauth2_pulsar: TlsPulsar, tmp_path: Path, secret: str) -> Path:
    """The instance's client.conf with a credentials file of another secret."""
    original = ClientConf.read(oauth2_pulsar.client_conf)
    credentials = tmp_path / "credentials.json"
    oauth2 = original.oauth2()
    credentials.write_text(
        json.dumps({"type": "client_credentials", "client_id": oauth2.client_id, "client_secret": secret})
    )
    params = {
        "type": "client_credentials",
        "issuerUrl": oauth2.issuer_url,
        "privateKey": credentials.as_uri(),
        "audience": oauth2.audience,
    }
    conf = tmp_path / "wrong-secret.conf"
    conf.write_text(
        "\n".join(
            f"authParams={json.dumps(params)}" if line.startswith("authParams=") else line
            for line in Path(oauth2_pulsar.client_conf).read_text().splitlines()
        )
    )
    return conf


def test_a_refused_oauth2_credential_is_one_line_with_the_issuers_answer(
    oauth2_pulsar: TlsPulsar, tmp_path: Path
) -> None:
    """The declaration's admin call fetches a token itself: the issuer's answer, not the secret."""
    conf = oauth2_conf(oauth2_pulsar, tmp_path, "not-the-secret")

    result = cli(
        oauth2_pulsar.services, "produce", "--topic", new_topic(), "--value-schema", SCHEMA,
        "--client-conf", str(conf), "-p", f"pulsar.admin.url={oauth2_pulsar.admin_url}",
        "--connect-timeout", "5", stdin='{"text": "a"}\n',
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    [line] = errors(result)
    issuer = ClientConf.read(oauth2_pulsar.client_conf).oauth2().issuer_url
    assert f"the OAuth2 issuer {issuer} refused client 'pes-client': HTTP 401 invalid_client" in line
    assert "not-the-secret" not in result.stderr and "Traceback" not in result.stderr


def test_oauth2_tokens_are_fetched_again_before_they_expire(
    oauth2_pulsar: TlsPulsar, oauth2_client: Any
) -> None:
    """Tokens live OAUTH2_TTL seconds here: the admin API and the native extension get a new one
    when a fifth of its life is left, and the broker takes it; pulsar-client refreshes its own."""
    import time

    from secured_support import OAUTH2_TTL

    from pulsar_external_schema.admin import PulsarAdmin

    conf = ClientConf.read(oauth2_pulsar.client_conf)
    admin = PulsarAdmin(oauth2_pulsar.admin_url, client=conf)
    topic = new_topic()
    producer = oauth2_client.create_producer(topic)
    first = conf.token()
    assert conf.token() == first  # kept while it lives
    producer.send(b"before")

    time.sleep(OAUTH2_TTL * 0.8 + 1)

    assert conf.token() != first
    assert admin.deduplicated(topic) is False  # the admin API takes the new token
    producer.send(b"after")  # pulsar-client's own token, refreshed
    admin.close()


def test_the_native_reader_reads_with_an_oauth2_token(oauth2_pulsar: TlsPulsar, oauth2_client: Any) -> None:
    extension = required_extension()

    topic = new_topic()
    producer = oauth2_client.create_producer(topic)
    for i in range(5):
        producer.send(b"%d" % i)
    conf = ClientConf.read(oauth2_pulsar.client_conf)

    native = extension.Client(oauth2_pulsar.pulsar_url, **conf.native_options())

    assert extension._testing.drain(native, topic) == 5


def test_a_native_producer_reconnects_with_a_fresh_token_after_its_first_expired(
    oauth2_pulsar: TlsPulsar, oauth2_client: Any
) -> None:
    """The extension asks for its token at each connection: after the token it connected with
    expired, a topic unload makes it connect again, with a new one (a token given once would be
    refused: `JWT expired`)."""
    import time

    import pyarrow as pa
    from secured_support import OAUTH2_TTL

    conf = ClientConf.read(oauth2_pulsar.client_conf)
    topic = new_topic()
    producer = required_extension().Client(oauth2_pulsar.pulsar_url, **conf.native_options()).producer(topic)

    def batch(first: int) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({"data": [b"%d" % i for i in range(first, first + 10)]})

    producer.send(batch(0), 0)
    producer.flush()
    time.sleep(OAUTH2_TTL + 2)  # the token it connected with has expired
    httpx.put(
        f"{oauth2_pulsar.admin_url}/admin/v2/{topic.replace('://', '/')}/unload",
        verify=conf.admin_tls(),
        headers=conf.admin_headers(),  # a new token: the last one expired
    ).raise_for_status()
    producer.send(batch(10), 10)
    producer.flush()
    producer.close()

    reader = oauth2_client.create_reader(topic, pulsar.MessageId.earliest)
    received = []
    while reader.has_message_available():
        received.append(reader.read_next(10_000).data())
    reader.close()
    assert received == [b"%d" % i for i in range(20)]


# -- Arrow tables and the export/import console tools -------------------------------------------


def table_config(secured: TlsPulsar) -> dict[str, Any]:
    return {"schema.registry.url": secured.registry_url}


@pytest.mark.parametrize("path", ["python", "native"])
def test_tables_write_and_read_with_only_the_client_conf(secured: TlsPulsar, path: str) -> None:
    """`write_table` and `read_table` given the cluster's client.conf and nothing else of it:
    the broker's and the admin API's URLs, the CA, the client certificate or the OAuth2 issuer
    from the file, on each writer and reader (the native ones over rustls)."""
    import pyarrow as pa

    from pulsar_external_schema.arrow import read_table, write_table

    if path == "native":
        required_extension()
    topic = new_topic()
    factory = SchemaRegistrySchemaFactory(table_config(secured))
    values = [{"text": f"note {i}"} for i in range(40)]
    data = pa.table({"key": [str(i) for i in range(40)], "value": values})

    conf = secured.client_conf
    written = write_table(topic, data, schema=factory.avro(SCHEMA), writer=path, client_conf=conf)
    table = read_table(topic, config=table_config(secured), reader=path, client_conf=conf)

    assert (written.sent, written.dead_lettered, written.refused) == (40, 0, [])
    rows = table.to_pylist()
    assert [(r["key"], r["value"]) for r in rows] == list(zip(data["key"].to_pylist(), values, strict=True))
    assert all(r["_valid"] for r in rows) and {r["topic"] for r in rows} == {topic}
    factory.close()


def test_a_table_read_with_another_ca_is_one_error_that_names_the_admin_api(
    secured: TlsPulsar, broken_confs: dict[str, Path]
) -> None:
    """The read plans its ranges over the admin API first: a CA that did not sign the broker's
    certificate stops it there, in the package's error, before any broker connection."""
    import pyarrow as pa

    from pulsar_external_schema.arrow import read_table, write_table

    topic = new_topic()
    factory = SchemaRegistrySchemaFactory(table_config(secured))
    data = pa.table({"value": [{"text": "a"}]})
    write_table(topic, data, schema=factory.avro(SCHEMA), client_conf=secured.client_conf)

    with pytest.raises(PulsarAdminError) as raised:
        read_table(topic, config=table_config(secured), client_conf=broken_confs["wrong CA"])
    factory.close()

    message = str(raised.value)
    assert f"cannot reach the Pulsar admin API at {secured.admin_url}" in message
    assert "CERTIFICATE_VERIFY_FAILED" in message and "BEGIN" not in message


def test_export_then_import_with_the_client_conf_alone(secured: TlsPulsar, tmp_path: Path) -> None:
    """The console's export and import on a secured cluster with PULSAR_CLIENT_CONF and the
    registry's URL only: a topic exported to Parquet, imported into another, exported again."""
    import pyarrow.parquet as pq

    topic, copy = new_topic(), new_topic()
    urls_from_the_file = secured.services.__class__("", "", secured.registry_url, "script")
    lines = "".join(json.dumps({"text": f"note {i}"}) + "\n" for i in range(5))
    for target, given in ((topic, lines), (copy, "")):  # the copy's subject: the same schema
        produced = cli(
            urls_from_the_file, "produce", "--topic", target, "--value-schema", SCHEMA, stdin=given,
            client_conf=secured.client_conf,
        )  # fmt: skip
        assert produced.returncode == 0, produced.stderr

    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    steps = [
        ("export", "--topic", topic, "--to", str(first), "--quiet"),
        ("import", "--topic", copy, "--from", str(first), "--quiet"),
        ("export", "--topic", copy, "--to", str(second), "--quiet"),
    ]
    for step in steps:
        result = cli(urls_from_the_file, *step, client_conf=secured.client_conf)
        assert result.returncode == 0, (step, result.stderr)

    copied = pq.read_table(second).to_pylist()
    assert [r["value"] for r in copied] == [{"text": f"note {i}"} for i in range(5)]
