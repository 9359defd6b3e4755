"""`pulsar-external-schema import`: a file's rows to a topic, through `arrow.write_table`
(docs/tables.md): Parquet, Arrow IPC, CSV or JSON lines, as the file's extension says. What
`export` wrote goes back as it was read: its `value` column encoded with the topic's schema and
WRITE rules (or its `data` column, with `--untouched`, sent as it is)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ExternalSchemaError
from .common import CommandError, UsageError, connection, fail, plural, require, schema_config
from .export import FORMATS
from .habits import settle_topic

if TYPE_CHECKING:
    from ..writing.shape import RowShape

#: Columns `write_table` sends; an exported file's others (the verdict, the place) are not.
SENT = ("key", "value", "data", "properties", "eventTime")


def run_import(args: argparse.Namespace) -> int:
    try:
        settle_topic(args)
        connection(args)
        require(args, "service_url", "registry_url")
        kind = FORMATS.get(Path(args.source).suffix.lower())
        if kind is None:
            raise UsageError(
                f"--from {args.source}: the extension says the format: {', '.join(sorted(FORMATS))}"
            )
    except CommandError as error:
        return fail("import", error)
    started = time.monotonic()
    try:
        table = _read(kind, Path(args.source))
        shape = _shape(table, args)
        if not shape.values:
            table = _rows(table, args)
        from ..arrow import write_table

        written = write_table(
            args.topic,
            table,
            rows="values" if shape.values else "messages",
            key_column=shape.key_column,
            properties_column=shape.properties_column,
            event_time_column=shape.event_time_column,
            service_url=args.service_url,
            config=schema_config(args),
            producer_name=args.producer_name,
            sequence_base=args.sequence_base,
            client_conf=args.connection,
        )
    except (CommandError, ExternalSchemaError) as error:
        return fail("import", error)
    except OSError as error:
        return fail("import", f"cannot read {args.source}: {error.strerror or error}")
    for refused in written.refused:
        print(f"row {refused.row}: {refused.error}", file=sys.stderr)
    if not args.quiet:
        print(
            f"imported {plural(written.sent, 'row')} of {args.source} to {args.topic} "
            f"({len(written.refused)} refused, {written.dead_lettered} dead-lettered) "
            f"in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
        )
    return 1 if written.refused else 0


def _read(kind: str, path: Path) -> Any:
    """The file as one Arrow table; a file its format's reader cannot read is a CommandError
    that names it and says what the reader said (its row, where it knows)."""
    import pyarrow as pa

    if not path.is_file():
        raise CommandError(f"cannot read {path}: no such file")
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path)
        if kind == "arrow":
            with pa.memory_map(str(path)) as source:
                return pa.ipc.open_file(source).read_all()
        if kind == "csv":
            import pyarrow.csv as csv

            return _nested(csv.read_csv(path, convert_options=csv.ConvertOptions(strings_can_be_null=True)))
        import pyarrow.json as pj

        return pj.read_json(path)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        text = " ".join(str(error).split())
        raise CommandError(f"cannot read {path} as {kind}: {text}") from None


def _nested(table: Any) -> Any:
    """A CSV's `value.x` columns (as `export` spreads a struct) gathered into a `value` struct
    again, one level, the others as they are."""
    import pyarrow as pa

    spread = [name for name in table.column_names if name.startswith("value.")]
    if not spread or "value" in table.column_names:
        return table
    fields = [name.removeprefix("value.") for name in spread]
    value = pa.StructArray.from_arrays([_unjson(table.column(n).combine_chunks()) for n in spread], fields)
    kept = [n for n in table.column_names if n not in spread]
    return pa.table({**{n: table.column(n) for n in kept}, "value": value})


def _unjson(column: Any) -> Any:
    """A column of lists or maps `export` wrote as JSON text, parsed again; any other column as it
    is. (A string field whose every value looks like a JSON list or object is parsed too: its
    schema then refuses the row, it is never sent changed.)"""
    import pyarrow as pa

    if not pa.types.is_string(column.type):
        return column
    texts = column.to_pylist()
    given = [t for t in texts if t is not None]
    if not given or not all(t.startswith(("[", "{")) for t in given):
        return column
    try:
        return pa.array([None if t is None else json.loads(t) for t in texts])
    except (ValueError, pa.ArrowException):
        return column


def _shape(table: Any, args: argparse.Namespace) -> RowShape:
    """Whether the file's rows are values or messages (`--rows`, the columns named), in the words
    of the flags."""
    from ..writing.shape import RowShape

    named = [flag for flag, given in (("--key-column", args.key_column),
             ("--properties-column", args.properties_column), ("--event-time-column", args.event_time_column))
             if given is not None]  # fmt: skip
    if args.untouched and (named or args.rows == "values"):
        raise UsageError(
            f"--untouched sends an export's messages as they were; {', '.join(named) or '--rows values'} "
            "is for a file of records"
        )
    try:
        return RowShape.of(
            table.column_names,
            "messages" if args.untouched else args.rows,
            key_column=args.key_column,
            properties_column=args.properties_column,
            event_time_column=args.event_time_column,
            given_as=("--rows", "--key-column", "--properties-column", "--event-time-column"),
        )
    except ConfigError as error:
        raise UsageError(str(error)) from None


def _rows(table: Any, args: argparse.Namespace) -> Any:
    """The columns of a file of messages sent: `value` (or `data` with --untouched), and the
    message's key, properties and event time where the file has them."""
    names = table.column_names
    if args.untouched:
        if "data" not in names:
            raise CommandError(
                f"--untouched sends each row's 'data' column, and {args.source} has none (export it "
                "with --include-data)"
            )
        dropped = "value"
    else:
        if "value" not in names:
            raise CommandError(
                f"{args.source} has no 'value' column (its columns: {', '.join(names)}); give --rows "
                "values to send each row as a value, its columns the record's fields"
            )
        dropped = "data"
    keep = [n for n in SENT if n in names and n != dropped]
    if "properties" in keep and not args.untouched:
        keep.remove("properties")  # a value's schema id is the one it is encoded with now
    return table.select(keep)
