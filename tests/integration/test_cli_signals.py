"""The console tools end on SIGINT (Ctrl-C), SIGTERM (a container stop, systemd) and a closed
stdout (`| head`) with one line or none and the conventional status, never a traceback; `consume`
acknowledges exactly what it printed before it exits. Real processes, real signals, the real
broker and registry."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from cli_support import COMMAND, cli, interruptible
from conftest import Services

pytestmark = pytest.mark.integration

SCHEMA = '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'
NEVER = "persistent://public/default/never-written"


def environment(services: Services, registry_url: str | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "PULSAR_ADMIN_URL": services.admin_url,
        "SCHEMA_REGISTRY_URL": registry_url or services.registry_url,
    }


def start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """The tool in a process of its own, with Python's default handling of SIGINT (a shell's
    background job would start with SIGINT ignored: `interruptible`)."""
    return subprocess.Popen(
        [str(COMMAND), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=interruptible,
    )


def lines_then_signal(process: subprocess.Popen[str], count: int, signum: int) -> tuple[list[str], str]:
    """Reads `count` lines of stdout, sends `signum`, and returns every line printed and stderr."""
    assert process.stdout is not None and process.stderr is not None
    printed = [process.stdout.readline() for _ in range(count)]
    time.sleep(0.5)  # the tool is back waiting for the next message
    process.send_signal(signum)
    rest, stderr = process.communicate(timeout=60)
    return [line for line in printed + rest.splitlines(keepends=True) if line.strip()], stderr


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_consume_on_a_subscription_acknowledges_what_it_printed_then_exits(
    services: Services, topic: str, signum: int, status: int
) -> None:
    produced = cli(
        services, "produce", "--topic", topic, "--value-schema", SCHEMA, "-m", '{"a": 1}', "-m", '{"a": 2}'
    )
    assert produced.returncode == 0, produced.stderr
    env = environment(services)

    consuming = start(env, "consume", "--topic", topic, "--from-beginning", "-s", "s1")
    printed, stderr = lines_then_signal(consuming, 2, signum)

    assert consuming.returncode == status, stderr
    assert printed == ['{"a": 1}\n', '{"a": 2}\n']
    assert_clean(stderr)
    assert f"consumed 2 messages from {topic}, 0 failed, stopped by {signal.Signals(signum).name}" in stderr
    again = cli(services, "consume", "--topic", topic, "-s", "s1", "--timeout-ms", "3000")
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""  # each printed message was acknowledged before the tool exited


def test_consume_through_a_reader_ends_on_ctrl_c(services: Services, topic: str) -> None:
    produced = cli(services, "produce", "--topic", topic, "--value-schema", SCHEMA, stdin='{"a": 1}\n')
    assert produced.returncode == 0, produced.stderr

    consuming = start(environment(services), "consume", "--topic", topic, "--from-beginning", "-o", "json")
    printed, stderr = lines_then_signal(consuming, 1, signal.SIGINT)

    assert consuming.returncode == 130, stderr
    assert printed == ['{"a": 1}\n']
    assert_clean(stderr)
    assert '"stopped": "SIGINT"' in stderr


@contextmanager
def silent_server() -> Iterator[str]:
    """A URL whose server accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        accepted: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            server.settimeout(0.2)
            while not stop.is_set():
                try:
                    accepted.append(server.accept()[0])
                except OSError:
                    continue

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.getsockname()[1]}"
        finally:
            stop.set()
            thread.join()
            for connection in accepted:
                connection.close()


@pytest.mark.parametrize(
    "args",
    [
        ("subjects",),
        ("produce", "--topic", NEVER, "--value-schema", SCHEMA, "-m", '{"a": 1}'),
    ],
    ids=["subjects", "produce"],
)
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_registry_never_answers(
    services: Services, args: tuple[str, ...], signum: int, status: int
) -> None:
    with silent_server() as url:
        waiting = start(environment(services, registry_url=url), *args)
        time.sleep(2)
        waiting.send_signal(signum)
        stdout, stderr = waiting.communicate(timeout=60)

    assert waiting.returncode == status, stderr
    assert_clean(stderr)
    assert stdout == ""
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert signal.Signals(signum).name in stderr


def with_stdout_closed(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The tool writing into a pipe whose reader has gone (`| head -c 1` once it has its byte)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(COMMAND), *args], stdout=write, stderr=subprocess.PIPE, text=True, env=env, timeout=120
        )
    finally:
        os.close(write)


def test_every_printing_command_ends_quietly_when_stdout_is_closed(services: Services, topic: str) -> None:
    produced = cli(services, "produce", "--topic", topic, "--value-schema", SCHEMA, "-m", '{"a": 1}')
    assert produced.returncode == 0, produced.stderr
    subject = f"{topic.removeprefix('persistent://').replace('/', '.')}-value"
    env = environment(services)
    commands = [
        ("describe", "--topic", topic),
        ("get", "--subject", subject),
        ("subjects",),
        ("check", "--subject", subject, "--schema", SCHEMA),
        ("config",),
        ("completion", "bash"),
        ("consume", "--topic", topic, "--from-beginning", "--timeout-ms", "3000"),
    ]
    for args in commands:
        result = with_stdout_closed(env, *args)

        assert result.returncode == 0, (args, result.stderr)
        assert_clean(result.stderr)


def test_a_malformed_credential_is_a_usage_error(services: Services, topic: str) -> None:
    result = cli(
        services,
        "produce",
        "--topic",
        topic,
        "--value-schema",
        SCHEMA,
        "-p",
        "basic.auth.user.info=user-without-colon",
        "-m",
        '{"a": 1}',
    )

    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "basic.auth.user.info" in result.stderr
    assert "user-without-colon" not in result.stderr  # a credential is never echoed
