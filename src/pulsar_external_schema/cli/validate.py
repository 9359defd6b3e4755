"""`pulsar-external-schema validate`: the Spark validation pipeline (spark/pipeline.py)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

from ..errors import ExternalSchemaError
from .common import (
    PROG,
    CommandError,
    add_metrics_option,
    add_registry_options,
    fail,
    require,
    serve_rule_metrics,
    topic_name,
    whole,
)


def add_parser(commands: Any) -> None:
    validate = commands.add_parser(
        "validate",
        help="validate a topic with Spark: valid messages to a topic or Parquet, invalid ones to a DLQ",
        description=(
            "Read --input with its external schemas, decode every message and run its data contract. "
            "Valid messages go on unchanged (same bytes and schema id) to --valid, a topic, or as "
            "decoded rows to Parquet when --valid is a path; invalid ones go to --dead-letter-topic "
            "with __rule.* properties saying why. Restart with the same --checkpoint to go on where it "
            "stopped. Needs the spark extra (in the clone: pip install -e '.[spark]') and Java 17+."
        ),
        epilog=(
            "example:\n  pulsar-external-schema validate --input persistent://public/default/orders \\\n"
            "    --valid persistent://public/default/orders-valid \\\n"
            "    --dead-letter-topic persistent://public/default/orders-dlq \\\n"
            "    --checkpoint /tmp/validate-orders\n"
            "  pulsar-external-schema consume --topic orders-valid --schema-topic orders --from-beginning\n"
            "  pulsar-external-schema consume --topic orders-dlq --from-beginning"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument(
        "--input", required=True, type=topic_name, metavar="TOPIC", help="the topic producers write to"
    )
    validate.add_argument(
        "--valid",
        required=True,
        metavar="TOPIC_OR_PATH",
        help="a full topic name (persistent://tenant/namespace/topic) or a Parquet directory",
    )
    validate.add_argument(
        "--dead-letter-topic",
        "--dlq",
        type=topic_name,
        dest="dead_letter_topic",
        required=True,
        metavar="TOPIC",
        help="the dead-letter topic (full name; --dlq is its short alias)",
    )
    validate.add_argument(
        "--checkpoint", required=True, metavar="DIR", help="Spark checkpoint directory (keep it between runs)"
    )
    validate.add_argument(
        "--trigger",
        choices=("available-now", "continuous"),
        default="available-now",
        help="available-now: process what is there and stop (default); continuous: run until stopped",
    )
    validate.add_argument(
        "--interval",
        default="10 seconds",
        help="micro-batch interval of --trigger continuous (default 10 seconds)",
    )
    validate.add_argument(
        "--max-entries-per-partition",
        type=whole(1),
        metavar="N",
        help="cap each micro-batch at N entries per partition",
    )
    validate.add_argument(
        "--starting-offsets",
        metavar="WHERE",
        help="earliest (default), latest, or JSON per partition (first run)",
    )
    validate.add_argument(
        "--producer-name",
        default="pulsar-external-schema-validate",
        help="prefix of the deterministic producer names (enable deduplication on the target namespaces)",
    )
    validate.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    add_registry_options(validate, pulsar=True, admin=True)
    add_metrics_option(validate)
    validate.set_defaults(run=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    try:
        require(args, "service_url", "admin_url", "registry_url")
        serve_rule_metrics(args)  # the driver's: messages passed on and dead-lettered, by rule
    except CommandError as error:
        return fail("validate", error)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return fail("validate", "needs PySpark: pip install 'pulsar-external-schema[spark]'")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return fail("validate", "needs Java 17 or newer for Spark: install one, or set JAVA_HOME")
    from ..spark.pipeline import BatchCounts, ValidationJob, python_for_workers

    python_for_workers()
    options: dict[str, str] = {
        "service.url": args.service_url,
        "admin.url": args.admin_url,
        "schema.registry.url": args.registry_url,
        **dict(args.property),
    }
    if args.max_entries_per_partition:
        options["maxEntriesPerPartition"] = str(args.max_entries_per_partition)
    if args.starting_offsets:
        options["startingOffsets"] = args.starting_offsets
    totals = [0, 0]

    def progress(counts: BatchCounts) -> None:
        totals[0] += counts.valid
        totals[1] += counts.invalid
        print(
            f"batch {counts.batch_id}: {counts.valid} valid, {counts.invalid} dead-lettered "
            f"(total {totals[0]} valid, {totals[1]} dead-lettered)",
            file=sys.stderr,
            flush=True,
        )

    try:
        job = ValidationJob(
            input=args.input,
            valid=args.valid,
            dead_letter_topic=args.dead_letter_topic,
            checkpoint=args.checkpoint,
            options=options,
            trigger=args.trigger,
            interval=args.interval,
            producer_name=args.producer_name,
            on_batch=progress,
        )
    except ExternalSchemaError as error:
        return fail("validate", error)
    builder: Any = SparkSession.builder.appName(f"{PROG} validate {args.input}")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        job.run(spark)
    except Exception as error:
        return fail("validate", _first_line(error))
    finally:
        spark.stop()
    print(f"done: {totals[0]} valid, {totals[1]} dead-lettered", file=sys.stderr)
    return 0


def _first_line(error: BaseException) -> str:
    """Spark wraps a Python error in pages of JVM trace; the error of ours is the line that matters."""
    text = str(error)
    for line in text.splitlines():
        if "pulsar_external_schema.errors." in line or "ConfigError:" in line:
            return line.split("errors.", 1)[-1].strip()
    return text.splitlines()[0] if text else type(error).__name__
