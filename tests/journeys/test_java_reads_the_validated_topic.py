"""Journey 5: producers with WRITE rules -> `ValidationJob` -> a Java PIP-420 consumer (Pulsar's
Java client with an EXTERNAL schema over the same registry) reading the trusted topic.

Fails on the code before issue 34: the job wrote the trusted topic through plain producers, so the
broker refused the Java client's EXTERNAL schema on it ("Failed to add schema to an active topic
with empty(BYTES) schema"); with `pulsar.admin.url` the sink now declares the topic EXTERNAL, as
`create_producer` does. And order 4 (`qty` 2.5) would have reached Java as 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

from conftest import Services
from java_support import java, needs_java
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
from spark_support import deduplicated_namespace, register_contract, source_options

from pulsar_external_schema import _native
from pulsar_external_schema.spark import ValidationJob

pytestmark = [pytest.mark.spark, needs_java, pytest.mark.usefixtures("external_type")]


def test_a_java_pip420_consumer_reads_the_trusted_topic(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/orders", f"{namespace}/orders-valid", f"{namespace}/orders-dlq"
    register_contract(services, source, ORDER, [POSITIVE, NAMED])
    day = produce_a_day(pulsar_client, services.registry_url, source, ORDERS)
    assert day.refused == REFUSED

    options = source_options(services, **{"pulsar.admin.url": services.admin_url})
    ValidationJob(source, valid, dlq, str(tmp_path / "checkpoint"), options).run(spark)

    # the id where Java looks first: PIP-420's field 32, which the native sender writes beside
    # `__schema_id`; pulsar-client (an executor without the extension) writes the property only
    where = "field32" if _native.extension() is not None else "property"
    assert java(services, "consume", valid, "java", "2") == [
        f'{{"id": 1, "item": "tea", "qty": 2}} {where}',
        f'{{"id": 5, "item": "ham", "qty": 3}} {where}',
    ]
    # Python readers of the same topic, with the default config, read the same.
    python = [
        value for _, value, *_ in read_values(stock_consumer(pulsar_client, services.registry_url, valid))
    ]
    assert python == [ORDERS[0], ORDERS[4]]
