"""The native reader against the Python path, on the real broker and registry.

Each range is read twice in this process, by `native.read_partition` and by the Python path's
`rows.read_partition`, and the two tables must be equal, column for column (values, metadata,
verdicts, `_failure` properties). Topics hold what a reader meets: every Avro type Spark maps, two
writer versions resolved into the latest, batched and unbatched entries, each compression codec,
ranges that start and end inside batched entries, and messages the native reader must leave to
the Python path (malformed bodies, unknown and foreign ids, no id, dead-letter copies, GUIDs,
ids in Confluent's header properties, the Confluent prefix). The tests also count the rows the
extension decoded itself, so that a native path that quietly left everything to Python fails.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

import pyarrow as pa
import pyarrow.compute as pc
from avro_schemas import has_null_type, record_of
from conftest import Services, create_partitioned_topic
from contracts import unique
from spark_support import Spy, assert_same, source_options

UTC = dt.UTC

INNER: dict[str, Any] = {
    "type": "record",
    "name": "Inner",
    "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": ["null", "double"], "default": None}],
}
EVENT_V1: dict[str, Any] = {
    "type": "record",
    "name": "Event",
    "namespace": "test.native",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "ok", "type": "boolean"},
        {"name": "small", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "score", "type": "double"},
        {"name": "raw", "type": "bytes"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 4}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "money", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "maybe", "type": ["null", "string"], "default": None},
        {"name": "inner", "type": INNER},
        {"name": "inners", "type": {"type": "array", "items": "Inner"}},
        {"name": "nothing", "type": "null"},
        {"name": "opt_inner", "type": ["null", "Inner"], "default": None},
    ],
}
PROMOTED = {"int": "long", "float": "double"}
#: v2: `small` promoted to long, `ratio` to double, two fields added with defaults.
EVENT_V2: dict[str, Any] = {
    **EVENT_V1,
    "fields": [
        *(
            {**f, "type": PROMOTED[f["type"]]} if f["name"] in ("small", "ratio") else f
            for f in EVENT_V1["fields"]
        ),
        {"name": "extra", "type": "string", "default": "x"},
        {"name": "labels", "type": {"type": "map", "values": "string"}, "default": {}},
    ],
}


def event(i: int, version: int) -> dict[str, Any]:
    value: dict[str, Any] = {
        "id": i,
        "name": f"event {i} é",
        "ok": i % 2 == 0,
        "small": i % 1000 - 500,
        "ratio": i / 3,
        "score": i * 1.25,
        "raw": bytes([i % 256, 0, 255]),
        "tags": [f"t{j}" for j in range(i % 3)],
        "attrs": {f"k{j}": j * i for j in range(i % 4)},
        "kind": "ABC"[i % 3],
        "code": (i % 2**32).to_bytes(4, "big"),
        "day": dt.date(2024, 1, 1) + dt.timedelta(days=i % 400),
        "at_ms": dt.datetime(2025, 3, 1, tzinfo=UTC) + dt.timedelta(milliseconds=i * 1001),
        "at_us": dt.datetime(2025, 3, 1, tzinfo=UTC) + dt.timedelta(microseconds=i * 1000001),
        "local": dt.datetime(2025, 3, 1) + dt.timedelta(milliseconds=i * 7),
        "money": decimal.Decimal(i * 37) / 100,
        "uid": uuid.UUID(int=i * 7919),
        "tm": dt.time(i % 24, i % 60, i % 60, (i % 1000) * 1000),
        "tu": dt.time(i % 24, 0, i % 60, i % 1_000_000),
        "maybe": None if i % 3 == 0 else f"m{i}",
        "inner": {"x": i, "y": None if i % 2 else i / 2},
        "inners": [{"x": j, "y": float(j)} for j in range(i % 3)],
        "nothing": None,
        "opt_inner": None if i % 4 == 0 else {"x": -i, "y": None},
    }
    if version == 2:
        value["extra"] = f"extra {i}"
        value["labels"] = {"a": str(i)} if i % 2 else {}
    return value


@dataclass
class Partition:
    """The partition topic read, and the ids of its messages as the Python client gives them."""

    topic: str
    ids: list[tuple[int, int, int]]


def produce(
    services: Services, client: Any, topic: str, count: int, *, start: int = 0, **producer: Any
) -> None:
    """`count` events, alternating v1 and v2 in runs of 7, with the package's producer."""
    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schemas = {1: factory.avro(json.dumps(EVENT_V1)), 2: factory.avro(json.dumps(EVENT_V2))}
        producers = {
            version: create_producer(client, topic, schema, block_if_queue_full=True, **producer)
            for version, schema in schemas.items()
        }
        for i in range(start, start + count):
            version = 1 + (i // 7) % 2
            producers[version].send_async(event(i, version), lambda *_: None, partition_key=f"k{i}")
            if i % 7 == 6:
                producers[version].flush()  # versions interleave in one entry's neighbours
        for p in producers.values():
            p.flush()
            p.close()
        for s in schemas.values():
            s.close()


def send_raw(client: Any, topic: str, messages: list[tuple[bytes, dict[str, str]]], **producer: Any) -> None:
    raw = client.create_producer(topic, **producer)
    for payload, properties in messages:
        raw.send_async(payload, lambda *_: None, properties=properties, partition_key="raw")
    raw.flush()
    raw.close()


def message_ids(client: Any, partition_topic: str) -> list[tuple[int, int, int]]:
    import pulsar

    reader = client.create_reader(partition_topic, pulsar.MessageId.earliest)
    ids = []
    while reader.has_message_available():
        mid = reader.read_next(10_000).message_id()
        ids.append((mid.ledger_id(), mid.entry_id(), mid.batch_index()))
    reader.close()
    return ids


def read_both(
    services: Services, topic: str, partition_topic: str, start: Any = None, end: Any = None, **options: str
) -> tuple[pa.Table, pa.Table]:
    """The range read by the native reader and by the Python path, as tables."""

    from pulsar_external_schema.reading import native, rows
    from pulsar_external_schema.reading.decoders import arrow_value_type
    from pulsar_external_schema.reading.planning import TopicPartitionRange
    from pulsar_external_schema.tasks.columns import read_schema
    from pulsar_external_schema.tasks.offsets import EARLIEST
    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.tasks.schemas import resolve_reader_schema
    from pulsar_external_schema.tasks.topic_metadata import PulsarAdmin

    source = SourceOptions.parse(source_options(services, topic=topic, **options))
    reader = resolve_reader_schema(source, topic)
    value_type, _ = arrow_value_type(reader, source)
    assert native.why_not(source, reader, value_type) is None
    if end is None:
        admin = PulsarAdmin(services.admin_url)
        end = admin.last_message(partition_topic)
        admin.close()
    part = TopicPartitionRange(partition_topic, start or EARLIEST, end)
    schema = read_schema(value_type, source.include_data)

    def table(batches: Iterator[pa.RecordBatch]) -> pa.Table:
        return pa.Table.from_batches(list(batches), schema=schema).combine_chunks()

    return (
        table(native.read_partition(source, reader, value_type, part)),
        table(rows.read_partition(source, reader, value_type, part)),
    )


def valid(table: pa.Table) -> int:
    return int(pc.sum(table.column("_valid")).as_py())


@pytest.fixture(scope="module")
def events(services: Services, pulsar_client: Any) -> str:
    """One partition: 300 events of two versions in batches of up to 50."""
    topic = f"persistent://public/default/{unique('native-events')}"
    create_partitioned_topic(services, topic, 1)
    produce(services, pulsar_client, topic, 300, batching_enabled=True, batching_max_messages=50)
    return topic


def test_every_avro_type_and_two_versions_read_as_the_python_path_reads_them(
    services: Services, events: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    native_table, python_table = read_both(services, events, f"{events}-partition-0")
    assert python_table.num_rows == 300
    assert_same(native_table, python_table)
    assert spy.native_rows == 300  # every row decoded natively
    assert valid(python_table) == 300


def test_ranges_that_start_and_end_inside_batched_entries(
    services: Services, pulsar_client: Any, events: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pulsar_external_schema.tasks.offsets import Bound

    partition = f"{events}-partition-0"
    ids = message_ids(pulsar_client, partition)
    batched = [i for i in ids if i[2] > 2]
    first, last = batched[3], batched[-5]
    cases = [
        (Bound(*first, True), Bound(*last, True)),
        (Bound(*first, False), Bound(*last, False)),
        (Bound(first[0], first[1], -1, True), Bound(last[0], last[1], -1, False)),
        (Bound(first[0], first[1], -1, False), Bound(first[0], first[1], first[2], True)),
    ]
    for start, end in cases:
        native_table, python_table = read_both(services, events, partition, start, end)
        assert python_table.num_rows > 0
        assert_same(native_table, python_table)


@pytest.mark.parametrize("codec", ["LZ4", "ZLib", "ZSTD", "SNAPPY"])
def test_compressed_topics(
    services: Services, pulsar_client: Any, codec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pulsar

    topic = f"persistent://public/default/{unique('native-' + codec.lower())}"
    create_partitioned_topic(services, topic, 1)
    compression = getattr(pulsar.CompressionType, codec)
    produce(services, pulsar_client, topic, 120, batching_enabled=True, compression_type=compression)
    spy = Spy(monkeypatch)
    native_table, python_table = read_both(services, topic, f"{topic}-partition-0")
    assert python_table.num_rows == 120
    assert_same(native_table, python_table)
    assert spy.native_rows == 120


def test_an_unbatched_topic_and_messages_left_to_the_python_path(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from fastavro import parse_schema, schemaless_writer

    from pulsar_external_schema import schema_id as ids
    from pulsar_external_schema.subjects import TopicName

    topic = f"persistent://public/default/{unique('native-mixed')}"
    create_partitioned_topic(services, topic, 1)
    produce(services, pulsar_client, topic, 30, batching_enabled=False)
    name = TopicName.parse(topic)
    registry = SchemaRegistryClient({"url": services.registry_url})
    subject = f"{name.tenant}.{name.namespace}.{name.local_name}-value"
    latest = registry.get_latest_version(subject)
    assert latest.schema_id is not None
    real = ids.confluent_id(latest.schema_id)
    foreign = registry.register_schema(unique("native-foreign") + "-value", Schema(json.dumps(INNER), "AVRO"))
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(EVENT_V2), event(999, 2))
    good = body.getvalue()
    messages = [
        (b"\xff\xfe not avro", {ids.SCHEMA_ID_PROPERTY: ids.to_property(real)}),  # malformed
        (good + b"\x00", {ids.SCHEMA_ID_PROPERTY: ids.to_property(real)}),  # a byte too many
        (b"plain bytes", {}),  # no id
        (good, {ids.SCHEMA_ID_PROPERTY: ids.to_property(ids.confluent_id(987_654_321))}),  # unknown id
        (good, {ids.SCHEMA_ID_PROPERTY: ids.to_property(ids.confluent_id(foreign))}),  # foreign id
        (real + good, {}),  # the Confluent prefix
        (good, {ids.VALUE_SCHEMA_ID_HEADER: real.hex()}),  # Confluent's header property
        (good, {ids.SCHEMA_ID_PROPERTY: "zz"}),  # not hex
        (good, {ids.SCHEMA_ID_PROPERTY: ids.to_property(real), "__rule.name": "r", "__rule.topic": topic}),
        (good, {ids.SCHEMA_ID_PROPERTY: ids.to_property(real), "z": "1", "a": "2"}),
        (b"", {ids.SCHEMA_ID_PROPERTY: ids.to_property(real)}),  # empty
    ]
    send_raw(pulsar_client, topic, messages, batching_enabled=False)
    send_raw(pulsar_client, topic, messages, batching_enabled=True, batching_max_messages=4)
    produce(services, pulsar_client, topic, 10, start=30, batching_enabled=False)
    spy = Spy(monkeypatch)
    native_table, python_table = read_both(services, topic, f"{topic}-partition-0", includeData="true")
    assert python_table.num_rows == 30 + 2 * len(messages) + 10
    assert_same(native_table, python_table)
    assert spy.native_rows == 40 + 2 * 2  # the events, the prefixed one, the one with more properties
    assert python_table.num_rows - valid(python_table) >= 2 * 6


@pytest.mark.parametrize(
    ("expr", "judged_here"),
    [
        ("size(message.name) > 0 && message.score < 300.0", True),  # in the subset: over the batch
        ("message.name.startsWith('event')", False),  # outside it: every row on the Python path
    ],
)
def test_read_conditions(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch, expr: str, judged_here: bool
) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from pulsar_external_schema.reading import native

    topic = f"persistent://public/default/{unique('native-rules')}"
    create_partitioned_topic(services, topic, 1)
    produce(services, pulsar_client, topic, 300, batching_enabled=True, batching_max_messages=40)
    rule = {"name": "cheap", "kind": "CONDITION", "type": "CEL", "mode": "READ", "expr": expr}
    # The schema written out differently: a registry keeps a version of the same text without rules.
    SchemaRegistryClient({"url": services.registry_url}).register_schema(
        f"public.default.{topic.rsplit('/', 1)[1]}-value",
        Schema.from_dict(
            {
                "schemaType": "AVRO",
                "schema": json.dumps(EVENT_V2, indent=2),
                "ruleSet": {"domainRules": [{**rule, "onFailure": "ERROR"}]},
            }
        ),
    )
    python_rows = []
    with_python_rows = native.Finisher._with_python_rows

    def counting(finisher: Any, batch: Any, finished: Any, pending: Any, judged: Any) -> Any:
        python_rows.append(int(pc.sum(pending).as_py()))
        return with_python_rows(finisher, batch, finished, pending, judged)

    monkeypatch.setattr(native.Finisher, "_with_python_rows", counting)
    native_table, python_table = read_both(services, topic, f"{topic}-partition-0")
    assert_same(native_table, python_table)
    failed = python_table.num_rows - valid(python_table)
    if judged_here:
        assert failed == 300 - 240  # score = id * 1.25 < 300 for ids below 240
        assert sum(python_rows) == failed  # only the failing rows took the Python path
        assert set(python_table.column("_rule").to_pylist()) == {None, "cheap"}
    else:
        assert failed == 0
        assert sum(python_rows) == 300


def test_rows_judged_alike_share_the_python_paths_outcome(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three READ conditions (ERROR, NONE, DLQ) over two writers: a row whose conditions were all
    judged over the batch takes the outcome the Python path gave the first row of its writer,
    schema id properties and verdicts where that was a rule's failure; a row with a condition
    not judged (`size()` of a null) is decoded on its own, and rows judged alike that passed
    with an action NONE are too; a DLQ copy read again (its `__rule.*` properties) is not judged
    with the rows of the topic. Both paths give the same table."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from fastavro import parse_schema, schemaless_writer

    from pulsar_external_schema import schema_id as ids
    from pulsar_external_schema.reading import native

    topic = f"persistent://public/default/{unique('native-outcomes')}"
    create_partitioned_topic(services, topic, 1)
    produce(services, pulsar_client, topic, 300, batching_enabled=True, batching_max_messages=40)
    rules = [
        {"name": "lowScore", "expr": "message.score < 300.0", "onFailure": "ERROR"},  # ids >= 240 fail
        {"name": "evenOrEarly", "expr": "message.ok || message.small < -400", "onFailure": "NONE"},
        {"name": "named", "expr": "size(message.maybe) > 0", "onFailure": "DLQ"},  # null every 3rd
    ]
    subject = f"public.default.{topic.rsplit('/', 1)[1]}-value"
    registry = SchemaRegistryClient({"url": services.registry_url})
    registry.register_schema(
        subject,
        Schema.from_dict(
            {
                "schemaType": "AVRO",
                "schema": json.dumps(EVENT_V2, indent=2),
                "ruleSet": {
                    "domainRules": [{**r, "kind": "CONDITION", "type": "CEL", "mode": "READ"} for r in rules]
                },
            }
        ),
    )
    # A DLQ copy of a failing row, read again: its rule is skipped, so it is valid.
    written = registry.lookup_schema(subject, Schema(json.dumps(EVENT_V2), "AVRO")).schema_id
    assert written is not None
    writer = ids.confluent_id(written)
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(EVENT_V2), event(301, 2))
    copy = {ids.SCHEMA_ID_PROPERTY: ids.to_property(writer), "__rule.name": "lowScore", "__rule.topic": topic}
    send_raw(pulsar_client, topic, [(body.getvalue(), copy)] * 3, batching_enabled=True)
    shared = []
    raising = native._raising

    def counting(failure: Any) -> Any:
        shared.append(failure.rule)
        return raising(failure)

    monkeypatch.setattr(native, "_raising", counting)
    native_table, python_table = read_both(services, topic, f"{topic}-partition-0")
    assert_same(native_table, python_table)
    # Failing rows whose three conditions were judged, by (writer, verdicts): the first of each
    # is decoded, the others share its failure.
    judged: dict[tuple[int, bool], list[int]] = {}
    for i in range(240, 300):
        if i % 3:
            judged.setdefault((1 + (i // 7) % 2, i % 2 == 0 or i % 1000 - 500 < -400), []).append(i)
    assert sorted(shared) == ["lowScore"] * sum(len(rows) - 1 for rows in judged.values())
    errors = python_table.filter(pc.invert(python_table.column("_valid")))
    assert set(errors.column("_rule").to_pylist()) == {"lowScore", "named"}
    # READ runs the rules in reverse: `named` fails every 3rd row (a null), `lowScore` the others
    # from 240; the copies pass.
    assert (python_table.num_rows, valid(python_table)) == (303, 303 - 100 - 40)


def test_schemas_with_references_of_references_and_two_versions_of_a_referenced_type(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root (`Order`) referencing `Address`, which references `Kind`: writer v1 of the root
    references Address v1, v2 references Address v2 (a field added with a default) and adds its
    own; rows of both, in batched entries, are read natively into v2 as the Python path reads them."""
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

    ns = unique("shared").replace("-", "_")
    kind = {"type": "enum", "name": "Kind", "namespace": ns, "symbols": ["HOME", "WORK"]}
    address_v1 = {
        "type": "record",
        "name": "Address",
        "namespace": ns,
        "fields": [{"name": "street", "type": "string"}, {"name": "kind", "type": f"{ns}.Kind"}],
    }
    address_v2 = {
        **address_v1,
        "fields": [*address_v1["fields"], {"name": "zip", "type": "string", "default": "-"}],
    }
    order_v1 = {
        "type": "record",
        "name": "Order",
        "namespace": "app.orders",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "home", "type": f"{ns}.Address"},
            {"name": "work", "type": ["null", f"{ns}.Address"], "default": None},
            {"name": "past", "type": {"type": "array", "items": f"{ns}.Address"}},
            {"name": "kinds", "type": {"type": "map", "values": f"{ns}.Kind"}},
        ],
    }
    order_v2 = {
        **order_v1,
        "fields": [*order_v1["fields"], {"name": "note", "type": "string", "default": "n"}],
    }
    registry = SchemaRegistryClient({"url": services.registry_url})
    registry.register_schema(f"{ns}.Kind", Schema(json.dumps(kind), "AVRO"))
    kind_ref = SchemaReference(f"{ns}.Kind", f"{ns}.Kind", 1)
    for address in (address_v1, address_v2):
        registry.register_schema(f"{ns}.Address", Schema(json.dumps(address), "AVRO", [kind_ref]))
    topic = f"persistent://public/default/{unique('native-references')}"
    create_partitioned_topic(services, topic, 1)

    def order(i: int, version: int) -> dict[str, Any]:
        def address(j: int) -> dict[str, Any]:
            return {"street": f"street {j}", "kind": "HOME" if j % 2 else "WORK"} | (
                {"zip": f"z{j}"} if version == 2 else {}
            )

        value = {
            "id": i,
            "home": address(i),
            "work": None if i % 3 == 0 else address(i + 1),
            "past": [address(i + j) for j in range(i % 3)],
            "kinds": {f"k{j}": "HOME" for j in range(i % 2)},
        }
        return value | ({"note": f"note {i}"} if version == 2 else {})

    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        for version, body in ((1, order_v1), (2, order_v2)):
            reference = SchemaReference(f"{ns}.Address", f"{ns}.Address", version)
            writer = factory.avro(Schema(json.dumps(body), "AVRO", [reference]))
            producer = create_producer(
                pulsar_client, topic, writer, batching_enabled=True, batching_max_messages=8
            )
            for i in range(40):
                producer.send_async(order(version * 100 + i, version), lambda *_: None)
            producer.flush()
            producer.close()
            writer.close()
    spy = Spy(monkeypatch)
    native_table, python_table = read_both(services, topic, f"{topic}-partition-0")
    assert python_table.num_rows == 80 and valid(python_table) == 80
    assert_same(native_table, python_table)
    assert spy.native_rows == 80  # every row decoded natively, v1's resolved into v2
    first = python_table.column("value").to_pylist()[0]
    assert first["home"]["zip"] == "-" and first["note"] == "n"  # the defaults of both versions


# -- generated schemas ----------------------------------------------------------------------------


def test_generated_schemas_and_records(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Generated record schemas (every type Spark maps, nested), a second writer version that adds
    a field with a default, records of both in batched entries: the two tables are equal."""
    import itertools

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

    spy = Spy(monkeypatch)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def check(data: Any) -> None:
        schema, values = data.draw(record_of(iter(itertools.count())))
        records = data.draw(st.lists(values, min_size=1, max_size=12))
        v2 = {**schema, "fields": [*schema["fields"], {"name": "added", "type": "string", "default": "d"}]}
        topic = f"persistent://public/default/{unique('native-generated')}"
        create_partitioned_topic(services, topic, 1)
        conf = {"schema.registry.url": services.registry_url}
        with SchemaRegistrySchemaFactory(conf) as factory:
            for version, text in enumerate((json.dumps(schema), json.dumps(v2))):
                writer = factory.avro(text)
                producer = create_producer(
                    pulsar_client, topic, writer, batching_enabled=True, batching_max_messages=5
                )
                for record in records:
                    producer.send_async({**record, **({"added": "x"} if version else {})}, lambda *_: None)
                producer.flush()
                producer.close()
                writer.close()
        before = spy.native_rows
        native_table, python_table = read_both(services, topic, f"{topic}-partition-0")
        assert python_table.num_rows == 2 * len(records)
        assert_same(native_table, python_table)
        if not has_null_type(schema):
            assert spy.native_rows - before == 2 * len(records)

    check()
