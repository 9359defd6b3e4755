"""A Protobuf topic no Python code was generated for: two `.proto` files registered by hand (the
order, and the money type it imports, a subject of its own referenced by name) -> messages written
as a Java producer writes them (the bodies, the schema id in PIP-420's metadata) -> `read_table`
natively and on the Python path, and the Spark source on both readers, with no class anywhere:
the same rows, a malformed message an invalid row on each -> the valid rows written on by
`write_table` with no schema and no class, and read back."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

import pyarrow as pa
from conftest import Services
from contracts import unique
from google.protobuf import descriptor_pool, message_factory, timestamp_pb2
from spark_support import source_options

from pulsar_external_schema import SCHEMA_ID_PROPERTY
from pulsar_external_schema import schema_id as ids
from pulsar_external_schema._protoc import compile_file
from pulsar_external_schema.arrow import read_table, write_table

pytestmark = pytest.mark.spark

MONEY = """syntax = "proto3";
package common;
message Money {
  string currency = 1;
  int64 units = 2;
}
"""

ORDER = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "common/money.proto";

enum Status { STATUS_UNKNOWN = 0; PAID = 1; SHIPPED = 2; }

message Order {
  message Line {
    string sku = 1;
    int32 quantity = 2;
    repeated string tags = 3;
  }
  int64 id = 1;
  Status status = 2;
  repeated Line lines = 3;
  map<string, int64> totals = 4;
  oneof payment {
    string card = 5;
    string iban = 6;
  }
  optional string note = 7;
  bytes receipt = 8;
  google.protobuf.Timestamp placed = 9;
  common.Money total = 10;
}
"""


def order_class() -> Any:
    """What a Java service's generated code would write: the class of the same text, compiled
    here only to make the bytes (the readers never see it)."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    files = {"common/money.proto": MONEY, "order.proto": ORDER}
    pool.Add(compile_file("common/money.proto", files))
    pool.Add(compile_file("order.proto", files))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def test_a_hand_registered_protobuf_topic_reads_into_arrow_and_spark_natively_with_no_class(
    spark: Any, services: Services, pulsar_client: Any
) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

    topic = f"persistent://public/default/{unique('hand-proto')}"
    registry = SchemaRegistryClient({"url": services.registry_url})
    money_subject = unique("common-money")
    registry.register_schema(money_subject, Schema(MONEY, "PROTOBUF"))
    order_schema = Schema(ORDER, "PROTOBUF", [SchemaReference("common/money.proto", money_subject, 1)])
    schema_id = registry.register_schema(subject_of(topic), order_schema)

    order = order_class()
    full = order(
        id=1,
        status=2,
        lines=[{"sku": "tea", "quantity": 2, "tags": ["green", "loose"]}, {"sku": "cup"}],
        totals={"tea": 800, "cup": 450},
        iban="DE89",
        note="",
        receipt=b"\x00\x01",
        total={"currency": "EUR", "units": 1250},
    )
    full.placed.FromDatetime(dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC))
    bodies = [full.SerializeToString(), order(id=2, card="4111").SerializeToString(), b"\x0a\xff"]
    # the Java client writes the id in the message metadata, with the message's indexes ([0])
    id_property = ids.to_property(ids.confluent_id(schema_id, b"\x00"))
    raw = pulsar_client.create_producer(topic)
    for body in bodies:
        raw.send(body, properties={SCHEMA_ID_PROPERTY: id_property})
    raw.close()

    connection: dict[str, Any] = {
        "service_url": services.pulsar_url,
        "admin_url": services.admin_url,
        "config": {"schema.registry.url": services.registry_url},
    }
    table = read_table(topic, reader="native", **connection)
    native = table.to_pylist()
    python = read_table(topic, reader="python", **connection).to_pylist()

    assert native == python
    first, second, bad = (row for row in native)
    assert first["_valid"] and second["_valid"] and not bad["_valid"]
    assert first["value"] == {
        "id": 1,
        "status": "SHIPPED",
        "lines": [
            {"sku": "tea", "quantity": 2, "tags": ["green", "loose"]},
            {"sku": "cup", "quantity": 0, "tags": []},
        ],
        "totals": [("cup", 450), ("tea", 800)],  # by key, on both readers
        "card": None,  # the oneof's member not chosen
        "iban": "DE89",
        "note": "",  # an optional set to its default is set
        "receipt": b"\x00\x01",
        "placed": dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC),
        "total": {"currency": "EUR", "units": 1250},
    }
    assert second["value"]["note"] is None and second["value"]["total"] is None
    assert bad["value"] is None and bad["_error"]  # the Python path's words for it

    rows: dict[str, list[tuple[bool, Any]]] = {}
    for reader in ("native", "python"):
        options = source_options(services, topic=topic, reader=reader)
        frame = spark.read.format("pulsar-external").options(**options).load().orderBy("messageId")
        rows[reader] = [
            (r._valid, None if r.value is None else r.value.asDict(recursive=True)) for r in frame.collect()
        ]
    assert rows["native"] == rows["python"]
    assert [valid for valid, _ in rows["native"]] == [True, True, False]
    assert rows["native"][0][1]["total"] == {"currency": "EUR", "units": 1250}

    # the valid rows written on, to a topic of the same contract, by write_table with no schema and
    # no class (the subject's latest version, its message built from the text), and read back
    copy = f"persistent://public/default/{unique('hand-proto-copy')}"
    registry.register_schema(subject_of(copy), order_schema)
    values = pa.Table.from_struct_array(table.filter(table["_valid"]).column("value").combine_chunks())
    written = write_table(copy, values, service_url=services.pulsar_url, config=connection["config"])
    assert (written.sent, written.refused) == (2, [])
    back = read_table(copy, reader="native", **connection).to_pylist()
    assert [row["value"] for row in back] == [first["value"], second["value"]]


def subject_of(topic: str) -> str:
    return f"{topic.removeprefix('persistent://').replace('/', '.')}-value"
