"""`pulsar-external-schema validate`: the Spark validation pipeline (spark/pipeline.py)."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
from typing import Any

from ..deadletter import DEAD_LETTER_SUBSCRIPTION
from ..errors import ExternalSchemaError
from .common import (
    CommandError,
    auth_token,
    connect_address,
    connection,
    fail,
    require,
    serve_rule_metrics,
)
from .signals import PROG


def run_validate(args: argparse.Namespace) -> int:
    try:
        connection(args)
        require(args, "service_url", "admin_url", "registry_url")
        serve_rule_metrics(args)  # the driver's: messages passed on and dead-lettered, by rule
    except CommandError as error:
        return fail("validate", error)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return fail("validate", "needs PySpark: pip install 'pulsar-external-schema[spark]'")
    if not args.remote and not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return fail("validate", "needs Java 17 or newer for Spark: install one, or set JAVA_HOME")
    from ..spark.pipeline import BatchCounts, ValidationJob, python_for_workers

    python_for_workers()
    options: dict[str, str] = {
        "service.url": args.service_url,
        "admin.url": args.admin_url,
        "schema.registry.url": args.registry_url,
        **dict(args.property),
    }
    if args.client_conf:
        options["pulsar.client.conf"] = args.client_conf
    token = auth_token(args)  # read by connection() already: no error here
    if token:
        options["pulsar.auth.token"] = token
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
            dead_letter_subscription=kept_by(args.dead_letter_subscription),
        )
    except ExternalSchemaError as error:
        return fail("validate", error)
    if args.remote:
        try:
            reach_connect_server(args.remote)
        except CommandError as error:
            return fail("validate", error)
    try:
        job.prepare()  # the broker's refusals before Spark starts, not after
    except ExternalSchemaError as error:
        return fail("validate", error)
    builder: Any = SparkSession.builder.appName(f"{PROG} validate {args.input}")
    if args.remote:  # a Connect client: no JVM here, and the server's log level is its own
        spark = builder.remote(args.remote).getOrCreate()
    else:
        spark = (builder.master(args.master) if args.master else builder).getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
    try:
        job.run(spark)
    except Exception as error:
        return fail("validate", _first_line(error))
    finally:
        spark.stop()
    print(f"done: {totals[0]} valid, {totals[1]} dead-lettered in this run", file=sys.stderr)
    return 0


def kept_by(subscription: str | None) -> str | None:
    """The job's dead-letter subscription from `--dead-letter-subscription`: the job's own when
    none is given, none for ''."""
    return DEAD_LETTER_SUBSCRIPTION if subscription is None else subscription or None


#: Spark Connect's client retries a server it cannot reach for minutes; a first answer is quicker.
CONNECT_TIMEOUT_SECONDS = 10.0


def reach_connect_server(url: str) -> None:
    """Fails fast (`CommandError`) where nothing listens at a Spark Connect URL's host and port."""
    host, port = connect_address(url)  # checked by the argument's type
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise CommandError(f"cannot reach the Spark Connect server at {host}:{port}: {reason}") from None


def _first_line(error: BaseException) -> str:
    """Spark wraps a Python error in pages of JVM trace; the error of ours is the line that matters."""
    text = str(error)
    for line in text.splitlines():
        if "pulsar_external_schema.errors." in line or "ConfigError:" in line:
            return line.split("errors.", 1)[-1].strip()
    return text.splitlines()[0] if text else type(error).__name__
