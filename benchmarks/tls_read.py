#!/usr/bin/env python3
"""The `pulsar-external` Spark source over TLS against the same read over plaintext, measured in
the same run: the native reader (rustls) and the Python path (pulsar-client's OpenSSL).

Two brokers: the environment's plaintext one, and one that speaks TLS only, started here by
`scripts/services up --instance bench-tls --only pulsar --tls` (stopped at the end). Each gets
the same records (`spark_read.py`'s click record, batched, a key per message) on a topic of
`--cores` partitions. Then, alternating plaintext and TLS so that neither gets a warmer machine:

1. the native reader's whole read of partition 0 in this process (`native.read_partition`), best
   of five, in microseconds a row;
2. whole Spark queries (`load()` to the `noop` sink, local[N]) on both readers, best of five
   after a warm-up, in rows per second.

The target (issue 56): the native Spark read over TLS within 1.25x of plaintext.

    scripts/services up && eval "$(scripts/services env)"
    .venv/bin/python benchmarks/tls_read.py              # 200k records
    .venv/bin/python benchmarks/tls_read.py --quick      # 20k
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pulsar
from run import machine  # the same machine line as docs/benchmarks.md (this script's folder)
from spark_read import produce, spark_seconds

from pulsar_external_schema.connections import ClientConf
from pulsar_external_schema.spark import register

SERVICES = Path(__file__).resolve().parents[1] / "scripts" / "services"
INSTANCE = "bench-tls"
TARGET = 1.25


def services(*args: str) -> str:
    done = subprocess.run([sys.executable, str(SERVICES), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scripts/services {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def new_topic(admin_url: str, partitions: int, conf: ClientConf | None) -> str:
    topic = f"persistent://public/default/bench-tls-{uuid.uuid4().hex[:8]}"
    path = topic.removeprefix("persistent://")
    httpx.put(
        f"{admin_url}/admin/v2/persistent/{path}/partitions",
        json=partitions,
        verify=conf.admin_tls() if conf else True,
    ).raise_for_status()
    return topic


def native_read_us(options: dict[str, str], partition_topic: str) -> tuple[float, int]:
    """The native reader's whole read of one partition in this process: (us a row, rows)."""
    from pulsar_external_schema.reading import native
    from pulsar_external_schema.reading.decoders import arrow_value_type
    from pulsar_external_schema.reading.planning import Planner, TopicPartitionRange
    from pulsar_external_schema.tasks.offsets import EARLIEST
    from pulsar_external_schema.tasks.options import SourceOptions
    from pulsar_external_schema.tasks.schemas import resolve_reader_schema

    source = SourceOptions.parse({**options, "reader": "native"})
    reader = resolve_reader_schema(source, options["topic"])
    value_type, _ = arrow_value_type(reader, source)
    assert native.why_not(source, reader, value_type) is None
    admin = Planner(source).admin()
    whole = TopicPartitionRange(partition_topic, EARLIEST, admin.last_message(partition_topic))
    admin.close()
    start = time.perf_counter()
    rows = sum(b.num_rows for b in native.read_partition(source, reader, value_type, whole))
    return (time.perf_counter() - start) / rows * 1e6, rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20k records instead of 200k")
    parser.add_argument(
        "--cores", type=int, default=os.cpu_count() or 2, help="Spark local[N] and partitions"
    )
    parser.add_argument("--rounds", type=int, default=5, help="best of this many")
    args = parser.parse_args()
    count = 20_000 if args.quick else 200_000
    registry_url = os.environ["SCHEMA_REGISTRY_URL"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    say(f"starting a TLS broker (scripts/services up --instance {INSTANCE} --tls) ...")
    urls = dict(
        re.findall(
            r"^(\w+)=(\S+)$", services("up", "--instance", INSTANCE, "--only", "pulsar", "--tls"), re.M
        )
    )
    try:
        conf = ClientConf.read(urls["PULSAR_CLIENT_CONF"])
        clusters: dict[str, dict[str, Any]] = {
            "plaintext": {
                "service": os.environ["PULSAR_SERVICE_URL"],
                "admin": os.environ["PULSAR_ADMIN_URL"],
                "conf": None,
            },
            "TLS": {"service": urls["PULSAR_SERVICE_URL"], "admin": urls["PULSAR_ADMIN_URL"], "conf": conf},
        }
        for name, cluster in clusters.items():
            made = cluster["conf"] or ClientConf(service_url=cluster["service"])
            client = made.pulsar_client(logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            cluster["topic"] = new_topic(cluster["admin"], args.cores, cluster["conf"])
            say(f"producing {count:,} records to {cluster['topic']} ({name}) ...")
            produce(client, registry_url, cluster["topic"], count)
            client.close()
            cluster["options"] = {
                "service.url": cluster["service"],
                "admin.url": cluster["admin"],
                "schema.registry.url": registry_url,
                "topic": cluster["topic"],
                **({"pulsar.client.conf": urls["PULSAR_CLIENT_CONF"]} if cluster["conf"] else {}),
            }

        say("the native reader in this process ...")
        native_us: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, cluster in clusters.items():
                us, _rows = native_read_us(cluster["options"], f"{cluster['topic']}-partition-0")
                native_us[name] = min(us, native_us.get(name, us))

        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master(f"local[{args.cores}]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        say("Spark: warming up ...")
        for reader in ("native", "python", "native"):
            for cluster in clusters.values():
                spark_seconds(spark, {**cluster["options"], "reader": reader})
        say("Spark ...")
        seconds: dict[tuple[str, str], float] = {}
        for _ in range(args.rounds):
            for reader in ("native", "python"):
                for name, cluster in clusters.items():
                    taken = spark_seconds(spark, {**cluster["options"], "reader": reader})
                    seconds[(reader, name)] = min(taken, seconds.get((reader, name), taken))
        spark.stop()
    finally:
        services("down", "--instance", INSTANCE)

    print(f"\n{machine()}; {count:,} records on {args.cores} partitions; best of {args.rounds}; "
          f"{time.strftime('%Y-%m-%d')}\n")  # fmt: skip
    print("| read | plaintext | TLS | TLS / plaintext |")
    print("|---|---|---|---|")
    plain, tls = native_us["plaintext"], native_us["TLS"]
    what = "native reader, one partition in one process (us a row)"
    print(f"| {what} | {plain:.2f} | {tls:.2f} | {tls / plain:.2f}x |")
    for reader in ("native", "python"):
        p, t = count / seconds[(reader, "plaintext")], count / seconds[(reader, "TLS")]
        print(f"| Spark query, {reader} reader (rows/s) | {p:,.0f} | {t:,.0f} | {p / t:.2f}x |")
    ratio = seconds[("native", "TLS")] / seconds[("native", "plaintext")]
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"\ntarget: the native Spark read over TLS within {TARGET}x of plaintext: {ratio:.2f}x ({verdict})")


if __name__ == "__main__":
    main()
