"""A Pulsar of the 4.0 LTS line (a pytest plugin of tests/conftest.py): a release before PIP-420,
whose broker has no EXTERNAL schema type, started by `scripts/services up --only pulsar
--pulsar-version 4.0.8` beside the session's services (the registry is the session's), as a user
of that line would ask for its newest release: Maven Central does not serve 4.0.8 whole, and the
script takes 4.0.7, saying so."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import Services
from secured_support import own_pulsar

#: The release asked for: the 4.0 LTS line's newest.
LTS_RELEASE = "4.0.8"


@pytest.fixture(scope="session")
def lts_pulsar(services: Services) -> Iterator[Services]:
    with own_pulsar(services, "lts", "--pulsar-version", LTS_RELEASE) as urls:
        yield Services(urls["PULSAR_SERVICE_URL"], urls["PULSAR_ADMIN_URL"], services.registry_url, "script")


@pytest.fixture(scope="session")
def lts_release(lts_pulsar: Services) -> str:
    """The release the LTS broker runs, as its admin API reports it."""
    from pulsar_external_schema.admin import PulsarAdmin

    admin = PulsarAdmin(lts_pulsar.admin_url)
    try:
        version = admin.broker_version()
    finally:
        admin.close()
    assert version is not None, "the 4.0 broker's admin API did not say its release"
    return version
