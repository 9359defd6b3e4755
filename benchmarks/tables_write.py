#!/usr/bin/env python3
"""Arrow rows written to a topic in plain Python (`pulsar_external_schema.arrow.write_table`),
against what a user does without it, measured in the same run (docs/tables.md,
docs/benchmarks.md).

1. The baseline: the table's rows as dicts (`Table.to_pylist`), each encoded with fastavro's
   `schemaless_writer` and sent by pulsar-client's batched producer (`send_async`, the schema id
   as the `__schema_id` property this package writes), flushed: every message persisted.
2. `write_table(topic, table, schema=...)`: the same rows through the subject's schema and WRITE
   rules (none here), as a producer sends them, returning when every message is persisted.
3. The same with a CEL WRITE condition (`size(message.user) > 0`, in the everyday subset) on
   the subject: judged over the column.

4. `--protobuf`, instead of the above: the same rows to a Protobuf topic (the `Click` message of
   tables_read.py, registered from its `.proto` text), by `write_table` with no schema and no
   class (the subject's latest version, its message built from the text), against the rows as
   dicts made messages by the generated class's constructor (`Click(**row)`, upb's own),
   `SerializeToString`, and pulsar-client's batched producer.

Each to a new topic of one partition; best of two, once the machine is quiet (`run.settled`).
Needs the services:

    scripts/services up && eval "$(scripts/services env)"
    .venv/bin/python benchmarks/tables_write.py               # 1M rows
    .venv/bin/python benchmarks/tables_write.py --count 200000
    .venv/bin/python benchmarks/tables_write.py --protobuf    # the Protobuf figures
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import sys
import time
from typing import Any

import fastavro
import pulsar
import pyarrow as pa
from confluent_kafka.schema_registry import Schema
from run import machine, settled  # the same machine line as docs/benchmarks.md (this script's folder)
from spark_read import RULE, SCHEMA, new_topic, value

from pulsar_external_schema import SchemaRegistrySchemaFactory
from pulsar_external_schema.arrow import write_table

#: The issue's target, as a multiple of the baseline's rows/s.
TARGET = 2.0
#: Protobuf's: `write_table` against the class's constructor + `SerializeToString` + pulsar-client.
PROTOBUF_TARGET = 10.0


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def protobuf_figures(count: int, service_url: str, admin_url: str, registry_url: str) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from tables_read import CLICK_PROTO, click_class

    registry = SchemaRegistryClient({"url": registry_url})

    def registered() -> tuple[str, int]:
        """A new topic, its subject holding the `Click` text (the one id of that text)."""
        topic = new_topic(admin_url, 1)
        subject = f"{topic.removeprefix('persistent://').replace('/', '.')}-value"
        return topic, registry.register_schema(subject, Schema(CLICK_PROTO, "PROTOBUF"))

    cls = click_class()
    table = pa.table({"value": [value(i) for i in range(count)]})
    rows = table.to_pylist()
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    config = {"schema.registry.url": registry_url}
    warm, _ = registered()
    write_table(warm, table.slice(0, 1000), service_url=service_url, config=config)

    def baseline() -> float:
        topic, schema_id = registered()
        properties = {"__schema_id": f"ff00{schema_id:08x}00"}  # the id and the message's indexes
        settled()
        start = time.perf_counter()
        producer = client.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
        for row in rows:
            producer.send_async(cls(**row["value"]).SerializeToString(), None, properties=properties)
        producer.flush()
        producer.close()
        return time.perf_counter() - start

    def ours() -> float:
        topic, _ = registered()
        settled()
        start = time.perf_counter()
        written = write_table(topic, table, service_url=service_url, config=config)
        seconds = time.perf_counter() - start
        assert written.sent == count and not written.refused, written
        return seconds

    theirs = mine = float("inf")
    for _ in range(2):
        say("the class's constructor + SerializeToString + pulsar-client ...")
        theirs = min(theirs, baseline())
        say("write_table, no schema and no class ...")
        mine = min(mine, ours())
    client.close()
    ratio = theirs / mine
    print(
        "\n".join(
            [
                f"{machine()}; {datetime.date.today():%Y-%m-%d}; {count:,} rows, one partition.",
                "",
                "| write | seconds | rows/s | / the baseline |",
                "|---|---|---|---|",
                f"| `to_pylist` + `Click(**row)` + `SerializeToString` + pulsar-client batched `send_async` "
                f"| {theirs:.2f} | {count / theirs:,.0f} | 1.00x |",
                f"| `write_table` (no schema, no class) | {mine:.2f} | {count / mine:,.0f} | {ratio:.2f}x |",
                "",
                f"Target: `write_table` of Protobuf >= {PROTOBUF_TARGET}x the baseline: "
                f"**{'met' if ratio >= PROTOBUF_TARGET else 'missed'}** ({ratio:.2f}x).",
            ]
        )
    )


def baseline_seconds(client: pulsar.Client, topic: str, table: pa.Table, schema_id: int) -> float:
    parsed = fastavro.parse_schema(SCHEMA)
    properties = {"__schema_id": f"ff00{schema_id:08x}"}
    start = time.perf_counter()
    producer = client.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
    for row in table.to_pylist():
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, row["value"])
        producer.send_async(out.getvalue(), None, properties=properties)
    producer.flush()
    producer.close()
    return time.perf_counter() - start


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--count", type=int, default=1_000_000, help="rows (default 1M)")
    parser.add_argument("--protobuf", action="store_true", help="the Protobuf figures instead")
    args = parser.parse_args()
    count = args.count
    service_url = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
    admin_url = os.environ.get("PULSAR_ADMIN_URL", "http://127.0.0.1:8080")
    registry_url = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
    if args.protobuf:
        protobuf_figures(count, service_url, admin_url, registry_url)
        return
    started = datetime.date.today()
    table = pa.table({"value": [value(i) for i in range(count)]})
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": registry_url})
    schema = factory.avro(json.dumps(SCHEMA))
    warm = new_topic(admin_url, 1)
    write_table(warm, table.slice(0, 1000), service_url=service_url, schema=schema)  # registers it
    schema_id = int(schema.encode_for(warm, value(0)).schema_id.hex()[4:], 16)
    ruled = factory.avro(
        Schema.from_dict(
            {
                "schemaType": "AVRO",
                "schema": json.dumps(SCHEMA),
                "ruleSet": {"domainRules": [{**RULE, "mode": "WRITE"}]},
            }
        )
    )

    def written_in(encoder: Any) -> float:
        """Seconds `write_table` takes to write the table with `encoder` to a new topic."""
        settled()
        start = time.perf_counter()
        written = write_table(new_topic(admin_url, 1), table, service_url=service_url, schema=encoder)
        seconds = time.perf_counter() - start
        assert written.sent == count and not written.refused, written
        return seconds

    ours = theirs = with_rule = float("inf")
    for _ in range(2):
        say("fastavro + pulsar-client ...")
        settled()
        theirs = min(theirs, baseline_seconds(client, new_topic(admin_url, 1), table, schema_id))
        say("write_table ...")
        ours = min(ours, written_in(schema))
        say("write_table, a CEL WRITE condition ...")
        with_rule = min(with_rule, written_in(ruled))
    client.close()
    schema.close()
    ruled.close()
    factory.close()

    ratio = theirs / ours
    print(
        "\n".join(
            [
                f"{machine()}; {started:%Y-%m-%d}; {count:,} rows, one partition.",
                "",
                "| write | seconds | rows/s | / the baseline |",
                "|---|---|---|---|",
                f"| `to_pylist` + fastavro `schemaless_writer` + pulsar-client batched `send_async` "
                f"| {theirs:.2f} | {count / theirs:,.0f} | 1.00x |",
                f"| `write_table` | {ours:.2f} | {count / ours:,.0f} | {ratio:.2f}x |",
                f"| `write_table`, a CEL WRITE condition | {with_rule:.2f} | {count / with_rule:,.0f} "
                f"| {theirs / with_rule:.2f}x |",
                "",
                f"Target: `write_table` >= {TARGET}x the baseline: "
                f"**{'met' if ratio >= TARGET else 'missed'}** ({ratio:.2f}x).",
            ]
        )
    )


if __name__ == "__main__":
    main()
