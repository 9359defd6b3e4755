#!/usr/bin/env python3
"""A topic read into Arrow in plain Python (`pulsar_external_schema.arrow`), against raw fastavro
decoding of the same payloads, measured in the same run (docs/tables.md, docs/benchmarks.md).

1. fastavro: `schemaless_reader` over the payloads, already in memory, one core: the floor of any
   Avro decoding in Python (what a consumer pays before it has a row, let alone a table).
2. `read_table` of the topic (the click records of `spark_read.py`, 6 fields; one partition;
   written with batching and a key a message): the whole call, as a user makes it, connecting,
   planning and asking the registry included; on the native reader and on the Python path; on a
   second topic whose subject has a CEL READ condition. Best of three after a warm-up read, once
   the machine is quiet again (`run.settled`: the broker flushes and collects for a while after
   a million writes, on a core the read would use); with the CPU the reading process spent.
3. `export --to FILE.parquet` (the command's `main` in this process, batch by batch into a
   ParquetWriter) against `read_table` + `pyarrow.parquet.write_table` of the same rows.
4. `read_batches` streamed to its end in a fresh process: the growth of its peak RSS over the
   RSS before the read, against two batches and 64 MB.

5. `--json`, instead of the above: the same records on a JSON Schema topic. The issue's baseline,
   `orjson.loads` + jsonschema-rs's `validate` over the payloads in memory, one core; against
   `read_table` natively and on the Python path; and what any native read pays before it decodes
   a value: the extension's receive of the partition (its consumer, the messages dropped), and
   `read_table` natively of the Avro topic of the same records (receive, metadata columns, an
   Avro decode, the table).

6. `--protobuf`, instead of the above: the same records on a Protobuf topic (a `Click` message
   of the same six fields, registered from its `.proto` text; no generated class anywhere). The
   issue's baseline, protobuf's `FromString` + `protarrow.messages_to_record_batch` over the
   payloads in memory, one core (`pip install protarrow`); against `read_table` natively and on
   the Python path, and `read_table` natively of the Avro topic of the same records (the two
   native reads in turn, best of five each, so that the broker's own work falls on both alike).

Needs the services (and the native extension for the native figures):

    scripts/services up && eval "$(scripts/services env)"
    .venv/bin/python benchmarks/tables_read.py               # 1M records
    .venv/bin/python benchmarks/tables_read.py --count 200000
    .venv/bin/python benchmarks/tables_read.py --json          # the JSON Schema figures
    .venv/bin/python benchmarks/tables_read.py --protobuf      # the Protobuf figures
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import pulsar
import pyarrow.parquet as pq
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from run import machine, settled  # the same machine line as docs/benchmarks.md (this script's folder)
from spark_read import RULE, SCHEMA, fastavro_rate, new_topic, produce, received, value

from pulsar_external_schema.arrow import read_table

#: The issue's targets, as multiples of fastavro's rows/s on one core.
TARGET, TARGET_WITH_RULE = 4.0, 3.0
#: `export` to Parquet against `read_table` + `pyarrow.parquet.write_table`, at most.
EXPORT_TARGET = 1.3
#: Peak memory of a stream: at most two batches and this much more.
SLACK_MB = 64

STREAM = """
import json, sys
from pulsar_external_schema.arrow import read_batches
args = json.loads(sys.argv[1])
def status(key: str) -> int:  # VmRSS now, VmHWM its peak (since exec: ru_maxrss counts the parent's)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))
rss = lambda: status("VmRSS")
read_batches(args["warm"], **args["connection"]).read_all()  # imports, clients
before = rss()
rows = biggest = 0
for batch in read_batches(args["topic"], batch_size=args["batch_size"], **args["connection"]):
    rows += batch.num_rows
    biggest = max(biggest, batch.nbytes)
