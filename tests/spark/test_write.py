"""Writing DataFrames to Pulsar with external schemas, in batch and streaming."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services, create_partitioned_topic
from contracts import drain, subscribe, unique
from spark_support import ORDER_V3, Produced, source_options

from pulsar_external_schema import SCHEMA_ID_PROPERTY, SchemaRegistrySchemaFactory
from pulsar_external_schema import schema_id as ids

FORMAT = "pulsar-external"


def register(
    services: Services, topic: str, schema: dict[str, Any], rules: list[dict[str, Any]] | None = None
) -> int:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from pulsar_external_schema.subjects import TopicName

    name = TopicName.parse(topic)
    payload: dict[str, Any] = {"schemaType": "AVRO", "schema": json.dumps(schema)}
    if rules:
        payload["ruleSet"] = {"domainRules": rules}
    client = SchemaRegistryClient({"url": services.registry_url})
    return int(
        client.register_schema(
            f"{name.tenant}.{name.namespace}.{name.local_name}-value", Schema.from_dict(payload)
        )
    )


def amount_rule(on_failure: str, **params: str) -> dict[str, Any]:
    """A WRITE condition the orders with large amounts fail."""
    rule: dict[str, Any] = {
        "name": "smallAmounts",
        "kind": "CONDITION",
        "type": "CEL",
        "mode": "WRITE",
        "expr": "message.amount < 100.0",
        "onFailure": on_failure,
    }
    return {**rule, "params": params} if params else rule


def valid_orders(spark: Any, services: Services, orders: Produced) -> Any:
    return (
        spark.read.format(FORMAT)
        .options(**source_options(services, topic=orders.topic))
        .load()
        .where("_valid")
        .select("key", "value", "eventTime")
    )


def consume_values(services: Services, pulsar_client: Any, topic: str) -> list[tuple[Any, str]]:
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(json.dumps(ORDER_V3))
        consumer = subscribe(pulsar_client, topic, schema)
        messages = drain(consumer)
        values = [(m.value(), m.properties()[SCHEMA_ID_PROPERTY]) for m in messages]
        consumer.close()
    return values


def test_writer_round_trip_encodes_rows_with_the_registered_schema(
    spark: Any, services: Services, pulsar_client: Any, orders: Produced
) -> None:
    target = f"persistent://public/default/{unique('spark-written')}"
    create_partitioned_topic(services, target, 2)
    schema_id = register(services, target, ORDER_V3)

    valid_orders(spark, services, orders).write.format(FORMAT).options(
        **source_options(services, topic=target)
    ).mode("append").save()

    values = consume_values(services, pulsar_client, target)
    assert {v["id"]: v for v, _ in values} == orders.valid
    assert len(values) == len(orders.valid)
    assert {p for _, p in values} == {ids.to_property(ids.confluent_id(schema_id))}

    back = spark.read.format(FORMAT).options(**source_options(services, topic=target)).load()
    assert {r.value.id: r.value.asDict() for r in back.collect() if r._valid} == orders.valid


def test_writer_runs_write_rules_and_names_the_failing_rule(
    spark: Any, services: Services, orders: Produced
) -> None:
    target = f"persistent://public/default/{unique('spark-guarded')}"
    register(services, target, ORDER_V3, [amount_rule("ERROR")])
    with pytest.raises(Exception, match="smallAmounts") as failure:
        valid_orders(spark, services, orders).write.format(FORMAT).options(
            **source_options(services, topic=target)
        ).mode("append").save()
    assert target in str(failure.value)


def test_stream_writer_with_producer_name_writes_each_row_once(
    spark: Any, services: Services, pulsar_client: Any, orders: Produced, tmp_path: Path
) -> None:
    target = f"persistent://public/default/{unique('spark-streamed')}"
    register(services, target, ORDER_V3)
    query = (
        spark.readStream.format(FORMAT)
        .options(**source_options(services, topic=orders.topic, maxEntriesPerPartition="4"))
        .load()
        .where("_valid")
        .select("key", "value")
        .writeStream.format(FORMAT)
        .options(**source_options(services, topic=target, producerName=unique("writer")))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    values = consume_values(services, pulsar_client, target)
    assert sorted(v["id"] for v, _ in values) == sorted(orders.valid)


def test_batch_write_with_producer_name_needs_a_sequence_base(
    spark: Any, services: Services, orders: Produced
) -> None:
    with pytest.raises(Exception, match="sequenceBase"):
        valid_orders(spark, services, orders).write.format(FORMAT).options(
            **source_options(services, topic=orders.topic, producerName="p")
        ).mode("append").save()


def test_writer_sends_rows_failing_a_dlq_rule_to_the_dlq_topic(
    spark: Any, services: Services, pulsar_client: Any, orders: Produced
) -> None:
    target = f"persistent://public/default/{unique('spark-dlq-rule')}"
    dlq = f"{target}-dlq"
    register(services, target, ORDER_V3, [amount_rule("DLQ", **{"dlq.topic": dlq})])
    valid_orders(spark, services, orders).write.format(FORMAT).options(
        **source_options(services, topic=target)
    ).mode("append").save()

    small = {i for i, v in orders.valid.items() if v["amount"] < 100.0}
    assert {v["id"] for v, _ in consume_values(services, pulsar_client, target)} == small
    dead = drain(subscribe(pulsar_client, dlq, name=unique("dlq")))
    assert len(dead) == len(orders.valid) - len(small)
    assert {m.properties()["__rule.name"] for m in dead} == {"smallAmounts"}
    assert {json.loads(m.data())["id"] for m in dead} == set(orders.valid) - small
