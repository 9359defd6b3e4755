"""Journey 6: a geo-replicated namespace (two Pulsar clusters, one registry): producers in cluster
A, `ValidationJob` on cluster A, and a stock consumer of the trusted topic in cluster B.

Fails on the code before issue 34: the consumer in B failed every replicated message with
`ForeignSchemaIdError` (the job's ids were registered under the source's subject only), and
order 4 (`qty` 2.5) would have been replicated as 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

from conftest import Services
from geo_support import GeoClusters
from journey_support import (
    NAMED,
    ORDER,
    ORDERS,
    POSITIVE,
    REFUSED,
    produce_a_day,
    read_values,
    stock_consumer,
)
from spark_support import register_contract, source_options

from pulsar_external_schema.spark import ValidationJob

pytestmark = pytest.mark.spark

#: Pulsar adds this property to every entry a replicator writes; it is not the application's.
REPLICATION_PROPERTY = "__MSG_PROP_REPL_SOURCE_POSITION"


def test_validated_in_one_cluster_and_read_in_the_other_with_the_default_config(
    spark: Any, geo: GeoClusters, services: Services, pulsar_client: Any, client_b: Any, tmp_path: Path
) -> None:
    source, valid, dlq = geo.topic("orders"), geo.topic("orders-valid"), geo.topic("orders-dlq")
    register_contract(services, source, ORDER, [POSITIVE, NAMED])
    in_b = stock_consumer(client_b, services.registry_url, valid)  # an application of cluster B
    day = produce_a_day(pulsar_client, services.registry_url, source, ORDERS)  # in cluster A
    assert day.refused == REFUSED

    options = source_options(services)  # cluster A's broker and admin API
    ValidationJob(source, valid, dlq, str(tmp_path / "checkpoint"), options).run(spark)

    read = read_values(in_b, timeout_millis=10_000)
    assert [(key, value) for key, value, *_ in read] == [("1", ORDERS[0]), ("5", ORDERS[4])]
    # Through the replicator: nothing else publishes to cluster B. (It marks each entry it writes
    # with REPLICATION_PROPERTY; the job sends in batches, so the mark is on the batch's metadata,
    # which pulsar-client does not show as a message's property.)
    path = valid.removeprefix("persistent://")
    stats = httpx.get(f"{geo.b_admin}/admin/v2/persistent/{path}/stats", timeout=30).json()
    assert stats["msgInCounter"] == len(read)
    for key, _, data, properties in read:
        original = {k: v for k, v in properties.items() if k != REPLICATION_PROPERTY}
        assert (data, original) == day.raw[key]  # the source's bytes and schema id, across clusters
