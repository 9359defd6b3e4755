"""The console tools' command line without services: Confluent's and pulsar-client's habits,
usage errors (exit 2, one line), counts, the terminal prompt and shell completion."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pulsar_external_schema.cli import build_parser, main
from pulsar_external_schema.cli.common import UsageError, plural
from pulsar_external_schema.cli.console import _open_input
from pulsar_external_schema.cli.habits import settle


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_confluent_console_properties_become_their_flags() -> None:
    args = parsed(
        "produce", "orders",
        "-p", 'value.schema={"type": "string"}', "-p", "parse.key=true", "-p", "key.separator=|",
        "-p", "value.schema.id=7", "-p", "basic.auth.user.info=u:p", "--message-property", "a=b",
    )  # fmt: skip
    settle(args, producing=True)

    assert args.topic == "orders"
    assert args.value_schema == '{"type": "string"}' and args.parse_key and args.key_separator == "|"
    assert args.property == [("use.schema.id", "7"), ("basic.auth.user.info", "u:p")]
    assert args.message_property == [("a", "b")]


def test_pulsar_client_habits_on_consume() -> None:
    args = parsed("consume", "persistent://t/ns/orders", "-s", "sub", "-n", "5", "-p", "print.key=true")
    settle(args, producing=False)
    assert (args.topic, args.subscription, args.max_messages, args.print_key) == (
        "persistent://t/ns/orders",
        "sub",
        5,
        True,
    )


@pytest.mark.parametrize(
    ("argv", "producing", "expected"),
    [
        (("consume", "t", "--group", "g"), False, "a Kafka consumer group is a Pulsar subscription"),
        (("produce",), True, "give the topic"),
        (("produce", "a", "--topic", "b"), True, "two topics"),
        (("produce", "t", "-p", "value.schema={}", "--value-schema", "{}"), True, "the same setting twice"),
        (("produce", "t", "-p", "parse.key=yes"), True, "takes true or false"),
        (("produce", "t", "-p", "print.key=true"), True, "a setting of the console consumer"),
        (("produce", "t", "--key", "k", "--parse-key"), True, "give one"),
        (("produce", "t", "--message-property", "novalue"), True, "--message-property takes NAME=VALUE"),
        (("produce", "t", "-p", "value.shema={}"), True, "unknown property; did you mean 'value.schema'"),
        (("consume", "t", "-p", "print.kye=true"), False, "unknown property; did you mean 'print.key'"),
    ],
)
def test_habits_that_do_not_fit_are_usage_errors(
    argv: tuple[str, ...], producing: bool, expected: str
) -> None:
    with pytest.raises(UsageError, match=expected) as raised:
        settle(parsed(*argv), producing=producing)
    assert raised.value.exit_code == 2


def test_a_config_key_or_its_near_miss_is_the_configs_to_answer() -> None:
    args = parsed("produce", "t", "-p", "auto.register.schema=true", "-p", "use.schema.id=3")
    settle(args, producing=True)  # the config says "did you mean 'auto.register.schemas'"
    assert args.property == [("auto.register.schema", "true"), ("use.schema.id", "3")]


def test_a_usage_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["consume", "orders", "--group", "g", "--registry-url", "http://127.0.0.1:9"])
    [line] = capsys.readouterr().err.splitlines()
    assert code == 2 and line.startswith("pulsar-external-schema: consume: --group: ")


def test_counts_are_plural_only_when_they_are() -> None:
    assert [plural(n, "record") for n in (0, 1, 2)] == ["0 records", "1 record", "2 records"]


def test_a_terminal_is_told_what_produce_waits_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    terminal: Any = Terminal(io.BytesIO(b'{"f1": "a"}\n'))
    monkeypatch.setattr(sys, "stdin", terminal)
    assert _open_input("-").read() == b'{"f1": "a"}\n'
    assert "Ctrl-D to finish" in capsys.readouterr().err

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))  # a pipe: no prompt
    _open_input("-")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_completion_script_knows_the_commands_and_options(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert all(word in script for word in ("produce", "consume", "describe", "--value-schema", "--print-key"))


@pytest.mark.parametrize(
    "command",
    [
        "produce",
        "consume",
        "describe",
        "register",
        "get",
        "check",
        "config",
        "subjects",
        "delete",
        "validate",
    ],
)
def test_every_command_has_help_with_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    shown = capsys.readouterr().out

    assert exited.value.code == 0
    assert f"usage: pulsar-external-schema {command}" in shown
    assert "--registry-url" in shown and "SCHEMA_REGISTRY_URL" in shown
    assert "example" in shown


COMMAND = Path(sys.executable).parent / "pulsar-external-schema"


def offline_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command, with service URLs where nothing listens."""
    env = {
        **os.environ,
        "PULSAR_SERVICE_URL": "pulsar://127.0.0.1:9",
        "PULSAR_ADMIN_URL": "http://127.0.0.1:9",
        "SCHEMA_REGISTRY_URL": "http://127.0.0.1:9",
    }
    return subprocess.run(
        [str(COMMAND), *args], input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_usage_errors_need_no_service() -> None:
    """The broker and registry URLs point where nothing listens: none of this may reach them."""
    top = offline_cli("--help")
    assert all(name in top.stdout for name in ("produce", "consume", "check", "validate"))
    no_topic = offline_cli("produce")
    assert no_topic.returncode == 2 and "--topic" in no_topic.stderr
    both = offline_cli("produce", "--topic", "t", "--value-schema", "{}", "--value-schema-file", "f")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    rules_only = offline_cli("produce", "--topic", "t", "--value-rule-set", "{}", stdin="")
    assert rules_only.returncode == 2 and "registered with --value-schema" in rules_only.stderr
    no_file = offline_cli("produce", "--topic", "t", "--value-schema-file", "/nonexistent/x.avsc")
    assert no_file.returncode == 2
    assert no_file.stderr.strip() == (
        "pulsar-external-schema: produce: --value-schema-file: cannot read /nonexistent/x.avsc: "
        "No such file or directory"
    )


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The last line argparse prints for a command line it refuses (exit 2)."""
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (("consume", "t", "--from-begining"), "; did you mean --from-beginning?"),
        (("produce", "t", "--value-shema", "{}"), "; did you mean --value-schema?"),
        (
            ("consume", "t", "--from-begining", "--qiet"),
            "; did you mean --from-beginning for --from-begining, ",
        ),
        (("consme", "t"), "; did you mean consume?"),
        (("get", "--subjekt", "s"), "; did you mean --subject?"),
    ],
)
def test_a_mistyped_flag_or_command_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], suggestion: str
) -> None:
    assert suggestion in usage_error(capsys, *argv)


def test_a_flag_nothing_resembles_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert usage_error(capsys, "consume", "t", "--zzzz").endswith("unrecognized arguments: --zzzz")


@pytest.mark.parametrize(
    "argv",
    [
        ("consume", "t", "--timeout-ms", "-5"),
        ("consume", "t", "--timeout-ms", "0"),
        ("consume", "t", "--max-messages", "0"),
        ("consume", "t", "--progress", "-1"),
        ("consume", "t", "--progress", "nan"),
        ("consume", "t", "--connect-timeout", "0"),
        ("get", "--id", "-1"),
        (
            "validate",
            "--input",
            "t",
            "--valid",
            "v",
            "--dlq",
            "d",
            "--checkpoint",
            "c",
            "--max-entries-per-partition",
            "0",
        ),
    ],
)
def test_a_negative_or_empty_count_or_duration_is_refused(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    line = usage_error(capsys, *argv)
    assert "or more, not" in line or "above 0, not" in line


@pytest.mark.parametrize(
    ("argv", "v1"),
    [
        (("produce", "persistent://a/b/c/d"), True),
        (("consume", "--topic", "a/b/c/d"), True),
        (("describe", "--topic", "a/b"), False),
        (("get", "--topic", "persistent://t//x"), False),
        (("consume", "t", "--schema-topic", "http://x/y"), False),
        (("validate", "--input", "a/b", "--valid", "v", "--dlq", "d", "--checkpoint", "c"), False),
    ],
)
def test_a_malformed_topic_name_is_refused_before_anything_connects(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], v1: bool
) -> None:
    line = usage_error(capsys, *argv)
    assert "is not a Pulsar topic name (expected persistent://tenant/namespace/topic" in line
    assert ("is Pulsar's V1 form" in line) is v1


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://spark:15002", "it must start with sc://"),
        ("sc://", "no host"),
        ("sc://spark:port", "Port could not be cast"),
        ("sc://spark:15002 --master", "Port could not be cast"),
    ],
)
def test_a_malformed_spark_connect_url_is_refused_before_anything_connects(
    capsys: pytest.CaptureFixture[str], url: str, reason: str
) -> None:
    argv = ("validate", "--input", "t", "--valid", "v", "--dlq", "d", "--checkpoint", "c", "--remote", url)
    line = usage_error(capsys, *argv)
    assert f"{url!r} is not a Spark Connect URL (sc://HOST:PORT): {reason}" in line


def test_master_and_remote_are_one_choice(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("validate", "--input", "t", "--valid", "v", "--dlq", "d", "--checkpoint", "c")
    line = usage_error(capsys, *argv, "--master", "local[2]", "--remote", "sc://spark:15002")
    assert "not allowed with argument" in line
