#!/usr/bin/env python3
"""Decoded rows per second through the `pulsar-external` Spark source, against raw fastavro
decoding of the same payloads, measured in the same run.

1. fastavro: `schemaless_reader` over the payloads, already in memory, one core (the floor of
   any Avro decoding in Python).
2. ours in one process: `ExternalSchema.decode` of the same payloads (registry lookups cached).
3. Spark: `spark.read.format("pulsar-external")...load()` written to the `noop` sink, so every
   column is produced; local[N], one Spark partition per topic partition, reading from the broker.
   Run twice; the second run is reported (the first starts the Python workers).
4. Spark with a data contract: the same topic with a CEL condition (READ) on the reader schema.

Needs the services and the spark extra:

    scripts/services up && eval "$(scripts/services env)"
    .venv/bin/python benchmarks/spark_read.py            # 200k records
    .venv/bin/python benchmarks/spark_read.py --quick    # 20k records
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import uuid
from typing import Any

import fastavro
import httpx
import pulsar
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.spark import register

SCHEMA = {
    "type": "record",
    "name": "Click",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "user", "type": "string"},
        {"name": "url", "type": "string"},
        {"name": "ms", "type": "int"},
        {"name": "score", "type": "double"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
RULE = {
    "name": "knownUser",
    "kind": "CONDITION",
    "type": "CEL",
    "mode": "READ",
    "expr": "size(message.user) > 0",
    "onFailure": "ERROR",
}


def value(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "user": f"user-{i % 997}",
        "url": f"https://example.com/p/{i % 5000}",
        "ms": i % 3000,
        "score": i / 7,
        "tags": ["a", "b"] if i % 2 else [],
    }


def produce(client: Any, admin_url: str, registry_url: str, topic: str, count: int, partitions: int) -> None:
    path = topic.removeprefix("persistent://")
    httpx.put(f"{admin_url}/admin/v2/persistent/{path}/partitions", json=partitions).raise_for_status()
    with SchemaRegistrySchemaFactory({"schema.registry.url": registry_url}) as factory:
        schema = factory.avro(json.dumps(SCHEMA))
        producer = create_producer(client, topic, schema, batching_enabled=True, block_if_queue_full=True)
        for i in range(count):
            producer.send_async(value(i), lambda *_: None, partition_key=str(i))
        producer.flush()
        producer.close()
        schema.close()


def payloads(client: Any, topic: str, partitions: int) -> list[tuple[bytes, dict[str, str]]]:
    out = []
    for p in range(partitions):
        reader = client.create_reader(f"{topic}-partition-{p}", pulsar.MessageId.earliest)
        while reader.has_message_available():
            msg = reader.read_next(10_000)
            out.append((msg.data(), msg.properties()))
        reader.close()
    return out


def rate(count: int, seconds: float) -> float:
    return count / seconds


def fastavro_rate(messages: list[tuple[bytes, dict[str, str]]]) -> float:
    parsed = fastavro.parse_schema(SCHEMA)
    start = time.perf_counter()
    for data, _ in messages:
        fastavro.schemaless_reader(io.BytesIO(data), parsed, None)
    return rate(len(messages), time.perf_counter() - start)


def ours_rate(registry_url: str, topic: str, messages: list[tuple[bytes, dict[str, str]]]) -> float:
    from pulsar_external_schema import schema_id as ids

    with SchemaRegistrySchemaFactory({"schema.registry.url": registry_url}) as factory:
        schema = factory.avro(json.dumps(SCHEMA))
        schema.decode(topic, messages[0][0], ids.parse_hex(messages[0][1][ids.SCHEMA_ID_PROPERTY]))
        start = time.perf_counter()
        for data, properties in messages:
            schema.decode(topic, data, ids.parse_hex(properties[ids.SCHEMA_ID_PROPERTY]))
        elapsed = time.perf_counter() - start
        schema.close()
    return rate(len(messages), elapsed)


def spark_rate(spark: Any, options: dict[str, str], count: int) -> tuple[float, float]:
    def once() -> float:
        df = spark.read.format("pulsar-external").options(**options).load()
        start = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        return rate(count, time.perf_counter() - start)

    first = once()
    return first, once()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20k records instead of 200k")
    parser.add_argument(
        "--cores", type=int, default=os.cpu_count() or 2, help="Spark local[N] and topic partitions"
    )
    args = parser.parse_args()
    count = 20_000 if args.quick else 200_000
    service_url = os.environ["PULSAR_SERVICE_URL"]
    admin_url = os.environ["PULSAR_ADMIN_URL"]
    registry_url = os.environ["SCHEMA_REGISTRY_URL"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    topic = f"persistent://public/default/bench-spark-{uuid.uuid4().hex[:8]}"
    print(f"producing {count:,} records to {topic} ({args.cores} partitions) ...", file=sys.stderr)
    produce(client, admin_url, registry_url, topic, count, args.cores)
    messages = payloads(client, topic, args.cores)
    assert len(messages) == count, (len(messages), count)

    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{args.cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    options = {
        "service.url": service_url,
        "admin.url": admin_url,
        "schema.registry.url": registry_url,
        "topic": topic,
    }
    raw = fastavro_rate(messages)
    ours = ours_rate(registry_url, topic, messages)
    cold, warm = spark_rate(spark, options, count)

    subject = f"public.default.{topic.rsplit('/', 1)[1]}-value"
    SchemaRegistryClient({"url": registry_url}).register_schema(
        subject,
        Schema.from_dict(
            {"schemaType": "AVRO", "schema": json.dumps(SCHEMA), "ruleSet": {"domainRules": [RULE]}}
        ),
    )
    _, ruled = spark_rate(spark, options, count)
    spark.stop()
    client.close()

    rows = [
        ("fastavro schemaless_reader, 1 core, payloads in memory", raw),
        ("ours: ExternalSchema.decode, 1 core, payloads in memory", ours),
        (f"Spark pulsar-external, local[{args.cores}], first run", cold),
        (f"Spark pulsar-external, local[{args.cores}]", warm),
        (f"Spark pulsar-external + CEL READ rule, local[{args.cores}]", ruled),
    ]
    print(f"\n{count:,} Avro records, 6 fields; rows/s and ratio to raw fastavro (same run)\n")
    print("| measurement | rows/s | / fastavro |\n|---|---:|---:|")
    for name, value_ in rows:
        print(f"| {name} | {value_:,.0f} | {value_ / raw:.2f}x |")


if __name__ == "__main__":
    main()