peak = status("VmHWM")
print(json.dumps({"rows": rows, "before": before, "peak": peak, "batch": biggest}))
"""


def read_seconds(topic: str, connection: dict[str, Any], reader: str, count: int) -> tuple[float, float]:
    """The best of three reads: its seconds, and the CPU seconds this process spent in it (the
    reader's own work; the broker on the same machine spends its own beside it)."""
    best, cpu = float("inf"), 0.0
    read_table(topic, reader=reader, **connection)  # warm: imports, the registry's answers
    settled()  # the broker's work after the last write or read, done
    for _ in range(3):
        start, times = time.perf_counter(), os.times()
        table = read_table(topic, reader=reader, **connection)
        seconds, after = time.perf_counter() - start, os.times()
        if seconds < best:
            best, cpu = seconds, (after.user - times.user) + (after.system - times.system)
        assert table.num_rows == count, (table.num_rows, count)
        del table
    return best, cpu


def alternating_seconds(
    topics: tuple[str, ...], connection: dict[str, Any], count: int, rounds: int = 5
) -> list[tuple[float, float]]:
    """`read_seconds` of each topic natively, read in turn round after round (best of `rounds`
    each), so that what the broker on this machine does meanwhile falls on all of them alike."""
    best = [(float("inf"), 0.0) for _ in topics]
    for topic in topics:
        read_table(topic, reader="native", **connection)  # warm
    settled()
    for _ in range(rounds):
        for i, topic in enumerate(topics):
            start, times = time.perf_counter(), os.times()
            table = read_table(topic, reader="native", **connection)
            seconds, after = time.perf_counter() - start, os.times()
            assert table.num_rows == count, (table.num_rows, count)
            del table
            if seconds < best[i][0]:
                best[i] = (seconds, (after.user - times.user) + (after.system - times.system))
    return best


def export_seconds(topic: str, connection: dict[str, Any], folder: str) -> tuple[float, float]:
    """Best of three of `pulsar-external-schema export --to FILE.parquet` (its `main`, in this
    process: the command's work, not an interpreter's start) and of `read_table` then
    `pyarrow.parquet.write_table` of the same rows to another file."""
    from pulsar_external_schema.cli import main as command

    exported, written = os.path.join(folder, "export.parquet"), os.path.join(folder, "table.parquet")
    settled()
    best_export = best_table = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        assert command(["export", "--topic", topic, "--to", exported, "--quiet"]) == 0
        best_export = min(best_export, time.perf_counter() - start)
        start = time.perf_counter()
        pq.write_table(read_table(topic, **connection), written)
        best_table = min(best_table, time.perf_counter() - start)
    assert pq.read_metadata(exported).num_rows == pq.read_metadata(written).num_rows
    return best_export, best_table


def stream_memory(topic: str, warm: str, connection: dict[str, Any], batch_size: int) -> dict[str, int]:
    """The stream of `topic` in a fresh process, after a read of the small topic `warm` (imports,
    clients): its rows, RSS before, peak RSS after, and its largest batch, in bytes."""
    args = {"topic": topic, "warm": warm, "connection": connection, "batch_size": batch_size}
    done = subprocess.run(
        [sys.executable, "-c", STREAM, json.dumps(args)], capture_output=True, text=True, check=True
    )
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Click",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "user": {"type": "string"},
        "url": {"type": "string"},
        "ms": {"type": "integer"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "user", "url", "ms", "score", "tags"],
}
#: The issue's target for JSON Schema topics, as a multiple of orjson + jsonschema-rs on one core.
JSON_TARGET = 4.0


def produce_json(client: Any, registry_url: str, topic: str, count: int) -> None:
    """`count` click records on a JSON Schema topic, batched with a key a message (as `produce`)."""
    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

    with SchemaRegistrySchemaFactory({"schema.registry.url": registry_url}) as factory:
        schema = factory.json(json.dumps(JSON_SCHEMA))
        producer = create_producer(client, topic, schema, batching_enabled=True, block_if_queue_full=True)
        for i in range(count):
            producer.send_async(value(i), lambda *_: None, partition_key=str(i))
        producer.flush()
        producer.close()
        schema.close()


def orjson_rate(payloads: list[bytes]) -> float:
    """Messages a second of `orjson.loads` then jsonschema-rs's `validate`, best of three."""
    import jsonschema_rs
    import orjson

    validator = jsonschema_rs.validator_for(JSON_SCHEMA)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for payload in payloads:
            validator.validate(orjson.loads(payload))
        best = min(best, time.perf_counter() - start)
    return len(payloads) / best


