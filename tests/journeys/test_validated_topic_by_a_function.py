"""Journey 2: producers with WRITE rules -> `ValidateFunction` (in `LocalRunner`, the runtime's
interfaces) -> a stock consumer of its output topic with the default config -> the DLQ read with
`pulsar-external-schema consume` -> a fixed record replayed through the function.

Fails on the code before issue 34: the output's stock consumer failed every message with
`ForeignSchemaIdError`, and order 4 (`qty` 2.5) was sent as 2."""

from __future__ import annotations

import json
from typing import Any

from cli_support import errors, read_all, records
from conftest import Services
from contracts import drain, subscribe, unique
from function_support import run_validate_function as run_function_as_deployed
from journey_support import (
    NAMED,
    ORDER,
    ORDERS,
    POSITIVE,
    REFUSED,
    messages_by_key,
    produce_a_day,
    read_values,
    stock_consumer,
)
from spark_support import register_contract

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.deadletter import RULE_NAME, RULE_TOPIC


def run_validate_function(client: Any, services: Services, source: str, valid: str, dlq: str) -> Any:
    subscription = f"public/default/{source.rsplit('/', 1)[1]}-validate"
    return run_function_as_deployed(client, services, source, valid, dlq, subscription=subscription)


def test_produce_validate_in_a_function_read_its_output_fix_and_replay(
    services: Services, pulsar_client: Any
) -> None:
    source = f"persistent://public/default/{unique('orders')}"
    valid, dlq = f"{source}-valid", f"{source}-dlq"
    register_contract(services, source, ORDER, [POSITIVE, NAMED])

    day = produce_a_day(pulsar_client, services.registry_url, source, ORDERS)
    assert day.refused == REFUSED

    ran = run_validate_function(pulsar_client, services, source, valid, dlq)
    assert (ran.processed, ran.user_errors, ran.system_errors) == (4, [], [])

    app = stock_consumer(pulsar_client, services.registry_url, valid)
    read = read_values(app)
    assert [key for key, *_ in read] == ["1", "5"]
    for key, value, data, properties in read:
        assert value == ORDERS[int(key) - 1]
        assert (data, properties) == day.raw[key]

    dead = read_all(services, dlq, "--schema-topic", source)
    assert records(dead) == [ORDERS[1]]
    assert len(errors(dead)) == 1 and "987654321" in errors(dead)[0]
    copies = messages_by_key(pulsar_client, dlq)
    assert sorted(copies) == ["2", "garbage"]
    assert copies["2"][1][RULE_NAME] == "named" and copies["2"][1][RULE_TOPIC] == source

    fixed = {**records(dead)[0], "item": "scone"}
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        create_producer(pulsar_client, source, factory.avro(json.dumps(ORDER))).send(fixed, partition_key="2")
    again = run_validate_function(pulsar_client, services, source, valid, dlq)
    assert (again.processed, again.user_errors) == (1, [])

    assert [(key, value) for key, value, *_ in read_values(app)] == [("2", fixed)]
    assert [m.partition_key() for m in drain(subscribe(pulsar_client, valid, name="count"))] == [
        "1",
        "5",
        "2",
    ]
