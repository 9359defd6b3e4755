"""Shared fixtures: the real Pulsar broker and schema registry, and unique names per test.

Where the services come from, in order:
1. `PULSAR_SERVICE_URL`, `PULSAR_ADMIN_URL` and `SCHEMA_REGISTRY_URL` in the environment
   (e.g. `eval "$(scripts/services env)"`, or services you run yourself);
2. `PES_SERVICES=docker`: the compose file in docker/ through testcontainers (needs a Docker engine);
3. otherwise `scripts/services up`, which builds and starts both on loopback; what this session
   started it stops at the end unless `PES_KEEP_SERVICES=1` (services it found running, it
   leaves running).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from native_support import required_extension
from spark_jvm import faster_spark_jvms

pytest_plugins = ["spark_support", "geo_support", "secured_support", "lts_support"]

REPO = Path(__file__).resolve().parents[1]
SERVICES_SCRIPT = REPO / "scripts" / "services"
ENV_KEYS = ("PULSAR_SERVICE_URL", "PULSAR_ADMIN_URL", "SCHEMA_REGISTRY_URL")


@dataclass(frozen=True)
class Services:
    pulsar_url: str
    admin_url: str
    registry_url: str
    origin: str  # "environment", "docker" or "script"


def services_script(*args: str) -> str:
    """Run scripts/services (an instance of a test's own); its stdout. Fails the test if it fails."""
    done = subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_root() -> Path:
    """Where scripts/services keeps its instances' state, data and logs (PES_RUN_DIR)."""
    cache = Path(os.environ.get("PES_CACHE_DIR", Path.home() / ".cache" / "pulsar-external-schema"))
    return Path(os.environ.get("PES_RUN_DIR", cache / "run"))


def service_pid(instance: str, service: str) -> int:
    """The pid scripts/services recorded for a service of an instance (to stop or kill it)."""
    state = json.loads((run_root() / instance / "state.json").read_text())
    return int(state["services"][service]["pid"])


def parse_service_urls(output: str) -> dict[str, str]:
    """Read the `KEY=VALUE` lines that `scripts/services up` prints (URLs, and an instance's
    PULSAR_AUTH_TOKEN when it was started with `--tokens`, PULSAR_CLIENT_CONF with `--tls`)."""
    return dict(re.findall(r"^([A-Z_]+_(?:URL|TOKEN|CONF))=(\S+)$", output, flags=re.MULTILINE))


def _from_environment() -> Services | None:
    values = [os.environ.get(key) for key in ENV_KEYS]
    if not any(values):
        return None
    if not all(values):
        missing = [key for key, value in zip(ENV_KEYS, values, strict=True) if not value]
        raise pytest.UsageError(f"Set all of {', '.join(ENV_KEYS)} or none; missing: {', '.join(missing)}")
    pulsar_url, admin_url, registry_url = (str(v) for v in values)
    return Services(pulsar_url, admin_url, registry_url, "environment")


def _run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="session")
def services() -> Iterator[Services]:
    found = _from_environment()
    if found is not None:
        yield found
        return
    if os.environ.get("PES_SERVICES") == "docker":
        from docker_services import compose_services  # only imported on the Docker path

        with compose_services(REPO / "docker" / "docker-compose.yml") as urls:
            yield Services(urls["pulsar"], urls["admin"], urls["registry"], "docker")
        return
    already_running = _run_script("status").returncode == 0  # someone else's: theirs to stop
    result = _run_script("up")
    if result.returncode != 0:
        pytest.exit(f"scripts/services up failed (exit {result.returncode}):\n{result.stderr}", returncode=3)
    urls = parse_service_urls(result.stdout)
    try:
        yield Services(
            urls["PULSAR_SERVICE_URL"], urls["PULSAR_ADMIN_URL"], urls["SCHEMA_REGISTRY_URL"], "script"
        )
    finally:
        # a worker of `pytest -n` leaves them running: another may be using them still
        stop = not already_running and "PYTEST_XDIST_WORKER" not in os.environ
        if stop and os.environ.get("PES_KEEP_SERVICES") != "1":
            _run_script("down")


@pytest.fixture(scope="session")
def pulsar_client(services: Services) -> Iterator[object]:
    import pulsar

    client = pulsar.Client(
        services.pulsar_url,
        operation_timeout_seconds=30,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),  # the C++ client logs every connect at INFO
    )
    yield client
    client.close()


@pytest.fixture(scope="session")
def registry_client(services: Services) -> object:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": services.registry_url})