def receive_seconds(service_url: str, partition_topic: str, count: int) -> float:
    """Best of three of the extension's receive of a partition, its messages dropped."""
    from pulsar_external_schema import _native

    extension = _native.extension()
    assert extension is not None, _native.why_absent()
    client = extension.Client(service_url)
    settled()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        assert extension._testing.drain(client, partition_topic) == count
        best = min(best, time.perf_counter() - start)
    return best


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def click_topics(
    service_url: str, admin_url: str, registry_url: str, count: int, fmt: str, produce_in: Any
) -> tuple[Any, str, str]:
    """A client, and two one-partition topics of `count` click records: in format `fmt` (written
    by `produce_in(client, registry_url, topic, count)`), and in Avro."""
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    clicks, avro = new_topic(admin_url, 1), new_topic(admin_url, 1)
    say(f"producing {count:,} records to {clicks} ({fmt}) and {avro} (Avro) ...")
    produce_in(client, registry_url, clicks, count)
    produce(client, registry_url, avro, count)
    return client, clicks, avro


def json_figures(
    count: int, service_url: str, admin_url: str, registry_url: str, connection: dict[str, Any]
) -> None:
    client, clicks, avro = click_topics(
        service_url, admin_url, registry_url, count, "JSON Schema", produce_json
    )
    say("orjson + jsonschema-rs over the payloads in memory ...")
    payloads = [m.data() for m in received(client, f"{clicks}-partition-0")]
    assert len(payloads) == count
    floor = orjson_rate(payloads)
    del payloads
    client.close()
    rows = []
    say("the native receive of the JSON partition ...")
    seconds = receive_seconds(service_url, f"{clicks}-partition-0", count)
    rows.append(("the extension's receive, messages dropped (JSON topic)", seconds, float("nan")))
    for label, topic, reader in (
        ("`read_table` natively (the JSON topic)", clicks, "native"),
        ("`read_table` natively, the Avro topic of the same records", avro, "native"),
        ("`read_table`, Python path (the JSON topic)", clicks, "python"),
    ):
        say(f"{label} ...")
        seconds, cpu = read_seconds(topic, connection, reader, count)
        rows.append((label, seconds, cpu))
    lines = [
        f"{machine()}; {datetime.date.today():%Y-%m-%d}; {count:,} records, one partition.",
        "",
        "| read | seconds | rows/s | / orjson + jsonschema-rs, one core | the process's CPU, us a row |",
        "|---|---|---|---|---|",
        f"| `orjson.loads` + jsonschema-rs `validate`, payloads in memory | {count / floor:.2f} "
        f"| {floor:,.0f} | 1.00x | {1e6 / floor:.2f} |",
        *(
            f"| {label} | {s:.2f} | {count / s:,.0f} | {count / s / floor:.2f}x | "
            f"{'' if cpu != cpu else f'{cpu / count * 1e6:.2f}'} |"
            for label, s, cpu in rows
        ),
        "",
        f"Target: JSON Schema topics >= {JSON_TARGET}x orjson + jsonschema-rs: "
        f"**{'met' if count / rows[1][1] / floor >= JSON_TARGET else 'missed'}** "
        f"({count / rows[1][1] / floor:.2f}x); the receive alone reads at {count / rows[0][1] / floor:.2f}x.",
    ]
    print("\n".join(lines))


CLICK_PROTO = """syntax = "proto3";
package bench;
message Click {
  int64 id = 1;
  string user = 2;
  string url = 3;
  int32 ms = 4;
  double score = 5;
  repeated string tags = 6;
}
"""
#: The issue's targets for Protobuf topics: the native read's time at most this multiple of the
#: Avro native read's, and this multiple of FromString + protarrow on one core.
PROTOBUF_TIME_TARGET, PROTOBUF_TARGET = 1.2, 4.0


def click_class() -> Any:
    """The `Click` message class, compiled from CLICK_PROTO here (as the package compiles a
    registry's text): the producer's; the readers build their own from the registry."""
    from google.protobuf import descriptor_pool, message_factory

    from pulsar_external_schema._protoc import compile_file

    pool = descriptor_pool.DescriptorPool()
    pool.Add(compile_file("click.proto", {"click.proto": CLICK_PROTO}))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Click"))


