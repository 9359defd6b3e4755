"""Pulsar topics as Arrow tables, in plain Python: no Spark needed (`pip install
'pulsar-external-schema[arrow]'`). See docs/tables.md.

    from pulsar_external_schema.arrow import read_table

    orders = read_table(
        "persistent://public/default/orders",
        service_url="pulsar://127.0.0.1:6650",
        admin_url="http://127.0.0.1:8080",
        config={"schema.registry.url": "http://127.0.0.1:8081"},
    )
    polars.from_arrow(orders); orders.to_pandas(); duckdb.sql("select count(*) from orders")

A read is bounded: what the topics hold between `start` (or `start_time`) and `end` (or
`end_time`, by default what was written when the read began). It gives the columns the Spark
source gives (`key`, `value`, `topic`, `partition`, `messageId`, `publishTime`, `eventTime`,
`properties`, `schemaId`, and the verdict `_valid`, `_error`, `_rule`, `_failure`), with the
value column's Arrow type mapped from the registry's reader schema, and the data contract's READ
rules run as a consumer runs them (a message a rule fails is a row with `_valid` false). Avro,
and JSON Schema whose schema types every column, are read by the native extension where it is
installed; everything else, and every topic without it, on the Python path, with the same columns
and values (`reader=`).

It is the Spark source's reader (`reading/`), one partition range after the other in this
process: `read_batches` streams them, holding one batch at a time. `write_table` is the Spark
sink's writer (`writing/`): Arrow rows to messages, each value encoded with its schema and WRITE
rules, or forwarded untouched.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .config import CLIENT_PREFIX
from .connections import URL_FIELDS, ClientConf, Layer, layered
from .errors import ConfigError
from .reading import native, rows
from .reading.decoders import query_value
from .reading.planning import Planner, TopicPartitionRange, earlier, entries_between
from .tasks.columns import read_schema
from .tasks.offsets import Bound
from .tasks.options import PATHS, ROWS_PER_BATCH, SOURCE_OPTIONS, SourceOptions
from .tasks.topic_metadata import Ledger, PulsarAdmin, full_topic_name
from .writing.rows import Refused, TaskWriter, Written
from .writing.shape import RowShape

if TYPE_CHECKING:
    from .schema import ExternalSchema

__all__ = ["ReadProgress", "Refused", "Written", "read_batches", "read_table", "write_table"]

#: A start or an end: `earliest` / `latest`, or per partition topic a message id
#: (`{"ledgerId": L, "entryId": E, "batchIndex": B}`, as the `messageId` column gives it) or
#: `earliest` / `latest`.
Position = str | Mapping[str, Any]
#: A publish time: a datetime (a naive one is local time, as `datetime.timestamp` takes it) or
#: milliseconds since the epoch.
Time = _dt.datetime | int


def read_batches(
    topics: str | Sequence[str],
    *,
    service_url: str | None = None,
    admin_url: str | None = None,
    config: Mapping[str, Any] | None = None,
    start: Position = "earliest",
    end: Position = "latest",
    start_time: Time | None = None,
    end_time: Time | None = None,
    batch_size: int = ROWS_PER_BATCH,
    reader: str = "auto",
    include_data: bool = False,
    fail_on_data_loss: bool = True,
    read_timeout_ms: int = 30_000,
    protobuf_message_class: str | None = None,
    client_conf: str | os.PathLike[str] | ClientConf | None = None,
    progress: Callable[[ReadProgress], None] | None = None,
    **client: Any,
) -> pa.RecordBatchReader:
    """The messages of `topics` (a topic name or a list; partitioned topics too) from `start` up
    to `end`, as Arrow record batches of at most `batch_size` rows, read as they are consumed.

    `service_url` / `admin_url`: the broker and its admin REST API (or `brokerServiceUrl` /
    `webServiceUrl` of the client configuration). `config`: the package's configuration
    (`schema.registry.url` and the rest, as `SchemaRegistrySchemaFactory` takes it).
    `start`: `earliest`, or a message id per partition topic, the first message read; `end`:
    `latest` (what was written when the read began), or a message id per partition topic, the
    first message not read. `start_time` / `end_time` instead: the first message published at or
    after that time, read / not read (the broker's admin API finds them).
    `reader`: `auto` (the native reader where it can read the subject), `native`, `python`.
    `include_data`: a binary `data` column with each message's payload. `protobuf_message_class`:
    the generated class of a Protobuf subject (`pkg.module_pb2.Message`). `progress`: called
    with a `ReadProgress` after each batch (rows so far, entries read of the read's entries, and
    an estimate of the rows left), for a progress bar.
    TLS and credentials: `client_conf`, a Pulsar `client.conf` (its path, or a `ClientConf`), and
    its keys as keyword arguments over it (`tlsTrustCertsFilePath=...`, `authPlugin=...`,
    `authParams=...`), as the console tools and the Spark source take them.

    Mistakes (an unknown key, a subject without a schema, a topic the broker does not have) are a
    `ConfigError`, `SubjectNotFoundError` or `PulsarAdminError` here, before anything is read. A
    message that cannot be decoded, or that a READ rule fails, is a row with `_valid` false that
    says why; a broker that stops answering mid-read is an `ExternalSchemaError` naming the
    partition, raised where the batches are read.
    """
    first, last = _end(start, start_time, "start"), _end(end, end_time, "end")
    options = _options(
        topics,
        service_url,
        admin_url,
        config,
        batch_size,
        reader,
        include_data,
        fail_on_data_loss,
        read_timeout_ms,
        protobuf_message_class,
        client_conf,
        client,
    )
    if progress is not None and not callable(progress):
        raise ConfigError(f"progress takes a function of one ReadProgress, not {progress!r}")
    reader_schema, value_type = query_value(options)
    ranges, ledgers = _ranges(options, first, last, sized=progress is not None)
    # which reader, decided here: reader="native" where it cannot read is an error now, not at
    # the first batch
    read = native.read_partition if native.choose(options, reader_schema, value_type) else rows.read_partition

    def batches() -> Iterator[pa.RecordBatch]:
        extent = _Extent(ranges, ledgers) if progress is not None else None
        given = 0
        for index, piece in enumerate(ranges):
            for batch in read(options, reader_schema, value_type, piece):
                given += batch.num_rows
                if extent is not None and progress is not None and batch.num_rows:
                    progress(extent.after(index, batch, given))
                yield batch

    return pa.RecordBatchReader.from_batches(read_schema(value_type, options.include_data), batches())


def read_table(
    topics: str | Sequence[str],
    *,
    service_url: str | None = None,
    admin_url: str | None = None,
    config: Mapping[str, Any] | None = None,
    start: Position = "earliest",
    end: Position = "latest",
    start_time: Time | None = None,
    end_time: Time | None = None,
    batch_size: int = ROWS_PER_BATCH,
    reader: str = "auto",
    include_data: bool = False,
    fail_on_data_loss: bool = True,
    read_timeout_ms: int = 30_000,
    protobuf_message_class: str | None = None,
    client_conf: str | os.PathLike[str] | ClientConf | None = None,
    progress: Callable[[ReadProgress], None] | None = None,
    **client: Any,
) -> pa.Table:
    """What `read_batches` reads, as one table (every row in memory: for a bounded read that fits;
    `read_batches` streams)."""
    return read_batches(
        topics,
        service_url=service_url,
        admin_url=admin_url,
        config=config,
        start=start,
        end=end,
        start_time=start_time,
        end_time=end_time,
        batch_size=batch_size,
        reader=reader,
        include_data=include_data,
        fail_on_data_loss=fail_on_data_loss,
        read_timeout_ms=read_timeout_ms,
        protobuf_message_class=protobuf_message_class,
        client_conf=client_conf,
        progress=progress,
        **client,
    ).read_all()


def write_table(
    topic: str,
    data: pa.Table | pa.RecordBatch | pa.RecordBatchReader,
    *,
    service_url: str | None = None,
    schema: ExternalSchema | None = None,
    config: Mapping[str, Any] | None = None,
    producer_name: str | None = None,
    sequence_base: int | None = None,
    writer: str = "auto",
    client_conf: str | os.PathLike[str] | ClientConf | None = None,
    rows: str = "auto",
    key_column: str | None = None,
    properties_column: str | None = None,
    event_time_column: str | None = None,
    **client: Any,
) -> Written:
    """Each row of `data` (a Table, a RecordBatch or a RecordBatchReader) as a message to `topic`.

    A table of values (`rows="values"`; by default, a table with no `value` or `data` column, or
    with columns a message table does not have: `pa.Table.from_pylist(records)`), each row is a
    value, its columns the record's fields, encoded with `schema` (an `ExternalSchema` from
    `SchemaRegistrySchemaFactory`; without one, the subject's latest version as `config` finds it)
    and its WRITE rules, as a producer encodes a value. `key_column` and `event_time_column` name
    fields that are also the message's key and event time; `properties_column` a map<string,
    string> column (not a field) of its properties.

    A table of messages (`rows="messages"`; by default, a table whose columns are `read_table`'s)
    is written as the Spark sink writes a DataFrame: a `value` column encoded so, or a binary
    `data` column sent as it is, with its `properties` (which carry the schema id: messages read
    with `include_data=True` written elsewhere untouched), by the native sender where it can.
    Optional columns: `key`, `properties`, `eventTime`.

    A row its schema or a WRITE rule refuses is not sent, and is in the result's `refused` (its
    row number, key and error), or dead-lettered where the rule's action is DLQ. With
    `producer_name` (and a `sequence_base` that grows with each write, e.g. a run id) the rows are
    sent as that producer with sequence ids `(sequence_base << 32) + row`, in batches cut by count
    and size only: on a namespace with deduplication, a write run again after a failure sends
    nothing twice. Returns when every message is persisted."""
    if not isinstance(topic, str) or not topic.strip() or "," in topic:
        raise ConfigError(f"topic: give one topic name, not {topic!r}")
    if writer not in PATHS:
        raise ConfigError(f"writer takes {', '.join(PATHS)}, not {writer!r}")
    if producer_name is not None and (isinstance(sequence_base, bool) or not isinstance(sequence_base, int)):
        raise ConfigError(
            "producer_name needs sequence_base (a number that grows with each write, e.g. a run id): "
            "the broker drops sequence ids it has already seen"
        )
    if schema is not None and schema.schema_type not in ("AVRO", "JSON"):
        raise ConfigError(f"write_table encodes Avro and JSON Schema values, not {schema.schema_type}")
    batches = _batches_of(data)
    shape = RowShape.of(
        data.schema.names if isinstance(data, _TABULAR) else (),
        rows,
        key_column=key_column,
        properties_column=properties_column,
        event_time_column=event_time_column,
    )
    if config is None and schema is not None:  # the schema's registry (forwarded versions go there)
        config = {"schema.registry.url": schema.config.registry_url}
    source = {
        "topic": topic.strip(),
        "writer": writer,
        **({"producerName": producer_name} if producer_name else {}),
    }
    options = _parsed(
        "write_table", source, service_url, None, config, client_conf, client, needs_admin=False
    )
    refused: list[Refused] = []
    writing = TaskWriter(
        options,
        sequence_base,
        0,
        schema=schema,
        refused=lambda row, key, error: refused.append(Refused(row, key, error)),
        one_producer=True,
    )
    try:
        for batch in shape.messages(batches):
            writing.write(batch)
    except BaseException:
        writing.close()
        raise
    return dataclasses.replace(writing.finish(), refused=refused)


_TABULAR = (pa.RecordBatch, pa.Table, pa.RecordBatchReader)


def _batches_of(data: Any) -> Iterator[pa.RecordBatch]:
    if isinstance(data, pa.RecordBatch):
        return iter([data])
    if isinstance(data, pa.Table):
        return iter(data.to_batches())
    if isinstance(data, pa.RecordBatchReader):
        return iter(data)
    raise ConfigError(
        f"data: give a pyarrow Table, RecordBatch or RecordBatchReader, not {type(data).__name__}"
    )


# -- the options of a read or a write, in the Spark source's terms ---------------------------


def _options(
    topics: str | Sequence[str],
    service_url: str | None,
    admin_url: str | None,
    config: Mapping[str, Any] | None,
    batch_size: int,
    reader: str,
    include_data: bool,
    fail_on_data_loss: bool,
    read_timeout_ms: int,
    protobuf_message_class: str | None,
    client_conf: str | os.PathLike[str] | ClientConf | None,
    client: Mapping[str, Any],
) -> SourceOptions:
    names = [topics] if isinstance(topics, str) else list(topics)
    if not names or not all(isinstance(t, str) and t.strip() for t in names):
        raise ConfigError(f"topics: give a topic name or a list of them, not {topics!r}")
    if any("," in t for t in names):
        raise ConfigError(f"topics: give a list of topic names, not one string with commas ({topics!r})")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ConfigError(f"batch_size takes a positive number of rows, not {batch_size!r}")
    if reader not in PATHS:
        raise ConfigError(f"reader takes {', '.join(PATHS)}, not {reader!r}")
    if isinstance(read_timeout_ms, bool) or not isinstance(read_timeout_ms, int) or read_timeout_ms <= 0:
        raise ConfigError(f"read_timeout_ms takes a positive number of milliseconds, not {read_timeout_ms!r}")
    source = {
        "topics": ",".join(t.strip() for t in names),
        "reader": reader,
        "includeData": str(bool(include_data)).lower(),
        "failOnDataLoss": str(bool(fail_on_data_loss)).lower(),
        "read.timeout.ms": str(read_timeout_ms),
        **({"protobuf.message.class": protobuf_message_class} if protobuf_message_class else {}),
    }
    options = _parsed(
        "read_table", source, service_url, admin_url, config, client_conf, client, needs_admin=True
    )
    options.require_topics()
    return dataclasses.replace(options, batch_size=batch_size, protobuf_class_named="protobuf_message_class")


def _parsed(
    function: str,
    source: dict[str, str],
    service_url: str | None,
    admin_url: str | None,
    config: Mapping[str, Any] | None,
    client_conf: str | os.PathLike[str] | ClientConf | None,
    client: Mapping[str, Any],
    *,
    needs_admin: bool,
) -> SourceOptions:
    """The options `source` (the Spark source's names) with the configuration and the cluster's
    URLs, TLS and credentials, each source over the ones after it, key by key: the arguments
    `service_url` and `admin_url`, `client`'s keys, `client_conf`, the config's `pulsar.client.*`
    keys, the file of its `pulsar.client.conf` (a line in the log where a URL of one is used over
    another's; the arguments are used as given). Errors in `function`'s own words."""
    given = dict(config or {})
    taken = sorted(k for k in given if str(k).lower() in SOURCE_OPTIONS)
    if taken:
        raise ConfigError(
            f"config key {taken[0]!r} is not a configuration key here: give it as an argument of {function}"
        )
    chosen = layered(
        _arguments(service_url, admin_url, function),
        _keywords(client, function),
        _file(client_conf),
        *ClientConf.prefixed_layers(given, CLIENT_PREFIX, "config key"),
    )
    known = chosen.conf
    if not known.service_url:
        raise ConfigError(
            "service_url is required (the Pulsar service URL, e.g. pulsar://127.0.0.1:6650), or "
            "brokerServiceUrl in the client configuration"
        )
    if needs_admin and not known.web_service_url:
        raise ConfigError(
            "admin_url is required (the Pulsar admin REST URL, e.g. http://127.0.0.1:8080), or "
            "webServiceUrl in the client configuration"
        )
    chosen.announce(URL_FIELDS if needs_admin else ("service_url",))
    # the sources chosen from here: the options hold the one configuration they make
    config_keys = {k: v for k, v in given.items() if not str(k).lower().startswith(CLIENT_PREFIX)}
    return SourceOptions.parse({**config_keys, **known.as_options(CLIENT_PREFIX), **source})


def _arguments(service_url: str | None, admin_url: str | None, function: str) -> Layer:
    """`service_url` and `admin_url`, over every client configuration."""
    conf = ClientConf()
    arguments = (("brokerServiceUrl", service_url, "service_url"), ("webServiceUrl", admin_url, "admin_url"))
    for key, value, name in arguments:
        if value is not None:
            where = f"(the argument {name} of {function})"
            conf = conf.merged(ClientConf.from_options({key: value}, where=where))
    names = {"service_url": "the argument service_url", "web_service_url": "the argument admin_url"}
    return Layer(conf, f"the arguments of {function}", names, explicit=True)


def _keywords(keys: Mapping[str, Any], function: str) -> Layer | None:
    """`client.conf` keys as keyword arguments, over `client_conf`."""
    if not keys:
        return None
    conf = ClientConf.from_options(keys, where=f"(a keyword argument of {function})")
    return Layer(conf, f"the keyword arguments of {function}")


def _file(client_conf: str | os.PathLike[str] | ClientConf | None) -> Layer | None:
    """`client_conf`: a `client.conf`'s path, or a `ClientConf`, over the config's keys."""
    if client_conf is None:
        return None
    if isinstance(client_conf, ClientConf):
        return Layer(client_conf, "the ClientConf of client_conf")
    return Layer(ClientConf.read(client_conf), f"client_conf {os.fspath(client_conf)}")


# -- where the read starts and ends, per partition --------------------------------------------

#: One end of a read, checked: `earliest` / `latest`, message ids by partition topic, or a
#: publish time in milliseconds.
_End = str | dict[str, Any] | int


def _end(position: Position, time: Time | None, name: str) -> _End:
    default = "earliest" if name == "start" else "latest"
    if time is not None:
        if position != default:
            raise ConfigError(f"give {name} or {name}_time, not both")
        if isinstance(time, _dt.datetime):
            return int(time.timestamp() * 1000)
        if isinstance(time, int) and not isinstance(time, bool) and time >= 0:
            return time
        raise ConfigError(f"{name}_time takes a datetime or milliseconds since the epoch, not {time!r}")
    if isinstance(position, str) and position.strip().lower() in ("earliest", "latest"):
        return position.strip().lower()
    if not isinstance(position, Mapping) or isinstance(position, str):
        raise ConfigError(
            f"{name} takes 'earliest', 'latest' or a message id per partition topic, not {position!r}"
        )
    checked: dict[str, Any] = {}
    for topic, at in position.items():
        try:
            partition = full_topic_name(str(topic))
        except ValueError as error:
            raise ConfigError(f"{name}: {topic!r} is not a partition topic's name ({error})") from None
        if isinstance(at, str) and at.strip().lower() in ("earliest", "latest"):
            checked[partition] = at.strip().lower()
        elif (
            isinstance(at, Mapping)
            and all(isinstance(at.get(k), int) for k in ("ledgerId", "entryId"))
            and isinstance(at.get("batchIndex", -1), int)
        ):
            checked[partition] = {k: at[k] for k in ("ledgerId", "entryId", "batchIndex") if k in at}
        else:
            raise ConfigError(
                f"{name}: partition {topic!r} takes 'earliest', 'latest' or a messageId "
                f'({{"ledgerId": L, "entryId": E, "batchIndex": B}}), not {json.dumps(at, default=str)}'
            )
    return checked


def _ranges(
    options: SourceOptions, start: _End, end: _End, *, sized: bool = False
) -> tuple[list[TopicPartitionRange], dict[str, list[Ledger]]]:
    """The read's ranges, and where `sized` the ledgers of their partitions (`_Extent`)."""
    planner = Planner(options)
    admin = planner.admin()
    try:
        partitions = planner.partition_topics(admin)
        first = _bounds(admin, planner, start, partitions, "start")
        last = _bounds(admin, planner, end, partitions, "end")
        if isinstance(end, int):  # never past what is written now: a read ends
            latest = _bounds(admin, planner, "latest", partitions, "end")
            last = {p: earlier(bound, latest[p]) for p, bound in last.items()}
        ranges = planner.ranges(admin, first, last)
        ledgers = {r.partition_topic: admin.ledgers(r.partition_topic) for r in ranges} if sized else {}
        return ranges, ledgers
    finally:
        admin.close()


@dataclasses.dataclass(frozen=True)
class ReadProgress:
    """Where a read is, after a batch (`read_batches(progress=...)`): the rows given so far, and
    the entries read of the entries the read covers (an entry is a message, or a batch of them
    as its producer sent them; the broker counts them, not messages, ahead of a read)."""

    rows: int
    entries: int
    total_entries: int

    @property
    def rows_left(self) -> int | None:
        """About how many rows are left: the entries left at the rows an entry held so far
        (None before the first entry)."""
        if self.entries <= 0:
            return None
        return max(0, round(self.rows / self.entries * (self.total_entries - self.entries)))


class _Extent:
    """The entries of a read's ranges, to say how far a batch brought it."""

    def __init__(self, ranges: list[TopicPartitionRange], ledgers: dict[str, list[Ledger]]) -> None:
        self.ranges, self.ledgers = ranges, ledgers
        self.sizes = [entries_between(ledgers[r.partition_topic], r.start, r.end) for r in ranges]
        self.total = sum(self.sizes)

    def after(self, index: int, batch: pa.RecordBatch, rows: int) -> ReadProgress:
        """After `batch` of range `index`, `rows` rows given in all."""
        piece = self.ranges[index]
        last = batch.column("messageId")[batch.num_rows - 1].as_py()
        reached = Bound(last["ledgerId"], last["entryId"], -1, True)
        inside = entries_between(self.ledgers[piece.partition_topic], piece.start, reached)
        entries = sum(self.sizes[:index]) + min(inside, self.sizes[index])
        return ReadProgress(rows, entries, self.total)


def _bounds(
    admin: PulsarAdmin, planner: Planner, at: _End, partitions: list[str], name: str
) -> dict[str, Bound]:
    if isinstance(at, int):
        return {p: admin.message_at(p, at) for p in partitions}
    what = "startingOffsets" if name == "start" else "endingOffsets"
    return planner.resolve(admin, at, partitions, what, named=name)
