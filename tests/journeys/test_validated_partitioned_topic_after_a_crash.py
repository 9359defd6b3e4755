"""Journey 7: orders without keys on a partitioned topic -> the `validate` command, killed
mid-stream (SIGKILL) and started again on its checkpoint -> a stock consumer of the partitioned
trusted topic reads each valid order once; the DLQ holds each invalid one once.

What it joins: keyless messages (pulsar-client's round robin starts at a random partition, so a
re-run micro-batch sent them where the broker had not seen their sequence ids: they came twice),
the sink's deterministic batches on deduplicated topics, and the job's checkpoint."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

from conftest import Services, create_partitioned_topic
from contracts import drain, subscribe
from journey_support import NAMED, ORDER, read_values, stock_consumer
from spark_support import deduplicated_namespace, kill_after_commits, register_contract, validate

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

pytestmark = pytest.mark.spark

ORDERS = [{"id": i, "item": "" if i % 8 == 0 else f"item-{i}", "qty": 1} for i in range(1, 49)]


def test_keyless_orders_validated_into_a_partitioned_topic_once_across_a_crash(
    services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/orders", f"{namespace}/orders-valid", f"{namespace}/orders-dlq"
    create_partitioned_topic(services, source, 2)
    create_partitioned_topic(services, valid, 3)
    register_contract(services, source, ORDER, [NAMED])
    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        producer = create_producer(pulsar_client, source, factory.avro(json.dumps(ORDER)))
        for order in ORDERS:
            producer.send(order)  # no key, one entry a message: many micro-batches below
        producer.close()

    checkpoint = tmp_path / "checkpoint"
    args = ["--input", source, "--valid", valid, "--dead-letter-topic", dlq, "--checkpoint", str(checkpoint)]
    continuous = ["--trigger", "continuous", "--interval", "1 second", "--max-entries-per-partition", "2"]
    running = validate(services, *args, *continuous)
    kill_after_commits(running, checkpoint, 3)
    written = len(drain(subscribe(pulsar_client, valid, name="before")))
    assert 0 < written < len([o for o in ORDERS if o["item"]])  # the crash left work to do

    resumed = validate(services, *args)
    output, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, output

    app = stock_consumer(pulsar_client, services.registry_url, valid)
    read = read_values(app)
    app.close()
    assert sorted(value["id"] for _, value, *_ in read) == [o["id"] for o in ORDERS if o["item"]]
    # The DLQ holds the original bytes (the schema id is in the properties): each invalid order once.
    parsed = fastavro.parse_schema(ORDER)
    dead = drain(subscribe(pulsar_client, dlq, name="audit"))
    records = [fastavro.schemaless_reader(io.BytesIO(m.data()), parsed, None) for m in dead]
    dead_ids = sorted(record["id"] for record in records if isinstance(record, dict))
    assert dead_ids == [o["id"] for o in ORDERS if not o["item"]]
