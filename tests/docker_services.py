"""The Docker path for the test services: docker/docker-compose.yml through testcontainers.

Used when `PES_SERVICES=docker` (see tests/conftest.py). Our own machines have no Docker engine,
so `scripts/services` is the default; this path is for users and CI systems that have one, and
it is the place for tests that need Confluent Schema Registry itself (select it with
`PES_REGISTRY=confluent`, the default here, or `PES_REGISTRY=axonops`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REGISTRY_PORTS = {"confluent": 8081, "axonops": 8082}


def docker_engine_available() -> bool:
    """True when a Docker engine answers (the `docker` CLI alone is not enough)."""
    try:
        # Imported by name: the repository's docker/ folder would shadow the package for mypy.
        docker = importlib.import_module("docker")
        docker.from_env(timeout=3).ping()
    except Exception:
        return False
    return True


def _wait_http(url: str, must_contain: str | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last_error = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=3) as response:
                body = response.read().decode(errors="replace")
            if must_contain is None or must_contain in body:
                return
            last_error = f"answered without {must_contain!r}"
        except OSError as error:
            last_error = str(error)
        time.sleep(1)
    raise TimeoutError(f"{url} not ready after {timeout:.0f}s: {last_error}")


@contextlib.contextmanager
def compose_services(compose_file: Path) -> Iterator[dict[str, str]]:
    """Start the compose stack, wait for Pulsar and the chosen registry, yield their URLs."""
    if not docker_engine_available():
        raise RuntimeError(
            "PES_SERVICES=docker, but no Docker engine answers; unset it to use scripts/services"
        )
    from testcontainers.compose import DockerCompose

    registry = os.environ.get("PES_REGISTRY", "confluent")
    if registry not in REGISTRY_PORTS:
        raise ValueError(f"PES_REGISTRY must be one of {sorted(REGISTRY_PORTS)}, not {registry!r}")
    with DockerCompose(str(compose_file.parent), compose_file_name=compose_file.name, pull=True):
        urls = {
            "pulsar": "pulsar://127.0.0.1:6650",
            "admin": "http://127.0.0.1:8080",
            "registry": f"http://127.0.0.1:{REGISTRY_PORTS[registry]}",
        }
        _wait_http(f"{urls['admin']}/admin/v2/namespaces/public", "public/default", timeout=300)
        _wait_http(f"{urls['registry']}/subjects", None, timeout=300)
        yield urls
