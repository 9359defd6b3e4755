"""The validation pipeline: a Structured Streaming job between the topic producers write to and
the topic consumers trust (the client-side alternative to broker-side schema validation).

Each micro-batch is read once and decoded with its data contract; valid messages go on untouched
(same bytes, same properties, so the same schema id) to a Pulsar topic, or as decoded rows to
Parquet; invalid ones go to the DLQ topic with their original bytes and the `__rule.*` properties
that say why. The trusted topic is a topic like any other: each writer version its messages carry
is registered under its own subject before the first of them is forwarded, so its readers need
no `reading_as` (`topic_schemas.ForwardedSchemas`). To a topic, the stream's tasks send each
message on as they read it (`forwarding.py`), and Spark sees only the verdicts.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import metrics
from .._deprecated import renamed_parameters
from ..admin import PulsarAdmin, require_external_type
from ..config import ExternalSchemaConfig
from ..deadletter import DEAD_LETTER_SUBSCRIPTION, RULE_PREFIX
from ..errors import ConfigError, PulsarAdminError
from ..subjects import is_full_topic_name, split_topic
from ..tasks.options import SourceOptions
from .source import FORMAT, register

log = logging.getLogger(__name__)

TRIGGERS = ("available-now", "continuous")


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
    dead_letter_subscription: str | None = DEAD_LETTER_SUBSCRIPTION
    """The subscription the job creates on the dead-letter topic before it starts (pulsar-client's
    `ConsumerDeadLetterPolicy(initial_subscription_name=)`), so that the broker keeps the dead
    letters until they are read; None or empty: none (the namespace's retention must keep them)."""
    _prepared: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.trigger not in TRIGGERS:
            raise ConfigError(f"trigger must be one of {', '.join(TRIGGERS)}, not {self.trigger!r}")
        if not is_topic(self.dead_letter_topic):
            raise ConfigError(
                "the dead-letter topic must be a full topic name (persistent://tenant/namespace/topic), "
                f"not {self.dead_letter_topic!r}"
            )
        if not self.options.get("schema.registry.url"):
            raise ConfigError("option 'schema.registry.url' is required")
        # service.url and admin.url, or a client.conf (pulsar.client.conf) that gives them
        self._source_options().require_topics()

    def _source_options(self) -> SourceOptions:
        """The options of the input's read."""
        return SourceOptions.parse({**self.options, "topic": self.input})

    def start(self, spark: Any) -> Any:
        """Start the streaming query; returns Spark's `StreamingQuery`. Each finished batch's
        counts are in its progress (`observedMetrics[VERDICTS]`); `run` passes them to `on_batch`."""
        from pyspark.sql import functions as F

        register(spark)
        self.prepare()
        reader = spark.readStream.format(FORMAT).options(**self.options).option("topic", self.input)
        # producers do not get to skip rules
        reader = reader.option("trustRuleProperties", "false")
        if is_topic(self.valid):
            # The tasks send everything as they read (`forwarding.py`); the query only runs them,
            # and its progress carries the counts they give (`columns.FORWARDED`): the batches'
            # verdicts reach `run` there, on a classic session or over Spark Connect. (A
            # `foreachBatch` action runs over Connect in a session without the micro-batch's id,
            # which the tasks need.)
            stream = (
                reader.option("forwardTo", self.valid)
                .option("deadLetterTopic", self.dead_letter_topic)
                .option("producerName", self.producer_name)
                .option("registerForwarded", "true")
                .load()
                .observe(
                    VERDICTS,
                    F.coalesce(F.sum(F.when(F.col("_valid"), F.col("count"))), F.lit(0)).alias("valid"),
                    F.coalesce(F.sum(F.when(~F.col("_valid"), F.col("count"))), F.lit(0)).alias("invalid"),
                    F.collect_list(F.when(~F.col("_valid"), F.struct("_rule", "count"))).alias("failed"),
                )
            )
            writer = stream.writeStream.format("noop")
        else:
            stream = (
                reader.option("includeData", "true")
                .load()
                .observe(
                    VERDICTS,
                    F.count(F.when(F.col("_valid"), 1)).alias("valid"),
                    F.count(F.when(~F.col("_valid"), 1)).alias("invalid"),
                )
            )
            writer = stream.writeStream.foreachBatch(
                BatchWriter(
                    input=self.input,
                    valid=self.valid,
                    dead_letter_topic=self.dead_letter_topic,
                    checkpoint=self.checkpoint,
                    options=dict(self.options),
                    producer_name=self.producer_name,
                )
            )
        writer = writer.option("checkpointLocation", self.checkpoint)
        if self.trigger == "available-now":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=self.interval)
        return writer.queryName(f"validate {self.input}").start()

    def prepare(self) -> None:
        """What the job checks and makes before Spark runs anything, with no Spark: the broker's
        EXTERNAL type where `pulsar.admin.url` asks for declarations (a broker before 4.1 refused
        in one line, not in every task), the dead-letter subscription, and a warning for each
        target topic at risk. `start` does it where it was not done; the console's `validate`
        does it before it starts Spark, so that a refusal comes in a second, not after Spark's."""
        if self._prepared:
            return
        require_external_type(ExternalSchemaConfig.from_dict(self._source_options().config))
        self._prepare_targets()
        self._prepared = True

    def _prepare_targets(self) -> None:
        """Creates the dead-letter subscription (a refusal fails the job here, before it sends
        anything), and warns, naming the topic and what to do, for each target topic the broker
        does not deduplicate (there a task run again, or a batch sent again after a reconnect, is
        written twice) and for a valid topic whose messages it would delete unread."""
        from ..reading.planning import Planner

        admin = Planner(self._source_options()).admin()
        try:
            if self.dead_letter_subscription:
                try:
                    admin.create_subscription(self.dead_letter_topic, self.dead_letter_subscription)
                except PulsarAdminError as error:
                    raise PulsarAdminError(
                        f"{error}; the job keeps its dead letters with that subscription: let its role "
                        "consume from the topic, or give no subscription (--dead-letter-subscription '') "
                        "and set retention on the topic's namespace"
                    ) from None
            self._say_if_lost_or_twice(admin)
        finally:
            admin.close()

    def _say_if_lost_or_twice(self, admin: PulsarAdmin) -> None:
        if is_topic(self.valid):
            try:
                kept = admin.kept_unread(self.valid)
            except PulsarAdminError as error:
                log.warning(
                    "validate: whether %s keeps what is sent there is not known: %s", self.valid, error
                )
            else:
                if not kept:
                    _, tenant, namespace, _ = split_topic(self.valid)
                    log.warning(
                        "validate: %s has no subscription and no retention: the broker deletes what the "
                        "job sends there when its ledger rolls over (an unload, a restart), unless a "
                        "consumer subscribed first; subscribe one, or set retention: "
                        "pulsar-admin namespaces set-retention %s/%s --time 7d --size -1",
                        self.valid,
                        tenant,
                        namespace,
                    )
        try:
            # the DLQ is a topic whatever the valid output is (Parquet overwrites its own batches)
            for topic in [t for t in (self.valid, self.dead_letter_topic) if is_topic(t)]:
                if not admin.deduplicated(topic):
                    _, tenant, namespace, _ = split_topic(topic)
                    log.warning(
                        "validate: %s is not deduplicated: a message may be written to it twice (after "
                        "a crash or a lost connection); enable deduplication to write each once: "
                        "pulsar-admin namespaces set-deduplication %s/%s --enable",
                        topic,
                        tenant,
                        namespace,
                    )
        except PulsarAdminError as error:
            log.warning("validate: whether the target topics are deduplicated is not known: %s", error)

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

    def _report(self, query: Any, reported: int) -> int:
        """`on_batch` for each batch of the query's recent progress after `reported`; the last
        batch reported."""
        for progress in query.recentProgress:
            verdicts = observed(progress, VERDICTS)
            if verdicts is None or progress.batchId <= reported:
                continue
            reported = progress.batchId
            failed = verdicts.get("failed")
            if failed is not None:  # forwarded by the tasks: said here (`BatchWriter` says its own)
                groups: list[tuple[bool, str | None, int]] = [(True, None, int(verdicts["valid"]))]
                for item in map(_fields, failed):
                    groups.append((False, item["_rule"], int(item["count"])))
                _finished(self.input, reported, groups)
            if self.on_batch is not None:
                self.on_batch(BatchCounts(reported, int(verdicts["valid"]), int(verdicts["invalid"])))
        return reported


