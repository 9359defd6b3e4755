"""The two writers of `write_table` (and of the Spark sink, `writing/rows.py`) held to each other
on the real broker and registry: `writer="python"` (pulsar-client's producer with the external
schema) and `writer="native"` (each value encoded by the producer's `encode_message`, sent by the
extension's sender). For generated record schemas and rows (keys, empty keys, no keys, event
times, properties; topics of 0, 1 and 3 partitions), the two topics read back the same: per
partition, the same messages in the same order with the same payload bytes, properties, key,
event time and schema id; and the values read are the rows written.

With a producer name, the two writers also give every row the same sequence id on the same
partition, in the same entries: a write made by one and run again by the other on a namespace
with deduplication sends nothing twice (the broker drops an entry whose first sequence id it has,
by producer name, per partition).
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from typing import Any

import pyarrow as pa
import pytest
from avro_schemas import has_null_type, record_of
from confluent_kafka.schema_registry import Schema
from conftest import Services, create_partitioned_topic
from contracts import unique
from native_support import PYTHON_LEG, required_extension
from spark_support import Produced, deduplicated_namespace

from pulsar_external_schema import ConfigError, SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.arrow import read_table, write_table
from pulsar_external_schema.tasks.topic_metadata import full_topic_name

pytestmark = pytest.mark.integration


def connection(services: Services) -> dict[str, Any]:
    return {
        "service_url": services.pulsar_url,
        "admin_url": services.admin_url,
        "config": {"schema.registry.url": services.registry_url},
    }


def new_topic(services: Services, namespace: str, partitions: int) -> str:
    topic = f"{namespace}/{unique('writers')}"
    if partitions:
        create_partitioned_topic(services, topic, partitions)
    return topic


Sent = dict[tuple[int, bool], list[tuple[Any, ...]]]


def sent(services: Services, topic: str) -> Sent:
    """Each partition's messages with a key, and those without, each in the order persisted: what
    a consumer sees of each producer (a named writer sends a partitioned topic's keyless rows as a
    producer of their own, `writing/routing.keyless_name`, whose entries interleave with the keyed
    producer's as the two flush)."""
    table = read_table(topic, include_data=True, reader="python", **connection(services))
    assert all(table.column("_valid").to_pylist()), table.column("_error").to_pylist()
    messages: Sent = defaultdict(list)
    for row in sorted(table.to_pylist(), key=lambda r: (r["partition"], *r["messageId"].values())):
        messages[row["partition"], not row["key"]].append(
            (row["key"], row["data"], sorted(row["properties"]), row["eventTime"], row["schemaId"])
        )
    return dict(messages)


ITEM = {
    "type": "record",
    "name": "Item",
    "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
}
POSITIVE_QTY = {
    "name": "positiveQty",
    "kind": "CONDITION",
    "type": "CEL",
    "mode": "WRITE",
    "expr": "message.qty > 0",
    "onFailure": "ERROR",
}


def items_table(quantities: list[int]) -> Any:
    return pa.table(
        {
            "key": [f"k{i}" for i in range(len(quantities))],
            "value": pa.array(
                [{"sku": f"s{i}", "qty": q} for i, q in enumerate(quantities)],
                pa.struct([("sku", pa.string()), ("qty", pa.int32())]),
            ),
        }
    )


@pytest.fixture(params=["python", "native"])
def writer(request: pytest.FixtureRequest) -> str:
    if request.param == "native":
        required_extension()  # skips in the Python-path leg, fails where it should be built
    return str(request.param)


def test_write_table_encodes_each_row_and_reports_the_rows_a_rule_refuses(
    services: Services, topic: str, writer: str
) -> None:

    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(
            Schema.from_dict(
                {"schemaType": "AVRO", "schema": json.dumps(ITEM), "ruleSet": {"domainRules": [POSITIVE_QTY]}}
            )
        )
        written = write_table(
            topic,
            items_table([3, 0, 5, -1, 2]),
            service_url=services.pulsar_url,
            schema=schema,
            writer=writer,
        )
        schema.close()

    assert (written.sent, written.dead_lettered) == (3, 0)
    assert [(r.row, r.key) for r in written.refused] == [(1, "k1"), (3, "k3")]
    assert all("positiveQty" in str(r.error) for r in written.refused)
    table = read_table(topic, **connection(services))
    assert table.column("value").to_pylist() == [
        {"sku": f"s{i}", "qty": q} for i, q in ((0, 3), (2, 5), (4, 2))
    ]
    assert table.column("key").to_pylist() == ["k0", "k2", "k4"]


def test_values_of_a_plan_without_rules_are_written_by_the_extension_and_the_rest_one_by_one(
    services: Services, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native writer encodes a topic's first value as a producer does, which makes the plan;
    the plan runs no rules, so the extension writes the other rows' Avro bodies from the column
    (`native/src/encode.rs`), and only a row it is not sure of (a quantity outside an Avro int)
    is encoded one by one: refused there, with the Python path's error, and reported."""
    required_extension()
    from pulsar_external_schema import producer as producing

    encoded_one_by_one: list[Any] = []
    encode_message = producing.encode_message

    def counted(schema: Any, topic: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        encoded_one_by_one.append(value)
        return encode_message(schema, topic, value, *args, **kwargs)

    monkeypatch.setattr(producing, "encode_message", counted)
    quantities = [i % 7 + 1 for i in range(3000)]
    quantities[1234] = 2**31
    data = pa.table(
        {
            "key": [f"k{i}" for i in range(3000)],
            "value": pa.array(  # as pyarrow infers them: qty an int64
                [{"sku": f"s{i}", "qty": q} for i, q in enumerate(quantities)]
            ),
            "properties": pa.array(
                [[("origin", "nightly")] if i % 2 else None for i in range(3000)],
                pa.map_(pa.string(), pa.string()),
            ),
        }
    )
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(json.dumps(ITEM))
        written = write_table(topic, data, service_url=services.pulsar_url, schema=schema, writer="native")
        schema.close()

    assert encoded_one_by_one == [{"sku": "s0", "qty": 1}, {"sku": "s1234", "qty": 2**31}]
    assert (written.sent, [(r.row, r.key) for r in written.refused]) == (2999, [(1234, "k1234")])
    assert "qty" in str(written.refused[0].error) and "out of range" in str(written.refused[0].error)
    table = read_table(topic, **connection(services))
    assert all(table.column("_valid").to_pylist())
    kept = [i for i in range(3000) if i != 1234]
    assert table.column("value").to_pylist() == [{"sku": f"s{i}", "qty": quantities[i]} for i in kept]
    assert table.column("key").to_pylist() == [f"k{i}" for i in kept]
    assert [dict(p).get("origin") for p in table.column("properties").to_pylist()] == [
        "nightly" if i % 2 else None for i in kept
    ]


ITEM_PROTO = """syntax = "proto3";
package shop;
message Item {
  string sku = 1;
  int32 qty = 2;
  repeated string tags = 3;
}
"""


def test_protobuf_values_are_written_without_a_schema_or_class_by_the_extension_and_the_rest_one_by_one(
    services: Services, topic: str, writer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Protobuf subject registered as text: `write_table` with no schema and no class builds the
    message from the registry's text; natively, the first value makes the plan and the extension
    writes the other rows' bodies from the column (`native/src/protobuf_encode.rs`), and only a
    row it is not sure of (a quantity outside an int32) is encoded one by one: refused there, a
    typed error naming the field, not the value."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from pulsar_external_schema import producer as producing

    if writer == "native":
        required_extension()
    subject = f"{full_topic_name(topic).removeprefix('persistent://').replace('/', '.')}-value"
    SchemaRegistryClient({"url": services.registry_url}).register_schema(
        subject, Schema(ITEM_PROTO, "PROTOBUF")
    )
    encoded_one_by_one: list[str] = []
    encode_message = producing.encode_message

    def counted(schema: Any, topic: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        encoded_one_by_one.append(value.sku)
        return encode_message(schema, topic, value, *args, **kwargs)

    monkeypatch.setattr(producing, "encode_message", counted)
    quantities = [i % 7 for i in range(3000)]
    quantities[1234] = 2**31
    values = [{"sku": f"s{i}", "qty": q, "tags": ["a"] * (i % 3)} for i, q in enumerate(quantities)]
    data = pa.table({"key": [f"k{i}" for i in range(3000)], "value": pa.array(values)})  # qty an int64
    config = {"schema.registry.url": services.registry_url}
    written = write_table(topic, data, service_url=services.pulsar_url, config=config, writer=writer)

    if writer == "native":  # s1234 too went one by one: ParseDict refused it before its encode
        assert encoded_one_by_one == ["s0"]
    assert (written.sent, [(r.row, r.key) for r in written.refused]) == (2999, [(1234, "k1234")])
    error = str(written.refused[0].error)
    assert "field qty" in error and str(2**31) not in error and subject in error
    table = read_table(topic, **connection(services))
    assert all(table.column("_valid").to_pylist())
    assert table.column("value").to_pylist() == [v for i, v in enumerate(values) if i != 1234]


def test_write_conditions_are_judged_over_the_column_and_the_rows_they_fail_encoded_one_by_one(
    services: Services, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A WRITE condition in the everyday CEL subset is judged over the column: the rows it passes
    for sure are written by the extension, and only the others are encoded as a producer encodes
    them, where the rule engine refuses them with its error. A replayed DLQ copy (its
    `__rule.name` property) skips the rule it names, as a producer's would, and is sent."""
    required_extension()
    from pulsar_external_schema import producer as producing

    encoded_one_by_one: list[int] = []
    encode_message = producing.encode_message

    def counted(schema: Any, topic: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        encoded_one_by_one.append(int(value["sku"][1:]))
        return encode_message(schema, topic, value, *args, **kwargs)

    monkeypatch.setattr(producing, "encode_message", counted)
    count = 3000
    failing = [i for i in range(count) if i % 100 == 50]
    replayed = 150
    data = items_table([0 if i in failing else i % 7 + 1 for i in range(count)])
    data = data.append_column(
        "properties",
        pa.array(
            [[("__rule.name", "positiveQty")] if i == replayed else None for i in range(count)],
            pa.map_(pa.string(), pa.string()),
        ),
    )
    contract = {"schemaType": "AVRO", "schema": json.dumps(ITEM), "ruleSet": {"domainRules": [POSITIVE_QTY]}}
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(Schema.from_dict(contract))
        written = write_table(topic, data, service_url=services.pulsar_url, schema=schema, writer="native")
        schema.close()

    assert encoded_one_by_one == [0, *failing]
    refused = [i for i in failing if i != replayed]
    assert (written.sent, [r.row for r in written.refused]) == (count - len(refused), refused)
    assert all("positiveQty" in str(r.error) for r in written.refused)
    table = read_table(topic, **connection(services))
    assert [int(k[1:]) for k in table.column("key").to_pylist()] == [
        i for i in range(count) if i not in refused
    ]
    assert all(table.column("_valid").to_pylist())


def test_a_time_python_cannot_hold_is_refused_and_its_neighbours_written(
    services: Services, topic: str, writer: str
) -> None:
    """A timestamp past the year 9999 has no Python value: the row is refused and reported (a
    value outside the schema's types), not the write failed; the extension, which could write it,
    leaves it to the producer's path, so that both writers give the same answer."""
    schema_json = {
        "type": "record",
        "name": "Stamp",
        "fields": [{"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}],
    }
    times = [0, 253_402_300_800_000_000, 1_700_000_000_000_000]  # 10000-01-01T00:00:00Z between
    data = pa.table(
        {"value": pa.array([{"at": t} for t in times], pa.struct([("at", pa.timestamp("us", "UTC"))]))}
    )
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(json.dumps(schema_json))
        written = write_table(topic, data, service_url=services.pulsar_url, schema=schema, writer=writer)
        schema.close()

    assert written.sent == 2 and [r.row for r in written.refused] == [1]
    assert "no Python form" in str(written.refused[0].error)
    assert written.refused[0].error.topic == full_topic_name(topic)
    table = read_table(topic, **connection(services))
    assert table.column("value").cast(pa.struct([("at", pa.int64())])).to_pylist() == [
        {"at": 0},
        {"at": times[2]},
    ]


ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "sku", "type": "string"},
        {"name": "price", "type": ["null", "double"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
ORDER_JSON = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "sku": {"type": "string"},
        "price": {"type": ["number", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "sku", "tags"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("schema_type", ["AVRO", "JSON"])
def test_a_table_of_records_is_written_as_values_and_reads_back_equal(
    services: Services, topic: str, writer: str, schema_type: str
) -> None:
    """What `pa.Table.from_pylist(records)` gives (the record's fields as columns, no `value`
    column) is a table of values: each row a message, encoded with the schema; the columns named
    by `key_column` and `event_time_column` are also its key and event time, and stay fields of
    the value; `properties_column` is the message's properties only."""
    import datetime as dt

    at = dt.datetime(2026, 12, 7, 9, 30, tzinfo=dt.UTC)
    records: list[dict[str, Any]] = [
        {"id": i, "sku": f"s{i}", "price": None if i == 2 else i * 1.5, "tags": ["a"] * (i % 3)}
        for i in range(5)
    ]
    if schema_type == "AVRO":
        records = [{**r, "at": at + dt.timedelta(minutes=r["id"])} for r in records]
    table = pa.Table.from_pylist(records)
    origins = [[("origin", f"batch-{i % 2}")] for i in range(5)]
    table = table.append_column("origin", pa.array(origins, pa.map_(pa.string(), pa.string())))
    timed: dict[str, Any] = {"event_time_column": "at"} if schema_type == "AVRO" else {}
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = (
            factory.avro(json.dumps(ORDER)) if schema_type == "AVRO" else factory.json(json.dumps(ORDER_JSON))
        )
        written = write_table(
            topic,
            table,
            service_url=services.pulsar_url,
            schema=schema,
            writer=writer,
            key_column="id",
            properties_column="origin",
            **timed,
        )
        schema.close()

    assert (written.sent, written.refused) == (5, [])
    read = read_table(topic, **connection(services))
    assert all(read.column("_valid").to_pylist()), read.column("_error").to_pylist()
    assert read.column("value").to_pylist() == records
    if schema_type == "AVRO":
        assert read.column("eventTime").to_pylist() == [r["at"] for r in records]
    assert read.column("key").to_pylist() == [str(i) for i in range(5)]
    assert [dict(p)["origin"] for p in read.column("properties").to_pylist()] == [
        f"batch-{i % 2}" for i in range(5)
    ]


def test_write_table_forwards_messages_read_with_their_data_untouched(
    services: Services, orders: Produced, topic: str, writer: str
) -> None:
    # the valid ones, as the validation job forwards them (an unknown id has no version to register)
    read = read_table(orders.topic, include_data=True, **connection(services))
    read = read.filter(read.column("_valid"))

    written = write_table(
        topic,
        read.select(["key", "data", "properties", "eventTime"]),
        service_url=services.pulsar_url,
        config={"schema.registry.url": services.registry_url},
        writer=writer,
    )

    assert (written.sent, written.refused) == (len(orders.valid), [])
    again = read_table(topic, include_data=True, **connection(services))
    assert sorted(again.column("data").to_pylist()) == sorted(read.column("data").to_pylist())
    assert sorted(v["id"] for v in again.column("value").to_pylist()) == sorted(orders.valid)
    assert all(again.column("_valid").to_pylist())


def test_write_table_run_again_with_its_producer_name_sends_nothing_twice(
    services: Services, pulsar_client: Any
) -> None:
    topic = f"{deduplicated_namespace(services)}/items"
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(json.dumps(ITEM))
        for _ in range(2):  # a write that failed after the broker had its messages, run again
            written = write_table(
                topic,
                items_table([1, 2, 3, 4]),
                service_url=services.pulsar_url,
                schema=schema,
                producer_name="nightly-items",
                sequence_base=20261129,
            )
            assert written.sent == 4
        schema.close()

    assert read_table(topic, **connection(services)).num_rows == 4


def test_a_table_of_one_chunk_is_written_in_slices_that_keep_each_rows_number_and_id(
    services: Services, writer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20,000 rows in one chunk, encoded 8,192 at a time (the memory a write holds is bounded):
    the rows refused on either side of a slice's edge are reported by their number in the data,
    and a run again by the other writer sends nothing twice (each row kept its sequence id)."""
    rows = 20_000
    refused = [0, 8191, 8192, 16383, 16384, rows - 1]
    quantities = [0 if i in refused else i % 7 + 1 for i in range(rows)]
    data = items_table(quantities)
    assert [b.num_rows for b in data.to_batches()] == [rows]
    from pulsar_external_schema.writing import rows as writing
    from pulsar_external_schema.writing.python_values import python_values as as_python

    turned_into_python: list[int] = []  # the values a writer holds as Python objects at once

    def python_values(column: pa.Array) -> list[Any]:
        turned_into_python.append(len(column))
        return as_python(column)

    monkeypatch.setattr(writing, "python_values", python_values)
    topic = f"{deduplicated_namespace(services)}/{unique('slices')}"
    create_partitioned_topic(services, topic, 3)
    contract = {"schemaType": "AVRO", "schema": json.dumps(ITEM), "ruleSet": {"domainRules": [POSITIVE_QTY]}}
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(Schema.from_dict(contract))
        again = writer if PYTHON_LEG else {"python": "native", "native": "python"}[writer]
        for way in (writer, again):
            written = write_table(
                topic,
                data,
                service_url=services.pulsar_url,
                schema=schema,
                writer=way,
                producer_name="slices",
                sequence_base=3,
            )
            assert written.sent == rows - len(refused)
            assert [(r.row, r.key) for r in written.refused] == [(i, f"k{i}") for i in refused]
        schema.close()

    # The native writer encodes a topic's first value alone, to make the plan by which the
    # extension writes the rows the rule passes; only the rows it refuses are encoded one by one.
    # Written first, row 0 is refused, so no plan yet: the rest of the first slice is encoded one by
    # one (row 1 makes it). Written after the Python writer, the schema has the plan already.
    slices = {
        "python": [8192, 8192, rows - 2 * 8192],
        "native": [1, 8191, 2, 2] if writer == "native" else [2] * 3,
    }
    assert turned_into_python == slices[writer] + slices[again]
    table = read_table(topic, **connection(services))
    assert table.num_rows == rows - len(refused)
    assert sorted(int(k[1:]) for k in table.column("key").to_pylist()) == [
        i for i in range(rows) if i not in refused
    ]


def test_write_table_mistakes_are_one_line(services: Services, topic: str) -> None:
    given: dict[str, Any] = {
        "service_url": services.pulsar_url,
        "config": {"schema.registry.url": services.registry_url},
    }
    with pytest.raises(ConfigError, match="producer_name needs sequence_base"):
        write_table(topic, items_table([1]), producer_name="p", **given)
    with pytest.raises(ConfigError, match="give a pyarrow Table, RecordBatch or RecordBatchReader, not list"):
        write_table(topic, [{"sku": "a"}], **given)
    with pytest.raises(ConfigError, match="needs a 'value' column"):
        write_table(topic, pa.table({"sku": ["a"]}), rows="messages", **given)
    with pytest.raises(ConfigError, match="rows takes auto, messages, values, not 'records'"):
        write_table(topic, pa.table({"sku": ["a"]}), rows="records", **given)
    with pytest.raises(ConfigError, match="key_column 'id': the table has no such column"):
        write_table(topic, pa.table({"sku": ["a"]}), key_column="id", **given)
    with pytest.raises(ConfigError, match="key_column names a column of values: give rows='values'"):
        write_table(topic, pa.table({"sku": ["a"]}), rows="messages", key_column="sku", **given)
    with pytest.raises(ConfigError, match="writer takes auto, native, python"):
        write_table(topic, items_table([1]), writer="fast", **given)


def test_the_native_writer_sends_what_the_python_writer_sends(services: Services, pulsar_client: Any) -> None:
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import strategies as st

    required_extension()
    names = st.text("abcdé", min_size=1, max_size=3)
    rows = st.fixed_dictionaries(
        {
            "key": st.none() | st.text(max_size=4),
            "eventTime": st.none() | st.integers(1, 2**41),
            "properties": st.none() | st.dictionaries(names, st.text(max_size=4), max_size=2),
        }
    )

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def check(data: Any) -> None:
        schema, values = data.draw(record_of(iter(itertools.count())))
        assume(not has_null_type(schema))  # a record of nulls is zero bytes, which the reader refuses
        records = data.draw(st.lists(values, min_size=1, max_size=12))
        given_rows = data.draw(st.lists(rows, min_size=len(records), max_size=len(records)))
        partitions = data.draw(st.sampled_from([0, 1, 3]))
        named = data.draw(st.booleans())

        # the values as a user has them: read from a topic, typed by the reader from the schema
        source = new_topic(services, "persistent://public/default", 0)
        conf = {"schema.registry.url": services.registry_url}
        with SchemaRegistrySchemaFactory(conf) as factory:
            writer = factory.avro(json.dumps(schema))
            producer = create_producer(pulsar_client, source, writer)
            for record in records:
                producer.send(record)
            producer.close()
            writer.close()
        value = read_table(source, **connection(services)).column("value").combine_chunks()
        table = pa.table(
            {
                "key": pa.array([r["key"] for r in given_rows], pa.string()),
                "value": value,
                "eventTime": pa.array([r["eventTime"] for r in given_rows], pa.timestamp("ms", "UTC")),
                "properties": pa.array(
                    [r["properties"] and list(r["properties"].items()) for r in given_rows],
                    pa.map_(pa.string(), pa.string()),
                ),
            }
        )

        namespace = deduplicated_namespace(services) if named else "persistent://public/default"
        ids = {"producer_name": "nightly", "sequence_base": 7} if named else {}
        topics = {}
        with SchemaRegistrySchemaFactory(conf) as factory:
            encoder = factory.avro(json.dumps(schema))
            for way in ("python", "native"):
                topics[way] = new_topic(services, namespace, partitions)
                written = write_table(
                    topics[way],
                    table,
                    service_url=services.pulsar_url,
                    schema=encoder,
                    writer=way,
                    **ids,  # type: ignore[arg-type]
                )
                assert (written.sent, written.dead_lettered, written.refused) == (len(records), 0, [])
            if named:  # written by one writer, run again by the other: nothing more is persisted
                for first, again in (("python", "native"), ("native", "python")):
                    topics[first + "+" + again] = rerun = new_topic(services, namespace, partitions)
                    for way in (first, again):
                        write_table(
                            rerun,
                            table,
                            service_url=services.pulsar_url,
                            schema=encoder,
                            writer=way,
                            **ids,  # type: ignore[arg-type]
                        )
            encoder.close()

        python = sent(services, topics["python"])
        read_back = read_table(topics["python"], **connection(services)).column("value").to_pylist()
        assert sorted(read_back, key=repr) == sorted(value.to_pylist(), key=repr)
        native = sent(services, topics["native"])
        if named:  # the same messages in the same order on each partition
            assert native == python
            assert sent(services, topics["python+native"]) == python
            assert sent(services, topics["native+python"]) == python
        else:  # keyless rows go round robin from a partition pulsar-client picks at random
            every = [sorted((m for ms in side.values() for m in ms), key=repr) for side in (native, python)]
            assert every[0] == every[1]
            keyed = [{p: ms for (p, keyless), ms in side.items() if not keyless} for side in (native, python)]
            assert keyed[0] == keyed[1]

    check()
