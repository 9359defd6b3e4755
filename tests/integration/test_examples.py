"""Every example runs against the real services, so none rots."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO, Services


def run_example(name: str, services: Services) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "PULSAR_ADMIN_URL": services.admin_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_quickstart(services: Services) -> None:
    result = run_example("quickstart.py", services)

    assert result.returncode == 0, result.stderr
    assert "rule: itemNotEmpty: size(message.item) > 0" in result.stdout
    assert "consumed {'id': 2, 'item': 'plum'}" in result.stdout
    assert "summary: 3 produced, 3 consumed" in result.stdout
