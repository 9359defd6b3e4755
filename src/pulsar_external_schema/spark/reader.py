"""Spark's reader interfaces for `pulsar-external`: a batch reader and a stream reader.

Reading Pulsar topics into Spark is planned on the driver (`planning.py`: one Spark partition
per topic partition and offset range) and done on the executors (`rows.py`: messages decoded,
the data contract run, Arrow batches out). These classes tie the two to Spark's
`DataSourceReader` / `DataSourceStreamReader`, and keep a stream's offsets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from ..errors import ConfigError
from ..reading.planning import Planner, TopicPartitionRange, advance, earlier
from ..tasks.offsets import EARLIEST, Bound
from ..tasks.options import SourceOptions
from ..tasks.topic_metadata import Ledger

if TYPE_CHECKING:
    import pyarrow as pa

    from ..tasks.schemas import ReaderSchema

__all__ = ["PulsarBatchReader", "PulsarStreamReader", "SparkPartition"]


@dataclasses.dataclass
class SparkPartition(TopicPartitionRange, InputPartition):
    """A range as Spark takes it from `partitions()` (it checks for an `InputPartition`)."""

    @classmethod
    def of(cls, ranges: Sequence[TopicPartitionRange]) -> list[SparkPartition]:
        return [cls(r.partition_topic, r.start, r.end) for r in ranges]


class _ReaderBase:
    """What both readers share: the query's options and reader schema, planning on the driver,
    and `read` on the executors.

    The executors' modules (`rows.py`, `native.py`, the serdes and the codec under them) load on
    first use, not with this one: Spark starts a fresh process for each streaming query to plan
    its offsets, and these would cost it imports it never uses (docs/benchmarks.md).
    """

    def __init__(self, options: SourceOptions, reader_schema: ReaderSchema, value_type: pa.DataType) -> None:
        self.options = options
        self.reader_schema = reader_schema
        self.value_type = value_type
        self.planner = Planner(options)

    @cached_property
    def native(self) -> bool:
        """Whether the executors read with the native extension (`native.py`), decided once, on
        the driver, where Spark pickles this reader for them (`__getstate__`)."""
        from ..reading import native

        return native.choose(self.options, self.reader_schema, self.value_type)

    def __getstate__(self) -> dict[str, Any]:
        # Spark ships `read` to the executors by pickling this reader, on the driver: the path is
        # chosen there, once a query (and said once, where auto falls back), not in every task.
        self.native  # noqa: B018
        return self.__dict__

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TopicPartitionRange):
            return iter(())  # Spark reads one empty partition when planning found nothing to read
        if self.native:
            from ..reading.native import read_partition
        else:
            from ..reading.rows import read_partition
        options = self.options
        if options.forward_to is not None:  # the validation job: rows go to topics, verdicts to Spark
            from .forwarding import forward_partition

            read = dataclasses.replace(options, include_data=True, forward_to=None, dead_letter_topic=None)
            batches = read_partition(read, self.reader_schema, self.value_type, partition)
            return forward_partition(options, partition.partition_topic, batches)
        return read_partition(options, self.reader_schema, self.value_type, partition)


class PulsarBatchReader(_ReaderBase, DataSourceReader):
    """`spark.read.format("pulsar-external")`: from startingOffsets to endingOffsets."""

    def partitions(self) -> Sequence[SparkPartition]:
        admin = self.planner.admin()
        try:
            partitions = self.planner.partition_topics(admin)
            start = self.planner.resolve(admin, self.options.starting_offsets, partitions, "startingOffsets")
            end = self.planner.resolve(admin, self.options.ending_offsets, partitions, "endingOffsets")
            return SparkPartition.of(self.planner.ranges(admin, start, end))
        finally:
            admin.close()


class PulsarStreamReader(_ReaderBase, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`spark.readStream.format("pulsar-external")`: micro-batches of what arrived since the last.

    Offsets are message ids per partition, kept in Spark's checkpoint: a restarted query goes on
    after the last committed batch. Partitions that appear later (topicPattern, more partitions)
    are read from their earliest message. With `Trigger.AvailableNow` the query stops at what was
    written when it started, in micro-batches of `maxEntriesPerPartition`.
    """

    _target: dict[str, Bound] | None = None
    _ledgers: dict[str, list[Ledger]] | None = None
    """Ledgers `latestOffset` fetched to cap a batch, reused by the `partitions` call after it."""

    def prepareForTriggerAvailableNow(self) -> None:
        admin = self.planner.admin()
        try:
            self._target = {p: admin.last_message(p) for p in self.planner.partition_topics(admin)}
        finally:
            admin.close()

    def initialOffset(self) -> dict[str, Any]:
        if self.options.ending_offsets != "latest":
            raise ConfigError("option 'endingOffsets' is for batch queries; a stream reads on")
        admin = self.planner.admin()
        try:
            partitions = self.planner.partition_topics(admin)
            start = self.planner.resolve(admin, self.options.starting_offsets, partitions, "startingOffsets")
        finally:
            admin.close()
        return {partition: bound.to_json() for partition, bound in start.items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_entries_per_partition:
            return ReadMaxRows(self.options.max_entries_per_partition)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        admin = self.planner.admin()
        try:
            offsets = dict(start)
            self._ledgers = {}
            target = self._target
            for partition in target if target is not None else self.planner.partition_topics(admin):
                first = Bound.from_json(start[partition]) if partition in start else EARLIEST
                last = target[partition] if target is not None else admin.last_message(partition)
                if cap is not None and first.key < last.key:
                    self._ledgers[partition] = admin.ledgers(partition)
                    limited = advance(self._ledgers[partition], first, cap)
                    if limited is not None:
                        last = earlier(limited, last)
                offsets[partition] = (last if last.key > first.key else first).to_json()
            return offsets
        finally:
            admin.close()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[SparkPartition]:
        admin = self.planner.admin()
        try:
            known, self._ledgers = self._ledgers, None  # fresh for this batch only
            ranges = self.planner.ranges(
                admin,
                {p: Bound.from_json(v) for p, v in start.items()},
                {p: Bound.from_json(v) for p, v in end.items()},
                known,
            )
            return SparkPartition.of(ranges)
        finally:
            admin.close()

    def commit(self, end: dict[str, Any]) -> None:
        """Spark's checkpoint holds the offsets; nothing is acknowledged on the broker."""
