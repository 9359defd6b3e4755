"""scripts/services starts a second, independent instance and stops it without leaving a process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from conftest import SERVICES_SCRIPT, parse_service_urls, run_root

pytestmark = pytest.mark.slow


def services(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def live_pids_in(workdir: Path) -> list[int]:
    """Processes (not zombies) whose working directory is `workdir`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") == str(workdir) and " Z " not in (entry / "stat").read_text():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_second_instance_up_is_idempotent_and_down_leaves_nothing() -> None:
    instance = f"lifecycle-{uuid.uuid4().hex[:6]}"
    first = services("up", "--instance", instance)
    try:
        assert first.returncode == 0, first.stderr
        urls = parse_service_urls(first.stdout)
        assert set(urls) == {"PULSAR_SERVICE_URL", "PULSAR_ADMIN_URL", "SCHEMA_REGISTRY_URL"}
        assert all("127.0.0.1" in url for url in urls.values())

        # The instance name is the Pulsar cluster name, so two clusters can be told apart.
        with urllib.request.urlopen(f"{urls['PULSAR_ADMIN_URL']}/admin/v2/clusters", timeout=10) as response:
            assert instance in response.read().decode()

        again = services("up", "--instance", instance)
        assert again.returncode == 0, again.stderr
        assert parse_service_urls(again.stdout) == urls
        assert "starting" not in again.stderr

        env = services("env", "--instance", instance)
        assert env.stdout.startswith("export ")
        assert f"PULSAR_SERVICE_URL={urls['PULSAR_SERVICE_URL']}" in env.stdout
        assert services("status", "--instance", instance).returncode == 0
    finally:
        down = services("down", "--instance", instance)

    assert down.returncode == 0, down.stderr
    run = run_root()
    for service in ("pulsar", "registry"):
        assert live_pids_in(run / instance / service) == []
    ports = [int(url.rsplit(":", 1)[1]) for url in urls.values()]
    assert not any(port_open(port) for port in ports)
    assert services("status", "--instance", instance).returncode == 1

    # Up again, the cluster takes its ports again: a cluster replicating to it still reaches it.
    restarted = services("up", "--instance", instance, "--only", "pulsar")
    try:
        assert restarted.returncode == 0, restarted.stderr
        pulsar = {k: v for k, v in urls.items() if k.startswith("PULSAR_")}
        assert parse_service_urls(restarted.stdout) == pulsar
    finally:
        assert services("down", "--instance", instance).returncode == 0


@pytest.mark.parametrize(
    ("only", "variable", "version", "expected"),
    [
        (
            "pulsar",
            "PES_PULSAR_VERSION",
            "0.0.404",
            "Maven could not resolve org.apache.pulsar:pulsar-broker:0.0.404",
        ),
        (
            "registry",
            "PES_REGISTRY_VERSION",
            "v0.0.404",
            "go mod download github.com/axonops/axonops-schema-registry@v0.0.404",
        ),
    ],
)
def test_a_failed_download_is_reported_with_what_to_do(
    tmp_path: Path, only: str, variable: str, version: str, expected: str
) -> None:
    env = {
        **os.environ,
        "PES_CACHE_DIR": str(tmp_path),
        "PES_RUN_DIR": str(tmp_path / "run"),
        variable: version,
    }
    result = subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), "up", "--only", only],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )

    assert result.returncode == 2
    assert expected in result.stderr
    assert f"set {variable}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()  # nothing was started
