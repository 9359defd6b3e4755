"""docker/docker-compose.yml: the Docker path for users stays coherent (it cannot run here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO
from docker_services import REGISTRY_PORTS, docker_engine_available

COMPOSE = REPO / "docker" / "docker-compose.yml"


def load() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(COMPOSE.read_text())  # type: ignore[no-any-return]


def published(service: dict) -> dict[int, int]:  # type: ignore[type-arg]
    """host port -> container port, checking every port is bound to loopback only."""
    ports = {}
    for spec in service.get("ports", []):
        host_ip, host_port, container_port = spec.split(":")
        assert host_ip == "127.0.0.1", spec
        ports[int(host_port)] = int(container_port)
    return ports


def test_compose_has_pulsar_both_registries_and_the_kafka_confluent_needs() -> None:
    services = load()["services"]

    assert set(services) == {
        "pulsar",
        "kafka",
        "schema-registry",
        "axonops-schema-registry",
        "pulsar-functions",
    }
    assert services["pulsar-functions"]["profiles"] == ["functions"]  # not started by a plain `up`
    assert published(services["pulsar-functions"]) == {6660: 6650, 8090: 8080}
    assert "--no-functions-worker" not in services["pulsar-functions"]["command"]
    dockerfile = REPO / services["pulsar-functions"]["build"]["dockerfile"]
    assert dockerfile.exists() and "pip3 install" in dockerfile.read_text()
    assert published(services["pulsar"]) == {6650: 6650, 8080: 8080}
    assert published(services["schema-registry"]) == {REGISTRY_PORTS["confluent"]: 8081}
    assert published(services["axonops-schema-registry"]) == {REGISTRY_PORTS["axonops"]: 8081}
    assert published(services["kafka"]) == {}
    assert services["schema-registry"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert (
        "kafka:29092"
        in services["schema-registry"]["environment"]["SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS"]
    )
    for name, service in services.items():
        assert "healthcheck" in service, name
    assert "apachepulsar/pulsar:4." in services["pulsar"]["image"]


@pytest.mark.docker
def test_compose_stack_serves_pulsar_and_registry(tmp_path: Path) -> None:
    if not docker_engine_available():
        pytest.skip("no Docker engine on this machine; the compose stack runs only where one exists")
    import urllib.request

    from docker_services import compose_services

    with (
        compose_services(COMPOSE) as urls,
        urllib.request.urlopen(f"{urls['registry']}/subjects") as response,
    ):
        assert response.status == 200
