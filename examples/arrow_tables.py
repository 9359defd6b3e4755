"""A Pulsar topic read into Arrow, polars, pandas and DuckDB in plain Python (docs/tables.md).

    pip install 'pulsar-external-schema[arrow]'
    PULSAR_SERVICE_URL=pulsar://127.0.0.1:6650 PULSAR_ADMIN_URL=http://127.0.0.1:8080 \\
    SCHEMA_REGISTRY_URL=http://127.0.0.1:8081 python examples/arrow_tables.py

1. a producer writes orders to a 2-partition topic under a data contract (a CEL rule consumers
   run: an order needs an item), in two waves a moment apart;
2. the whole topic as a table: every order decoded, the verdict per row, into polars and pandas;
3. only the second wave, by publish time, streamed into DuckDB; and one wave saved as Parquet;
4. the valid orders of more than 100.0, a polars frame of records, written to a topic of their
   own with `write_table` (each row an order, keyed by its id), through the same contract.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
import uuid
from typing import Any

import duckdb
import httpx
import polars as pl
import pulsar
import pyarrow.parquet as pq
from confluent_kafka.schema_registry import Schema

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.arrow import read_batches, read_table, write_table

SERVICE_URL = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
ADMIN_URL = os.environ.get("PULSAR_ADMIN_URL", "http://127.0.0.1:8080")
REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
TOPIC = f"persistent://public/default/orders-{uuid.uuid4().hex[:8]}"

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "amount", "type": "double"},
    ],
}
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
CONNECTION: dict[str, Any] = {
    "service_url": SERVICE_URL,
    "admin_url": ADMIN_URL,
    "config": {"schema.registry.url": REGISTRY_URL},
}


def produce() -> dt.datetime:
    """Two waves of 50 orders (every 10th without an item); the time between them."""
    httpx.put(
        f"{ADMIN_URL}/admin/v2/persistent/{TOPIC.split('://')[1]}/partitions", json=2
    ).raise_for_status()
    client = pulsar.Client(SERVICE_URL, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    schema = Schema.from_dict({"schemaType": "AVRO", "schema": json.dumps(ORDER), "ruleSet": CONTRACT})
    with SchemaRegistrySchemaFactory({"schema.registry.url": REGISTRY_URL}) as factory:
        producer = create_producer(client, TOPIC, factory.avro(schema))
        between = dt.datetime.now(dt.UTC)
        for wave in (0, 1):
            for i in range(wave * 50, wave * 50 + 50):
                item = "" if i % 10 == 0 else f"item {i % 7}"
                producer.send_async({"id": i, "item": item, "amount": i * 2.5}, None, partition_key=str(i))
            producer.flush()
            if wave == 0:
                time.sleep(1.5)
                between = dt.datetime.now(dt.UTC)
                time.sleep(1.5)
        producer.close()
    client.close()
    return between


def main() -> None:
    between = produce()

    table = read_table(TOPIC, **CONNECTION)
    print(f"table: {table.num_rows} rows, columns {', '.join(table.column_names)}")

    orders = pl.from_arrow(table)
    assert isinstance(orders, pl.DataFrame)
    valid = orders.filter(pl.col("_valid")).select(pl.col("value").struct.unnest())
    refused = orders.filter(~pl.col("_valid")).select("key", "_rule")
    print(f"polars: {valid.height} valid orders worth {valid['amount'].sum():.1f}")
    print(f"polars: {refused.height} refused, by rule {sorted(set(refused['_rule']))}")
    print(f"pandas: {len(table.to_pandas())} rows")

    second = read_batches(TOPIC, start_time=between, batch_size=20, **CONNECTION)  # noqa: F841 (DuckDB's name)
    found = duckdb.sql("select count(*), sum(value.amount) from second where _valid")
    assert found is not None
    [(count, total)] = found.fetchall()
    print(f"duckdb: the second wave has {count} valid orders worth {total:.1f}")

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "first-wave.parquet")
        pq.write_table(read_table(TOPIC, end_time=between, **CONNECTION), path)
        print(f"parquet: the first wave, {pq.read_metadata(path).num_rows} rows")

    large = valid.filter(pl.col("amount") > 100.0)  # columns id, item, amount: the record's fields
    with SchemaRegistrySchemaFactory({"schema.registry.url": REGISTRY_URL}) as factory:
        schema = factory.avro(Schema.from_dict({"schemaType": "AVRO", "schema": json.dumps(ORDER)}))
        written = write_table(
            f"{TOPIC}-large", large.to_arrow(), key_column="id", schema=schema, service_url=SERVICE_URL
        )
        schema.close()
    again = read_table(f"{TOPIC}-large", **CONNECTION)
    print(f"write_table: {written.sent} large orders written, {again.num_rows} read back")


if __name__ == "__main__":
    main()