def produce_protobuf(client: Any, registry_url: str, topic: str, count: int) -> None:
    """`count` click records on a Protobuf topic, batched with a key a message (as `produce`)."""
    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

    cls = click_class()
    with SchemaRegistrySchemaFactory({"schema.registry.url": registry_url}) as factory:
        schema = factory.protobuf(cls)
        producer = create_producer(client, topic, schema, batching_enabled=True, block_if_queue_full=True)
        for i in range(count):
            producer.send_async(cls(**value(i)), lambda *_: None, partition_key=str(i))
        producer.flush()
        producer.close()
        schema.close()


def protarrow_rate(payloads: list[bytes]) -> float:
    """Messages a second of `FromString` then `protarrow.messages_to_record_batch`, best of three
    (the payloads are the bodies: the schema id and message indexes travel in the metadata)."""
    import protarrow

    cls = click_class()
    bodies = payloads
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        batch = protarrow.messages_to_record_batch([cls.FromString(body) for body in bodies], cls)
        best = min(best, time.perf_counter() - start)
        assert batch.num_rows == len(bodies)
    return len(payloads) / best


def protobuf_figures(
    count: int, service_url: str, admin_url: str, registry_url: str, connection: dict[str, Any]
) -> None:
    client, clicks, avro = click_topics(
        service_url, admin_url, registry_url, count, "Protobuf", produce_protobuf
    )
    say("FromString + protarrow over the payloads in memory ...")
    messages = received(client, f"{clicks}-partition-0")
    assert len(messages) == count and messages[0].properties()["__schema_id"].endswith("00")  # [0]
    payloads = [m.data() for m in messages]
    del messages
    floor = protarrow_rate(payloads)
    del payloads
    client.close()
    say("read_table natively, the Protobuf and the Avro topic in turn ...")
    (native, native_cpu), (avro_native, avro_cpu) = alternating_seconds((clicks, avro), connection, count)
    say("read_table, Python path (the Protobuf topic) ...")
    rows = [
        ("`read_table` natively (the Protobuf topic)", native, native_cpu),
        ("`read_table` natively, the Avro topic of the same records", avro_native, avro_cpu),
        (
            "`read_table`, Python path (the Protobuf topic)",
            *read_seconds(clicks, connection, "python", count),
        ),
    ]
    lines = [
        f"{machine()}; {datetime.date.today():%Y-%m-%d}; {count:,} records, one partition.",
        "",
        "| read | seconds | rows/s | / FromString + protarrow, one core | the process's CPU, us a row |",
        "|---|---|---|---|---|",
        f"| `FromString` + `protarrow.messages_to_record_batch`, payloads in memory | {count / floor:.2f} "
        f"| {floor:,.0f} | 1.00x | {1e6 / floor:.2f} |",
        *(
            f"| {label} | {s:.2f} | {count / s:,.0f} | {count / s / floor:.2f}x | {cpu / count * 1e6:.2f} |"
            for label, s, cpu in rows
        ),
        "",
        f"Targets: the native read's time within {PROTOBUF_TIME_TARGET}x the Avro native read's: "
        f"**{'met' if native / avro_native <= PROTOBUF_TIME_TARGET else 'missed'}** "
        f"({native / avro_native:.2f}x); >= {PROTOBUF_TARGET}x FromString + protarrow: "
        f"**{'met' if count / native / floor >= PROTOBUF_TARGET else 'missed'}** "
        f"({count / native / floor:.2f}x).",
    ]
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=1_000_000, help="records per topic (default 1M)")
    parser.add_argument("--batch-size", type=int, default=8192, help="rows per batch of the stream")
    parser.add_argument("--json", action="store_true", help="the JSON Schema figures instead")
    parser.add_argument("--protobuf", action="store_true", help="the Protobuf figures instead")
    args = parser.parse_args()
    count = args.count
    service_url = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
    admin_url = os.environ.get("PULSAR_ADMIN_URL", "http://127.0.0.1:8080")
    registry_url = os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")
    connection = {
        "service_url": service_url,
        "admin_url": admin_url,
        "config": {"schema.registry.url": registry_url},
    }
    if args.json:
        json_figures(count, service_url, admin_url, registry_url, connection)
        return
    if args.protobuf:
        protobuf_figures(count, service_url, admin_url, registry_url, connection)
        return
    started = datetime.date.today()

    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    warm = new_topic(admin_url, 1)
    produce(client, registry_url, warm, 1000)
    plain = new_topic(admin_url, 1)
    ruled = new_topic(admin_url, 1)
    name = ruled.removeprefix("persistent://").replace("/", ".")
    SchemaRegistryClient({"url": registry_url}).register_schema(
        f"{name}-value",
        Schema.from_dict(
            {"schemaType": "AVRO", "schema": json.dumps(SCHEMA), "ruleSet": {"domainRules": [RULE]}}
        ),
    )
    for topic in (plain, ruled):
        say(f"producing {count:,} records to {topic} ...")
        produce(client, registry_url, topic, count)

    say("fastavro over the payloads in memory ...")
    payloads = [m.data() for m in received(client, f"{plain}-partition-0")]
    assert len(payloads) == count
    floor = max(fastavro_rate(payloads) for _ in range(3))
    del payloads
    client.close()

    rows = []
    for label, topic, reader in (
        ("native reader", plain, "native"),
        ("native reader, CEL READ condition", ruled, "native"),
        ("Python path", plain, "python"),
        ("Python path, CEL READ condition", ruled, "python"),
    ):
        say(f"read_table, {label} ...")
        seconds, cpu = read_seconds(topic, connection, reader, count)
        rate = count / seconds
        rows.append((label, seconds, rate, rate / floor, cpu))

    say("export to Parquet, and read_table + pyarrow.parquet.write_table ...")
    with tempfile.TemporaryDirectory() as folder:
        exported, tabled = export_seconds(plain, connection, folder)

    say("read_batches streamed, in a fresh process ...")
    memory = stream_memory(plain, warm, connection, args.batch_size)
    assert memory["rows"] == count, memory
    growth = memory["peak"] - memory["before"]
    allowed = 2 * memory["batch"] + SLACK_MB * 2**20

    mb = 2**20
    lines = [
        f"{machine()}; {started:%Y-%m-%d}; {count:,} records, one partition.",
        "",
        "| read | seconds | rows/s | / fastavro, one core | the process's CPU, us a row |",
        "|---|---|---|---|---|",
        f"| fastavro `schemaless_reader`, payloads in memory | {count / floor:.2f} | {floor:,.0f} | 1.00x "
        f"| {1e6 / floor:.2f} |",
        *(
            f"| `read_table`, {label} | {s:.2f} | {r:,.0f} | {x:.2f}x | {cpu / count * 1e6:.2f} |"
            for label, s, r, x, cpu in rows
        ),
        "",
        f"`read_batches` of {args.batch_size} rows streamed to the end: peak RSS grew "
        f"{growth / mb:.0f} MB over the {memory['before'] / mb:.0f} MB before the read; a batch is "
        f"{memory['batch'] / mb:.1f} MB, so the bound (two batches + {SLACK_MB} MB) is "
        f"{allowed / mb:.0f} MB: **{'met' if growth <= allowed else 'missed'}**.",
        "",
        f"`export --to FILE.parquet` (the command's `main` in this process): {exported:.2f} s; "
        f"`read_table` + `pyarrow.parquet.write_table`: {tabled:.2f} s; **{exported / tabled:.2f}x** "
        f"(target <= {EXPORT_TARGET}x: **{'met' if exported / tabled <= EXPORT_TARGET else 'missed'}**).",
        "",
        f"Targets: `read_table` natively >= {TARGET}x fastavro: "
        f"**{'met' if rows[0][3] >= TARGET else 'missed'}** ({rows[0][3]:.2f}x); with a CEL READ "
        f"condition >= {TARGET_WITH_RULE}x: **{'met' if rows[1][3] >= TARGET_WITH_RULE else 'missed'}** "
        f"({rows[1][3]:.2f}x).",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
