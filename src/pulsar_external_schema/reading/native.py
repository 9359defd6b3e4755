"""The native reader: a range read by the optional Rust extension, finished here.

`pip install 'pulsar-external-schema[native]'` (or `scripts/bootstrap` where `cargo` is) adds the
extension `_pulsar_external_schema_native` (`native/` in the repository). It receives a range of
one partition over Pulsar's binary protocol and decodes Avro bodies with arrow-avro, and JSON
Schema bodies checked against their schema, straight into the `value` column (`native/src/range_reader.rs`),
an order of magnitude cheaper a row than the Python path (docs/spark.md measures both). It knows
nothing of registries or rules: for each writer schema id it asks this module (`Finisher.writer`,
from the plan `ExternalSchema.columnar` gives: `codec.plans.Columnar`), and it leaves to the Python
path every row it does not decode (an unknown or foreign id, a malformed body, a dead-letter copy,
a schema whose rules are outside the everyday CEL subset...). Those rows, and the rows a READ
condition does not pass, go through `rows.Rows` as on the Python path, message by message, so
their values, verdicts and `_failure` properties are that path's own.

The option `reader` chooses: `auto` (the default) reads natively where it can and says once, in
the log, why not where it cannot; `native` refuses a query it cannot read natively; `python`
never uses the extension. A range the extension stops reading part-way (a chunked or
Pulsar-encrypted message) is read on by the Python path from where it stopped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import _native
from ..codec import Columnar
from ..codec.avro import standalone
from ..errors import ConfigError, ExternalSchemaError, RuleViolationError
from ..subjects import partition_of
from ..tasks.columns import read_schema
from ..tasks.conditions import Evaluation, Kind, avro_kinds, compile_conditions, json_kinds, passing
from ..tasks.executor import RareCollections, decoding_schema, native_client
from ..tasks.offsets import Bound
from ..tasks.options import PATHS, SourceOptions
from ..tasks.schemas import ReaderSchema, protobuf_class
from .decoders import arrow_value_type, avro_parsed, json_references
from .planning import TopicPartitionRange
from .rows import Rows
from .rows import read_partition as read_partition_in_python
from .types import json_typed

__all__ = ["READERS", "choose", "read_partition"]

log = logging.getLogger(__name__)

#: The values of the option `reader` (and of the sink's `writer`).
READERS = PATHS

_VERDICTS = ("_valid", "_error", "_rule", "_failure")


def choose(options: SourceOptions, reader: ReaderSchema, value_type: pa.DataType) -> bool:
    """On the driver, once a query: whether it reads natively. `reader=auto` says in the log why
    not, where it cannot; `reader=native` raises ConfigError instead."""
    if options.reader == "python":
        return False
    reason = why_not(options, reader, value_type)
    if reason is None:
        return True
    if options.reader == "native":
        raise ConfigError(f"option reader=native: {reason}; use reader=auto or reader=python")
    log.info("pulsar-external: subject %s is read on the Python path: %s", reader.subject, reason)
    return False


def why_not(options: SourceOptions, reader: ReaderSchema, value_type: pa.DataType) -> str | None:
    """Why a query cannot read natively (None: it can)."""
    module = _native.extension()
    if module is None:
        return _native.why_absent()
    if reader.schema_type == "JSON":
        if not json_typed(reader.schema_str, json_references(reader)):
            return "a part of the JSON Schema has no typed column (it reads as JSON text)"
        return None
    if reader.schema_type == "PROTOBUF":
        return None  # a writer whose message the extension cannot read into the column: `writer`
    if reader.schema_type != "AVRO":
        kind = reader.schema_type
        return f"the native reader reads Avro, JSON Schema and Protobuf; the subject holds {kind} schemas"
    text = reader_json(reader)
    if text is None:
        return (
            "the schema has named types in the null namespace beside namespaced ones, which one "
            "Avro text cannot name apart"
        )
    problem = module.check_reader(text, value_type)
    if problem is not None:
        return f"a type of the schema has no native reading into its Spark column ({problem})"
    return None


def reader_json(reader: ReaderSchema) -> str | None:
    """The query's reader schema as the extension takes it, one Avro text with the references'
    named types in it, written as the executors' plans write theirs (`Columnar.reader`), so the
    two compare equal where a plan reads into the query's version."""
    return standalone(avro_parsed(reader))


