"""Journey: producers under a data contract write two days of orders -> a data engineer reads the
second day by publish time into Arrow (`read_table`), looks at it in polars, saves the valid
orders as Parquet and queries them with DuckDB, streams the first day into DuckDB
(`read_batches`) -> and the Spark source, reading the same topic, gives the same rows.

Fails without `pulsar_external_schema.arrow` (issue 58), and without the admin API's message id by
publish time (`start_time` / `end_time`)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import Services, create_partitioned_topic
from journey_support import NAMED, ORDER, ORDERS, POSITIVE, produce_a_day
from spark_support import register_contract, source_options

from pulsar_external_schema.arrow import read_batches, read_table

pytestmark = pytest.mark.spark

#: The second day's orders: the first day's, ids moved by 10.
FIRST_DAY: list[dict[str, Any]] = ORDERS
SECOND_DAY = [{**order, "id": order["id"] + 10} for order in FIRST_DAY]


def place(row: dict[str, Any]) -> tuple[int, int, int, int]:
    return (row["partition"], *row["messageId"].values())


def test_a_day_of_orders_read_by_publish_time_into_polars_parquet_and_duckdb(
    services: Services, pulsar_client: Any, topic: str, spark: Any, tmp_path: Path
) -> None:
    create_partitioned_topic(services, topic, 2)
    register_contract(services, topic, ORDER, [POSITIVE, NAMED])
    first = produce_a_day(pulsar_client, services.registry_url, topic, FIRST_DAY)
    time.sleep(1.2)
    midnight = dt.datetime.now(dt.UTC)
    time.sleep(1.2)
    second = produce_a_day(pulsar_client, services.registry_url, topic, SECOND_DAY)
    connection: dict[str, Any] = {
        "service_url": services.pulsar_url,
        "admin_url": services.admin_url,
        "config": {"schema.registry.url": services.registry_url},
    }

    # the second day, by publish time, into polars: each order once, and why the others are not valid
    day = read_table(topic, start_time=midnight, **connection)
    frame = pl.from_arrow(day)
    assert isinstance(frame, pl.DataFrame)
    assert frame.height == len(second.sent) + 1  # and the message no registry can decode
    valid = frame.filter(pl.col("_valid")).select(pl.col("value").struct.unnest())
    assert sorted(valid["id"]) == second.valid
    refused = frame.filter(pl.col("_rule") == "named")
    assert sorted(int(k) for k in refused["key"]) == second.invalid
    [garbage] = frame.filter(~pl.col("_valid") & pl.col("_rule").is_null()).to_dicts()
    assert garbage["key"] == "garbage" and "987654321" in garbage["_error"]

    # the valid orders saved as Parquet, queried by DuckDB
    saved = tmp_path / "orders.parquet"
    pq.write_table(day.filter(day.column("_valid")), saved)
    found = duckdb.sql(f"select value.id, value.qty from '{saved}' order by 1")
    assert found is not None
    assert found.fetchall() == [(o["id"], o["qty"]) for o in SECOND_DAY if o["id"] in second.valid]

    # the first day streamed into DuckDB, batch by batch
    yesterday = read_batches(topic, end_time=midnight, batch_size=2, **connection)  # noqa: F841 (DuckDB's name)
    counted = duckdb.sql("select count(*) filter (where _valid), count(*) from yesterday")
    assert counted is not None
    assert counted.fetchall() == [(len(first.valid), len(first.sent) + 1)]

    # the Spark source reads the same topic into the same rows
    whole = read_table(topic, **connection).to_pylist()
    rows = spark.read.format("pulsar-external").options(**source_options(services, topic=topic)).load()
    by_spark = sorted(
        (
            (r.partition, r.messageId.ledgerId, r.messageId.entryId, r.messageId.batchIndex),
            r.key,
            r.value.asDict() if r.value else None,
            r.schemaId,
            r._valid,
            r._rule,
        )
        for r in rows.collect()
    )
    by_arrow = sorted((place(r), r["key"], r["value"], r["schemaId"], r["_valid"], r["_rule"]) for r in whole)
    assert by_spark == by_arrow
    assert len(by_arrow) == len(first.sent) + len(second.sent) + 2
