"""Journey 1 on a Protobuf topic: a contract with a READ rule -> producers with the default config
-> `ValidationJob` on Spark (the Python path, with the generated class the workers import) -> a
stock Protobuf consumer of the trusted topic -> the DLQ -> a fixed message replayed through the
job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

import pulsar
from conftest import Services
from contracts import drain, rule
from journey_support import messages_by_key
from schemas import Shipment
from spark_support import deduplicated_namespace, source_options

from pulsar_external_schema import SCHEMA_ID_PROPERTY, SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.deadletter import RULE_NAME
from pulsar_external_schema.protobuf_text import file_descriptor_proto, render_proto
from pulsar_external_schema.spark import ValidationJob

pytestmark = pytest.mark.spark

#: Shipments of nothing are dead-lettered by the validation.
SHIPS_SOMETHING = rule("shipsSomething", "CONDITION", "CEL", "READ", "size(message.items) > 0")


def test_protobuf_shipments_produced_validated_read_from_the_trusted_topic_fixed_and_replayed(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/ships", f"{namespace}/ships-valid", f"{namespace}/ships-dlq"
    SchemaRegistryClient({"url": services.registry_url}).register_schema(
        f"{source.removeprefix('persistent://').replace('/', '.')}-value",
        Schema.from_dict(
            {
                "schema": render_proto(file_descriptor_proto(Shipment)),
                "schemaType": "PROTOBUF",
                "ruleSet": {"domainRules": [SHIPS_SOMETHING]},
            }
        ),
    )
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url})
    producer = create_producer(pulsar_client, source, factory.protobuf(Shipment))
    sent = {n: Shipment(id=n, items=["book"] * (n % 2)) for n in (1, 2, 3)}  # 2 ships nothing
    for n, shipment in sent.items():
        producer.send(shipment, partition_key=str(n))
    garbage = pulsar_client.create_producer(source)
    garbage.send(b"\x08", properties={SCHEMA_ID_PROPERTY: "0000000000"}, partition_key="garbage")
    raw = messages_by_key(pulsar_client, source)

    options = {**source_options(services), "protobuf.message.class": "schemas.Shipment"}
    job = ValidationJob(source, valid, dlq, str(tmp_path / "checkpoint"), options)
    job.run(spark)

    app = pulsar_client.subscribe(
        valid, "app", schema=factory.protobuf(Shipment), initial_position=pulsar.InitialPosition.Earliest
    )
    read = [(m.partition_key(), m.value(), m.data(), m.properties()) for m in drain(app)]
    assert [(key, value) for key, value, *_ in read] == [("1", sent[1]), ("3", sent[3])]
    assert all((data, properties) == raw[key] for key, _, data, properties in read)
    copies = messages_by_key(pulsar_client, dlq)
    assert sorted(copies) == ["2", "garbage"]
    assert copies["2"][0] == raw["2"][0] and copies["2"][1][RULE_NAME] == "shipsSomething"

    producer.send(Shipment(id=2, items=["pen"]), partition_key="2")  # fixed, and sent again
    job.run(spark)
    assert [(m.partition_key(), m.value().items) for m in drain(app)] == [("2", ["pen"])]
    assert sorted(messages_by_key(pulsar_client, dlq, name="audit-2")) == ["2", "garbage"]
    producer.close()
    factory.close()
