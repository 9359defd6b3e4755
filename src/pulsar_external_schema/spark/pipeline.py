"""The validation pipeline: a Structured Streaming job between the topic producers write to and
the topic consumers trust (the client-side alternative to broker-side schema validation).

Each micro-batch is read once and decoded with its data contract; valid messages go on untouched
(same bytes, same properties, so the same schema id) to a Pulsar topic, or as decoded rows to
Parquet; invalid ones go to the DLQ topic with their original bytes and the `__rule.*` properties
that say why. The trusted topic is a topic like any other: each writer version its messages carry
is registered under its own subject before the first of them is forwarded, so its readers need
no `reading_as` (`topic_schemas.ForwardedSchemas`).

Guarantees after a crash, restarting from the checkpoint:

* Parquet: each micro-batch is written to `<path>/batch=<id>` with overwrite, so a batch run
  again replaces its own partial output: no loss, no duplicates.
* Pulsar topics: messages are sent as `<producer name>-<query id>-valid-<task>` / `-dlq-<task>`
  with sequence ids `(batch << 32) + row`; with deduplication enabled on the target namespaces the
  broker drops what a re-run batch sends again. Without deduplication, delivery is at least once.

Every rule runs: the `__rule.*` properties a producer may set are not trusted.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import metrics
from .._deprecated import renamed_parameters
from ..errors import ConfigError
from ..factory import SchemaRegistrySchemaFactory
from ..subjects import is_full_topic_name
from ..topic_schemas import ForwardedSchemas
from .options import SourceOptions
from .source import FORMAT, register

log = logging.getLogger(__name__)

TRIGGERS = ("available-now", "continuous")
#: What the job keeps of a micro-batch when the valid messages go to a topic: what both sinks
#: send, and the verdicts.
_FORWARDED_COLUMNS = ("key", "data", "properties", "eventTime", "schemaId", "_valid", "_rule", "_failure")


def is_topic(target: str) -> bool:
    """Full Pulsar topic names are topics; anything else is a Parquet path."""
    return is_full_topic_name(target)


@dataclass
class BatchCounts:
    batch_id: int
    valid: int
    invalid: int


#: The name of the job's observed metrics: the batch's verdicts, which reach the caller with the
#: query's progress, wherever the batch function ran (a Connect server runs it in its own Python).
VERDICTS = "pulsar-external-schema verdicts"
#: How often `run` looks at the query's progress for finished batches; Spark keeps the last
#: `spark.sql.streaming.numRecentProgressUpdates` (100) of them, far more than a poll can miss.
_POLL_SECONDS = 0.5


@renamed_parameters(dlq="dead_letter_topic")
@dataclass
class ValidationJob:
    """`pulsar-external-schema validate`, as an object for code that owns its SparkSession, classic
    or Spark Connect."""

    input: str
    valid: str
    dead_letter_topic: str
    """Where invalid rows go, with `__rule.*` reasons (a full topic name)."""
    checkpoint: str
    options: Mapping[str, str]
    """`service.url`, `admin.url`, `schema.registry.url`, and any other source or config option."""
    trigger: str = "available-now"
    interval: str = "10 seconds"
    producer_name: str = "pulsar-external-schema-validate"
    """Prefix of the producer names; the query id (kept in the checkpoint) is added to it."""
    on_batch: Callable[[BatchCounts], None] | None = field(default=None, repr=False)
    """Called by `run`, in the caller's process, once for each finished micro-batch."""
    _writer: BatchWriter | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.trigger not in TRIGGERS:
            raise ConfigError(f"trigger must be one of {', '.join(TRIGGERS)}, not {self.trigger!r}")
        if not is_topic(self.dead_letter_topic):
            raise ConfigError(
                "the dead-letter topic must be a full topic name (persistent://tenant/namespace/topic), "
                f"not {self.dead_letter_topic!r}"
            )
        for key in ("service.url", "admin.url", "schema.registry.url"):
            if not self.options.get(key):
                raise ConfigError(f"option {key!r} is required")

    def start(self, spark: Any) -> Any:
        """Start the streaming query; returns Spark's `StreamingQuery`. Each finished batch's
        counts are in its progress (`observedMetrics[VERDICTS]`); `run` passes them to `on_batch`."""
        from pyspark.sql import functions as F

        register(spark)
        stream = (
            spark.readStream.format(FORMAT)
            .options(**self.options)
            .option("topic", self.input)
            .option("includeData", "true")
            .option("trustRuleProperties", "false")  # producers do not get to skip rules
            .load()
            .observe(
                VERDICTS,
                F.count(F.when(F.col("_valid"), 1)).alias("valid"),
                F.count(F.when(~F.col("_valid"), 1)).alias("invalid"),
            )
        )
        self._writer = BatchWriter(
            input=self.input,
            valid=self.valid,
            dead_letter_topic=self.dead_letter_topic,
            checkpoint=self.checkpoint,
            options=dict(self.options),
            producer_name=self.producer_name,
        )
        writer = stream.writeStream.foreachBatch(self._writer).option("checkpointLocation", self.checkpoint)
        if self.trigger == "available-now":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=self.interval)
        return writer.queryName(f"validate {self.input}").start()

    def run(self, spark: Any) -> None:
        """Run until the input is drained (available-now) or the query is stopped, passing each
        finished batch's counts to `on_batch` as it goes. If `on_batch` raises, the query is
        stopped and the error raised here."""
        query = self.start(spark)
        reported = -1
        try:
            while not query.awaitTermination(_POLL_SECONDS):
                reported = self._report(query, reported)
            self._report(query, reported)
        except BaseException:
            if query.isActive:
                query.stop()
            raise
        finally:
            if self._writer is not None:
                self._writer.close()

    def _report(self, query: Any, reported: int) -> int:
        """`on_batch` for each batch of the query's recent progress after `reported`; the last
        batch reported."""
        for progress in query.recentProgress:
            verdicts = observed(progress, VERDICTS)
            if verdicts is None or progress.batchId <= reported:
                continue
            reported = progress.batchId
            if self.on_batch is not None:
                self.on_batch(BatchCounts(reported, int(verdicts["valid"]), int(verdicts["invalid"])))
        return reported


