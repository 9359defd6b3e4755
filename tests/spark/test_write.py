"""Writing DataFrames to Pulsar with external schemas, in batch and streaming."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services, create_partitioned_topic, parse_service_urls, service_pid, services_script
from contracts import drain, subscribe, unique
from native_support import required_extension
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


def test_a_value_column_the_schema_does_not_name_is_refused_not_left_out(
    spark: Any, services: Services, pulsar_client: Any
) -> None:
    """As Spark's own Avro writer: a `value` field the registered record lacks (here a misspelt
    optional field) fails the write naming it; fastavro would write the row without it."""
    target = f"persistent://public/default/{unique('spark-misspelt')}"
    record = {
        "type": "record",
        "name": "Line",
        "namespace": "acme",
        "fields": [{"name": "id", "type": "long"}, {"name": "qty", "type": "int", "default": 0}],
    }
    register(services, target, record)
    rows = spark.createDataFrame([((1, 5),)], "value struct<id:long,qyt:int>")
    with pytest.raises(Exception, match=r"field qyt: an int is not a field of record acme\.Line") as failure:
        rows.write.format(FORMAT).options(**source_options(services, topic=target)).mode("append").save()
    assert target in str(failure.value)
    assert drain(subscribe(pulsar_client, target, name="nothing")) == []


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


@pytest.mark.parametrize("named", [False, True], ids=["batched", "deduplicated-batches"])
def test_a_send_the_broker_refuses_fails_the_write_naming_the_topic(
    spark: Any, services: Services, named: bool
) -> None:
    # Each send's result reaches the task through a builtin callback (writer.TaskWriter._check):
    # one refused message among accepted ones must still fail the write.
    target = f"persistent://public/default/{unique('spark-refused')}"
    rows = [(str(i), b"x" * (6 * 1024 * 1024 if i == 3 else 10), {"n": str(i)}) for i in range(6)]
    frame = spark.createDataFrame(rows, "key string, data binary, properties map<string,string>")
    extra = {"producerName": unique("refused"), "sequenceBase": "1"} if named else {}
    with pytest.raises(Exception, match="could not be sent") as failure:
        frame.coalesce(1).write.format(FORMAT).options(
            **source_options(services, topic=target, **extra)
        ).mode("append").save()
    assert target in str(failure.value)


#: (the first run's producer, the second's): `data` rows are sent by the native extension or by
#: pulsar-client (the option `writer`), and a task may run again on an executor with the other.
RUNS = [("python", "python"), ("native", "native"), ("python", "native"), ("native", "python")]


@pytest.mark.parametrize(("first_writer", "second_writer"), RUNS, ids=["-then-".join(run) for run in RUNS])
def test_a_task_run_again_after_part_of_it_was_persisted_sends_the_rest_once_in_batches(
    services: Services, pulsar_client: Any, first_writer: str, second_writer: str
) -> None:
    # A task that names its producer sends batches closed by count and size, never by time
    # (writer.DETERMINISTIC_BATCHES): run again, it groups its rows as the first run did, so the
    # broker drops the batches it persisted (by their first sequence ids) and takes the rest.
    # Here the first run got one full batch of 1,000 through before its crash.
    import httpx
    import pyarrow as pa
    from spark_support import deduplicated_namespace

    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.writing.routing import DETERMINISTIC_BATCHES
    from pulsar_external_schema.writing.rows import TaskWriter

    topic = f"{deduplicated_namespace(services)}/{unique('rerun')}"
    name = unique("rerun")
    options = {
        writer: SourceOptions.parse(
            source_options(services, topic=topic, producerName=name, sequenceBase="7", writer=writer)
        )
        for writer in ("python", "native")
    }
    count = 2_500
    rows = pa.RecordBatch.from_pydict(
        {
            "key": [str(i) for i in range(count)],
            "data": [b"%d" % i for i in range(count)],
            "properties": pa.array([[]] * count, pa.map_(pa.string(), pa.string())),
        }
    )
    first = TaskWriter(options[first_writer], 7, 0)
    first.write(rows.slice(0, DETERMINISTIC_BATCHES["batching_max_messages"]))
    first.finish()
    again = TaskWriter(options[second_writer], 7, 0)
    again.write(rows)
    assert again.finish().sent == count  # sent: the broker acknowledges what it drops as a duplicate
    assert (next(iter(again.native.values()), None) is not None) == (second_writer == "native")

    consumer = subscribe(pulsar_client, topic, name=unique("check"))
    keys = [m.partition_key() for m in drain(consumer)]
    consumer.close()
    assert sorted(keys, key=int) == [str(i) for i in range(count)]  # each row once
    path = topic.removeprefix("persistent://")
    stats = httpx.get(f"{services.admin_url}/admin/v2/persistent/{path}/internalStats", timeout=30).json()
    assert stats["numberOfEntries"] == 3  # in bulk: 1,000 + 1,000 + 500 messages an entry


@pytest.fixture
def own_pulsar() -> Iterator[tuple[str, str, int]]:
    """A Pulsar of its own (it gets stopped): (service URL, admin URL, pid)."""
    name = f"stopped-{unique('pulsar')[-6:]}"
    urls = parse_service_urls(services_script("up", "--instance", name, "--only", "pulsar"))
    pid = service_pid(name, "pulsar")
    try:
        yield urls["PULSAR_SERVICE_URL"], urls["PULSAR_ADMIN_URL"], pid
    finally:
        os.kill(pid, signal.SIGCONT)
        services_script("down", "--instance", name)


def test_a_broker_that_stops_answering_fails_a_native_send_within_its_bound_and_the_rerun_writes_once(
    own_pulsar: tuple[str, str, int],
) -> None:
    """The sink's native producer on a broker that hangs (SIGSTOP) mid-write: the send fails
    within the operation timeout (the task fails, and Spark runs it again); once the broker
    answers, the task's rerun (same producer name, same sequence ids, same rows) leaves each
    message on the deduplicating topic once."""
    import httpx
    import pyarrow as pa

    module = required_extension()
    service_url, admin_url, pid = own_pulsar
    namespace = f"public/{unique('hung')}"
    httpx.put(f"{admin_url}/admin/v2/namespaces/{namespace}", json={}, timeout=30).raise_for_status()
    httpx.post(
        f"{admin_url}/admin/v2/namespaces/{namespace}/deduplication", json=True, timeout=30
    ).raise_for_status()
    topic = f"persistent://{namespace}/out"

    def rows(first: int, end: int) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict(
            {
                "data": pa.array([f"{i:>200}".encode() for i in range(first, end)], pa.binary()),
                "key": [f"k{i}" for i in range(first, end)],
                "properties": pa.array(
                    [[("i", str(i))] for i in range(first, end)], pa.map_(pa.string(), pa.string())
                ),
                "event_time": pa.array([1_700_000_000_000 + i for i in range(first, end)], pa.int64()),
            }
        )

    def task(client: Any, hang: bool = False) -> None:  # two Arrow batches, as Spark gives a task
        producer = client.producer(topic, "hung-0")
        try:
            producer.send(rows(0, 1000), 0)
            if hang:
                os.kill(pid, signal.SIGSTOP)  # accepts what is sent, never answers
            producer.send(rows(1000, 2000), 1000)
            producer.flush()
        finally:
            producer.close()

    # the topic loaded first, by a patient client: under the suite's load a new topic's first
    # producer can take longer than the 2 s bound (its ledger, deduplication's cursor)
    patient = module.Client(service_url, operation_timeout_ms=60_000, connection_timeout_ms=30_000)
    patient.producer(topic, "warm-up").close()
    client = module.Client(service_url, operation_timeout_ms=2000, connection_timeout_ms=2000)
    started = time.monotonic()
    try:
        # the extension says what timed out; the sink's error adds the topic and the producer
        with pytest.raises(module.NativeError, match=r"^sending: timed out"):
            task(client, hang=True)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert time.monotonic() - started < 15  # 2 s bounds, each wait
    deadline = time.monotonic() + 60
    while True:  # the broker catches up on what it was sent while stopped; the task runs again
        try:
            task(client)
            break
        except module.NativeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    import pulsar

    reader_client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        reader = reader_client.create_reader(topic, pulsar.MessageId.earliest)
        seen = []
        while reader.has_message_available():
            seen.append(int(reader.read_next(10_000).properties()["i"]))
    finally:
        reader_client.close()
    assert seen == list(range(2000))


@pytest.mark.parametrize("partitions", [0, 3], ids=["unpartitioned", "3-partitions"])
def test_the_native_producer_cuts_batches_and_writes_messages_as_pulsar_client_does(
    services: Services, pulsar_client: Any, partitions: int
) -> None:
    # Deduplication of a task run again holds across the two producers only if both cut the rows
    # into the same entries: the same rows, sent by each to a topic of its own, must give the same
    # message ids (entry, batch index) and the same messages (payload, key, properties, event
    # time; the sequence ids are the rerun tests' to hold). Sizes cross the 128 KiB limit of a
    # batch in every way: a row that fills it, one larger than it, rows that end exactly at it.
    # On a partitioned topic each row must also reach the same partition: a keyed row the one of
    # pulsar-client's BoostHash of its key, a keyless (or empty) key the task's.
    import datetime as dt

    import pyarrow as pa
    from spark_support import deduplicated_namespace

    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.writing.rows import TaskWriter

    namespace = deduplicated_namespace(services)
    sizes = [10] * 1_500 + [131_072, 5, 200_000, 7] + [65_536, 65_536, 3] + [1_000] * 300 + [131_071, 1, 1]
    count = len(sizes)
    start = dt.datetime(2026, 11, 26, 12, 0, 0, 123_000, tzinfo=dt.UTC)
    rows = pa.RecordBatch.from_pydict(
        {
            "key": [None if i % 7 == 0 else "" if i % 11 == 0 else f"k{i}" for i in range(count)],
            "data": [bytes([i % 251]) * size for i, size in enumerate(sizes)],
            "properties": pa.array(
                [None if i % 5 == 0 else [("z", str(i)), ("a", "x"), ("z", "last")] for i in range(count)],
                pa.map_(pa.string(), pa.string()),
            ),
            "eventTime": pa.array(
                [None if i % 3 == 0 else start + dt.timedelta(microseconds=1_001 * i) for i in range(count)],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    seen: dict[str, list[Any]] = {}
    for writer in ("python", "native"):
        topic = f"{namespace}/{unique(writer)}"
        if partitions:
            create_partitioned_topic(services, topic, partitions)
        options = SourceOptions.parse(
            source_options(services, topic=topic, producerName=unique("cut"), sequenceBase="3", writer=writer)
        )
        given = rows
        if writer == "native":  # Spark's Arrow types with large variable-width columns, which it casts
            given = rows.cast(
                rows.schema.set(0, pa.field("key", pa.large_string())).set(
                    1, pa.field("data", pa.large_binary())
                )
            )
        task = TaskWriter(options, 3, 1)
        task.write(given.slice(0, 1_000))
        task.write(given.slice(1_000))  # a task's rows come in several Arrow batches
        task.finish()
        consumer = subscribe(pulsar_client, topic, name=unique("check"))
        # each entry as its partition and its messages in order: two producers of a partition
        # (keyed rows and the task's keyless ones) interleave their entries as they are sent,
        # so entry ids are not compared, only what each entry holds
        entries: dict[tuple[int, int], list[Any]] = {}
        for m in drain(consumer):
            place = m.message_id()
            entries.setdefault((place.partition(), place.entry_id()), []).append(
                (place.batch_index(), m.data(), m.partition_key(), m.properties(), m.event_timestamp())
            )
        consumer.close()
        seen[writer] = sorted((partition, sorted(held)) for (partition, _), held in entries.items())
    assert sum(len(held) for _, held in seen["native"]) == count
    assert seen["native"] == seen["python"]
    if partitions:  # the rows went to every partition
        assert {partition for partition, _ in seen["native"]} == set(range(partitions))


@pytest.mark.parametrize(("first_writer", "second_writer"), RUNS, ids=["-then-".join(run) for run in RUNS])
def test_keyless_rows_of_a_task_run_again_go_where_they_went_once(
    services: Services, pulsar_client: Any, first_writer: str, second_writer: str
) -> None:
    # pulsar-client's round robin starts at a random partition: a task run again would send its
    # keyless rows to another partition, where the broker has not seen their sequence ids.
    import pyarrow as pa
    from spark_support import deduplicated_namespace

    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.writing.rows import TaskWriter

    topic = f"{deduplicated_namespace(services)}/{unique('keyless')}"
    create_partitioned_topic(services, topic, 3)
    name = unique("keyless")
    options = {
        writer: SourceOptions.parse(
            source_options(services, topic=topic, producerName=name, sequenceBase="2", writer=writer)
        )
        for writer in ("python", "native")
    }
    count = 2_500
    rows = pa.RecordBatch.from_pydict(
        {
            "data": [b"%d" % i for i in range(count)],
            "properties": pa.array([[]] * count, pa.map_(pa.string(), pa.string())),
        }
    )
    for _ in range(3):  # a first run that got 1,000 rows through, and two more runs of the task
        time.sleep(1.1)  # pulsar-client seeds its round robin's start with the time in seconds
        first = TaskWriter(options[first_writer], 2, 4)
        first.write(rows.slice(0, 1_000))
        first.finish()
        again = TaskWriter(options[second_writer], 2, 4)
        again.write(rows)
        again.finish()

    consumer = subscribe(pulsar_client, topic, name=unique("check"))
    messages = drain(consumer)
    consumer.close()
    assert sorted(int(m.data()) for m in messages) == list(range(count))  # each row once
    assert {m.topic_name().rsplit("-", 1)[1] for m in messages} == {"1"}  # task 4 of 3 partitions
