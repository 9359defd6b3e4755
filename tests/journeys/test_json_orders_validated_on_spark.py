"""Journey 1 on a JSON Schema topic: producers with WRITE rules -> `ValidationJob` on Spark (the
Python path: the native reader reads Avro) -> a stock JSON consumer of the trusted topic with the
default config -> the DLQ read with `pulsar-external-schema consume` -> a fixed record replayed
through the job.

Confluent's users describe much of their data with JSON Schema; each step here was proven on Avro
topics only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

from cli_support import cli, errors, read_all, records
from conftest import Services
from contracts import drain, subscribe
from journey_support import (
    JSON_ORDER,
    JSON_REFUSED,
    NAMED,
    ORDERS,
    POSITIVE,
    json_order,
    messages_by_key,
    produce_a_day,
    read_values,
    stock_consumer,
)
from spark_support import deduplicated_namespace, register_contract, source_options

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.deadletter import RULE_NAME
from pulsar_external_schema.spark import ValidationJob

pytestmark = pytest.mark.spark


def test_json_orders_produced_validated_read_from_the_trusted_topic_fixed_and_replayed(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/orders", f"{namespace}/orders-valid", f"{namespace}/orders-dlq"
    register_contract(services, source, JSON_ORDER, [POSITIVE, NAMED], schema_type="JSON")

    day = produce_a_day(pulsar_client, services.registry_url, source, ORDERS, make=json_order)
    assert day.refused == JSON_REFUSED  # qty 2.5 is not a JSON Schema integer: refused, never written
    assert sorted(day.raw) == ["1", "2", "5", "garbage"]
    assert json.loads(day.raw["1"][0]) == ORDERS[0]

    job = ValidationJob(source, valid, dlq, str(tmp_path / "checkpoint"), source_options(services))
    job.run(spark)

    app = stock_consumer(pulsar_client, services.registry_url, valid, make=json_order)
    read = read_values(app)
    assert [key for key, *_ in read] == ["1", "5"]
    for key, value, data, properties in read:
        assert value == ORDERS[int(key) - 1]
        assert (data, properties) == day.raw[key]  # forwarded untouched: same bytes, same id

    dead = read_all(services, dlq, "--schema-topic", source)
    assert records(dead) == [ORDERS[1]]
    assert dead.returncode == 1 and len(errors(dead)) == 1 and "987654321" in errors(dead)[0]
    raw_copies = messages_by_key(pulsar_client, dlq)
    assert sorted(raw_copies) == ["2", "garbage"]
    assert raw_copies["2"][0] == day.raw["2"][0] and raw_copies["2"][1][RULE_NAME] == "named"

    fixed = {**records(dead)[0], "item": "scone"}
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        create_producer(pulsar_client, source, json_order(factory)).send(fixed, partition_key="2")
    job.run(spark)

    assert [(key, value) for key, value, *_ in read_values(app)] == [("2", fixed)]
    assert sorted(messages_by_key(pulsar_client, dlq, name="audit-2")) == ["2", "garbage"]
    assert [m.partition_key() for m in drain(subscribe(pulsar_client, valid, name="count"))] == [
        "1",
        "5",
        "2",
    ]
    described = cli(services, "describe", "--topic", valid, "--output", "json")
    assert described.returncode == 0, described.stderr
    [value_subject] = [s for s in json.loads(described.stdout)["subjects"] if s["field"] == "value"]
    source_id = int(day.raw["1"][1]["__schema_id"][4:], 16)
    assert (value_subject["versions"], value_subject["id"]) == ([1], source_id)
    assert [r["name"] for r in value_subject["ruleSet"]["domainRules"]] == ["positive", "named"]