def observed(progress: Any, name: str) -> dict[str, Any] | None:
    """A query progress's observed metrics `name`, by column. A classic session gives a `Row` of
    the columns; pyspark 4.3's Connect client parses the server's JSON of the row
    (`{"values": [...], "schema": {...}}`) into a `Row` of those two keys instead."""
    row = (progress.observedMetrics or {}).get(name)
    if row is None:
        return None
    columns: dict[str, Any] = row.asDict()
    if set(columns) == {"values", "schema"} and isinstance(columns["schema"], dict):
        names = [f["name"] for f in columns["schema"].get("fields", ())]
        return dict(zip(names, columns["values"], strict=True))
    return columns


#: The local property Spark's `StreamExecution` sets to the query's id on the thread that runs
#: its micro-batches (`StreamExecution.QUERY_ID_KEY`): the id its checkpoint's `metadata` holds.
_QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass
class BatchWriter:
    """The job's micro-batch function (`foreachBatch`). Plain fields only, so that it pickles: a
    Spark Connect server runs it in a Python process of its own, where nothing of the caller's
    reaches. What it opens (the trusted topic's registry client, the query id) it opens there, on
    first use."""

    input: str
    valid: str
    dead_letter_topic: str
    checkpoint: str
    options: dict[str, str]
    producer_name: str
    _prefix: str | None = field(default=None, repr=False)
    _forwarded: ForwardedSchemas | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_prefix": None, "_forwarded": None}

    def close(self) -> None:
        if self._forwarded is not None:
            self._forwarded.close()
            self._forwarded = None

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        if is_topic(self.valid):  # forwarded as they came: the decoded values are not kept
            batch = batch.select(*_FORWARDED_COLUMNS)
        batch = batch.persist()
        try:
            valid = batch.where("_valid")
            invalid = batch.where("NOT _valid")
            # One pass gives the batch's counts and the writer versions of its valid messages.
            groups = batch.groupBy("_valid", "schemaId").count().collect()
            counts = BatchCounts(
                batch_id,
                sum(row["count"] for row in groups if row["_valid"]),
                sum(row["count"] for row in groups if not row["_valid"]),
            )
            # A topic with no rows of the batch is not written to: each write is a Spark job of
            # its own (a task per partition, a producer per task), most of a quiet batch's time.
            # (A Parquet batch is written even when empty: its directory says the batch ran.)
            if is_topic(self.valid) and counts.valid:
                self._register_forwarded(row["schemaId"] for row in groups if row["_valid"])
                (
                    valid.select("key", "data", "properties", "eventTime")
                    .write.format(FORMAT)
                    .options(**self._sink(batch, self.valid, "valid", batch_id))
                    .mode("append")
                    .save()
                )
            elif not is_topic(self.valid):
                (
                    valid.drop("data", "_valid", "_error", "_rule", "_failure")
                    .write.mode("overwrite")
                    .parquet(f"{self.valid.rstrip('/')}/batch={batch_id}")
                )
            if counts.invalid:
                properties = F.map_concat(
                    F.map_filter("properties", lambda k, _: ~k.startswith("__rule.")), F.col("_failure")
                )
                (
                    invalid.select("key", "data", properties.alias("properties"), "eventTime")
                    .write.format(FORMAT)
                    .options(**self._sink(batch, self.dead_letter_topic, "dlq", batch_id))
                    .mode("append")
                    .save()
                )
            self._count_verdicts(counts, invalid)
        finally:
            batch.unpersist()
        log.info("batch %d: %d valid, %d dead-lettered", counts.batch_id, counts.valid, counts.invalid)

    def _producer_prefix(self, batch: Any) -> str:
        """Deterministic for one checkpoint, new for a new one: a fresh checkpoint starts at batch 0
        again, and sequence ids of an old producer name would then be below what the broker has
        seen, and dropped. The query id is what Spark keeps in `<checkpoint>/metadata` (written
        before the first batch). A classic session runs this function on the query's own thread,
        where Spark sets the id as a local property; elsewhere (Spark Connect runs it in a process
        of its own) the file is read through the batch's own session, a Spark job (~80 ms)."""
        if self._prefix is None:
            context = getattr(batch.sparkSession, "sparkContext", None)  # none on Spark Connect
            query_id = context.getLocalProperty(_QUERY_ID_PROPERTY) if context is not None else None
            if query_id is None:
                metadata = f"{self.checkpoint.rstrip('/')}/metadata"
                line = batch.sparkSession.read.text(metadata).first()
                if line is None:  # Spark writes it before the first batch: without it, no exactly-once
                    raise RuntimeError(f"{metadata} holds no query id; the producer names need it")
                query_id = json.loads(line[0])["id"]
            self._prefix = f"{self.producer_name}-{query_id[:8]}"
        return self._prefix

    def _sink(self, batch: Any, topic: str, role: str, batch_id: int) -> dict[str, str]:
        """The options of a sink of the job. Neither registers the schema ids of its rows: the
        valid messages' writer versions are registered first (`__call__`), and a DLQ holds copies
        of the source, read as the source, with ids no registry may hold."""
        passthrough = {
            k: v
            for k, v in self.options.items()
            if k.lower() not in ("topic", "topics", "topicpattern", "registerforwarded")
        }
        return {
            **passthrough,
            "topic": topic,
            "producerName": f"{self._producer_prefix(batch)}-{role}",
            "sequenceBase": str(batch_id),
            "registerForwarded": "false",
        }

    def _register_forwarded(self, schema_ids: Iterable[int | None]) -> None:
        """Before the batch's valid messages are written: each writer version they carry is
        registered under the trusted topic's subject, so its readers read them with their default
        config (`topic_schemas.ForwardedSchemas`); a subject that refuses one stops the query before
        anything of the batch is forwarded."""
        if self._forwarded is None:
            factory = SchemaRegistrySchemaFactory(SourceOptions.parse(self.options).config)
            self._forwarded = ForwardedSchemas(factory, source_topic=self.input)
        for schema_id in schema_ids:
            if schema_id is not None:
                self._forwarded.register(self.valid, schema_id)

    def _count_verdicts(self, counts: BatchCounts, invalid: Any) -> None:
        """With rule metrics on where the batch function runs (the driver of a classic session),
        the batch's verdicts (the rules ran on the executors, where the driver's metrics cannot
        see them): valid messages, and dead-lettered ones by failing rule."""
        store = metrics.recording()
        if store is None:
            return
        store.count_validated(self.input, "valid", "", counts.valid)
        if counts.invalid:
            for row in invalid.groupBy("_rule").count().collect():
                store.count_validated(self.input, "dead_lettered", row["_rule"] or "", row["count"])


def python_for_workers() -> None:
    """Spark starts its Python workers with `python3` from PATH unless told otherwise; that one
    often lacks pyarrow and this package, and the job hangs or fails. Use this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
