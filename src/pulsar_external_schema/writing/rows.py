"""Arrow rows to Pulsar messages with external schemas (the Spark sink's tasks and
`arrow.write_table`): each row a message, its schema id in the metadata.

Rows have a `value` column (encoded with the subject's latest registered schema, or the one
`use.schema.id` / `use.latest.with.metadata` pins, and its WRITE rules), or a binary `data`
column sent as it is (with its `properties`, which carry the schema id: how the validation job
forwards messages untouched). A forwarded row's writer version is registered under the target
topic's subject first (`registerForwarded`, on by default), so that the topic's readers read it
with their default config (`topic_schemas.ForwardedSchemas`). Optional columns: `key` (the partition
key), `properties` (map<string,string>), `eventTime` (timestamp) and `topic` (else the `topic`
option).

Exactly once: with the `producerName` option each task sends as `<producerName>-<task partition>`
with sequence id `(batch << 32) + row`, where batch is the micro-batch id (or `sequenceBase`), in
batches closed by count and size only (`DETERMINISTIC_BATCHES`). With deduplication enabled on the
namespace, the broker drops what a retried task or a restarted query sends again. Without it,
delivery is at least once.

`data` rows (forwarded) are sent by the native extension where it is installed and can send them
(the option `writer`, `auto` by default): a task's Arrow batch in one call, cut into the batched
entries pulsar-client would cut, with the same producer name and sequence ids, so that a task run
again on either path is deduplicated against the first run (`native/src/send.rs`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import _native
from ..admin import declare_external
from ..config import ExternalSchemaConfig
from ..errors import ConfigError, DeadLetteredError, EncodeError, ExternalSchemaError
from ..schema_id import SCHEMA_ID_PROPERTY
from ..tasks.conditions import passing
from ..tasks.executor import forwarded_schemas, native_client, pulsar_client
from ..tasks.options import SourceOptions
from ..tasks.topic_metadata import full_topic_name
from .native import NativeTopic, columnar_encoder, why_not_native
from .python_values import held, protobuf_converter, python_values
from .routing import DETERMINISTIC_BATCHES, keyless_name, keyless_partition

if TYPE_CHECKING:
    # Loaded where rows are encoded or forwarded versions registered: Spark plans a write and
    # commits it in Python processes of their own, which need this module's classes only.
    from ..codec.plans import ColumnarWrite
    from ..topic_schemas import ForwardedSchemas

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refused:
    """A row a write did not send: its number in the data (from 0), its key, and why."""

    row: int
    key: str | None
    error: ExternalSchemaError


@dataclass(frozen=True)
class Written:
    """What a write wrote: messages persisted, rows dead-lettered by a rule's DLQ action, and the
    rows refused (`write_table`'s; a Spark task's refusal fails the task)."""

    sent: int
    dead_lettered: int
    refused: list[Refused] = field(default_factory=list)


class TaskWriter:
    """Producers of one task, one per topic, sending the rows of its Arrow batches."""

    def __init__(
        self,
        options: SourceOptions,
        sequence_base: int | None,
        task: int,
        *,
        source_topic: str | None = None,
        schema: Any = None,
        refused: Callable[[int, Any, ExternalSchemaError], None] | None = None,
        one_producer: bool = False,
    ) -> None:
        self.options = options
        self.schema = schema
        """The external schema `value` rows are encoded with (`arrow.write_table`'s); None: each
        topic's subject's latest version (the Spark sink's)."""
        self.refused = refused
        """Called with (row, key, error) for a `value` row its schema or WRITE rules refuse, which
        is then not sent; None: such a row fails the write (the Spark sink's task).
        `one_producer`: the producer name as given (one writer); else `<name>-<task>`."""
        self.source_topic = source_topic
        """Where forwarded `data` rows were read: their versions (and DEKs) are that subject's."""
        self.client = pulsar_client(options)  # the worker's, kept for its next task (`executor.py`)
        self.task = task
        self.producer_name = (
            (options.producer_name if one_producer else f"{options.producer_name}-{task}")
            if options.producer_name
            else None
        )
        self.sequence_base = sequence_base
        self.producers: dict[tuple[str, bool, bool], Any] = {}
        self.native: dict[str, Any] = {}
        """Each topic's native producer of `data` rows, or None where pulsar-client sends them."""
        self.partitions: dict[str, list[str]] = {}
        self.converters: dict[str, Any] = {}
        self.encoders: dict[str, Any] = {}
        self.columnar: dict[tuple[str, ColumnarWrite, pa.DataType], Any] = {}
        """The extension's `AvroEncoder` of each (topic, plan, column type), None where it has none."""
        self.learnt: set[str] = set()
        """Topics whose first `value` row was encoded alone, so that its plan is learnt."""
        self.schemas: list[Any] = []
        self.submitted = 0
        self.dead_lettered = 0
        self.row = 0
        self.results: dict[Any, Any] = {}
        """Each send's result -> the id of the last message that had it (`_sent`)."""
        self._sent = self.results.__setitem__
        import pulsar  # imported on the executor

        self._ok = pulsar.Result.Ok

    def producer(self, topic: str, raw: bool, keyless: bool = False) -> Any:
        """The producer of a topic's rows; with a producer name, keyless rows of a partitioned
        topic have their own (`_keyless_route`)."""
        if keyless and (not self.producer_name or not self._partitioned(topic)):
            keyless = False
        key = (topic, raw, keyless)
        if key not in self.producers:
            args: dict[str, Any] = {"block_if_queue_full": True, "batching_enabled": True}
            if self.producer_name:
                args.update(producer_name=self.producer_name, **DETERMINISTIC_BATCHES)
            if keyless and self.producer_name:  # (keyless is set only with a name: above)
                args.update(
                    producer_name=keyless_name(self.producer_name), message_router=self._keyless_route
                )
            if raw:
                # as create_producer does for `value` rows: with pulsar.admin.url, the topic is
                # declared EXTERNAL, so Java PIP-420 consumers are let in
                declare_external(ExternalSchemaConfig.from_dict(self.options.config), topic)
                self.producers[key] = self.client.create_producer(topic, **args)
            else:
                from ..producer import create_producer

                self.producers[key] = create_producer(self.client, topic, self._schema(topic), **args)
        return self.producers[key]

    def _schema(self, topic: str) -> Any:
        """The schema `value` rows of `topic` are encoded with, one a topic (its keyed and keyless
        rows have producers of their own)."""
        if self.schema is not None:
            return self.schema
        if topic not in self.encoders:
            from ..tasks.schemas import make_schema, resolve_reader_schema

            factory, schema = make_schema(
                self.options, resolve_reader_schema(self.options, topic), client=self.client, latest=True
            )
            self.schemas += [schema, factory]
            if schema.schema_type == "PROTOBUF":
                self.converters[topic] = protobuf_converter(self.options, topic, schema.subject(topic))
            self.encoders[topic] = schema
        return self.encoders[topic]

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows > self.options.batch_size:  # what a batch holds at once, encoded, is bounded
            for offset in range(0, batch.num_rows, self.options.batch_size):
                self.write(compact(batch.slice(offset, self.options.batch_size)))
            return
        names = set(batch.schema.names)
        raw = "data" in names
        if not raw and "value" not in names:
            raise ConfigError(
                f"writing to Pulsar needs a 'value' column (encoded with the schema) or a binary 'data' "
                f"column (sent as it is); the columns are {', '.join(batch.schema.names)}"
            )
        if raw and "topic" in names and self.options.writer == "native":
            raise ConfigError(
                "option writer=native: the rows have a 'topic' column, and the native producer sends a "
                "task's rows to one topic; use writer=auto or writer=python"
            )
        if raw and "topic" not in names:
            target = full_topic_name(self._default_topic())
            producer = self._native_producer(target, batch.schema)
            if producer is not None:
                self._send_natively(producer, target, batch)
                return
        if not raw and "topic" not in names and self._encoded_natively(batch):
            return
        columns = {name: batch.column(name).to_pylist() for name in names - {"eventTime", "value"}}
        if "value" in names:
            columns["value"] = python_values(batch.column("value"))
        absent: list[Any] = [None] * batch.num_rows  # a column the batch does not have
        if "eventTime" in names:
            columns["eventTime"] = event_millis(batch.column("eventTime")).to_pylist()
        topics, keys, events = (columns.get(name, absent) for name in ("topic", "key", "eventTime"))
        given_properties = columns.get("properties", absent)
        full_names: dict[str | None, str] = {}  # a batch names a few topics, if any
        for i in range(batch.num_rows):
            named = topics[i] or None
            topic = full_names.get(named)
            if topic is None:
                topic = full_names[named] = full_topic_name(named or self._default_topic())
            properties = dict(given_properties[i] or [])
            key = keys[i]
            kwargs = _send_options(key, events[i])
            if self.producer_name is not None:
                kwargs["sequence_id"] = ((self.sequence_base or 0) << 32) + self.row
            self.row += 1
            # an empty key is no key (pulsar-client's Python API sets none): routed as keyless
            producer = self.producer(topic, raw, key is None or key == "")
            if raw:
                if self.options.register_forwarded:
                    self._forwarding().forward(topic, properties.get(SCHEMA_ID_PROPERTY))
                producer.send_async(columns["data"][i], self._sent, properties=properties, **kwargs)
                self.submitted += 1
                self._check()
                continue
            try:
                value = held(columns["value"][i], topic, self._schema(topic))
                convert = self.converters.get(topic)
                producer.send_async(
                    convert(value) if convert else value, self._sent, properties=properties, **kwargs
                )
                self.submitted += 1
            except DeadLetteredError:
                self.dead_lettered += 1
            except ExternalSchemaError as error:
                self._not_written(error, topic, key, self.row - 1)
                continue
            self._check()

    def _not_written(self, error: ExternalSchemaError, topic: str, key: Any, row: int) -> None:
        """Row `row` (of the task) its schema or a WRITE rule refused: reported, or the write's
        failure."""
        if self.refused is not None:
            self.refused(row, key, error)
            return
        raise EncodeError(
            f"a row of task {self.task} (row {row} of the task, key {key!r}) could not be "
            f"written to {topic}: {error}"
        ) from None

    def _encoded_natively(self, batch: pa.RecordBatch) -> bool:
        """`value` rows to the task's topic, encoded as a producer encodes them and sent by the
        native sender with each row's sequence id, as `data` rows go: True; False where the rows
        go to pulsar-client instead (the option `writer`, no extension, a key or event time of
        another type than it takes). Where the topic's plan has a columnar form (Avro, with WRITE
        rules that are conditions in the everyday CEL subset, or none; Protobuf without WRITE
        rules), the extension writes the bodies
        from the column (`_columnar_bodies`); every other row is encoded as
        `producer.encode_message` encodes it (the schema, its WRITE rules and their DLQ action)."""
        from ..producer import id_properties

        topic = full_topic_name(self._default_topic())
        names = batch.schema.names
        shape = pa.schema([pa.field("data", pa.binary())])
        if "key" in names:  # sent as the Python path sends it, str(key): strings and integers
            key_type = batch.schema.field("key").type
            stringly = pa.types.is_string(key_type) or pa.types.is_large_string(key_type)
            shape = shape.append(
                pa.field("key", pa.string() if stringly or pa.types.is_integer(key_type) else key_type)
            )
        if "eventTime" in names:
            shape = shape.append(batch.schema.field("eventTime"))
        producer = self._native_producer(topic, shape)
        if producer is None:
            return False
        schema = self._schema(topic)
        columnar = schema.columnar_writer(topic)
        if columnar is None and batch.num_rows > 1 and topic not in self.learnt:
            # a plan is learnt from its topic's first value: that one first, then the rest
            self.learnt.add(topic)
            rest = compact(batch.slice(1))
            return self._encoded_natively(batch.slice(0, 1)) and self._encoded_natively(rest)
        count, first_row = batch.num_rows, self.row
        self.row += count
        bodies = None if columnar is None else self._columnar_bodies(topic, columnar, batch.column("value"))
        # the rows the extension did not write, each encoded as a producer encodes it
        one_by_one = (
            list(range(count)) if bodies is None else pc.indices_nonzero(pc.is_null(bodies)).to_pylist()
        )
        given = batch.column("properties").to_pylist() if "properties" in names else None
        encoded, sent = self._one_by_one(topic, batch, one_by_one, bodies is None, given, first_row)
        if bodies is None:
            data = pa.array(encoded, pa.binary())
        else:
            data = pc.coalesce(bodies, pa.array(encoded, pa.binary())) if sent else bodies
        kept = pc.is_valid(data)
        rows = pc.indices_nonzero(kept)
        if not len(rows):
            return True
        data = data.filter(kept)
        ids = id_properties(schema, None if columnar is None or columnar.prefix else columnar.schema_id)
        properties = _properties(rows, given, sent, ids)
        columns: dict[str, pa.Array] = {"data": data, "properties": properties}
        if "key" in names:
            columns["key"] = batch.column("key").take(rows).cast(pa.string())
        if "eventTime" in names:
            columns["event_time"] = event_millis(batch.column("eventTime").take(rows))
        if self.producer_name is not None:  # each row's own id, as the Python path sends it
            first = ((self.sequence_base or 0) << 32) + first_row
            columns["sequence_id"] = pc.add(rows.cast(pa.int64()), first)
        self._natively(topic, lambda: producer.send(pa.RecordBatch.from_pydict(columns), None))
        self.submitted += len(rows)
        return True

    def _one_by_one(
        self,
        topic: str,
        batch: pa.RecordBatch,
        rows: list[int],
        every: bool,
        given: list[Any] | None,
        first_row: int,
    ) -> tuple[list[bytes | None], dict[int, dict[str, str]]]:
        """The payloads (None: not sent) and properties of `rows` of the batch (`every`: all of
        them), each encoded as `producer.encode_message` encodes it (the schema, its WRITE rules and
        their DLQ action); a row they refuse is reported (`_not_written`)."""
        from ..producer import encode_message

        schema, convert = self._schema(topic), self.converters.get(topic)
        encoded: list[bytes | None] = [None] * batch.num_rows
        sent: dict[int, dict[str, str]] = {}
        if not rows:
            return encoded, sent
        picked = pa.array(rows, pa.int64())

        def column(name: str) -> pa.Array:
            return batch.column(name) if every else batch.column(name).take(picked)

        names = batch.schema.names
        values = python_values(column("value"))
        keys = column("key").to_pylist() if "key" in names else None
        events = event_millis(column("eventTime")).to_pylist() if "eventTime" in names else None
        for n, i in enumerate(rows):
            key = keys[n] if keys is not None else None
            try:
                value = held(values[n], topic, schema)
                encoded[i], sent[i] = encode_message(
                    schema,
                    topic,
                    convert(value) if convert else value,
                    dict(given[i] or []) if given is not None else None,
                    **_send_options(key, events[n] if events is not None else None),
                )
            except DeadLetteredError:
                self.dead_lettered += 1
            except ExternalSchemaError as error:
                self._not_written(error, topic, key, first_row + i)
        return encoded, sent

    def _columnar_bodies(self, topic: str, columnar: ColumnarWrite, column: pa.Array) -> pa.Array | None:
        """The bodies of a `value` column as the topic's plan writes them, by the extension
        (`AvroEncoder`, `native/src/encode.rs`; `ProtobufEncoder`), null for each row it leaves to the
        plan: one it is not sure of, or one a WRITE condition does not pass for sure (judged over
        the column, `tasks/conditions.py`; a replayed DLQ copy, whose `__rule.name` skips that
        rule, passes the others alike). None where the column's type does not pair with the
        writer schema, or a condition is never judged over it (the log says why, once)."""
        key = (topic, columnar, column.type)
        if key not in self.columnar:
            self.columnar[key] = columnar_encoder(topic, columnar, column.type)
        found = self.columnar[key]
        if found is None:
            return None
        encoder, judge = found
        module = _native.extension()
        assert module is not None
        try:
            bodies = encoder.encode(column)
        except (module.NativeError, pa.ArrowException) as error:  # as imported (bad UTF-8, ...)
            log.warning("pulsar-external: values to %s are encoded one by one: %s", topic, error)
            return None
        if judge is not None:
            bodies = pc.if_else(passing(judge(column)), bodies, pa.scalar(None, pa.binary()))
        return bodies

    def _native_producer(self, topic: str, schema: pa.Schema) -> Any:
        """The native producer of `topic`'s `data` rows, made on the task's first batch; None where
        pulsar-client sends them (the option `writer`; with `auto`, the log says why)."""
        if topic not in self.native:
            reason = why_not_native(self.options.writer, schema)
            if reason is None:
                # as `producer` does for pulsar-client's: declared EXTERNAL first, with pulsar.admin.url
                declare_external(ExternalSchemaConfig.from_dict(self.options.config), topic)
                self.native[topic] = NativeTopic(
                    native_client(self.options, _native.extension()),
                    self._partition_topics(topic),
                    self.producer_name,
                    self.task,
                )
            elif self.options.writer == "native":
                raise ConfigError(f"option writer=native: {reason}; use writer=auto or writer=python")
            else:
                self.native[topic] = None
                if self.options.writer == "auto":
                    log.info("pulsar-external: rows to %s are sent by pulsar-client: %s", topic, reason)
        return self.native[topic]

    def _send_natively(self, producer: Any, topic: str, batch: pa.RecordBatch) -> None:
        """The batch's rows in one call (`native/src/send.rs`): the rows' writer versions registered
        first, as `write` does row by row."""
        names = batch.schema.names
        # the types the extension reads (a cast to the same type copies nothing)
        columns: dict[str, pa.Array] = {"data": batch.column("data").cast(pa.binary())}
        if "key" in names:
            columns["key"] = batch.column("key").cast(pa.string())
        if "properties" in names:
            properties = columns["properties"] = batch.column("properties").cast(
                pa.map_(pa.string(), pa.string())
            )
            if self.options.register_forwarded:
                # a key given twice: its last value, as `dict` keeps it on the row-by-row path
                for schema_id in pc.unique(pc.map_lookup(properties, SCHEMA_ID_PROPERTY, "last")).to_pylist():
                    self._forwarding().forward(topic, schema_id)
        if "eventTime" in names:
            columns["event_time"] = event_millis(batch.column("eventTime"))
        first = ((self.sequence_base or 0) << 32) + self.row if self.producer_name is not None else None
        self.row += batch.num_rows
        self._natively(topic, lambda: producer.send(pa.RecordBatch.from_pydict(columns), first))
        self.submitted += batch.num_rows

    def _natively(self, topic: str, call: Callable[[], Any]) -> Any:
        """A call of the native extension for `topic`, its NativeError raised as an
        ExternalSchemaError that names the topic and the producer."""
        module = _native.extension()
        assert module is not None  # `why_not_native` checked
        try:
            return call()
        except module.NativeError as error:
            who = self._as_producer()
            raise ExternalSchemaError(f"messages to {topic} could not be sent{who}: {error}") from None

    def _as_producer(self) -> str:
        return f" as producer {self.producer_name}" if self.producer_name else ""

    def _partitioned(self, topic: str) -> bool:
        return len(self._partition_topics(topic)) > 1

    def _partition_topics(self, topic: str) -> list[str]:
        """The topic's partitions in order (`[topic]` for a topic without partitions)."""
        if topic not in self.partitions:
            self.partitions[topic] = self.client.get_topic_partitions(topic)
        return self.partitions[topic]

    def _keyless_route(self, message: Any, partitions: int) -> int:
        """Where a deduplicated task's keyless rows go: one partition a task, the same in every run.
        pulsar-client's round robin starts at a random partition, so a task run again would send
        them where the broker has not seen their sequence ids, and they would be written twice."""
        return keyless_partition(self.task, partitions)

    def _forwarding(self) -> ForwardedSchemas:
        """Where the writer versions of forwarded `data` rows are registered under their topic's
        subject, before the first row with each goes out (`topic_schemas.ForwardedSchemas`): the
        worker's, kept from task to task (`executor.forwarded_schemas`)."""
        return forwarded_schemas(self.options, self.source_topic)

    def _default_topic(self) -> str:
        if not self.options.topics:
            raise ConfigError("set the option 'topic', or give the rows a 'topic' column")
        return self.options.topics[0]

    def _check(self) -> None:
        """Raise if a send failed. Each send's callback is `results.__setitem__` (`_sent`): a
        builtin, called on a Pulsar client thread without a Python frame. A Python function there
        cost more than the send itself (the GIL passed to and fro: docs/spark.md), most of a
        forwarding task's time."""
        failures = self.results.keys() - {self._ok}
        if failures:
            failure = str(next(iter(failures)))
            topics = ", ".join(sorted({topic for topic, *_ in self.producers}))
            raise ExternalSchemaError(
                f"a message to {topics} could not be sent{self._as_producer()}: {failure}"
            )

    def finish(self) -> Written:
        """Everything sent and persisted, the producers closed: what was written."""
        try:
            for producer in self.producers.values():
                producer.flush()
            self._check()  # every send has its result once flush returns
            for topic, native in self.native.items():
                if native is not None:
                    self._natively(topic, native.flush)
            return Written(self.submitted, self.dead_lettered)
        finally:
            self.close()

    def close(self) -> None:
        for native in self.native.values():
            if native is not None:
                native.close()
        for producer in self.producers.values():
            try:
                producer.close()
            except Exception as error:
                log.warning("could not close a producer: %s", error)
        for owned in self.schemas:
            owned.close()
        # The client is the worker's (`executor.py`): its next task sends through it too.


def _properties(
    rows: pa.Array, given: list[Any] | None, sent: dict[int, dict[str, str]], ids: dict[str, str]
) -> pa.MapArray:
    """The properties of the rows sent (`rows`, their indexes in the batch): a row `encode_message`
    encoded, those it gave (`sent`); any other, its own (`given`, the batch's `properties`
    column, if any) and the schema id's (`ids`), as `encode_message` adds them. Each row's
    sorted, as pulsar-client's std::map holds them."""
    if given is None and not sent:  # every row's are the schema id's: one map, repeated
        each = sorted(ids)
        one = pa.MapArray.from_arrays(
            pa.array([0, len(each)], pa.int32()),
            pa.array(each, pa.string()),
            pa.array([ids[name] for name in each], pa.string()),
        )
        return one.take(pa.repeat(pa.scalar(0, pa.int32()), len(rows)))
    names: list[str] = []
    values: list[str] = []
    offsets = [0]
    for i in rows.to_pylist():
        own = dict(given[i] or []) if given is not None else {}
        merged = sent.get(i) or {**own, **ids}
        for name, text in sorted(merged.items()):
            names.append(name)
            values.append(text)
        offsets.append(len(names))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(names, pa.string()), pa.array(values, pa.string())
    )


def compact(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A slice of a batch as a batch of its own. A slice's nested columns (a struct's fields, a
    map's entries) reach the extension whole, as Arrow slices only the parent, and importing them
    costs what they hold, where the copy costs next to nothing."""
    return pa.RecordBatch.from_arrays([pa.concat_arrays([c]) for c in batch.columns], schema=batch.schema)


def event_millis(column: pa.Array) -> pa.Array:
    """An `eventTime` column (timestamps) as Pulsar's event times: whole milliseconds since the
    epoch, in Arrow's integers, for both producers (the native one takes the column as it is)."""
    micros = column.cast(pa.timestamp("us", tz="UTC"), safe=False).cast(pa.int64())
    return pc.divide(micros, 1000)


def _send_options(key: Any, event: int | None) -> dict[str, Any]:
    """A row's `partition_key` and `event_timestamp`, as pulsar-client's `send_async` takes them
    (a key as `str(key)`: strings and integers), for its producer or for `encode_message`."""
    options: dict[str, Any] = {}
    if key is not None:
        options["partition_key"] = str(key)
    if event is not None:
        options["event_timestamp"] = event
    return options