def _unique(request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-").lower()[:40]
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name no other test (or earlier run) uses."""
    return f"persistent://public/default/{_unique(request)}"


@pytest.fixture
def subject(request: pytest.FixtureRequest) -> str:
    """A registry subject no other test (or earlier run) uses."""
    return f"{_unique(request)}-value"


#: Session fixtures that start a named instance of scripts/services of their own (and stop it at
#: the end), by the instance: the tests of one instance share one worker of `pytest -n`
#: (scripts/test runs two), so that no other worker starts or stops it while they run; tests of
#: different instances run on either worker, side by side.
OWN_INSTANCES = {
    "secured": "tokens",
    "tls_pulsar": "tls",
    "mtls_pulsar": "mtls",
    "oauth2_pulsar": "oauth2",
    "lts_pulsar": "lts",
    "lts_release": "lts",
    "geo": "geo",
    "client_b": "geo",
}
#: The parameters of a module's own `secured` fixture that takes one of the TLS instances by name
#: (`request.getfixturevalue`: its fixture is not among the test's names).
_PICKED = {"tls": "tls", "mtls": "mtls", "oauth2": "oauth2"}


def _instances(item: pytest.Item) -> set[str]:
    """The named instances a test starts or uses."""
    names = set(getattr(item, "fixturenames", ()))
    found = {OWN_INSTANCES[name] for name in names if name in OWN_INSTANCES}
    picked = getattr(getattr(item, "callspec", None), "params", {}).get("secured")
    if isinstance(picked, str) and picked in _PICKED:  # test_tls.py's `secured`, not the token one
        found.discard("tokens")
        found.add(_PICKED[picked])
    return found


def _instance_groups(items: list[pytest.Item]) -> dict[str, str]:
    """Each instance's group: instances one test uses together are one group, so that every test
    of an instance runs on the worker that started it."""
    group = {name: name for name in set(OWN_INSTANCES.values()) | set(_PICKED.values())}

    def root(name: str) -> str:
        while group[name] != name:
            name = group[name]
        return name

    for item in items:
        used = sorted(_instances(item))
        for other in used[1:]:
            group[root(other)] = root(used[0])
    return {name: root(name) for name in group}


def _has_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture of module (or class) scope."""
    info = getattr(item, "_fixtureinfo", None)  # pytest's, on every function item
    defs = getattr(info, "name2fixturedefs", {}) or {}
    return any(d.scope in ("module", "class", "package") for chain in defs.values() for d in chain)


def pytest_configure(config: pytest.Config) -> None:
    """Spark's JVMs started sooner (tests/spark_jvm.py): in the first process, before pytest-xdist
    starts its workers, which inherit the setting."""
    faster_spark_jvms()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by folder so `-m "not integration"` selects the unit tests alone; and group them
    for `pytest -n N --dist loadgroup` (scripts/test): every test of a named instance on the
    worker that started it (`OWN_INSTANCES`), and a module's tests that use a fixture of module
    scope (a broker of its own, a Spark cluster) on one worker, so that it starts once. Every
    other test goes to whichever worker is free: grouping every module, the longest modules made
    one worker wait for the other for most of the run (pytest 41 min against 23)."""
    groups = _instance_groups(items)
    for item in items:
        instances = _instances(item)
        if instances:
            item.add_marker(pytest.mark.xdist_group(f"instance-{groups[min(instances)]}"))
        elif _has_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(str(Path(str(item.path)).relative_to(REPO))))
        parts = Path(str(item.path)).parts
        if "integration" in parts:
            item.add_marker(pytest.mark.integration)
        if "reliability" in parts:  # the hardening cases replayed on the real services
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
        if "spark" in parts:
            item.add_marker(pytest.mark.spark)
        if "journeys" in parts:  # one user's path across features, on the real services
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def factory(services: Services) -> Iterator[object]:
    """A schema factory on the real registry, auto-registering (Confluent's default)."""
    from pulsar_external_schema import SchemaRegistrySchemaFactory

    made = SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url})
    yield made
    made.close()


@pytest.fixture
def make_factory(services: Services) -> Iterator[Any]:
    """Schema factories on the real registry with extra config keys; closed after the test."""
    from pulsar_external_schema import SchemaRegistrySchemaFactory

    made: list[Any] = []

    def make(client: Any = None, **conf: Any) -> Any:
        factory = SchemaRegistrySchemaFactory(
            {"schema.registry.url": services.registry_url, **conf}, client=client
        )
        made.append(factory)
        return factory

    yield make
    for factory in made:
        factory.close()


@pytest.fixture(scope="session")
def broker_version(services: Services) -> str | None:
    """The Pulsar release of the session's broker, as its admin API reports it (None: it does not
    say). The support matrix (scripts/test-matrix) runs the suite on several."""
    from pulsar_external_schema.admin import PulsarAdmin

    admin = PulsarAdmin(services.admin_url)
    try:
        return admin.broker_version()
    finally:
        admin.close()


@pytest.fixture
def external_type(broker_version: str | None) -> None:
    """Skips a test of PIP-420's EXTERNAL schema type (a topic declared EXTERNAL with
    `pulsar.admin.url`, Java PIP-420 clients) on a broker before 4.1, which lacks it; tests of
    such a broker's refusal are in tests/integration/test_brokers_before_4_1.py."""
    from pulsar_external_schema.admin import lacks_external_type

    if lacks_external_type(broker_version):
        pytest.skip(f"needs Pulsar 4.1+ (PIP-420's EXTERNAL schema type); the broker runs {broker_version}")


def require_confluent_registry(services: Services, why: str) -> None:
    """Skip a test that only Confluent Schema Registry can pass, saying which deviation and where it runs.

    The registry is Confluent's on the Docker path (PES_SERVICES=docker, PES_REGISTRY=confluent,
    the default there), or when PES_REGISTRY=confluent is set next to SCHEMA_REGISTRY_URL.
    """
    kind = os.environ.get("PES_REGISTRY", "confluent" if services.origin == "docker" else "axonops")
    if kind != "confluent":
        pytest.skip(
            f"needs Confluent Schema Registry: {why}. Runs on the Docker path "
            "(PES_SERVICES=docker), which this machine cannot start (no Docker engine)"
        )


def create_partitioned_topic(services: Services, topic: str, partitions: int) -> None:
    """PUT /admin/v2/persistent/{tenant}/{ns}/{topic}/partitions through the broker's admin REST API."""
    import urllib.request

    path = topic.removeprefix("persistent://")
    request = urllib.request.Request(
        f"{services.admin_url}/admin/v2/persistent/{path}/partitions",
        data=str(partitions).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status in (200, 204), response.status


@pytest.fixture
def native_extension() -> ModuleType:
    """The native extension, for a test that needs it (`native_support.required_extension`: it
    skips in the Python-path leg and fails where the extension is missing anywhere else)."""
    return required_extension()