def observed(progress: Any, name: str) -> dict[str, Any] | None:
    """A query progress's observed metrics `name`, by column."""
    row = (progress.observedMetrics or {}).get(name)
    return None if row is None else _fields(row)


def _fields(struct: Any) -> dict[str, Any]:
    """A struct of observed metrics by field name. A classic session gives a `Row`; pyspark 4.3's
    Connect client parses the server's JSON of each struct, the row and the structs in it, into
    `{"values": [...], "schema": {...}}` (a `Row` of those two keys at the top)."""
    columns: dict[str, Any] = struct.asDict() if hasattr(struct, "asDict") else dict(struct)
    if set(columns) == {"values", "schema"} and isinstance(columns["schema"], dict):
        names = [f["name"] for f in columns["schema"].get("fields", ())]
        return dict(zip(names, columns["values"], strict=True))
    return columns


@dataclass
class BatchWriter:
    """The job's micro-batch function where the valid rows go to Parquet. Plain fields only, so
    that it pickles: a Spark Connect server runs it in a Python process of its own, where nothing
    of the caller's reaches. The query id its DLQ producers are named after it finds there, on
    first use."""

    input: str
    valid: str
    dead_letter_topic: str
    checkpoint: str
    options: dict[str, str]
    producer_name: str
    _prefix: str | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_prefix": None}

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        batch = batch.persist()
        try:
            (
                batch.where("_valid")
                .drop("data", "_valid", "_error", "_rule", "_failure")
                .write.mode("overwrite")
                .parquet(f"{self.valid.rstrip('/')}/batch={batch_id}")
            )  # written even when empty: its directory says the batch ran
            groups = batch.groupBy("_valid", "_rule").count().collect()
            # A batch with nothing to dead-letter writes no DLQ: a write is a Spark job of its own
            # (a task per partition, a producer per task), most of a quiet batch's time.
            if any(not row["_valid"] for row in groups):
                # deadletter.copy_properties, in Spark SQL: the own less `__rule.*`, plus the failure
                properties = F.map_concat(
                    F.map_filter("properties", lambda k, _: ~k.startswith(RULE_PREFIX)), F.col("_failure")
                )
                (
                    batch.where("NOT _valid")
                    .select("key", "data", properties.alias("properties"), "eventTime")
                    .write.format(FORMAT)
                    .options(**self._sink(batch, batch_id))
                    .mode("append")
                    .save()
                )
        finally:
            batch.unpersist()
        _finished(self.input, batch_id, [(row["_valid"], row["_rule"], row["count"]) for row in groups])

    def _producer_prefix(self, batch: Any) -> str:
        """The producer names' prefix, with the query id (`forwarding.producer_prefix`). A classic
        session runs this function on the query's own thread, where Spark sets the id as a local
        property; elsewhere (Spark Connect runs it in a process of its own) the file
        `<checkpoint>/metadata` is read through the batch's own session, a Spark job."""
        from .forwarding import QUERY_ID_PROPERTY, producer_prefix

        if self._prefix is None:
            context = getattr(batch.sparkSession, "sparkContext", None)  # none on Spark Connect
            query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context is not None else None
            if query_id is None:
                metadata = f"{self.checkpoint.rstrip('/')}/metadata"
                line = batch.sparkSession.read.text(metadata).first()
                if line is None:  # Spark writes it before the first batch: without it, no exactly-once
                    raise RuntimeError(f"{metadata} holds no query id; the producer names need it")
                query_id = json.loads(line[0])["id"]
            self._prefix = producer_prefix(self.producer_name, query_id)
        return self._prefix

    def _sink(self, batch: Any, batch_id: int) -> dict[str, str]:
        """The options of the DLQ's sink. It registers no schema id: a DLQ holds copies of the
        source, read as the source, with ids no registry may hold."""
        passthrough = {
            k: v
            for k, v in self.options.items()
            if k.lower() not in ("topic", "topics", "topicpattern", "registerforwarded")
        }
        return {
            **passthrough,
            "topic": self.dead_letter_topic,
            "producerName": f"{self._producer_prefix(batch)}-dlq",
            "sequenceBase": str(batch_id),
            "registerForwarded": "false",
        }


def _finished(input: str, batch_id: int, groups: list[tuple[bool, str | None, int]]) -> None:
    """A batch's verdicts, (valid, rule, count) each: logged, and with rule metrics on where this
    runs (the caller of `run`, or the batch function of a Parquet job; the rules ran on the
    executors, where the driver's metrics cannot see them), counted: valid messages, and
    dead-lettered ones by failing rule."""
    valid = sum(count for ok, _, count in groups if ok)
    invalid = sum(count for ok, _, count in groups if not ok)
    store = metrics.recording()
    if store is not None:
        store.count_validated(input, "valid", "", valid)
        for ok, rule, count in groups:
            if not ok:
                store.count_validated(input, "dead_lettered", rule or "", count)
    log.info("batch %d: %d valid, %d dead-lettered", batch_id, valid, invalid)


def python_for_workers() -> None:
    """Spark starts its Python workers with `python3` from PATH unless told otherwise; that one
    often lacks pyarrow and this package, and the job hangs or fails. Use this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
