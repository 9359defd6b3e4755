"""Writing DataFrames to Pulsar with external schemas: Spark's batch and stream writers over a
task's producers (`writing.rows.TaskWriter`, which says what a row becomes and how a write is
exactly once).

Exactly once: with the `producerName` option each task sends as `<producerName>-<task partition>`
with sequence id `(batch << 32) + row`, where batch is the micro-batch id (or `sequenceBase`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from ..admin import require_external_type
from ..config import ExternalSchemaConfig
from ..errors import ConfigError, ExternalSchemaError
from ..tasks.options import SourceOptions
from ..writing.rows import TaskWriter

__all__ = ["PulsarBatchWriter", "PulsarStreamWriter", "WriteResult"]

log = logging.getLogger(__name__)

#: Spark sets this local property on the tasks of a streaming micro-batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"


@dataclass
class WriteResult(WriterCommitMessage):
    sent: int
    dead_lettered: int


def task_partition() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def micro_batch_id() -> int | None:
    from pyspark import TaskContext

    context = TaskContext.get()
    value = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    return int(value) if value is not None else None


class PulsarBatchWriter(DataSourceArrowWriter):
    """`df.write.format("pulsar-external")`."""

    def __init__(self, options: SourceOptions) -> None:
        if options.producer_name and options.sequence_base is None:
            raise ConfigError(
                "option 'producerName' on a batch write needs 'sequenceBase' (a number that grows with "
                "each write, e.g. a run id): the broker drops sequence ids it has already seen"
            )
        # on the driver: a broker that refuses every declaration says so before any task runs
        require_external_type(ExternalSchemaConfig.from_dict(options.config))
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return _write_all(self.options, self.options.sequence_base, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_totals(messages, "batch write")


class PulsarStreamWriter(DataSourceStreamArrowWriter):
    """`df.writeStream.format("pulsar-external")`: sequence ids from the micro-batch id."""

    def __init__(self, options: SourceOptions) -> None:
        require_external_type(ExternalSchemaConfig.from_dict(options.config))  # as a batch write's
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        base = None
        if self.options.producer_name:
            batch_id = micro_batch_id()
            if batch_id is None:
                raise ExternalSchemaError(
                    f"option 'producerName' {self.options.producer_name!r}: Spark gave this task no "
                    f"micro-batch id ({BATCH_ID_PROPERTY}), so its sequence ids would not be deterministic"
                )
            # each micro-batch gets its own range; sequenceBase moves all of them (a new query
            # writing with the producer name of an old one starts above the old one's ids)
            base = (self.options.sequence_base or 0) + batch_id
        return _write_all(self.options, base, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_totals(messages, f"micro-batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("micro-batch %s was aborted; Spark runs it again", batchId)


def _write_all(options: SourceOptions, base: int | None, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
    writer = TaskWriter(options, base, task_partition())
    try:
        for batch in iterator:
            writer.write(batch)
    except BaseException:
        writer.close()
        raise
    written = writer.finish()
    return WriteResult(written.sent, written.dead_lettered)


def _log_totals(messages: list[WriterCommitMessage | None], what: str) -> None:
    results = [m for m in messages if isinstance(m, WriteResult)]
    sent = sum(m.sent for m in results)
    dead = sum(m.dead_lettered for m in results)
    log.info("%s: %d messages sent, %d dead-lettered", what, sent, dead)
