"""Which source of a connection setting wins, in the console, `read_table`/`write_table` and the
Spark options: what is given closer to the call (a flag, an argument, an option) over a file named
there, over the environment, over a file the environment names; and one line where two sources
name different URLs, saying which was used and where it came from."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from pulsar_external_schema import connections
from pulsar_external_schema.cli.common import UsageError, connection
from pulsar_external_schema.cli.parsers import build_parser
from pulsar_external_schema.connections import ClientConf, Layer, layered

TLS = "pulsar+ssl://tls.example:6651"
PLAIN = "pulsar://127.0.0.1:6650"
ADMIN = "http://127.0.0.1:8080"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No variable of the shell running the tests, and every notice said again."""
    for name in ("PULSAR_SERVICE_URL", "PULSAR_ADMIN_URL", "PULSAR_AUTH_TOKEN", "PULSAR_CLIENT_CONF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(connections, "_ANNOUNCED", set())


def conf_file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def produce_args(*flags: str) -> argparse.Namespace:
    return build_parser().parse_args(["produce", "--topic", "t", *flags])


def test_a_client_conf_on_the_command_line_beats_the_environment_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tls = conf_file(tmp_path, "tls.conf", f"brokerServiceUrl={TLS}\n")
    monkeypatch.setenv("PULSAR_SERVICE_URL", PLAIN)
    args = produce_args("--client-conf", tls)

    conf = connection(args)

    assert (conf.service_url, args.service_url) == (TLS, TLS)
    assert capsys.readouterr().err == (
        f"pulsar-external-schema: using brokerServiceUrl from --client-conf {tls} "
        f"(PULSAR_SERVICE_URL in the environment says {PLAIN})\n"
    )


def test_a_flag_beats_the_file_and_the_environment_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL typed on the command line is what its user means: used, with nothing to tell."""
    tls = conf_file(tmp_path, "tls.conf", f"brokerServiceUrl={TLS}\n")
    monkeypatch.setenv("PULSAR_SERVICE_URL", PLAIN)
    args = produce_args("--client-conf", tls, "--service-url", "pulsar://flag:6650")

    assert connection(args).service_url == "pulsar://flag:6650"
    assert capsys.readouterr().err == ""


def test_the_environment_beats_the_file_the_environment_names_which_fills_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    named = conf_file(tmp_path, "env.conf", f"brokerServiceUrl={TLS}\ntlsTrustCertsFilePath={ca}\n")
    monkeypatch.setenv("PULSAR_CLIENT_CONF", named)
    monkeypatch.setenv("PULSAR_SERVICE_URL", PLAIN)

    conf = connection(produce_args())

    assert conf.service_url == PLAIN and conf.tls_trust_certs_file_path == str(ca)
    assert capsys.readouterr().err == (
        f"pulsar-external-schema: using PULSAR_SERVICE_URL in the environment (brokerServiceUrl from "
        f"PULSAR_CLIENT_CONF {named} says {TLS})\n"
    )


def test_the_file_the_environment_names_is_not_read_beside_one_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PULSAR_CLIENT_CONF", str(tmp_path / "missing.conf"))
    given = conf_file(tmp_path, "given.conf", f"brokerServiceUrl={TLS}\n")

    args = produce_args("--client-conf", given)

    assert connection(args).service_url == TLS
    assert args.client_conf == given
    assert capsys.readouterr().err == ""  # one source: nothing to say


def test_sources_that_agree_say_nothing_and_a_mistake_names_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    same = conf_file(tmp_path, "same.conf", f"brokerServiceUrl={PLAIN}\n")
    monkeypatch.setenv("PULSAR_SERVICE_URL", PLAIN)
    connection(produce_args("--client-conf", same))
    assert capsys.readouterr().err == ""

    wrong = conf_file(tmp_path, "wrong.conf", "brokerServiceUrI=pulsar://x:6650\n")
    monkeypatch.setenv("PULSAR_CLIENT_CONF", wrong)
    with pytest.raises(UsageError, match=f"^PULSAR_CLIENT_CONF: .*{wrong}.*did you mean 'brokerServiceUrl'"):
        connection(produce_args())


def test_a_token_follows_the_source_that_gives_the_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token in the environment is the credentials where no file on the command line names an
    auth plugin; a file's plugin and parameters beat it, and a flag's token beats them both."""
    token_file = tmp_path / "token"
    token_file.write_text("from-file-token\n")
    with_plugin = conf_file(
        tmp_path,
        "auth.conf",
        "brokerServiceUrl=pulsar://a:6650\nauthPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\n"
        f"authParams=file://{token_file}\n",
    )
    monkeypatch.setenv("PULSAR_AUTH_TOKEN", "from-env-token")

    from_env = produce_args()
    assert connection(from_env).token() == "from-env-token"
    assert from_env.auth_token == "from-env-token"

    from_conf = produce_args("--client-conf", with_plugin)
    assert connection(from_conf).token() == "from-file-token"
    assert from_conf.auth_token is None

    flag = produce_args("--client-conf", with_plugin, "--auth-token", "from-flag-token")
    assert connection(flag).token() == "from-flag-token"


def test_a_notice_is_said_once_a_process_and_never_shows_a_password() -> None:
    said: list[str] = []
    chosen = layered(
        Layer(ClientConf.from_options({"webServiceUrl": "https://user:secret@admin.example"}), "the options"),
        Layer(ClientConf.from_options({"webServiceUrl": ADMIN}), "the file x.conf"),
    )

    chosen.announce(say=said.append)
    chosen.announce(say=said.append)

    assert len(said) == 1 and "secret" not in said[0]
    assert said[0].startswith("using webServiceUrl from the options (webServiceUrl from the file x.conf says")


def test_read_table_arguments_beat_their_client_conf(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pulsar_external_schema.arrow import _parsed

    tls = conf_file(tmp_path, "tls.conf", f"brokerServiceUrl={TLS}\nwebServiceUrl={ADMIN}\n")
    with caplog.at_level(logging.WARNING, logger="pulsar_external_schema.connections"):
        options = _parsed(
            "read_table",
            {"topic": "t"},
            PLAIN,
            None,
            {"schema.registry.url": "http://r:8081"},
            tls,
            {},
            needs_admin=True,
        )

    assert (options.service_url, options.admin_url) == (PLAIN, ADMIN)
    assert caplog.messages == []  # an argument is used as given


def test_read_table_keywords_beat_the_file_the_config_names_and_the_log_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pulsar_external_schema.arrow import _parsed

    tls = conf_file(tmp_path, "tls.conf", f"brokerServiceUrl={TLS}\nwebServiceUrl={ADMIN}\n")
    config: dict[str, Any] = {"schema.registry.url": "http://r:8081", "pulsar.client.conf": tls}

    keywords = {"brokerServiceUrl": PLAIN}
    with caplog.at_level(logging.WARNING, logger="pulsar_external_schema.connections"):
        options = _parsed(
            "write_table", {"topic": "t"}, None, None, config, None, keywords, needs_admin=False
        )

    assert options.service_url == PLAIN
    assert caplog.messages == [
        f"using brokerServiceUrl from the keyword arguments of write_table (brokerServiceUrl from "
        f"config key 'pulsar.client.conf' {tls} says {TLS})"
    ]


def test_spark_options_beat_pulsar_client_keys_which_beat_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pulsar_external_schema.tasks.options import SourceOptions

    tls = conf_file(tmp_path, "tls.conf", f"brokerServiceUrl={TLS}\nwebServiceUrl={ADMIN}\n")
    base = {"topic": "t", "schema.registry.url": "http://r:8081", "pulsar.client.conf": tls}

    with caplog.at_level(logging.WARNING, logger="pulsar_external_schema.connections"):
        keyed = SourceOptions.parse({**base, "pulsar.client.brokerServiceUrl": "pulsar://keyed:6650"})
        option = SourceOptions.parse(
            {**base, "service.url": PLAIN, "pulsar.client.brokerServiceUrl": "pulsar://keyed:6650"}
        )

    assert keyed.service_url == "pulsar://keyed:6650"
    assert option.service_url == PLAIN and option.admin_url == ADMIN
    assert caplog.messages == [
        f"using option 'pulsar.client.brokerServiceUrl' (brokerServiceUrl from option 'pulsar.client.conf' "
        f"{tls} says {TLS})",
    ]  # and none of option 'service.url': used as given
    assert os.environ.get("PULSAR_SERVICE_URL") is None  # the environment is the console's only
