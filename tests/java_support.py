"""Running tests/interop/ExternalSchemaInterop.java, a Java PIP-420 client (Pulsar's Java client
4.2, from the broker's own jars scripts/services resolves), against the test services."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, Services

PROGRAM = REPO / "tests" / "interop" / "ExternalSchemaInterop.java"


def pulsar_lib() -> Path | None:
    """The newest release's jars scripts/services resolved that hold a PIP-420 client (4.1+)."""
    cache = Path(os.environ.get("PES_CACHE_DIR", Path.home() / ".cache" / "pulsar-external-schema"))
    releases = {}
    for jar in cache.glob("pulsar-*/lib/pulsar-client-original-*.jar"):
        numbers = re.fullmatch(r"pulsar-(\d+)\.(\d+)\.(\d+)", jar.parent.parent.name)
        if numbers is not None and (int(numbers[1]), int(numbers[2])) >= (4, 1):
            releases[tuple(int(part) for part in numbers.groups())] = jar.parent
    return releases[max(releases)] if releases else None


LIB = pulsar_lib()
#: `pytestmark` of a module whose tests run the Java client.
needs_java = pytest.mark.skipif(
    shutil.which("java") is None or LIB is None,
    reason="needs `java` and the Pulsar jars scripts/services resolves (not on the Docker path)",
)


def java(services: Services, command: str, *args: str) -> list[str]:
    """The program's result lines (the Java client logs to stdout too)."""
    program = [str(PROGRAM), command, services.pulsar_url, services.registry_url, *args]
    done = subprocess.run(
        ["java", "-cp", f"{LIB}/*", *program], capture_output=True, text=True, timeout=180, check=False
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"java {command} failed ({done.returncode}): {output[-3000:]}")
    return [line.removeprefix("RESULT ") for line in done.stdout.splitlines() if line.startswith("RESULT ")]