def read_partition(
    options: SourceOptions,
    reader_schema: ReaderSchema,
    value_type: pa.DataType,
    partition: TopicPartitionRange,
) -> Iterator[pa.RecordBatch]:
    """The batches of one range, in the declared schema (as `rows.read_partition` gives them)."""
    module = _native.extension()
    if module is None:  # the driver found it; a worker without it reads as the Python path does
        yield from read_partition_in_python(options, reader_schema, value_type, partition)
        return
    finisher = Finisher(options, reader_schema, value_type, partition)
    start, end = partition.start, partition.end
    reader = None
    collections = RareCollections()
    try:
        reader = native_client(options, module).read(
            partition.partition_topic,
            None if start.is_earliest else (start.ledger, start.entry, start.batch, start.inclusive),
            (end.ledger, end.entry, end.batch, end.inclusive),
            finisher.arrow_schema,
            finisher.reader_json or "",
            finisher.writer,
            rows_per_batch=options.batch_size,
            read_timeout_ms=options.read_timeout_ms,
        )
        for batch in reader:
            yield finisher.finish(batch)
        handover = reader.handover
    except module.NativeError as error:
        raise ExternalSchemaError(f"partition {partition.partition_topic}: {error}") from None
    finally:
        collections.close()
        if reader is not None:
            reader.close()
    if handover is not None:
        last, reason = handover
        log.info(
            "partition %s: the native reader stopped after %s at %s; the Python path reads on",
            partition.partition_topic,
            f"message {last}" if last else "no message",
            reason,
        )
        after = Bound(last[0], last[1], last[2], True) if last else start
        rest = TopicPartitionRange(partition.partition_topic, after, end)
        yield from read_partition_in_python(options, reader_schema, value_type, rest)


