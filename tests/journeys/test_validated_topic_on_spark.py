"""Journey 1: producers with WRITE rules -> `ValidationJob` on Spark -> a stock consumer of the trusted
topic with the default config -> the DLQ read with `pulsar-external-schema consume` -> a fixed
record replayed through the job; on an Avro topic (the native reader) and on a JSON Schema one
(the native reader too, where its schema types every column), as Confluent's users describe much of their
data with either.

Fails on the code before issue 34 twice over: order 4 (`qty` 2.5) was sent as 2, and the stock
consumer of the trusted topic failed every message with `ForeignSchemaIdError` (the job forwarded
ids registered under the source's subject only)."""

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
    ORDER,
    ORDERS,
    POSITIVE,
    REFUSED,
    MakeSchema,
    avro_order,
    json_order,
    messages_by_key,
    produce_a_day,
    read_values,
    stock_consumer,
)
from spark_support import (
    deduplicated_namespace,
    register_contract,
    roll_and_trim,
    source_options,
    subscriptions,
)

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.deadletter import DEAD_LETTER_SUBSCRIPTION, RULE_NAME
from pulsar_external_schema.spark import ValidationJob

pytestmark = pytest.mark.spark

#: Each format's order schema, how producers and readers make it, and what producing refuses (a
#: JSON Schema refuses `qty` 2.5 in `jsonschema`'s words, as confluent-kafka's serializer does).
FORMATS: dict[str, tuple[dict[str, Any], MakeSchema, dict[int, str]]] = {
    "AVRO": (ORDER, avro_order, REFUSED),
    "JSON": (JSON_ORDER, json_order, JSON_REFUSED),
}


@pytest.mark.parametrize("schema_type", FORMATS)
def test_produce_validate_read_the_trusted_topic_fix_and_replay(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path, schema_type: str
) -> None:
    order, make, refused = FORMATS[schema_type]
    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/orders", f"{namespace}/orders-valid", f"{namespace}/orders-dlq"
    register_contract(services, source, order, [POSITIVE, NAMED], schema_type=schema_type)

    day = produce_a_day(pulsar_client, services.registry_url, source, ORDERS, make=make)
    assert day.refused == refused
    assert sorted(day.raw) == ["1", "2", "5", "garbage"]

    job = ValidationJob(source, valid, dlq, str(tmp_path / "checkpoint"), source_options(services))
    job.run(spark)

    # The trusted topic, read as any topic is: its own schema, the default config.
    app = stock_consumer(pulsar_client, services.registry_url, valid, make=make)
    read = read_values(app)
    assert [key for key, *_ in read] == ["1", "5"]
    for key, value, data, properties in read:
        assert value == ORDERS[int(key) - 1]
        assert (data, properties) == day.raw[key]  # forwarded untouched: same bytes, same id

    # The broker rolls the DLQ's ledger over and deletes what no subscription needs: the dead
    # letters stay, kept by the subscription the job made there first.
    roll_and_trim(services, dlq)
    assert subscriptions(services, dlq) == [DEAD_LETTER_SUBSCRIPTION]

    # The operator reads the DLQ as the source topic: the copy skips the rule that sent it there.
    dead = read_all(services, dlq, "--schema-topic", source)
    assert records(dead) == [ORDERS[1]]
    assert dead.returncode == 1 and len(errors(dead)) == 1 and "987654321" in errors(dead)[0]
    raw_copies = messages_by_key(pulsar_client, dlq)
    assert sorted(raw_copies) == ["2", "garbage"]
    assert raw_copies["2"][0] == day.raw["2"][0] and raw_copies["2"][1][RULE_NAME] == "named"
    assert RULE_NAME not in raw_copies["garbage"][1]

    # Fixed, and sent again to the source topic: the next run of the job passes it on.
    fixed = {**records(dead)[0], "item": "scone"}
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        create_producer(pulsar_client, source, make(factory)).send(fixed, partition_key="2")
    job.run(spark)

    assert [(key, value) for key, value, *_ in read_values(app)] == [("2", fixed)]
    assert sorted(messages_by_key(pulsar_client, dlq, name="audit-2")) == ["2", "garbage"]  # nothing new
    assert [m.partition_key() for m in drain(subscribe(pulsar_client, valid, name="count"))] == [
        "1",
        "5",
        "2",
    ]
    # What the registry now holds for the trusted topic: the source's version, its id and contract.
    described = cli(services, "describe", "--topic", valid, "--output", "json")
    assert described.returncode == 0, described.stderr
    [value_subject] = [s for s in json.loads(described.stdout)["subjects"] if s["field"] == "value"]
    source_id = int(day.raw["1"][1]["__schema_id"][4:], 16)
    assert (value_subject["versions"], value_subject["id"]) == ([1], source_id)
    assert [r["name"] for r in value_subject["ruleSet"]["domainRules"]] == ["positive", "named"]
