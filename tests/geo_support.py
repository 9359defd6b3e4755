"""Fixtures of the geo-replication tests (a pytest plugin of tests/conftest.py): a second Pulsar
cluster started by `scripts/services up --instance cluster-b --only pulsar`, and a namespace that
`scripts/services replicate` replicates between it and the session's cluster."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import SERVICES_SCRIPT, Services, parse_service_urls

CLUSTER_A = "standalone"  # scripts/services' default instance, whose cluster has its name
CLUSTER_B = "cluster-b"


@dataclass(frozen=True)
class GeoClusters:
    a_url: str
    a_admin: str
    b_url: str
    b_admin: str
    namespace: str
    """TENANT/NAMESPACE, replicated to both clusters."""

    def topic(self, name: str) -> str:
        return f"persistent://{self.namespace}/{name}-{uuid.uuid4().hex[:8]}"


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="session")
def geo(services: Services) -> Iterator[GeoClusters]:
    """Cluster A is the session's broker, cluster B a second standalone; both share the registry."""
    own = dict(re.findall(r"([A-Z_]+_URL)=(\S+)", _script("env", "--instance", CLUSTER_A).stdout))
    if services.origin == "docker" or own.get("PULSAR_ADMIN_URL") != services.admin_url:
        pytest.skip(
            "geo-replication tests need the session's Pulsar to be scripts/services' "
            f"'{CLUSTER_A}' instance (the second cluster and the replication are set up by that "
            f"script); this session's broker at {services.admin_url} comes from elsewhere"
        )
    already_running = _script("status", "--instance", CLUSTER_B).returncode == 0
    started = _script("up", "--instance", CLUSTER_B, "--only", "pulsar")
    if started.returncode != 0:
        pytest.fail(f"scripts/services up --instance {CLUSTER_B} failed:\n{started.stderr}")
    other = parse_service_urls(started.stdout)
    namespace = f"geo/repl-{uuid.uuid4().hex[:8]}"
    replicated = _script("replicate", "--namespace", namespace, CLUSTER_A, CLUSTER_B)
    try:
        if replicated.returncode != 0:
            pytest.fail(f"scripts/services replicate failed:\n{replicated.stderr}")
        yield GeoClusters(
            services.pulsar_url,
            services.admin_url,
            other["PULSAR_SERVICE_URL"],
            other["PULSAR_ADMIN_URL"],
            namespace,
        )
    finally:
        if not already_running and os.environ.get("PES_KEEP_SERVICES") != "1":
            _script("down", "--instance", CLUSTER_B)


@pytest.fixture(scope="session")
def client_b(geo: GeoClusters) -> Iterator[Any]:
    """A Pulsar client of cluster B (the `pulsar_client` fixture is cluster A's)."""
    import pulsar

    client = pulsar.Client(
        geo.b_url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn)
    )
    yield client
    client.close()
