"""Secured Pulsars (a pytest plugin of tests/conftest.py), each started by `scripts/services up
--only pulsar` beside the session's services (the registry is the session's), as secured
clusters are:

- `secured`: lets in only clients with a token (`--tokens`). The tests show that each of the
  package's ways to Pulsar sends the token it is given, and that one without a token, or with a
  wrong one, fails with an error that says so and does not show the token;
- `tls_pulsar`: speaks TLS only, with a certificate of a CA made at its start (`--tls`);
- `mtls_pulsar`: TLS, and lets in only clients with a certificate of its CA (`--mtls`);
- `oauth2_pulsar`: TLS, and lets in only clients with a token of an OAuth2 issuer started beside
  it (`--tls --oauth2`; its tokens live `OAUTH2_TTL` seconds, so that tests see them refreshed).

The TLS ones come with the `client.conf` `scripts/services` writes for them (PULSAR_CLIENT_CONF),
which the tests hand to the package as a user would."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import SERVICES_SCRIPT, Services, parse_service_urls

INSTANCE = "secured"
#: The life of the OAuth2 issuer's tokens, in seconds.
OAUTH2_TTL = 20


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


@dataclass(frozen=True)
class TlsPulsar:
    pulsar_url: str
    """pulsar+ssl://"""
    admin_url: str
    """https://"""
    client_conf: str
    """The path of a `client.conf` for it (its CA trusted; its client certificate where mutual)."""
    registry_url: str
    """The session's registry."""
    mutual: bool
    oauth2: bool = False

    @property
    def tls_dir(self) -> Path:
        """ca.crt, client.crt and client.key (and the broker's): made at its start."""
        return Path(self.client_conf).parent / "tls"

    @property
    def services(self) -> Services:
        return Services(self.pulsar_url, self.admin_url, self.registry_url, "script")


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PES_OAUTH2_TTL": str(OAUTH2_TTL)},
    )


@contextlib.contextmanager
def own_pulsar(services: Services, instance: str, *flags: str) -> Iterator[dict[str, str]]:
    """A Pulsar of its own started with `flags` (its URLs and secrets as `up` prints them),
    stopped at the end unless it ran before or PES_KEEP_SERVICES=1."""
    if services.origin == "docker":
        pytest.skip(
            f"these tests start another Pulsar with scripts/services up {' '.join(flags)} (java and "
            "mvn on this machine); the Docker services have none such"
        )
    already_running = _script("status", "--instance", instance).returncode == 0
    started = _script("up", "--instance", instance, "--only", "pulsar", *flags)
    if started.returncode != 0:
        pytest.fail(f"scripts/services up --instance {instance} {' '.join(flags)} failed:\n{started.stderr}")
    try:
        yield parse_service_urls(started.stdout)
    finally:
        if not already_running and os.environ.get("PES_KEEP_SERVICES") != "1":
            _script("down", "--instance", instance)


@pytest.fixture(scope="session")
def secured(services: Services) -> Iterator[SecuredPulsar]:
    with own_pulsar(services, INSTANCE, "--tokens") as urls:
        yield SecuredPulsar(
            urls["PULSAR_SERVICE_URL"],
            urls["PULSAR_ADMIN_URL"],
            urls["PULSAR_AUTH_TOKEN"],
            services.registry_url,
        )


def _tls_instance(services: Services, instance: str, *flags: str) -> Iterator[TlsPulsar]:
    with own_pulsar(services, instance, *flags) as urls:
        yield TlsPulsar(
            urls["PULSAR_SERVICE_URL"],
            urls["PULSAR_ADMIN_URL"],
            urls["PULSAR_CLIENT_CONF"],
            services.registry_url,
            mutual="--mtls" in flags,
            oauth2="--oauth2" in flags,
        )


@pytest.fixture(scope="session")
def tls_pulsar(services: Services) -> Iterator[TlsPulsar]:
    yield from _tls_instance(services, "secured-tls", "--tls")


@pytest.fixture(scope="session")
def mtls_pulsar(services: Services) -> Iterator[TlsPulsar]:
    yield from _tls_instance(services, "secured-mtls", "--mtls")


@pytest.fixture(scope="session")
def oauth2_pulsar(services: Services) -> Iterator[TlsPulsar]:
    yield from _tls_instance(services, "secured-oauth2", "--tls", "--oauth2")
