"""Reading a range on an executor: Pulsar messages in, Arrow batches of the declared columns out.

A task opens a Pulsar reader at its range's first entry, skips what its start bound covers, and
stops at the first message its end bound does not. A message at or before one it read is skipped:
after a reconnect (a topic unload, a broker restart) pulsar-client's reader delivers again what it
had received, and no message may be read twice. Every message is decoded with its schema id from
the metadata, the data contract runs, and rows leave as Arrow batches of exactly the declared
schema (`columns.read_schema`). A message that fails (bad bytes, unknown schema id, a rule) is a
row with `_valid = false`, `_error`, `_rule` and `_failure` (the `__rule.*` properties of its DLQ
copy): nothing is dropped. A registry that cannot be reached fails the task, which Spark retries.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from .. import _pulsar_client
from .. import schema_id as ids
from ..deadletter import failure_properties
from ..errors import ExternalSchemaError, RuleViolationError, SchemaIdError
from ..reading.types import Converter
from ..subjects import partition_of
from ..tasks.columns import read_schema
from ..tasks.executor import RareCollections, decoding_schema, pulsar_client
from ..tasks.options import SourceOptions
from ..tasks.schemas import ReaderSchema
from .decoders import arrow_value_type, is_data_error
from .planning import TopicPartitionRange

__all__ = ["Rows", "read_partition"]


def read_partition(
    options: SourceOptions,
    reader_schema: ReaderSchema,
    value_type: pa.DataType,
    partition: TopicPartitionRange,
) -> Iterator[pa.RecordBatch]:
    import pulsar  # imported on the executor

    _, converter = arrow_value_type(reader_schema, options)
    arrow_schema = read_schema(value_type, options.include_data)
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
        try:
            reader = client.create_reader(
                partition.partition_topic,
                start_id,
                start_message_id_inclusive=True,
                receiver_queue_size=2000,
            )
        except pulsar.PulsarException as error:  # pulsar-client tried for its operation timeout
            raise ExternalSchemaError(
                f"partition {partition.partition_topic}: a reader could not be opened "
                f"({type(error).__name__}: {error})"
            ) from None
        read_next = _pulsar_client.read_next(reader)  # C++ messages, no wrapper per message
        timeout = options.read_timeout_ms
        rows = Rows(options.include_data, reader_schema, topic, index)
        first_entry = (start.ledger, start.entry)
        last_entry = (end.ledger, end.entry)
        ask = True  # whether to ask the broker if more messages follow before reading the next
        given = (-1, -1, -1)  # (ledger, entry, batch index) of the last message given (or skipped)
        more = _more_follow(pulsar, reader, partition.partition_topic, options.read_timeout_ms)
        while not ask or more():
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
            place = (*position, batch)
            if place <= given:  # a redelivery: message ids order within a partition
                continue
            given = place
            # Before the range's last entry more messages follow for sure (the planner found that
            # entry on the broker), so `has_message_available` is asked only within the last one:
            # it cost more than `read_next` itself, and was nearly half of a partition's read loop
            # on a batched topic.
            ask = position >= last_entry
            if ask or position <= first_entry:  # only in their own entries do the bounds decide
                if start.covers(*position, batch):
                    continue
                if not end.covers(*position, batch):
                    break
            rows.add(msg, position, batch, decode)
            if len(rows.rows) >= options.batch_size:
                yield rows.batch(arrow_schema, value_arrow, converter)
                rows = Rows(options.include_data, reader_schema, topic, index)
        if rows.rows:
            yield rows.batch(arrow_schema, value_arrow, converter)
    finally:
        collections.close()
        if reader is not None:
            reader.close()


def _more_follow(pulsar: Any, reader: Any, partition_topic: str, timeout_ms: int) -> Callable[[], bool]:
    """`reader.has_message_available`, asked again while the broker cannot answer it: while a topic
    is unloaded or its broker restarts, pulsar-client raises (BrokerMetadataError, ServiceUnitNotReady,
    NotConnected...) where its reader reconnects. Within the read timeout, with a backoff of 100 ms
    doubling up to 2 s, as pulsar-client's own; an answer no retry mends (the topic deleted,
    credentials refused) at once."""
    final = (
        pulsar.TopicNotFound,
        pulsar.TopicTerminated,
        pulsar.AuthenticationError,
        pulsar.AuthorizationError,
        pulsar.AlreadyClosed,
    )

    def more() -> bool:
        deadline = time.monotonic() + timeout_ms / 1000
        backoff = 0.1
        while True:
            try:
                return bool(reader.has_message_available())
            except pulsar.PulsarException as error:
                if isinstance(error, final) or time.monotonic() + backoff > deadline:
                    raise ExternalSchemaError(
                        f"partition {partition_topic}: the broker could not say whether more messages "
                        f"follow within {timeout_ms} ms ({type(error).__name__}: {error})"
                    ) from None
            time.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    return more


#: What pyarrow raises for a value outside its column's type (an integer past 64 bits: OverflowError).
_UNFIT = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)


class Rows:
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
        except _UNFIT:
            pass  # one value (or more) does not fit: find it, row by row
        for i, value in enumerate(fitted):
            try:
                pa.array([value], value_type)
            except _UNFIT as error:
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
    return ids.confluent_int_id(data)  # prefix mode: the payload starts with the id
