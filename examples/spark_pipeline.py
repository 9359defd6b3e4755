"""A PySpark pipeline on a Pulsar topic with external schemas (docs/spark.md).

    pip install 'pulsar-external-schema[spark]'      # and Java 17+ for Spark
    PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 PULSAR_ADMIN_URL=http://127.0.0.1:8080 \\
    SCHEMA_REGISTRY_URL=http://127.0.0.1:8081 python examples/spark_pipeline.py

1. producers write orders to a 2-partition topic with two schema versions; the second version
   carries a data contract (a CEL rule consumers run), and one producer writes garbage;
2. a batch read decodes every version into the latest schema, with the verdict per row;
3. the validation job routes valid orders to Parquet and the rest to a DLQ topic, with reasons.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid

import httpx
import pulsar
from confluent_kafka.schema_registry import Schema
from pyspark.sql import SparkSession

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.spark import ValidationJob, register

# Spark starts its Python workers with `python3` from PATH unless told otherwise; that one often
# lacks pyarrow and this package, and the job hangs or fails. Use this interpreter.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
ADMIN_URL = os.environ.get("PULSAR_ADMIN_URL", "http://127.0.0.1:8080")
REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
RUN = uuid.uuid4().hex[:8]
TOPIC = f"persistent://public/default/orders-{RUN}"
DLQ = f"persistent://public/default/orders-{RUN}-dlq"

V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "quantity", "type": "int", "default": 1}]}
CONTRACT = {
    "domainRules": [
        {
            "name": "hasItem",
            "kind": "CONDITION",
            "type": "CEL",
            "mode": "READ",
            "expr": "size(message.item) > 0",
            "onFailure": "ERROR",
        }
    ]
}


def produce(client: pulsar.Client) -> None:
    httpx.put(
        f"{ADMIN_URL}/admin/v2/persistent/{TOPIC.split('://')[1]}/partitions", json=2
    ).raise_for_status()
    with SchemaRegistrySchemaFactory({"schema.registry.url": REGISTRY_URL}) as factory:
        v1 = create_producer(client, TOPIC, factory.avro(json.dumps(V1)))
        for i in range(1, 4):
            v1.send({"id": i, "item": "tea"}, partition_key=str(i))
        v2 = create_producer(
            client,
            TOPIC,
            factory.avro(
                Schema.from_dict({"schemaType": "AVRO", "schema": json.dumps(V2), "ruleSet": CONTRACT})
            ),
        )
        for i, item in ((4, "cake"), (5, ""), (6, "scone")):
            v2.send({"id": i, "item": item, "quantity": 2}, partition_key=str(i))
    rogue = client.create_producer(TOPIC)
    rogue.send(b"not an order", partition_key="rogue")  # no schema id at all


def main() -> None:
    client = pulsar.Client(SERVICE_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    produce(client)

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    options = {"service.url": SERVICE_URL, "admin.url": ADMIN_URL, "schema.registry.url": REGISTRY_URL}

    # 2. one batch read: every writer version decodes into the latest schema
    orders = spark.read.format("pulsar-external").options(**options).option("topic", TOPIC).load()
    for row in orders.orderBy("key").collect():
        print(f"read {row.key}: valid={row._valid} value={row.value and row.value.asDict()} rule={row._rule}")

    # 3. the validation job: valid orders to Parquet, the rest to the DLQ topic
    with tempfile.TemporaryDirectory() as work:
        ValidationJob(
            input=TOPIC,
            valid=f"{work}/valid",
            dead_letter_topic=DLQ,
            checkpoint=f"{work}/checkpoint",
            options=options,
            on_batch=lambda counts: print(
                f"batch {counts.batch_id}: {counts.valid} valid, {counts.invalid} dead-lettered"
            ),
        ).run(spark)
        ids = sorted(r.id for r in spark.read.parquet(f"{work}/valid").select("value.id").collect())
        print(f"parquet: {ids}")
    spark.stop()

    dlq = client.subscribe(DLQ, "example", initial_position=pulsar.InitialPosition.Earliest)
    for _ in range(2):
        message = dlq.receive(timeout_millis=10_000)
        properties = message.properties()
        reason = properties["__rule.exception"][:60]
        print(f"dlq {message.partition_key()}: rule={properties.get('__rule.name')} because {reason}")
    client.close()


if __name__ == "__main__":
    main()