class Finisher:
    """Turns the extension's batches into the declared ones: the constant and verdict columns
    added, and the rows it left (`_native` false) or a condition did not pass decoded on the
    Python path."""

    def __init__(
        self,
        options: SourceOptions,
        reader_schema: ReaderSchema,
        value_type: pa.DataType,
        partition: TopicPartitionRange,
    ) -> None:
        self.options = options
        self.reader_schema = reader_schema
        self.reader_json = reader_json(reader_schema) if reader_schema.schema_type == "AVRO" else None
        self.message = (
            protobuf_class(options, reader_schema).DESCRIPTOR.full_name
            if reader_schema.schema_type == "PROTOBUF"
            else None
        )
        self.partition_topic = partition.partition_topic
        self.topic, self.index = partition_of(partition.partition_topic)
        self.arrow_schema = read_schema(value_type, options.include_data)
        self.value_arrow = self.arrow_schema.field("value").type
        self.converter = arrow_value_type(reader_schema, options)[1]
        self.external = decoding_schema(options, reader_schema)
        self.plans: dict[int, Columnar | None] = {}
        """Writer schema id -> how the extension decodes it (None: the Python path does)."""
        self._evaluations: dict[tuple[tuple[str, ...], int | None], Evaluation | None] = {}
        self._outcomes: dict[Any, ExternalSchemaError | None] = {}
        """A judged row's key (`_outcome_key`) -> the failure the Python path gave such a row, or
        None: such rows are decoded row by row."""
        self._kinds: Kind = None

    def writer(self, schema_id: int) -> tuple[str, str, list[tuple[str, str]], str, int] | None:
        """Asked by the extension the first time a range meets a writer schema id: (its format,
        its schema, the schema's references and base URI, the longest payload it may decode
        unchecked), or None. A registry that cannot be reached raises; the extension then leaves
        the rows to the Python path, which fails the task."""
        columnar = self.external.columnar(self.partition_topic, schema_id)
        if columnar is not None and columnar.format == "AVRO" and columnar.reader != self.reader_json:
            columnar = None  # read into another version than the query's: the Python path says how
        if (
            columnar is not None
            and columnar.format == "PROTOBUF"
            and (columnar.reader != self.message or columnar.conditions)
        ):
            columnar = None  # another message than the query's; READ conditions: judged there
        self.plans[schema_id] = columnar
        if columnar is None:
            return None
        return (
            columnar.format,
            columnar.writer,
            list(columnar.references),
            columnar.base_uri,
            columnar.longest,
        )

    def finish(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        pending = pc.invert(batch.column("_native"))
        judged: list[_Judged] = []
        if any(plan is not None and plan.conditions for plan in self.plans.values()):
            judged = self._judged(batch)
            for rows, verdicts in judged:
                pending = pc.or_(pending, pc.and_(rows, pc.invert(passing(verdicts))))
        columns = {name: batch.column(name) for name in batch.schema.names}
        columns["topic"] = pa.repeat(pa.scalar(self.topic, pa.string()), n)
        columns["partition"] = pa.repeat(pa.scalar(self.index, pa.int32()), n)
        columns["_valid"] = pa.repeat(pa.scalar(True), n)
        for name in _VERDICTS[1:]:
            columns[name] = pa.nulls(n, self.arrow_schema.field(name).type)
        finished = pa.RecordBatch.from_arrays(
            [columns[name] for name in self.arrow_schema.names], schema=self.arrow_schema
        )
        if not pc.any(pending).as_py():
            return finished
        return self._with_python_rows(batch, finished, pending, judged)

    def _judged(self, batch: pa.RecordBatch) -> list[_Judged]:
        """For each set of READ conditions the batch's writers have: its rows (the extension
        decoded them with such a writer), and each condition's verdict over the batch
        (`conditions.py`); a condition outside the subset judges no row."""
        groups: dict[tuple[tuple[str, ...], int | None], list[int]] = {}
        for schema_id, plan in self.plans.items():
            if plan is not None and plan.conditions:
                # a JSON Schema writer's values are judged under its own schema's required keys
                own = schema_id if plan.format == "JSON" else None
                groups.setdefault((plan.conditions, own), []).append(schema_id)
        ids, values, decoded = batch.column("schemaId"), batch.column("value"), batch.column("_native")
        judged = []
        for (texts, own), schema_ids in groups.items():
            writers = pc.fill_null(pc.is_in(ids, value_set=pa.array(schema_ids, pa.int32())), False)
            rows = pc.and_(writers, decoded)
            evaluate = self._evaluation(texts, own)
            verdicts = evaluate(values) if evaluate is not None else [pa.nulls(batch.num_rows, pa.bool_())]
            judged.append((rows, verdicts))
        return judged

    def _evaluation(self, texts: tuple[str, ...], own: int | None) -> Evaluation | None:
        """The conditions over the Avro reader schema's values (`own` None), or over the values
        of JSON Schema writer `own`."""
        if (texts, own) not in self._evaluations:
            plan = self.plans.get(own) if own is not None else None
            if plan is not None:
                kinds = json_kinds(self.value_arrow, _required(plan.writer))
                evaluation = compile_conditions(texts, kinds, open_record=True)
            else:
                if self._kinds is None:
                    self._kinds = avro_kinds(avro_parsed(self.reader_schema))
                evaluation = compile_conditions(texts, self._kinds)
            self._evaluations[(texts, own)] = evaluation
        return self._evaluations[(texts, own)]

    def _with_python_rows(
        self, batch: pa.RecordBatch, finished: pa.RecordBatch, pending: pa.Array, judged: list[_Judged]
    ) -> pa.RecordBatch:
        """`finished` with its `pending` rows as the Python path makes them.

        A row whose conditions were all judged (each True or False) takes the outcome the Python
        path gave the first such row of the same writer, schema id properties and verdicts, when
        that was a rule's failure: the rule engine runs the same rules to the same results, and
        its error names the rule, mode, topic, subject and schema id, never the value. That
        spares each failing row the engine's work (a rule context, the action, the error's
        redaction walk), the largest cost of a dead-lettered row (docs/spark.md has the figures)."""
        indices = pc.indices_nonzero(pending)
        taken = batch.take(indices)
        rows = Rows(self.options.include_data, self.reader_schema, self.topic, self.index)
        external, trust = self.external, self.options.trust_rule_properties

        def decode(msg: Any, properties: dict[str, str]) -> Any:
            return external.decode_message(msg, trust_rule_properties=trust, properties=properties)

        outcomes = _outcomes(judged, indices)
        schema_ids = taken.column("schemaId").to_pylist()
        ids = taken.column("messageId")
        ledgers = ids.field("ledgerId").to_pylist()
        entries = ids.field("entryId").to_pylist()
        batches = ids.field("batchIndex").to_pylist()
        for i, message in enumerate(_messages(taken, self.partition_topic, self.index)):
            key = _outcome_key(schema_ids[i], message.properties(), outcomes[i])
            how = decode
            if key is not None and key not in self._outcomes:
                how = self._learning(key, decode)
            elif key is not None and (known := self._outcomes[key]) is not None:
                how = _raising(known)
            rows.add(message, (ledgers[i], entries[i]), batches[i], how)
        python = rows.batch(self.arrow_schema, self.value_arrow, self.converter)
        n = batch.num_rows
        order = pa.array(range(n), pa.int64()).to_numpy().copy()
        order[indices.to_numpy()] = n + pa.array(range(len(indices)), pa.int64()).to_numpy()
        return pa.concat_batches([finished, python]).take(pa.array(order))

    def _learning(self, key: Any, decode: Callable[[Any, dict[str, str]], Any]) -> Callable[..., Any]:
        """`decode`, keeping the outcome of the row for the rows judged alike: its rule's failure,
        or None (they are decoded row by row: the value passed, or failed otherwise)."""

        def learning(msg: Any, properties: dict[str, str]) -> Any:
            try:
                value = decode(msg, properties)
            except RuleViolationError as failure:
                self._outcomes[key] = failure
                raise
            except ExternalSchemaError:
                self._outcomes[key] = None
                raise
            self._outcomes[key] = None
            return value

        return learning


_Judged = tuple[pa.Array, list[pa.Array]]
"""The rows of a set of conditions, and each condition's verdict over the batch."""


def _required(schema: str) -> frozenset[str]:
    """The keys a JSON Schema's top level requires of an object (none where a `$ref` beside it may
    make draft 7 ignore them, or where the text says otherwise)."""
    try:
        parsed = json.loads(schema)
    except ValueError:
        return frozenset()
    if not isinstance(parsed, dict) or "$ref" in parsed or not isinstance(parsed.get("required"), list):
        return frozenset()
    return frozenset(name for name in parsed["required"] if isinstance(name, str))


def _outcomes(judged: list[_Judged], indices: pa.Array) -> list[tuple[bool, ...] | None]:
    """Of each row at `indices`: its conditions' verdicts, where every one is True or False."""
    outcomes: list[tuple[bool, ...] | None] = [None] * len(indices)
    for rows, verdicts in judged:
        member = rows.take(indices).to_pylist()
        columns = [verdict.take(indices).to_pylist() for verdict in verdicts]
        for i, inside in enumerate(member):
            if inside:
                outcome = tuple(column[i] for column in columns)
                if None not in outcome:
                    outcomes[i] = outcome
    return outcomes


def _outcome_key(schema_id: int | None, properties: dict[str, str], outcome: tuple[bool, ...] | None) -> Any:
    """What the Python path's outcome of a judged row depends on: its writer, the properties it
    reads (the schema id's forms; a DLQ copy's `__rule.*`, which name another topic and a rule
    to skip), and the verdicts. None: the row is not judged."""
    if outcome is None:
        return None
    return schema_id, tuple(sorted(item for item in properties.items() if item[0].startswith("__"))), outcome


def _raising(failure: ExternalSchemaError) -> Callable[..., Any]:
    def decode(msg: Any, properties: dict[str, str]) -> Any:
        raise failure.with_traceback(None)

    return decode


class _Message:
    """A message the extension received, answering as pulsar-client's `Message` does for what
    the Python path asks of one (`Rows.add`, `ExternalSchema.decode_message`)."""

    __slots__ = ("_data", "_event", "_id", "_key", "_ordering", "_properties", "_publish", "_topic")

    def __init__(
        self,
        topic: str,
        message_id: Any,
        key: str | None,
        properties: dict[str, str],
        data: bytes,
        publish_ms: int,
        event_ms: int,
        ordering_key: bytes | None,
    ) -> None:
        self._topic = topic
        self._id = message_id
        self._key = key
        self._properties = properties
        self._data = data
        self._publish = publish_ms
        self._event = event_ms
        self._ordering = ordering_key

    def topic_name(self) -> str:
        return self._topic

    def message_id(self) -> Any:
        return self._id

    def partition_key(self) -> str:
        return self._key or ""

    def ordering_key(self) -> str:
        return self._ordering.decode("utf-8", "replace") if self._ordering else ""

    def properties(self) -> dict[str, str]:
        return self._properties

    def data(self) -> bytes:
        return self._data

    def publish_timestamp(self) -> int:
        return self._publish

    def event_timestamp(self) -> int:
        return self._event


def _messages(taken: pa.RecordBatch, partition_topic: str, index: int) -> Iterator[_Message]:
    import pulsar  # imported on the executor

    ids = taken.column("messageId")
    ledgers, entries, batches = (ids.field(f).to_pylist() for f in ("ledgerId", "entryId", "batchIndex"))
    publish = taken.column("publishTime").cast(pa.int64()).to_pylist()
    event = taken.column("eventTime").cast(pa.int64()).to_pylist()
    for i, (key, properties, data, ordering) in enumerate(
        zip(
            taken.column("key").to_pylist(),
            taken.column("properties").to_pylist(),
            taken.column("data").to_pylist(),
            taken.column("_orderingKey").to_pylist(),
            strict=True,
        )
    ):
        yield _Message(
            partition_topic,
            pulsar.MessageId(index, ledgers[i], entries[i], batches[i]),
            key,
            dict(properties),
            data,
            publish[i] // 1000,
            event[i] // 1000 if event[i] is not None else 0,
            ordering,
        )
