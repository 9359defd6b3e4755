"""The example functions in Pulsar's real Python function runtime (Docker path).

The runtime ships only in Pulsar's binary distribution and image, so this test needs a Docker
engine: it builds docker/functions.Dockerfile (Pulsar with its functions worker and this package),
deploys examples/functions/ with `pulsar-admin functions create` exactly as docs/functions.md
says, and checks what the functions publish. tests/integration/test_functions.py covers the same
integration points without the runtime, on every machine.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pulsar
import pytest
from conftest import REPO
from contracts import contract, rule, unique
from docker_services import _wait_http, docker_engine_available
from schemas import ORDER_V1

from pulsar_external_schema import SCHEMA_ID_PROPERTY, SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema import schema_id as ids

pytestmark = pytest.mark.docker

PULSAR_URL, ADMIN_URL = "pulsar://127.0.0.1:6660", "http://127.0.0.1:8090"
REGISTRY_URL, REGISTRY_IN_DOCKER = "http://127.0.0.1:8081", "http://schema-registry:8081"
RECEIPT = {
    "type": "record",
    "name": "Receipt",
    "fields": [{"name": "id", "type": "long"}, {"name": "label", "type": "string"}],
}


def schema_inputs(topic: str, schema_class: str) -> str:
    spec = {"schemaType": schema_class, "schemaProperties": {"schema.registry.url": REGISTRY_IN_DOCKER}}
    return json.dumps({topic: json.dumps(spec)})


def create_function(compose: Any, name: str, py: str, classname: str, *args: str) -> None:
    command = ["bin/pulsar-admin", "functions", "create", "--tenant", "public", "--namespace", "default"]
    command += ["--name", name, "--py", f"/pulsar/functions/{py}", "--classname", classname, *args]
    stdout, stderr, code = compose.exec_in_container(command, service_name="pulsar-functions")
    assert code == 0, f"{stdout}\n{stderr}"


def wait_running(name: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    url = f"{ADMIN_URL}/admin/v3/functions/public/default/{name}/status"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if json.load(response).get("numRunning", 0) >= 1:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise TimeoutError(f"function {name} not running after {timeout:.0f}s")


def test_example_functions_in_the_real_runtime() -> None:
    if not docker_engine_available():
        pytest.skip(
            "needs Pulsar's Python function runtime, which ships only in Pulsar's image and binary "
            "distribution; this machine has no Docker engine (test_functions.py covers it without)"
        )
    from testcontainers.compose import DockerCompose

    with DockerCompose(
        str(REPO / "docker"),
        compose_file_name="docker-compose.yml",
        profiles=["functions"],
        services=["pulsar-functions", "kafka", "schema-registry"],
        build=True,
        pull=True,
    ) as compose:
        _wait_http(f"{ADMIN_URL}/admin/v3/functions/public/default", None, timeout=300)
        _wait_http(f"{REGISTRY_URL}/subjects", None, timeout=300)
        orders, receipts, valid, dlq = (
            unique(name) for name in ("orders", "receipts", "valid", "orders-dlq")
        )
        factory = SchemaRegistrySchemaFactory({"schema.registry.url": REGISTRY_URL})
        registry = factory.registry_client
        output_id = registry.register_schema(f"public.default.{receipts}-value", contract(RECEIPT))
        check = rule("itemNotEmpty", "CONDITION", "CEL", "READ", "size(message.item) > 0")
        registry.register_schema(
            f"public.default.{orders}-value", contract(ORDER_V1, ruleSet={"domainRules": [check]})
        )

        create_function(
            compose,
            "receipts",
            "receipts.py",
            "receipts.Receipts",
            "--inputs",
            orders,
            "--custom-schema-inputs",
            schema_inputs(orders, "pulsar_external_schema.functions.FunctionSchema"),
            "--output",
            receipts,
            "--user-config",
            json.dumps({"schema.registry.url": REGISTRY_IN_DOCKER, "dlq.topic": dlq}),
        )
        create_function(
            compose,
            "validate",
            "validate.py",
            "validate.ValidateFunction",
            "--inputs",
            orders,
            "--custom-schema-inputs",
            schema_inputs(orders, "pulsar_external_schema.functions.ValidatingSchema"),
            "--output",
            valid,
            "--user-config",
            json.dumps({"dlq.topic": dlq}),
        )
        wait_running("receipts")
        wait_running("validate")

        client = pulsar.Client(PULSAR_URL)
        try:
            out = client.subscribe(receipts, "t", initial_position=pulsar.InitialPosition.Earliest)
            passed = client.subscribe(valid, "t", initial_position=pulsar.InitialPosition.Earliest)
            dead = client.subscribe(dlq, "t", initial_position=pulsar.InitialPosition.Earliest)
            writer = SchemaRegistrySchemaFactory(
                {
                    "schema.registry.url": REGISTRY_URL,
                    "use.latest.version": True,
                    "auto.register.schemas": False,
                }
            ).avro(ORDER_V1)
            with create_producer(client, orders, writer) as producer:
                producer.send({"id": 1, "item": "tea"})
                producer.send({"id": 2, "item": ""})

            receipt = out.receive(timeout_millis=120_000)
            assert receipt.properties()[SCHEMA_ID_PROPERTY] == ids.to_property(ids.confluent_id(output_id))
            assert factory.avro(RECEIPT).decode_message(receipt) == {"id": 1, "label": "TEA"}
            assert passed.receive(timeout_millis=120_000).properties()[SCHEMA_ID_PROPERTY]
            copies = [dead.receive(timeout_millis=120_000) for _ in range(2)]  # one from each function
            assert {copy.properties()["__rule.name"] for copy in copies} == {"itemNotEmpty"}
        finally:
            client.close()
