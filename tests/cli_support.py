"""Running the installed `pulsar-external-schema` console script against the test services, and
reading what it printed (the console tests and the journeys)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import Services

COMMAND = Path(sys.executable).parent / "pulsar-external-schema"


def interruptible() -> None:
    """A `preexec_fn`: the child starts with SIGINT's default disposition, as a terminal's command
    does. A suite run as a shell's background job (`.ci/run &`) has SIGINT ignored, every child
    inherits that, and the tools rightly keep a signal they were started with ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(
    services: Services,
    *args: str,
    stdin: str | None = None,
    registry_url: str | None = None,
    token: str | None = None,
    client_conf: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """The console script with the services in its environment (and PULSAR_AUTH_TOKEN and
    PULSAR_CLIENT_CONF only when `token` or `client_conf` is given, whatever the shell running
    the tests exports)."""
    secured = ("PULSAR_AUTH_TOKEN", "PULSAR_CLIENT_CONF")
    env = {
        **{key: value for key, value in os.environ.items() if key not in secured},
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "PULSAR_ADMIN_URL": services.admin_url,
        "SCHEMA_REGISTRY_URL": registry_url or services.registry_url,
    }
    if token is not None:
        env["PULSAR_AUTH_TOKEN"] = token
    if client_conf is not None:
        env["PULSAR_CLIENT_CONF"] = client_conf
    return subprocess.run(
        [str(COMMAND), *args], input=stdin, capture_output=True, text=True, env=env, timeout=180, check=False
    )


def records(result: subprocess.CompletedProcess[str]) -> list[Any]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def errors(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the summary and progress lines."""
    return [
        line
        for line in result.stderr.splitlines()
        if line and not line.startswith(("produced ", "consumed ", "... "))
    ]


def read_all(services: Services, topic: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli(services, "consume", "--topic", topic, "--from-beginning", "--timeout-ms", "3000", *extra)
