"""Reading Pulsar topics into Spark: planning on the driver, decoding on the executors.

One Spark partition per topic partition and offset range. A task opens a Pulsar reader at the
range's first entry, skips what its start bound covers, and stops at the first message its end
bound does not; every message is decoded with its schema id from the metadata, the data
contract runs, and rows leave as Arrow batches of exactly the declared schema. A message that
fails (bad bytes, unknown schema id, a rule) is a row with `_valid = false`, `_error`, `_rule`
and `_failure` (the `__rule.*` properties of its DLQ copy): nothing is dropped. A registry that
cannot be reached fails the task, which Spark retries.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .. import schema_id as ids
from ..deadletter import failure_properties
from ..errors import ConfigError, ExternalSchemaError, RuleViolationError, SchemaIdError
from ..subjects import partition_of
from .admin import Ledger, PulsarAdmin
from .executor import RareCollections, decoding_schema, pulsar_client
from .offsets import EARLIEST, Bound, user_bound
from .options import SourceOptions
from .types import Converter
from .values import ReaderSchema, is_data_error, spark_value_type

log = logging.getLogger(__name__)

ROWS_PER_BATCH = 8192

MESSAGE_ID = StructType(
    [
        StructField("ledgerId", LongType(), False),
        StructField("entryId", LongType(), False),
        StructField("batchIndex", IntegerType(), False),
    ]
)
_PROPERTIES = MapType(StringType(), StringType(), False)


def read_schema(value_type: DataType, include_data: bool) -> StructType:
    """The columns of a read: the decoded value, the message's metadata, and the verdict."""
    fields = [
        StructField("key", StringType(), True),
        StructField("value", value_type, True),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("messageId", MESSAGE_ID, False),
        StructField("publishTime", TimestampType(), False),
        StructField("eventTime", TimestampType(), True),
        StructField("properties", _PROPERTIES, False),
        StructField("schemaId", IntegerType(), True),
    ]
    if include_data:
        fields.append(StructField("data", BinaryType(), False))
    fields += [
        StructField("_valid", BooleanType(), False),
        StructField("_error", StringType(), True),
        StructField("_rule", StringType(), True),
        StructField("_failure", _PROPERTIES, True),
    ]
    return StructType(fields)


@dataclass
class TopicPartitionRange(InputPartition):
    """What one task reads: a partition topic, after `start` up to and including `end`."""

    partition_topic: str
    start: Bound
    end: Bound


# -- planning (driver) -------------------------------------------------------------------------


