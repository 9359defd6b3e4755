"""The validation job's forwarding, done where a range is read (the stream options `forwardTo` and
`deadLetterTopic`, which `ValidationJob` sets when its valid messages go to a topic).

The job used to read a micro-batch into Spark (every column, payloads too), keep it, count it,
and write its valid rows and its invalid rows back out in two more Spark jobs. Spark moved each
row from the reader's Python worker into its JVM and out again to a writer's, a round trip that
cost several times the sending itself (docs/spark.md has the figures). Here the task that reads a
range sends its rows on, and Spark gets only what `FORWARDED` names: the count
of each verdict (writer id, valid, failing rule), for the job's counts.

What reaches the topics is what the two writes sent, message for message:

* a valid message goes to `forwardTo` untouched (same bytes, key, event time and properties, so
  the same schema id), after its writer version is registered under that topic's subject, with
  the DEKs of the source's subject (`topic_schemas.ForwardedSchemas`);
* an invalid one goes to `deadLetterTopic` with its original bytes, the `__rule.*` properties a
  producer gave it dropped and the reader's (`_failure`) added;
* with `producerName`, each task sends as `<producerName>-<query id>-valid-<task>` and
  `...-dlq-<task>`, sequence ids `(micro-batch << 32) + n`, n counting the task's rows to that
  topic: the names and ids the writes gave, so that a micro-batch run again (a retried task, a
  restarted query, or a checkpoint left by an earlier release) is deduplicated by the broker.

A task sends everything of its range before it ends, so a micro-batch is committed only once
all of it was forwarded or dead-lettered (DLQ before the offsets move).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from ..deadletter import copy_properties
from ..errors import ExternalSchemaError
from ..subjects import partition_of
from ..tasks.columns import FORWARDED
from ..tasks.options import SourceOptions
from ..writing.rows import TaskWriter
from .writer import micro_batch_id, task_partition

__all__ = ["QUERY_ID_PROPERTY", "forward_partition", "producer_prefix"]

#: The local property Spark's `StreamExecution` sets to the query's id on the thread that runs its
#: micro-batches (`StreamExecution.QUERY_ID_KEY`), which its tasks inherit: the id the query's
#: checkpoint keeps in `metadata`, the same after a restart.
QUERY_ID_PROPERTY = "sql.streaming.queryId"

_SENT = ("key", "data", "properties", "eventTime")
_VERDICT_KEYS = ["schemaId", "_valid", "_rule"]
_PROPERTIES = pa.map_(pa.string(), pa.string())


def producer_prefix(producer_name: str, query_id: str) -> str:
    """Deterministic for one checkpoint, new for a new one: a fresh checkpoint starts at batch 0
    again, and sequence ids of an old producer name would then be below what the broker has seen,
    and dropped."""
    return f"{producer_name}-{query_id[:8]}"


def forward_partition(
    options: SourceOptions, partition_topic: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Send each of a range's messages on, valid to `forward_to`, invalid to `dead_letter_topic`;
    once all are sent, yield how many had each verdict (`FORWARDED`)."""
    assert options.forward_to is not None and options.dead_letter_topic is not None
    batch_id = micro_batch_id()
    if batch_id is None:
        raise ExternalSchemaError(
            f"option 'forwardTo' {options.forward_to}: Spark gave this task no micro-batch id, so the "
            "sequence ids of what it forwards would not be deterministic (forwardTo is for streams)"
        )
    task = task_partition()
    prefix = None
    if options.producer_name:
        prefix = producer_prefix(options.producer_name, _query_id())
    source, _ = partition_of(partition_topic)

    def writer(topic: str, role: str, register: bool) -> TaskWriter:
        named = f"{prefix}-{role}" if prefix else None
        kept = dataclasses.replace(
            options, topics=(topic,), topic_pattern=None, producer_name=named, register_forwarded=register
        )
        return TaskWriter(kept, (options.sequence_base or 0) + batch_id, task, source_topic=source)

    valid = writer(options.forward_to, "valid", options.register_forwarded)
    # a DLQ holds copies of the source, read as the source: ids its subject need not know
    dead = writer(options.dead_letter_topic, "dlq", False)
    counts: Counter[tuple[int | None, bool, str | None]] = Counter()
    try:
        for batch in batches:
            verdicts = batch.column("_valid")
            if pc.any(verdicts).as_py():
                valid.write(batch.filter(verdicts).select(_SENT))
            invalid = pc.invert(verdicts)
            if pc.any(invalid).as_py():
                dead.write(dead_letter_copies(batch.filter(invalid)))
            grouped = pa.table(batch.select(_VERDICT_KEYS)).group_by(_VERDICT_KEYS, use_threads=False)
            for row in grouped.aggregate([([], "count_all")]).to_pylist():
                counts[tuple(row[key] for key in _VERDICT_KEYS)] += row["count_all"]
    except BaseException:
        valid.close()
        dead.close()
        raise
    try:
        valid.finish()  # every send's result, then closed
    finally:
        dead.finish()
    # said once everything is sent: Spark counts what went where
    schema = FORWARDED
    rows = [(*key, number) for key, number in counts.items()]
    yield pa.RecordBatch.from_arrays(
        [pa.array([row[i] for row in rows], field.type) for i, field in enumerate(schema)], schema=schema
    )


def dead_letter_copies(invalid: pa.RecordBatch) -> pa.RecordBatch:
    """The DLQ copies of invalid messages: their bytes, key and event time, their properties less
    any `__rule.*` a producer set, with the reader's `_failure` ones (which say why)."""
    properties = [
        list(copy_properties(given, dict(failure or ())).items())
        for given, failure in zip(
            invalid.column("properties").to_pylist(), invalid.column("_failure").to_pylist(), strict=True
        )
    ]
    columns = [invalid.column("key"), invalid.column("data"), pa.array(properties, _PROPERTIES)]
    return pa.RecordBatch.from_arrays([*columns, invalid.column("eventTime")], names=list(_SENT))


def _query_id() -> str:
    from pyspark import TaskContext

    context = TaskContext.get()
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context is not None else None
    if query_id is None:
        raise ExternalSchemaError(
            "option 'producerName' with 'forwardTo': Spark gave this task no query id "
            f"({QUERY_ID_PROPERTY}), which the producer names need to be the same after a restart"
        )
    return query_id
