"""The Spark source's pure parts: offsets as bounds, planning arithmetic, options, type mapping."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

import fastavro
from google.protobuf import descriptor_pb2
from pyspark.sql.types import StructType
from schemas import add_fields, message_class

from pulsar_external_schema import ConfigError, ExternalSchemaError
from pulsar_external_schema.spark.admin import Ledger, full_topic_name
from pulsar_external_schema.spark.offsets import EARLIEST, Bound, parse_offsets, user_bound
from pulsar_external_schema.spark.options import SourceOptions
from pulsar_external_schema.spark.planning import (
    Planner,
    TopicPartitionRange,
    advance,
    entries_between,
    split_range,
)
from pulsar_external_schema.spark.rows import Rows
from pulsar_external_schema.spark.types import (
    SparkTypeError,
    avro_type,
    json_type,
    protobuf_type,
)
from pulsar_external_schema.spark.writer import _plain, protobuf_jsonable

# -- bounds -----------------------------------------------------------------------------------


def test_a_whole_entry_bound_covers_every_message_of_the_entry_or_none() -> None:
    whole = Bound(5, 3, -1, True)
    assert (
        whole.covers(5, 3, 0) and whole.covers(5, 3, 9) and whole.covers(5, 2, 4) and whole.covers(4, 99, 0)
    )
    assert not whole.covers(5, 4, 0) and not whole.covers(6, 0, -1)
    before = Bound(5, 3, -1, False)
    assert not before.covers(5, 3, 0) and not before.covers(5, 3, -1) and before.covers(5, 2, 7)


def test_a_batch_index_bound_splits_an_entry() -> None:
    through = Bound(5, 3, 2, True)
    assert [through.covers(5, 3, i) for i in range(5)] == [True, True, True, False, False]
    until = Bound(5, 3, 2, False)
    assert [until.covers(5, 3, i) for i in range(5)] == [True, True, False, False, False]


def test_earliest_covers_nothing_and_bounds_order_by_what_they_cover() -> None:
    assert not EARLIEST.covers(0, 0, -1) and EARLIEST.is_earliest
    ordered = [
        EARLIEST,
        Bound(1, 0, -1, False),
        Bound(1, 0, 0, False),
        Bound(1, 0, 0, True),
        Bound(1, 0, 4, True),
    ]
    ordered += [Bound(1, 0, -1, True), Bound(1, 1, -1, True), Bound(2, -1, -1, True)]
    assert sorted(ordered, key=lambda b: b.key) == ordered
    assert len({b.key for b in ordered}) == len(ordered)
    assert Bound(1, 0, 2, True).key == Bound(1, 0, 3, False).key  # the same messages
    # an empty new ledger (entry -1) covers every earlier ledger
    assert Bound(2, -1, -1, True).covers(1, 500, 3) and not Bound(2, -1, -1, True).covers(2, 0, -1)


def test_bounds_survive_the_checkpoint_json() -> None:
    bound = Bound(12, 4, 2, False)
    assert Bound.from_json(json.loads(json.dumps(bound.to_json()))) == bound


def test_user_positions_are_the_first_message_read_or_not_read() -> None:
    assert user_bound({"ledgerId": 3, "entryId": 1, "batchIndex": 2}) == Bound(3, 1, 2, False)
    assert user_bound({"ledgerId": 3, "entryId": 1}) == Bound(3, 1, -1, False)


def test_offsets_options_take_earliest_latest_or_json_per_partition() -> None:
    assert parse_offsets("startingOffsets", None, "earliest") == "earliest"
    assert parse_offsets("startingOffsets", " LATEST ", "earliest") == "latest"
    spec = {"persistent://t/n/a-partition-0": {"ledgerId": 1, "entryId": 2}, "persistent://t/n/b": "earliest"}
    assert parse_offsets("startingOffsets", json.dumps(spec), "earliest") == spec
    with pytest.raises(ConfigError, match="expected 'earliest', 'latest' or JSON"):
        parse_offsets("startingOffsets", "first", "earliest")
    with pytest.raises(ConfigError, match=r"partition 'p' needs"):
        parse_offsets("endingOffsets", '{"p": {"ledger": 1}}', "latest")
    with pytest.raises(ConfigError, match="keyed by partition topic"):
        parse_offsets("endingOffsets", "[1]", "latest")


# -- planning ---------------------------------------------------------------------------------

LEDGERS = [Ledger(3, 4), Ledger(7, 0), Ledger(9, 3)]


def test_advance_counts_entries_across_ledgers() -> None:
    assert advance(LEDGERS, EARLIEST, 2) == Bound(3, 1, -1, True)
    assert advance(LEDGERS, EARLIEST, 5) == Bound(9, 0, -1, True)  # the empty ledger is skipped
    assert advance(LEDGERS, Bound(3, 1, -1, True), 2) == Bound(3, 3, -1, True)
    assert advance(LEDGERS, Bound(3, 3, -1, True), 1) == Bound(9, 0, -1, True)
    # a start inside an entry: that entry still counts
    assert advance(LEDGERS, Bound(3, 1, 2, True), 1) == Bound(3, 1, -1, True)
    assert advance(LEDGERS, Bound(9, 1, -1, True), 5) is None  # fewer written: no cap


class _Admin:
    def __init__(self, ledgers: list[Ledger]) -> None:
        self._ledgers = ledgers

    def ledgers(self, partition: str) -> list[Ledger]:
        return self._ledgers


def _covered(ledgers: list[Ledger], start: Bound, end: Bound) -> list[tuple[int, int, int]]:
    """The messages (ledger, entry, batch index) a range reads, with three messages per entry."""
    return [
        (row.ledger_id, entry, batch)
        for row in ledgers
        for entry in range(row.entries)
        for batch in range(3)
        if not start.covers(row.ledger_id, entry, batch) and end.covers(row.ledger_id, entry, batch)
    ]


def test_entries_between_counts_what_a_range_reads() -> None:
    assert entries_between(LEDGERS, EARLIEST, Bound(9, 2, -1, True)) == 7
    assert entries_between(LEDGERS, Bound(3, 1, -1, True), Bound(9, 0, -1, True)) == 3
    assert entries_between(LEDGERS, Bound(3, 1, 2, True), Bound(3, 1, -1, True)) == 1  # a part of one


@pytest.mark.parametrize("pieces", [1, 2, 3, 4, 7, 20])
@pytest.mark.parametrize(
    ("start", "end"),
    [
        (EARLIEST, Bound(9, 2, -1, True)),
        (Bound(3, 0, 1, True), Bound(9, 1, 2, False)),  # bounds inside entries
        (Bound(3, 2, -1, True), Bound(9, 0, -1, True)),
    ],
)
def test_a_range_split_in_pieces_reads_each_message_once(start: Bound, end: Bound, pieces: int) -> None:
    ranges = split_range(LEDGERS, start, end, pieces)
    assert ranges[0][0] == start and ranges[-1][1] == end
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # contiguous
    read = [message for first, last in ranges for message in _covered(LEDGERS, first, last)]
    assert read == _covered(LEDGERS, start, end)  # each once, in order
    total = entries_between(LEDGERS, start, end)
    step = -(-total // pieces)  # entries per piece, the last one takes what is left
    assert len(ranges) == -(-total // step)


def test_min_partitions_divides_the_larger_partitions_more() -> None:
    big = [Ledger(3, 90)]
    small = [Ledger(5, 10)]
    planner = Planner(_options(minPartitions="10"))
    admin: Any = _Admin(big)
    ranges = [
        TopicPartitionRange("persistent://t/n/a-partition-0", EARLIEST, Bound(3, 89, -1, True)),
        TopicPartitionRange("persistent://t/n/a-partition-1", EARLIEST, Bound(5, 9, -1, True)),
    ]
    pieces = planner.split(admin, ranges, {"persistent://t/n/a-partition-1": small})
    counts = {
        p: sum(1 for r in pieces if r.partition_topic == p) for p in (r.partition_topic for r in ranges)
    }
    assert counts == {"persistent://t/n/a-partition-0": 9, "persistent://t/n/a-partition-1": 1}
    assert Planner(_options()).split(admin, ranges) == ranges  # one Spark partition each by default


def _options(**extra: str) -> SourceOptions:
    return SourceOptions.parse(
        {
            "service.url": "pulsar://x:6650",
            "admin.url": "http://x:8080",
            "schema.registry.url": "http://r",
            **extra,
        }
    )


def test_deleted_messages_fail_the_query_unless_told_to_go_on(caplog: pytest.LogCaptureFixture) -> None:
    admin: Any = _Admin([Ledger(9, 3)])
    with pytest.raises(ExternalSchemaError, match=r"retention removed data.*failOnDataLoss=false"):
        Planner(_options()).check_data_loss(admin, "persistent://t/n/a", Bound(3, 1, -1, True))
    Planner(_options(failOnDataLoss="false")).check_data_loss(admin, "persistent://t/n/a", Bound(3, 1))
    assert "going on from the oldest message" in caplog.text
    Planner(_options()).check_data_loss(admin, "persistent://t/n/a", Bound(9, 1))  # nothing lost
    Planner(_options()).check_data_loss(admin, "persistent://t/n/a", EARLIEST)

    class NoCalls:
        def ledgers(self, partition: str) -> list[Ledger]:
            raise AssertionError("ledgers fetched again")

    fetched: Any = NoCalls()  # ledgers latestOffset just fetched are not asked for twice
    with pytest.raises(ExternalSchemaError, match="retention removed data"):
        Planner(_options()).check_data_loss(fetched, "persistent://t/n/a", Bound(3, 1), [Ledger(9, 3)])


# -- options ----------------------------------------------------------------------------------


def test_options_split_into_source_options_and_config_keys() -> None:
    options = _options(
        topics="a, b",
        maxEntriesPerPartition="10",
        includeData="TRUE",
        checkpointLocation="/tmp/x",
        **{"use.latest.version": "true"},
    )
    assert options.topics == ("a", "b") and options.max_entries_per_partition == 10 and options.include_data
    assert options.config == {"schema.registry.url": "http://r", "use.latest.version": "true"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"maxEntriesPerPartition": "0"}, "must be positive"),
        ({"failOnDataLoss": "maybe"}, "takes true or false"),
        ({"schema.registry.ulr": "x"}, "unknown config key 'schema.registry.ulr'"),
    ],
)
def test_bad_options_name_the_option(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _options(**extra)


def test_reading_needs_a_service_url_topics_and_an_admin_url() -> None:
    with pytest.raises(ConfigError, match=r"'service\.url' is required"):
        SourceOptions.parse({"schema.registry.url": "http://r"})
    with pytest.raises(ConfigError, match="'topic', 'topics' or 'topicPattern'"):
        _options().require_topics()
    with pytest.raises(ConfigError, match="not both"):
        _options(topic="a", topicPattern="persistent://t/n/.*").require_topics()
    with pytest.raises(ConfigError, match=r"'admin\.url' is required"):
        SourceOptions.parse(
            {"service.url": "pulsar://x", "schema.registry.url": "http://r", "topic": "a"}
        ).require_topics()


def test_short_topic_names_are_completed_as_the_clients_do() -> None:
    assert full_topic_name("orders") == "persistent://public/default/orders"
    assert full_topic_name("t/n/orders") == "persistent://t/n/orders"
    assert full_topic_name("non-persistent://t/n/o") == "non-persistent://t/n/o"
    with pytest.raises(ConfigError):
        full_topic_name("n/orders")


# -- types ------------------------------------------------------------------------------------


def test_avro_types_follow_sparks_from_avro() -> None:
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "R",
            "fields": [
                {"name": "i", "type": "int"},
                {"name": "l", "type": ["null", "long"]},
                {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
                {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}},
                {
                    "name": "d",
                    "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
                },
                {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
                {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
                {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
                {"name": "m", "type": {"type": "map", "values": "double"}},
                {"name": "a", "type": {"type": "array", "items": ["null", "string"]}},
                {"name": "either", "type": ["null", "int", "string"]},
            ],
        }
    )
    data_type, convert = avro_type(schema)
    assert data_type.simpleString() == (
        "struct<i:int,l:bigint,e:string,f:binary,d:decimal(9,2),day:date,ts:timestamp,local:timestamp_ntz,"
        "t:int,u:string,m:map<string,double>,a:array<string>,either:string>"
    )
    assert isinstance(data_type, StructType)
    assert [f.nullable for f in data_type.fields][:3] == [False, True, False]
    assert convert is not None
    import uuid

    value = {"t": dt.time(0, 0, 1, 500_000), "u": uuid.UUID(int=1), "either": 5, "d": decimal.Decimal("1.50")}
    out = convert(value)
    assert out["t"] == 1500 and out["u"] == "00000000-0000-0000-0000-000000000001" and out["either"] == "5"


def test_plain_avro_records_need_no_conversion() -> None:
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "P",
            "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}],
        }
    )
    assert avro_type(schema)[1] is None  # values go to Arrow as fastavro gives them


def test_recursive_avro_is_refused_with_a_reason() -> None:
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "Node",
            "fields": [{"name": "next", "type": ["null", "Node"]}],
        }
    )
    with pytest.raises(SparkTypeError, match="Node is recursive"):
        avro_type(schema)


def test_json_schema_types_with_refs_and_fallbacks() -> None:
    schema = {
        "$defs": {"city": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "ok": {"type": "boolean"},
            "where": {"$ref": "#/$defs/city"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "maybe": {"type": ["string", "null"]},
            "kind": {"enum": ["a", "b"]},
            "mixed": {"enum": ["a", 1]},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "any": {},
        },
    }
    data_type, convert = json_type(json.dumps(schema))
    assert data_type.simpleString() == (
        "struct<n:bigint,x:double,ok:boolean,where:struct<name:string>,tags:array<string>,"
        "counts:map<string,bigint>,maybe:string,kind:string,mixed:string,pair:string,any:string>"
    )
    assert convert is not None
    out = convert(
        {"n": 1, "x": 2, "where": {"name": "Oslo"}, "mixed": 1, "pair": ["a", 1], "any": {"k": [1]}}
    )
    assert out["mixed"] == "1" and out["pair"] == '["a",1]' and out["any"] == '{"k":[1]}' and out["x"] == 2
    with pytest.raises(TypeError, match="expected an integer"):
        convert({"n": "one"})
    with pytest.raises(TypeError, match="expected a boolean"):
        convert({"ok": 1})


def test_recursive_json_schema_is_refused() -> None:
    schema = {
        "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
        "$ref": "#/$defs/n",
    }
    with pytest.raises(SparkTypeError, match="recursive"):
        json_type(json.dumps(schema))


def _message_class() -> Any:
    label = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="unit/kinds.proto",
        package="unit",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"],
    )
    message = proto.message_type.add(name="Kinds")
    message.enum_type.add(name="Color").value.extend(
        [
            descriptor_pb2.EnumValueDescriptorProto(name="RED", number=0),
            descriptor_pb2.EnumValueDescriptorProto(name="BLUE", number=1),
        ]
    )
    optional = label.LABEL_OPTIONAL
    add_fields(
        message,
        [
            ("i", 1, label.TYPE_INT32, optional, None),
            ("u", 2, label.TYPE_UINT64, optional, None),
            ("x", 7, label.TYPE_FIXED32, optional, None),
            ("f", 3, label.TYPE_FLOAT, optional, None),
            ("b", 4, label.TYPE_BYTES, optional, None),
            ("color", 5, label.TYPE_ENUM, optional, ".unit.Kinds.Color"),
            ("at", 6, label.TYPE_MESSAGE, optional, ".google.protobuf.Timestamp"),
        ],
    )
    return message_class(proto, "unit.Kinds")


def test_protobuf_types_follow_sparks_from_protobuf() -> None:
    kinds = _message_class()
    data_type, convert = protobuf_type(kinds.DESCRIPTOR)
    assert (
        data_type.simpleString()
        == "struct<i:int,u:bigint,x:bigint,f:float,b:binary,color:string,at:timestamp>"
    )
    message = kinds(i=-3, u=7, b=b"\x00", color=1, x=4_000_000_000)
    message.at.FromSeconds(86_400)
    assert convert(message) == {
        "i": -3,
        "u": 7,
        "f": 0.0,
        "b": b"\x00",
        "color": "BLUE",
        "at": dt.datetime(1970, 1, 2, tzinfo=dt.UTC),
        "x": 4_000_000_000,
    }


# -- rows -------------------------------------------------------------------------------------


def test_a_value_that_does_not_fit_its_column_makes_its_row_invalid_not_the_batch() -> None:
    import pyarrow as pa

    from pulsar_external_schema.spark.rows import read_schema

    value_type, convert = json_type(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))
    schema = read_schema(value_type, include_data=False)
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema, timezone="UTC")
    rows = Rows(False, None, "persistent://t/n/a", 0)

    class Msg:
        def __init__(self, value: Any) -> None:
            self.value = value

        def properties(self) -> dict[str, str]:
            return {}

        def partition_key(self) -> str:
            return ""

        def publish_timestamp(self) -> int:
            return 1_000

        def event_timestamp(self) -> int:
            return 0

        def data(self) -> bytes:
            return b""

    for i, value in enumerate([{"n": 1}, {"n": "one"}, {"n": 3}]):
        rows.add(Msg(value), (1, i), -1, lambda msg, properties: msg.value)
    batch = rows.batch(arrow, arrow.field("value").type, convert)
    assert batch.schema == arrow
    table = pa.Table.from_batches([batch]).to_pylist()
    assert [r["_valid"] for r in table] == [True, False, True]
    assert [r["value"] for r in table] == [{"n": 1}, None, {"n": 3}]
    error = table[1]["_error"]
    assert "message ledger 1 entry 1 batch index -1 of persistent://t/n/a" in error
    assert "does not fit the value column typed from the reader schema: expected an integer" in error
    assert dict(table[1]["_failure"])["__rule.topic"] == "persistent://t/n/a"


def test_writer_turns_arrow_maps_back_into_dicts_and_protobuf_values_into_json() -> None:
    assert _plain({"m": [("a", 1), ("b", 2)], "l": [1, 2]}) == {"m": {"a": 1, "b": 2}, "l": [1, 2]}
    at = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert protobuf_jsonable({"b": b"\x01", "at": at, "n": None}) == {
        "b": "AQ==",
        "at": "2024-01-02T03:04:05Z",
    }


# -- executors ---------------------------------------------------------------------------------


def test_a_worker_keeps_its_decoding_schema_for_the_next_task_of_the_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pulsar_external_schema import _confluent
    from pulsar_external_schema.registered import RegisteredSchema
    from pulsar_external_schema.spark import executor

    def options_of(registry: str) -> SourceOptions:
        return SourceOptions.parse({"service.url": "pulsar://x:6650", "schema.registry.url": registry})

    options = options_of("mock://kept-schemas")
    text = json.dumps({"type": "record", "name": "A", "fields": [{"name": "n", "type": "long"}]})

    def reader(version: int, schema_id: int | None = None) -> RegisteredSchema:
        return RegisteredSchema("a-value", "AVRO", text, schema_id or version, version)

    monkeypatch.setattr(executor, "MAX_SCHEMAS", 2)
    # Nothing is registered in this mock registry: the versions are not looked up to pin them.
    monkeypatch.setattr(_confluent, "pin_schema_id", lambda *args: None)
    try:
        first = executor.decoding_schema(options, reader(1))
        assert executor.decoding_schema(options, reader(1)) is first  # the next task's
        second = executor.decoding_schema(options, reader(2))  # another reader version: its own
        assert second is not first
        # a version that only adds rules may keep the id (AxonOps): its own schema too
        assert executor.decoding_schema(options, reader(3, schema_id=1)) is not first
        executor.close_all()
        first = executor.decoding_schema(options, reader(1))
        second = executor.decoding_schema(options, reader(2))
        other = SourceOptions.parse(
            {**{"service.url": "pulsar://x:6650", "topic": "a"}, "schema.registry.url": "mock://other"}
        )
        executor.decoding_schema(other, reader(1))  # a third: the least recently used is closed
        with pytest.raises(ExternalSchemaError, match="closed"):
            first.decode("a", b"\x02", b"\xff\x00\x00\x00\x00\x01")
        assert executor.decoding_schema(options, reader(2)) is second
    finally:
        executor.close_all()
    with pytest.raises(ExternalSchemaError, match="closed"):
        second.decode("a", b"\x02", b"\xff\x00\x00\x00\x00\x01")


def test_reading_a_partition_makes_collections_rare_and_restores_them() -> None:
    import gc

    from pulsar_external_schema.spark.executor import RareCollections

    before = gc.get_threshold()
    rare = RareCollections()
    assert gc.get_threshold()[0] == max(before[0], RareCollections.YOUNG)
    assert gc.get_threshold()[1:] == before[1:]
    rare.close()
    assert gc.get_threshold() == before
    rare = RareCollections()
    gc.set_threshold(5_000)  # changed meanwhile by someone else: theirs stays
    rare.close()
    assert gc.get_threshold()[0] == 5_000
    gc.set_threshold(*before)