class _Planner:
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def admin(self) -> PulsarAdmin:
        assert self.options.admin_url is not None
        return PulsarAdmin(self.options.admin_url, token=self.options.auth_token)

    def partition_topics(self, admin: PulsarAdmin) -> list[str]:
        topics = (
            admin.topics_matching(self.options.topic_pattern)
            if self.options.topic_pattern
            else list(self.options.topics)
        )
        return [p for topic in topics for p in admin.partitions(topic)]

    def resolve(
        self, admin: PulsarAdmin, spec: str | dict[str, Any], partitions: Sequence[str], what: str
    ) -> dict[str, Bound]:
        """The bounds an `earliest` / `latest` / JSON option means for these partitions."""
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(partitions))
            if unknown:
                raise ConfigError(
                    f"option {what!r} names partitions that are not read: {', '.join(unknown)} "
                    f"(partitions: {', '.join(partitions)})"
                )
        bounds = {}
        for partition in partitions:
            value = (
                spec.get(partition, "earliest" if what == "startingOffsets" else "latest")
                if isinstance(spec, dict)
                else spec
            )
            if value == "earliest":
                bounds[partition] = EARLIEST
            elif value == "latest":
                bounds[partition] = admin.last_message(partition)
            elif isinstance(value, dict):
                bounds[partition] = user_bound(value)
        return bounds

    def check_data_loss(
        self, admin: PulsarAdmin, partition: str, start: Bound, ledgers: list[Ledger] | None = None
    ) -> None:
        """Messages after `start` deleted by retention: an error, or a warning with failOnDataLoss=false.

        `ledgers`: the partition's ledgers if the caller has just fetched them."""
        if start.is_earliest:
            return
        if ledgers is None:
            ledgers = admin.ledgers(partition)
        if ledgers and start.ledger < ledgers[0].ledger_id:
            text = (
                f"partition {partition}: messages after ledger {start.ledger} entry {start.entry} were "
                f"deleted (the oldest ledger is now {ledgers[0].ledger_id}); retention removed data "
                "this query had not read yet"
            )
            if self.options.fail_on_data_loss:
                raise ExternalSchemaError(
                    text + "; set failOnDataLoss=false to go on from the oldest message"
                )
            log.warning("%s; going on from the oldest message (failOnDataLoss=false)", text)

    def split(
        self,
        admin: PulsarAdmin,
        ranges: list[TopicPartitionRange],
        known_ledgers: dict[str, list[Ledger]] | None = None,
    ) -> list[TopicPartitionRange]:
        """The ranges in at least `minPartitions` pieces (as Spark's Kafka source divides its
        partitions): each range gets a share of the pieces as large as its share of the entries.

        One reader per topic partition is what Pulsar serves one entry at a time: ~20k entries/s
        from the standalone broker here, whatever the reader's queue, where two readers of one
        partition got ~30k and four up to ~78k. And a topic with fewer partitions than the
        cluster has cores leaves the others idle."""
        wanted = self.options.min_partitions
        if not wanted or len(ranges) >= wanted:
            return ranges
        known = known_ledgers or {}
        ledgers = {
            r.partition_topic: known.get(r.partition_topic) or admin.ledgers(r.partition_topic)
            for r in ranges
        }
        sizes = [entries_between(ledgers[r.partition_topic], r.start, r.end) for r in ranges]
        total = sum(sizes)
        pieces = []
        for piece, size in zip(ranges, sizes, strict=True):
            share = -(-wanted * size // total) if total else 1
            for first, last in split_range(ledgers[piece.partition_topic], piece.start, piece.end, share):
                pieces.append(TopicPartitionRange(piece.partition_topic, first, last))
        return pieces


def _first_unread(start: Bound) -> tuple[int, int]:
    """(ledger, entry) of the first entry `start` leaves (a part of) to read."""
    if start.is_earliest:
        return -1, 0
    if start.batch < 0 and start.inclusive:
        return start.ledger, start.entry + 1  # the whole entry is behind: the next one is read first
    return start.ledger, start.entry


def advance(ledgers: Sequence[Ledger], start: Bound, entries: int) -> Bound | None:
    """The bound `entries` entries after `start` (None when fewer are written)."""
    ledger, entry = _first_unread(start)
    remaining = entries
    for row in ledgers:
        if row.ledger_id < ledger:
            continue
        first = entry if row.ledger_id == ledger else 0
        available = row.entries - max(first, 0)
        if available <= 0:
            continue
        if remaining <= available:
            return Bound(row.ledger_id, max(first, 0) + remaining - 1, -1, True)
        remaining -= available
    return None


def entries_between(ledgers: Sequence[Ledger], start: Bound, end: Bound) -> int:
    """How many entries a range after `start` up to `end` reads (in whole or in part)."""
    ledger, entry = _first_unread(start)
    count = 0
    for row in ledgers:
        if row.ledger_id < ledger:
            continue
        if row.ledger_id > end.ledger:
            break
        first = max(entry, 0) if row.ledger_id == ledger else 0
        last = end.entry if row.ledger_id == end.ledger else row.entries - 1
        count += max(0, last - first + 1)
    return count


def split_range(
    ledgers: Sequence[Ledger], start: Bound, end: Bound, pieces: int
) -> list[tuple[Bound, Bound]]:
    """(start, end) of `pieces` ranges of about as many entries each, which together read what
    the range after `start` up to `end` reads; each ends after a whole entry, the last at `end`."""
    total = entries_between(ledgers, start, end)
    if pieces <= 1 or total <= 1:
        return [(start, end)]
    step = -(-total // pieces)
    ranges = []
    first = start
    while True:
        bound = advance(ledgers, first, step)
        if bound is None or bound.key >= end.key:
            ranges.append((first, end))
            return ranges
        ranges.append((first, bound))
        first = bound


def _earlier(a: Bound, b: Bound) -> Bound:
    return a if a.key <= b.key else b


# -- reading (executors) ------------------------------------------------------------------------


def read_partition(
    options: SourceOptions,
    reader_schema: ReaderSchema,
    value_type: DataType,
    partition: TopicPartitionRange,
) -> Iterator[pa.RecordBatch]:
    import pulsar  # imported on the executor

    _, converter = spark_value_type(reader_schema, options)
    schema = read_schema(value_type, options.include_data)
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    value_arrow = arrow_schema.field("value").type
    client = pulsar_client(options)  # the worker's: kept for its next task (`executor.py`)
    external = decoding_schema(options, reader_schema)
    trust = options.trust_rule_properties

    def decode(msg: Any, properties: dict[str, str]) -> Any:
        return external.decode_message(msg, trust_rule_properties=trust, properties=properties)

    start, end = partition.start, partition.end
    topic, index = partition_of(partition.partition_topic)
    reader = None
    collections = RareCollections()
    try:
        start_id = (
            pulsar.MessageId.earliest
            if start.is_earliest
            else pulsar.MessageId(-1, start.ledger, start.entry, -1)
        )
        reader = client.create_reader(
            partition.partition_topic,
            start_id,
            start_message_id_inclusive=True,
            receiver_queue_size=2000,
        )
        # pulsar-client's C++ reader hands out its C++ messages, which have the methods of its
        # Python `Message` (the wrapper made per message costs a Python call per method).
        read_next = getattr(reader, "_reader", reader).read_next
        timeout = options.read_timeout_ms
        rows = _Rows(options.include_data, reader_schema, topic, index)
        first_entry = (start.ledger, start.entry)
        last_entry = (end.ledger, end.entry)
        ask = True  # whether to ask the broker if more messages follow before reading the next
        while not ask or reader.has_message_available():
            try:
                msg = read_next(timeout)
            except Exception as error:
                raise ExternalSchemaError(
                    f"partition {partition.partition_topic}: the broker announced more messages but "
                    f"none arrived within {options.read_timeout_ms} ms ({error})"
                ) from None
            mid = msg.message_id()
            position = (mid.ledger_id(), mid.entry_id())
            batch = mid.batch_index()
            # Before the range's last entry more messages follow for sure (the planner found that
            # entry on the broker), so `has_message_available` is asked only within the last one:
            # it cost more than `read_next` itself (~3 us against ~2 us per message of a batched
            # topic here), and was 44% of a partition's read loop.
            ask = position >= last_entry
            if ask or position <= first_entry:  # only in their own entries do the bounds decide
                if start.covers(*position, batch):
                    continue
                if not end.covers(*position, batch):
                    break
            rows.add(msg, position, batch, decode)
            if len(rows.rows) >= ROWS_PER_BATCH:
                yield rows.batch(arrow_schema, value_arrow, converter)
                rows = _Rows(options.include_data, reader_schema, topic, index)
        if rows.rows:
            yield rows.batch(arrow_schema, value_arrow, converter)
    finally:
        collections.close()
        if reader is not None:
            reader.close()


class _Rows:
    """The rows of one Arrow batch, one tuple each (turned into columns by `batch`); the verdict
    columns are kept only for failed rows."""

    def __init__(
        self, include_data: bool, reader_schema: ReaderSchema | None, topic: str, partition: int
    ) -> None:
        self.include_data = include_data
        self.reader_schema = reader_schema
        self.topic = topic
        self.partition = partition
        self.rows: list[tuple[Any, ...]] = []
        """(key, value, ledger, entry, batch index, publish us, event us, properties, schema id[, data])"""
        self.failed: dict[int, tuple[str, str | None, list[tuple[str, str]]]] = {}
        """row -> (error, rule, __rule.* properties of its DLQ copy)"""

    @property
    def count(self) -> int:
        return len(self.rows)

    def add(self, msg: Any, position: tuple[int, int], batch: int, decode: Any) -> None:
        properties = msg.properties()
        try:
            value = decode(msg, properties)
        except ExternalSchemaError as failure:
            if not is_data_error(failure):
                raise
            value = None
            self._fail(failure)
        event = msg.event_timestamp()
        id_property = properties.get(ids.SCHEMA_ID_PROPERTY)  # per row: the usual form first
        if id_property is None:
            with contextlib.suppress(SchemaIdError):  # the decode above said what is wrong with it
                id_property = ids.property_form(properties)
        row = (
            msg.partition_key() or None,
            value,
            *position,
            batch,
            msg.publish_timestamp() * 1000,
            event * 1000 if event else None,
            list(properties.items()),
            _schema_id(id_property, b"" if id_property else msg.data()),
        )
        self.rows.append((*row, msg.data()) if self.include_data else row)

    def _fail(self, error: ExternalSchemaError) -> None:
        rule = error if isinstance(error, RuleViolationError) else None
        failure = failure_properties(
            error.topic or self.topic,
            str(error),
            rule=(rule.rule or "") if rule else None,
            mode=rule.mode if rule else None,
            subject=error.subject if rule else None,
        )
        self.failed[self.count] = (str(error), rule.rule if rule else None, list(failure.items()))

    def batch(self, arrow_schema: pa.Schema, value_type: pa.DataType, converter: Converter) -> pa.RecordBatch:
        n = self.count
        keys, values, ledgers, entries, batches, publish, event, properties, schema_ids, *data = zip(
            *self.rows, strict=True
        )
        value = self._value_column(list(values), value_type, converter)  # first: it may fail more rows
        failed = self.failed
        message_ids = pa.StructArray.from_arrays(
            [pa.array(ledgers, pa.int64()), pa.array(entries, pa.int64()), pa.array(batches, pa.int32())],
            fields=list(arrow_schema.field("messageId").type),
        )
        columns: dict[str, Any] = {
            "key": pa.array(keys, pa.string()),
            "value": value,
            "topic": pa.repeat(pa.scalar(self.topic, pa.string()), n),
            "partition": pa.repeat(pa.scalar(self.partition, pa.int32()), n),
            "messageId": message_ids,
            "publishTime": pa.array(publish, pa.timestamp("us", tz="UTC")),
            "eventTime": pa.array(event, pa.timestamp("us", tz="UTC")),
            "properties": pa.array(properties, arrow_schema.field("properties").type),
            "schemaId": pa.array(schema_ids, pa.int32()),
        }
        if self.include_data:
            columns["data"] = pa.array(data[0], pa.binary())
        if failed:
            verdicts = [failed.get(i) for i in range(n)]
            columns["_valid"] = pa.array([v is None for v in verdicts], pa.bool_())
            columns["_error"] = pa.array([v and v[0] for v in verdicts], pa.string())
            columns["_rule"] = pa.array([v and v[1] for v in verdicts], pa.string())
            columns["_failure"] = pa.array(
                [v and v[2] for v in verdicts], arrow_schema.field("_failure").type
            )
        else:
            columns["_valid"] = pa.repeat(pa.scalar(True), n)
            for name in ("_error", "_rule", "_failure"):
                columns[name] = pa.nulls(n, arrow_schema.field(name).type)
        arrays = [columns[name].cast(arrow_schema.field(name).type) for name in arrow_schema.names]
        return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    def _value_column(self, values: list[Any], value_type: pa.DataType, converter: Converter) -> pa.Array:
        """The values as one Arrow array; a value that does not fit the column makes its row invalid."""
        fitted: list[Any] = values
        if converter is not None:
            fitted = []
            for i, value in enumerate(values):
                try:
                    fitted.append(converter(value) if value is not None else None)
                except (TypeError, ValueError) as error:
                    fitted.append(None)
                    self._unfit(i, error)
        try:
            return pa.array(fitted, value_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            pass  # one value (or more) does not fit: find it, row by row
        for i, value in enumerate(fitted):
            try:
                pa.array([value], value_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as error:
                fitted[i] = None
                self._unfit(i, error)
        return pa.array(fitted, value_type)

    def _unfit(self, i: int, error: Exception) -> None:
        _, _, ledger, entry, batch, *_ = self.rows[i]
        where = f"ledger {ledger} entry {entry} batch index {batch}"
        reader = self.reader_schema
        version = f" (subject {reader.subject}, reader schema id {reader.schema_id})" if reader else ""
        text = (
            f"message {where} of {self.topic}: its decoded value does not fit the value column "
            f"typed from the reader schema{version}: {error}"
        )
        self.failed[i] = (text, None, list(failure_properties(self.topic, text).items()))


_SCHEMA_IDS: dict[str, int | None] = {}


def _schema_id(property_value: str | None, data: bytes) -> int | None:
    """The Confluent schema id of a message (None for GUIDs, key/value ids and bad metadata)."""
    if property_value:
        if property_value not in _SCHEMA_IDS:
            try:
                id_bytes, key_value = ids.from_property(property_value)
                _SCHEMA_IDS[property_value] = None if key_value else ids.confluent_int_id(id_bytes)
            except ExternalSchemaError:
                return None
        return _SCHEMA_IDS[property_value]
    if data[:1] == b"\x00" and len(data) >= 5:
        return int.from_bytes(data[1:5], "big")
    return None


# -- Spark's reader interfaces -------------------------------------------------------------------


class _ReaderBase:
    def __init__(self, options: SourceOptions, reader_schema: ReaderSchema, value_type: DataType) -> None:
        self.options = options
        self.reader_schema = reader_schema
        self.value_type = value_type
        self.planner = _Planner(options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TopicPartitionRange):
            return iter(())  # Spark reads one empty partition when planning found nothing to read
        return read_partition(self.options, self.reader_schema, self.value_type, partition)

    def _ranges(
        self,
        admin: PulsarAdmin,
        start: dict[str, Bound],
        end: dict[str, Bound],
        known_ledgers: dict[str, list[Ledger]] | None = None,
    ) -> list[TopicPartitionRange]:
        ranges = []
        for partition, last in end.items():
            first = start.get(partition, EARLIEST)
            if first.key < last.key:
                ledgers = (known_ledgers or {}).get(partition)
                self.planner.check_data_loss(admin, partition, first, ledgers)
                ranges.append(TopicPartitionRange(partition, first, last))
        return self.planner.split(admin, ranges, known_ledgers)


class PulsarBatchReader(_ReaderBase, DataSourceReader):
    """`spark.read.format("pulsar-external")`: from startingOffsets to endingOffsets."""

    def partitions(self) -> Sequence[TopicPartitionRange]:
        admin = self.planner.admin()
        try:
            partitions = self.planner.partition_topics(admin)
            start = self.planner.resolve(admin, self.options.starting_offsets, partitions, "startingOffsets")
            end = self.planner.resolve(admin, self.options.ending_offsets, partitions, "endingOffsets")
            return self._ranges(admin, start, end)
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
                        last = _earlier(limited, last)
                offsets[partition] = (last if last.key > first.key else first).to_json()
            return offsets
        finally:
            admin.close()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[TopicPartitionRange]:
        admin = self.planner.admin()
        try:
            known, self._ledgers = self._ledgers, None  # fresh for this batch only
            return self._ranges(
                admin,
                {p: Bound.from_json(v) for p, v in start.items()},
                {p: Bound.from_json(v) for p, v in end.items()},
                known,
            )
        finally:
            admin.close()

    def commit(self, end: dict[str, Any]) -> None:
        """Spark's checkpoint holds the offsets; nothing is acknowledged on the broker."""
