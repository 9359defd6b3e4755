"""Runs a script of examples/ as a user would, on the test services."""

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
