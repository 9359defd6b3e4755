"""Topics read into Arrow in plain Python (`pulsar_external_schema.arrow`), on the real broker and
registry: the Spark source's columns and values without Spark, on both readers; bounds by message
id and by publish time; batches of a size; the data tools (polars, pandas, DuckDB) over them; and
a user's mistakes, each one line before anything is read."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from conftest import Services, create_partitioned_topic
from native_support import required_extension
from spark_support import Produced, assert_same

from pulsar_external_schema import (
    ConfigError,
    SchemaRegistrySchemaFactory,
    SubjectNotFoundError,
    create_producer,
)
from pulsar_external_schema.arrow import read_batches, read_table
from pulsar_external_schema.tasks.columns import read_schema

READERS = ["python", "native"]


def connection(services: Services) -> dict[str, Any]:
    return {
        "service_url": services.pulsar_url,
        "admin_url": services.admin_url,
        "config": {"schema.registry.url": services.registry_url},
    }


@pytest.fixture(params=READERS)
def reader(request: pytest.FixtureRequest) -> str:
    if request.param == "native":
        required_extension()  # skips in the Python-path leg, fails where it should be built
    return str(request.param)


def by_order(table: Any) -> dict[int, dict[str, Any]]:
    return {row["value"]["id"]: row for row in table.to_pylist() if row["_valid"]}


def test_a_topic_reads_into_the_columns_of_the_spark_source(
    services: Services, orders: Produced, reader: str
) -> None:
    table = read_table(orders.topic, reader=reader, **connection(services))

    value = pa.struct(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("amount", pa.float64(), nullable=False),
            pa.field("note", pa.string()),
        ]
    )
    assert table.schema == read_schema(value, include_data=False)
    assert table.num_rows == orders.total
    rows = table.to_pylist()
    valid = {r["value"]["id"]: r["value"] for r in rows if r["_valid"]}
    assert valid == orders.valid  # every writer version decoded into the latest (v3)
    failed = [r for r in rows if r["_rule"] == "checkName"]
    assert {int(r["key"]) for r in failed} == orders.rule_failures
    assert all(r["value"] is None and not r["_valid"] for r in failed)
    assert dict(failed[0]["_failure"])["__rule.mode"] == "READ"
    undecodable = [r for r in rows if not r["_valid"] and r["_rule"] is None]
    assert len(undecodable) == len(orders.garbage) and all(r["_error"] for r in undecodable)
    assert {r["partition"] for r in rows} == {0, 1, 2, 3} and {r["topic"] for r in rows} == {orders.topic}
    ids = [(r["partition"], *r["messageId"].values()) for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(r["publishTime"].tzinfo is not None for r in rows)


def in_place_order(table: Any) -> Any:
    """The rows by partition and message id (readers of several partitions interleave nothing,
    but a comparison should not depend on the order ranges are read in)."""
    rows = table.select(["partition", "messageId"]).to_pylist()
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["partition"], *rows[i]["messageId"].values()))
    return table.take(order)


def test_both_readers_give_the_same_table(services: Services, orders: Produced) -> None:
    required_extension()
    native, python = (
        in_place_order(read_table(orders.topic, reader=path, include_data=True, **connection(services)))
        for path in ("native", "python")
    )
    assert_same(native, python)


def test_batches_stream_at_most_batch_size_rows(services: Services, orders: Produced, reader: str) -> None:
    batches = read_batches(orders.topic, batch_size=16, reader=reader, **connection(services))

    assert isinstance(batches, pa.RecordBatchReader)
    sizes = [batch.num_rows for batch in batches]
    assert sum(sizes) == orders.total
    assert max(sizes) == 16 and all(0 < size <= 16 for size in sizes)


def test_progress_is_told_after_each_batch_up_to_every_entry(
    services: Services, orders: Produced, reader: str
) -> None:
    from pulsar_external_schema.arrow import ReadProgress

    told: list[ReadProgress] = []
    sizes = [
        batch.num_rows
        for batch in read_batches(
            orders.topic, batch_size=16, reader=reader, progress=told.append, **connection(services)
        )
    ]

    assert [p.rows for p in told] == [sum(sizes[: i + 1]) for i in range(len(sizes))]
    entries = [p.entries for p in told]
    assert entries == sorted(entries) and len({p.total_entries for p in told}) == 1
    assert told[-1].entries == told[-1].total_entries and told[-1].rows_left == 0
    assert told[-1].rows == orders.total


def test_a_read_between_two_message_ids(services: Services, orders: Produced, reader: str) -> None:
    everything = read_table(orders.topic, reader=reader, **connection(services)).to_pylist()
    partition = f"{orders.topic}-partition-1"
    mine = [r for r in everything if r["partition"] == 1]
    mine.sort(key=lambda r: tuple(r["messageId"].values()))
    first, stop = mine[3], mine[-4]  # batched: both inside an entry of seven messages, most likely

    table = read_table(
        orders.topic,
        start={partition: first["messageId"]},
        end={partition: stop["messageId"]},
        reader=reader,
        **connection(services),
    )

    rows = table.to_pylist()
    read = sorted((r["partition"], *r["messageId"].values()) for r in rows)
    others = sorted((r["partition"], *r["messageId"].values()) for r in everything if r["partition"] != 1)
    wanted = [(1, *r["messageId"].values()) for r in mine[3:-4]]
    assert read == sorted([*others, *wanted])  # the other partitions whole, this one from first to stop


@pytest.fixture(scope="module")
def two_moments(services: Services) -> tuple[str, int, list[int], list[int]]:
    """A 2-partition topic: 10 readings, then (a second later) 10 more; the time between them."""
    import pulsar

    topic = f"persistent://public/default/arrow-times-{int(time.time() * 1000)}"
    create_partitioned_topic(services, topic, 2)
    schema_text = json.dumps({"type": "record", "name": "Reading", "fields": [{"name": "n", "type": "long"}]})
    client = pulsar.Client(services.pulsar_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
            schema = factory.avro(schema_text)
            producer = create_producer(client, topic, schema, batching_enabled=True, batching_max_messages=4)
            for n in range(10):
                producer.send_async({"n": n}, lambda *_: None, partition_key=str(n))
            producer.flush()
            time.sleep(1.2)
            between = int(time.time() * 1000)
            time.sleep(1.2)
            for n in range(10, 20):
                producer.send_async({"n": n}, lambda *_: None, partition_key=str(n))
            producer.flush()
            producer.close()
            schema.close()
    finally:
        client.close()
    return topic, between, list(range(10)), list(range(10, 20))


def numbers(table: Any) -> list[int]:
    return sorted(v["n"] for v in table.column("value").to_pylist())


def test_a_read_between_two_publish_times(
    services: Services, two_moments: tuple[str, int, list[int], list[int]], reader: str
) -> None:
    topic, between, before, after = two_moments
    read = {**connection(services), "reader": reader}
    at = dt.datetime.fromtimestamp(between / 1000, tz=dt.UTC)

    assert numbers(read_table(topic, start_time=at, **read)) == after
    assert numbers(read_table(topic, end_time=at, **read)) == before
    assert numbers(read_table(topic, start_time=between, end_time=between + 60_000_000, **read)) == after
    assert numbers(read_table(topic, start_time=at + dt.timedelta(hours=1), **read)) == []
    assert numbers(read_table(topic, end_time=at - dt.timedelta(hours=1), **read)) == []


def test_the_data_tools_take_the_table_and_the_stream(services: Services, orders: Produced) -> None:
    expected = sum(v["amount"] for v in orders.valid.values())

    table = read_table(orders.topic, **connection(services))
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    valid = frame.filter(pl.col("_valid")).select(pl.col("value").struct.field("amount").sum()).item()
    assert valid == pytest.approx(expected)

    pandas = table.to_pandas()
    assert len(pandas) == orders.total and int((~pandas["_valid"]).sum()) == orders.total - len(orders.valid)

    stream = read_batches(orders.topic, batch_size=10, **connection(services))  # noqa: F841 (DuckDB's name)
    found = duckdb.sql("select count(*), sum(value.amount) from stream where _valid")
    assert found is not None
    [(count, total)] = found.fetchall()
    assert count == len(orders.valid) and total == pytest.approx(expected)


def test_a_json_schema_topic_reads_on_both_readers(
    services: Services, pulsar_client: Any, topic: str, reader: str
) -> None:
    schema_text = json.dumps(
        {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            "required": ["sku", "qty"],
        }
    )
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.json(schema_text)
        producer = create_producer(pulsar_client, topic, schema)
        for i in range(5):
            producer.send({"sku": f"s{i}", "qty": i})
        producer.close()
        schema.close()

    table = read_table(topic, reader=reader, **connection(services))

    assert table.column("value").to_pylist() == [{"sku": f"s{i}", "qty": i} for i in range(5)]
    assert table.column("_valid").to_pylist() == [True] * 5


def test_mistakes_are_one_line_before_anything_is_read(services: Services, orders: Produced) -> None:
    given = connection(services)
    with pytest.raises(ConfigError, match=r"schema\.registry\.urll"):
        read_table(orders.topic, **{**given, "config": {"schema.registry.urll": services.registry_url}})
    with pytest.raises(ConfigError, match="give start or start_time, not both"):
        read_table(orders.topic, start={}, start_time=0, **given)
    with pytest.raises(ConfigError, match="start takes 'earliest', 'latest' or a message id"):
        read_table(orders.topic, start="first", **given)
    with pytest.raises(ConfigError, match="end names partitions that are not read"):
        read_table(orders.topic, end={f"{orders.topic}-partition-9": "latest"}, **given)
    with pytest.raises(ConfigError, match="batch_size takes a positive number"):
        read_table(orders.topic, batch_size=0, **given)
    with pytest.raises(ConfigError, match="tlsTrustCertsFilePathh"):
        read_table(orders.topic, tlsTrustCertsFilePathh="/nowhere", **given)
    with pytest.raises(SubjectNotFoundError, match="has no registered schema"):
        read_table("persistent://public/default/no-such-topic-for-arrow", **given)


def test_a_protobuf_field_with_presence_that_was_not_set_reads_as_null(
    services: Services, pulsar_client: Any, make_factory: Any, topic: str
) -> None:
    # tried as a user would: a `payment` oneof of `card` and `iban` read back card="" beside the
    # iban that was set, and an unset proto3 `optional` as ""
    from schemas import Payment

    producer = create_producer(pulsar_client, topic, make_factory().protobuf(Payment))
    producer.send(Payment(id=1, iban="iban-2"))
    producer.send(Payment(id=2, card="", note=""))
    producer.close()

    table = read_table(topic, protobuf_message_class="schemas.Payment", **connection(services))

    first, second = (row["value"] for row in table.to_pylist())
    assert first == {"id": 1, "card": None, "iban": "iban-2", "note": None, "line": None}
    assert second == {"id": 2, "card": "", "iban": None, "note": "", "line": None}


def test_a_protobuf_schema_with_an_enum_reads_from_its_text_on_a_registry_without_its_serialized_form(
    services: Services, pulsar_client: Any, make_factory: Any, topic: str
) -> None:
    # confluent-kafka's deserializer asks `?format=serialized`, which AxonOps v0.2.1 answers 500 for
    # a schema that declares an enum: the read failed whole with RegistryUnavailableError
    from schemas import Parcel

    producer = create_producer(pulsar_client, topic, make_factory().protobuf(Parcel))
    producer.send(Parcel(id=1, status=1))
    producer.send(Parcel(id=2))
    producer.close()

    table = read_table(topic, protobuf_message_class="schemas.Parcel", **connection(services))

    assert [row["value"] for row in table.to_pylist()] == [
        {"id": 1, "status": "SENT"},
        {"id": 2, "status": "PACKED"},
    ]


def test_a_protobuf_topic_reads_with_or_without_its_generated_class_on_both_paths(
    services: Services, pulsar_client: Any, make_factory: Any, topic: str
) -> None:
    from schemas import Shipment, two_shipments

    producer = create_producer(pulsar_client, topic, make_factory().protobuf(Shipment))
    for shipment in two_shipments():
        producer.send(shipment)
    producer.close()

    table = read_table(topic, protobuf_message_class="schemas.Shipment", **connection(services))

    first, second = (row["value"] for row in table.to_pylist())
    assert first["id"] == 7 and first["to"] == {"city": "Oslo"} and first["items"] == ["book", "pen"]
    assert dict(first["weights"]) == {"book": 400} and first["fragile"] is True
    assert first["sent"] == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)
    assert second["id"] == 8 and second["to"] is None and second["items"] == []
    # no class: the registry's .proto text is enough (compiled here), the same rows
    assert read_table(topic, **connection(services)).to_pylist() == table.to_pylist()
    # the extension reads the wire bytes into the same rows; the Python path too
    for reader in ("native", "python"):
        assert read_table(topic, reader=reader, **connection(services)).to_pylist() == table.to_pylist()
