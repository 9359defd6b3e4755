"""JSON Schema and Protobuf topics as Spark columns (Avro is in test_read.py)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services, create_partitioned_topic
from contracts import unique
from schemas import Shipment, two_shipments
from spark_support import source_options

from pulsar_external_schema import create_producer

FORMAT = "pulsar-external"

TICKET_V1: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"type": "object", "properties": {"city": {"type": "string"}}},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "anything": {},
    },
    "required": ["id"],
    "additionalProperties": False,  # closed, so adding optional properties is compatible
}
TICKET_V2 = {
    **TICKET_V1,
    "properties": {
        **TICKET_V1["properties"],
        "status": {"anyOf": [{"enum": ["NEW", "DONE"]}, {"type": "null"}]},
        "score": {"type": "number"},
    },
}


def test_json_schema_topic_reads_as_typed_columns(
    spark: Any, services: Services, pulsar_client: Any, make_factory: Any
) -> None:
    topic = f"persistent://public/default/{unique('spark-json')}"
    create_partitioned_topic(services, topic, 2)
    sent = []
    for version, schema in ((1, TICKET_V1), (2, TICKET_V2)):
        producer = create_producer(pulsar_client, topic, make_factory().json(json.dumps(schema)))
        for i in range(5):
            value: dict[str, Any] = {
                "id": version * 100 + i,
                "title": f"ticket {i}",
                "tags": ["a", "b"][: i % 3],
                "where": {"city": "Lyon"},
                "counts": {"x": i},
                "anything": [i, {"nested": True}],
            }
            if version == 2:
                value.update(status="DONE" if i % 2 else None, score=i / 2)
            producer.send(value, partition_key=str(value["id"]))
            sent.append(value)
        producer.close()

    df = spark.read.format(FORMAT).options(**source_options(services, topic=topic)).load()
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,title:string,tags:array<string>,where:struct<city:string>,"
        "counts:map<string,bigint>,anything:string,status:string,score:double>"
    )
    rows = {r.value.id: r.value.asDict(recursive=True) for r in df.collect()}
    assert all(r for r in rows)
    for value in sent:
        row = rows[value["id"]]
        assert row["title"] == value["title"] and row["tags"] == value["tags"]
        assert row["where"] == {"city": "Lyon"} and row["counts"] == value["counts"]
        assert json.loads(row["anything"]) == value["anything"]  # no single type: JSON text
        assert row["status"] == value.get("status") and row["score"] == value.get("score")


def test_protobuf_topic_reads_with_the_generated_class(
    spark: Any, services: Services, pulsar_client: Any, make_factory: Any
) -> None:
    topic = f"persistent://public/default/{unique('spark-proto')}"
    producer = create_producer(pulsar_client, topic, make_factory().protobuf(Shipment))
    for shipment in two_shipments():
        producer.send(shipment)
    producer.close()

    options = source_options(services, topic=topic, **{"protobuf.message.class": "schemas.Shipment"})
    rows = spark.read.format(FORMAT).options(**options).load().orderBy("value.id").collect()

    assert [r._valid for r in rows] == [True, True]
    first, second = (r.value.asDict(recursive=True) for r in rows)
    assert first == {
        "id": 7,
        "to": {"city": "Oslo"},
        "items": ["book", "pen"],
        "weights": {"book": 400},
        "sent": dt.datetime(2023, 11, 14, 22, 13, 20),  # Spark gives session-zone (UTC) naive times
        "fragile": True,
    }
    assert second["to"] is None and second["items"] == [] and second["sent"] is None


def test_protobuf_topic_reads_without_a_class_from_the_registrys_text(
    spark: Any, services: Services, pulsar_client: Any, make_factory: Any
) -> None:
    # no `protobuf.message.class`: the driver and the executors build the message from the
    # registry's .proto text (compiled in their process), as with the class
    topic = f"persistent://public/default/{unique('spark-proto')}"
    producer = create_producer(pulsar_client, topic, make_factory().protobuf(Shipment))
    for shipment in two_shipments():
        producer.send(shipment)
    producer.close()

    with_class = source_options(
        services, topic=topic, reader="python", **{"protobuf.message.class": "schemas.Shipment"}
    )
    read = spark.read.format(FORMAT)
    given = read.options(**with_class).load().orderBy("value.id").collect()
    # the extension reads the wire bytes (`reader=native` refuses a query it cannot read so)
    native = source_options(services, topic=topic, reader="native")
    without = read.options(**native).load().orderBy("value.id").collect()

    assert [r._valid for r in without] == [True, True]
    values = [[r.value.asDict(recursive=True) for r in rows] for rows in (without, given)]
    assert values[0] == values[1] and values[0][0]["to"] == {"city": "Oslo"}


def test_the_sink_writes_protobuf_rows_without_a_class_on_both_writers(
    spark: Any, services: Services
) -> None:
    # the subject holds the .proto text (as a Java service registers it): no class anywhere; the
    # native writer writes the bodies from the column, the Python path one by one, alike
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from pulsar_external_schema.protobuf_text import file_descriptor_proto, render_proto

    registry = SchemaRegistryClient({"url": services.registry_url})
    text = render_proto(file_descriptor_proto(Shipment))
    df = spark.createDataFrame(
        [({"id": n, "items": ["book"] * n, "fragile": n % 2 == 0},) for n in range(1, 6)],
        "value struct<id:bigint, items:array<string>, fragile:boolean>",
    )
    read: dict[str, list[Any]] = {}
    for writer in ("native", "python"):
        topic = f"persistent://public/default/{unique('spark-proto-sink')}"
        registry.register_schema(f"public.default.{topic.rsplit('/', 1)[1]}-value", Schema(text, "PROTOBUF"))
        df.write.format(FORMAT).mode("append").options(
            **source_options(services, topic=topic, writer=writer)
        ).save()
        rows = spark.read.format(FORMAT).options(**source_options(services, topic=topic)).load()
        read[writer] = [r.value.asDict(recursive=True) for r in rows.orderBy("value.id").collect()]
    assert read["native"] == read["python"]
    assert [(v["id"], v["items"], v["fragile"], v["to"]) for v in read["native"]] == [
        (n, ["book"] * n, n % 2 == 0, None) for n in range(1, 6)
    ]
