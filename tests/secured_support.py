"""A Pulsar that lets in only clients with a token (a pytest plugin of tests/conftest.py): started
by `scripts/services up --instance secured --only pulsar --tokens` beside the session's services
(the registry is the session's), as a secured cluster is. The tests show that each of the
package's ways to Pulsar sends the token it is given, and that one without a token, or with a
wrong one, fails with an error that says so and does not show the token."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from conftest import SERVICES_SCRIPT, Services, parse_service_urls

INSTANCE = "secured"


@dataclass(frozen=True)
class SecuredPulsar:
    pulsar_url: str
    admin_url: str
    token: str
    """A token the broker accepts."""
    registry_url: str
    """The session's registry."""

    @property
    def wrong_token(self) -> str:
        """A token of the same claims signed with another key."""
        return self.token[:-8] + ("AAAAAAAA" if not self.token.endswith("AAAAAAAA") else "BBBBBBBB")


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="session")
def secured(services: Services) -> Iterator[SecuredPulsar]:
    if services.origin == "docker":
        pytest.skip(
            "the token tests start a second Pulsar with scripts/services (java and mvn on this "
            "machine); the Docker services have none that requires tokens"
        )
    already_running = _script("status", "--instance", INSTANCE).returncode == 0
    started = _script("up", "--instance", INSTANCE, "--only", "pulsar", "--tokens")
    if started.returncode != 0:
        pytest.fail(f"scripts/services up --instance {INSTANCE} --tokens failed:\n{started.stderr}")
    urls = parse_service_urls(started.stdout)
    try:
        yield SecuredPulsar(
            urls["PULSAR_SERVICE_URL"],
            urls["PULSAR_ADMIN_URL"],
            urls["PULSAR_AUTH_TOKEN"],
            services.registry_url,
        )
    finally:
        if not already_running and os.environ.get("PES_KEEP_SERVICES") != "1":
            _script("down", "--instance", INSTANCE)
