"""Reading a topic with three writer versions and invalid messages: batch, offsets, streaming."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services, create_partitioned_topic
from contracts import unique
from spark_support import Produced, produce_orders, source_options

pytestmark = pytest.mark.usefixtures("reader_path")

FORMAT = "pulsar-external"


def read(spark: Any, services: Services, **options: str) -> Any:
    return spark.read.format(FORMAT).options(**source_options(services, **options)).load()


def test_batch_read_decodes_every_version_into_the_reader_schema(
    spark: Any, services: Services, orders: Produced
) -> None:
    df = read(spark, services, topic=orders.topic)
    rows = df.collect()

    assert df.rdd.getNumPartitions() == 4  # one Spark partition per topic partition
    assert len(rows) == orders.total
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,name:string,amount:double,note:string>"
    )
    valid = {r.value.id: r.value.asDict() for r in rows if r._valid}
    assert valid == orders.valid  # v1 rows got v2's default amount and v3's null note
    assert all(r._error is None and r._rule is None and r._failure is None for r in rows if r._valid)
    assert {r.partition for r in rows} == {0, 1, 2, 3}
    assert {r.topic for r in rows} == {orders.topic}
    ids = [(r.partition, r.messageId.ledgerId, r.messageId.entryId, r.messageId.batchIndex) for r in rows]
    assert len(set(ids)) == len(ids)
    assert any(r.messageId.batchIndex > 0 for r in rows)  # producers batched
    assert all(r.publishTime is not None for r in rows)
    assert all(r.schemaId is not None for r in rows if r._valid)


def test_failed_rules_and_undecodable_messages_are_rows_that_say_why(
    spark: Any, services: Services, orders: Produced
) -> None:
    rows = read(spark, services, topic=orders.topic).where("NOT _valid").collect()

    by_rule = [r for r in rows if r._rule == "checkName"]
    assert {r.value for r in by_rule} == {None}
    assert len(by_rule) == len(orders.rule_failures)
    assert {int(r.key) for r in by_rule} == orders.rule_failures
    failure = dict(by_rule[0]._failure)
    assert failure["__rule.name"] == "checkName"
    assert failure["__rule.mode"] == "READ"
    assert failure["__rule.topic"].startswith(f"{orders.topic}-partition-")  # where it was read
    assert failure["__rule.subject"].endswith("-value")
    assert "size(message.name) > 0" in by_rule[0]._error

    garbage = sorted((r for r in rows if r._rule is None), key=lambda r: r.key)
    assert len(garbage) == len(orders.garbage) == 3
    malformed, no_id, unknown = garbage
    assert "could not decode" in malformed._error and orders.topic in malformed._error
    assert "no __schema_id (or __value_schema_id) property" in no_id._error and no_id.schemaId is None
    assert unknown.schemaId == 987_654_321 and "unknown schema" in unknown._error
    assert all(dict(r._failure)["__rule.exception"] == r._error for r in garbage)


def test_data_column_carries_the_original_bytes(spark: Any, services: Services, orders: Produced) -> None:
    rows = read(spark, services, topic=orders.topic, includeData="true").where("key = 'garbage-1'").collect()
    assert [bytes(r.data) for r in rows] == [b"plain bytes"]


def _ids(rows: list[Any]) -> dict[tuple[int, int, int, int], Any]:
    return {(r.partition, r.messageId.ledgerId, r.messageId.entryId, r.messageId.batchIndex): r for r in rows}


def test_starting_and_ending_offsets_at_batch_index_boundaries(
    spark: Any, services: Services, orders: Produced
) -> None:
    every = _ids(read(spark, services, topic=orders.topic).collect())
    partition0 = sorted(k for k in every if k[0] == 0)
    # a start and an end inside batched entries (batch index > 0)
    inside = [k for k in partition0 if k[3] > 0]
    start, end = inside[1], inside[-2]
    name = f"{orders.topic}-partition-0"

    def position(key: tuple[int, int, int, int]) -> dict[str, int]:
        return {"ledgerId": key[1], "entryId": key[2], "batchIndex": key[3]}

    rows = read(
        spark,
        services,
        topic=orders.topic,
        startingOffsets=json.dumps({name: position(start)}),
        endingOffsets=json.dumps({name: position(end)}),
    ).collect()
    got = _ids(rows)
    expected_p0 = [k for k in partition0 if start <= k < end]  # start inclusive, end exclusive
    assert sorted(k for k in got if k[0] == 0) == expected_p0
    assert sorted(k for k in got if k[0] != 0) == sorted(k for k in every if k[0] != 0)

    # the whole entry as a bound: batch index -1
    entry = {"ledgerId": start[1], "entryId": start[2]}
    rows = read(
        spark,
        services,
        topic=orders.topic,
        startingOffsets=json.dumps({name: entry}),
        endingOffsets=json.dumps({name: entry}),
    ).collect()
    assert [k for k in _ids(rows) if k[0] == 0] == []

    assert read(spark, services, topic=orders.topic, startingOffsets="latest").count() == 0


def test_min_partitions_reads_the_topic_partitions_in_pieces_each_message_once(
    spark: Any, services: Services, orders: Produced
) -> None:
    every = _ids(read(spark, services, topic=orders.topic).collect())
    df = read(spark, services, topic=orders.topic, minPartitions="10")
    rows = df.collect()

    assert df.rdd.getNumPartitions() >= 10  # four topic partitions, in pieces
    assert len(rows) == len(every)
    assert _ids(rows).keys() == every.keys()
    assert {key: row.value for key, row in _ids(rows).items()} == {
        key: row.value for key, row in every.items()
    }


def test_bad_options_fail_with_what_to_change(spark: Any, services: Services, orders: Produced) -> None:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    errors = (PySparkException, Py4JJavaError, Exception)
    with pytest.raises(errors, match="startingOffsets"):
        read(spark, services, topic=orders.topic, startingOffsets="first").collect()
    with pytest.raises(errors, match=r"unknown config key 'schema\.registry\.ulr'"):
        spark.read.format(FORMAT).options(
            **{**source_options(services, topic=orders.topic), "schema.registry.ulr": "x"}
        ).load()
    with pytest.raises(errors, match="has no registered schema"):
        read(spark, services, topic=f"{orders.topic}-nothing-here").collect()


def _stream(spark: Any, services: Services, **options: str) -> Any:
    return spark.readStream.format(FORMAT).options(**source_options(services, **options)).load()


def _parquet_ids(spark: Any, path: Path) -> list[int]:
    return [r.id for r in spark.read.parquet(str(path)).where("_valid").select("value.id").collect()]


def test_streaming_available_now_reads_everything_once_in_several_batches(
    spark: Any, services: Services, orders: Produced, tmp_path: Path
) -> None:
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = (
        _stream(spark, services, topic=orders.topic, maxEntriesPerPartition="3")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(batches) > 1  # the limit split the backlog
    table = spark.read.parquet(str(out))
    assert table.count() == orders.total
    ids = _parquet_ids(spark, out)
    assert sorted(ids) == sorted(orders.valid)


def test_restart_from_checkpoint_mid_stream_loses_and_repeats_nothing(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    topic = f"persistent://public/default/{unique('spark-restart')}"
    create_partitioned_topic(services, topic, 4)
    first = produce_orders(services, pulsar_client, topic, 1, 60, 1)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start(trigger: dict[str, Any]) -> Any:
        return (
            _stream(spark, services, topic=topic, maxEntriesPerPartition="1")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(**trigger)
            .start()
        )

    query = start({"processingTime": "1 second"})
    while not [p for p in query.recentProgress if p["numInputRows"] > 0]:
        query.awaitTermination(0.5)
        assert query.exception() is None
    query.stop()  # mid-stream: part of the backlog is written, part is not
    written = spark.read.parquet(str(out)).count()
    assert 0 < written < first.total

    second = produce_orders(services, pulsar_client, topic, 61, 30, 1)
    start({"availableNow": True}).awaitTermination()

    ids = _parquet_ids(spark, out)  # no contract on this topic: every order is valid
    assert sorted(ids) == [*first.order_ids, *second.order_ids]  # each once
    assert spark.read.parquet(str(out)).count() == first.total + second.total


def test_topic_pattern_reads_matching_topics_and_picks_up_new_ones(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    prefix = unique("spark-pattern")
    first, second = f"persistent://public/default/{prefix}-a", f"persistent://public/default/{prefix}-b"
    create_partitioned_topic(services, first, 2)
    produce_orders(services, pulsar_client, first, 1, 10, 1)
    produce_orders(services, pulsar_client, second, 11, 10, 1)  # not partitioned
    pattern = f"persistent://public/default/{prefix}-.*"

    rows = read(spark, services, topicPattern=pattern).collect()
    assert sorted(r.value.id for r in rows) == list(range(1, 21))
    assert {(r.topic, r.partition) for r in rows} == {(first, 0), (first, 1), (second, -1)}

    out = tmp_path / "out"
    query = (
        _stream(spark, services, topicPattern=pattern)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        later = f"persistent://public/default/{prefix}-c"
        while not query.recentProgress or query.recentProgress[-1]["batchId"] < 1:
            query.awaitTermination(0.5)
        produce_orders(services, pulsar_client, later, 21, 5, 1)  # a topic created after the start
        deadline = 120
        while deadline > 0 and (not out.exists() or spark.read.parquet(str(out)).count() < 25):
            query.awaitTermination(1)
            deadline -= 1
            assert query.exception() is None
    finally:
        query.stop()
    assert sorted(_parquet_ids(spark, out)) == list(range(1, 26))


def test_a_version_registered_after_planning_does_not_change_a_running_read(
    spark: Any, services: Services, pulsar_client: Any
) -> None:
    from spark_support import CHECK_NAME, ORDER_V2, register_contract

    topic = f"persistent://public/default/{unique('spark-pinned')}"
    produce_orders(services, pulsar_client, topic, 1, 8, 1)
    planned = read(spark, services, topic=topic)  # the reader schema is v1 from here on
    refuse_all = {**CHECK_NAME, "name": "refuseAll", "expr": "size(message.name) > 1000"}
    register_contract(services, topic, ORDER_V2, [refuse_all])  # v2: one more field, and a rule

    rows = planned.collect()  # read with v1 and v1's (no) rules
    assert [r._valid for r in rows] == [True] * 8 and "amount" not in rows[0].value
    replanned = read(spark, services, topic=topic).collect()
    assert {r._rule for r in replanned} == {"refuseAll"}  # a new query reads with v2


def test_a_rule_set_added_as_a_version_of_the_same_schema_runs_on_read(
    spark: Any, services: Services, pulsar_client: Any
) -> None:
    # A registry may give that version the writer's id (AxonOps does, comparing the schemas'
    # canonical forms), so the id alone finds the version whose text it was given first, without
    # rules: the source reads into the version the driver resolved.
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from spark_support import CHECK_NAME, ORDER_V1

    topic = f"persistent://public/default/{unique('spark-rules-later')}"
    produce_orders(services, pulsar_client, topic, 1, 8, 1)
    before = read(spark, services, topic=topic).collect()  # the workers keep this version's schema
    assert [r._valid for r in before] == [True] * 8
    refuse_all = {**CHECK_NAME, "name": "refuseAll", "expr": "size(message.name) > 1000"}
    registry = SchemaRegistryClient({"url": services.registry_url})
    subject = f"public.default.{topic.rsplit('/', 1)[1]}-value"
    text = json.dumps(ORDER_V1, indent=2)  # the same schema, written out differently, with a rule
    rules = {"domainRules": [refuse_all]}
    registry.register_schema(
        subject, Schema.from_dict({"schemaType": "AVRO", "schema": text, "ruleSet": rules})
    )
    assert registry.get_version(subject, 2).schema_id == registry.get_version(subject, 1).schema_id

    rows = read(spark, services, topic=topic).collect()
    assert len(rows) == 8 and {r._rule for r in rows} == {"refuseAll"}
    assert not any(r._valid for r in rows)
