"""`pulsar-external-schema export`: a bounded part of a topic to a file, through
`arrow.read_batches` (docs/tables.md): Parquet, Arrow IPC, CSV or JSON lines, as the file's
extension says, batch by batch (the file is written next to its place and renamed there at the
end: an export that fails leaves no half of one)."""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ExternalSchemaError
from .common import CommandError, UsageError, connection, fail, plural, require, schema_config
from .habits import settle_topic
from .progress import Progress

if TYPE_CHECKING:
    from ..arrow import ReadProgress

#: File extensions and the format each writes.
FORMATS = {".parquet": "parquet", ".arrow": "arrow", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def run_export(args: argparse.Namespace) -> int:
    try:
        settle_topic(args)
        connection(args)
        require(args, "service_url", "admin_url", "registry_url")
        kind = FORMATS.get(Path(args.to).suffix.lower())
        if kind is None:
            raise UsageError(f"--to {args.to}: the extension says the format: {', '.join(sorted(FORMATS))}")
    except CommandError as error:
        return fail("export", error)
    target = Path(args.to)
    partial = target.with_name(f".{target.name}.partial")
    started = time.monotonic()
    progress = Progress("exported", "row", 0 if args.quiet else args.progress)
    where: list[ReadProgress] = []
    try:
        from ..arrow import read_batches

        batches = read_batches(
            args.topic,
            service_url=args.service_url,
            admin_url=args.admin_url,
            config=schema_config(args),
            start_time=args.start_time,
            end_time=args.end_time,
            batch_size=args.batch_size,
            reader=args.reader,
            include_data=args.include_data,
            client_conf=args.connection,
            progress=where.append if progress.shown else None,
        )
        rows, invalid = _write(kind, batches, partial, progress, where)
        os.replace(partial, target)
    except ExternalSchemaError as error:
        return fail("export", error)
    except OSError as error:
        return fail("export", f"cannot write {target}: {error.strerror or error}")
    finally:
        partial.unlink(missing_ok=True)
    if not args.quiet:
        seconds = time.monotonic() - started
        print(
            f"exported {plural(rows, 'row')} ({invalid} not valid) of {args.topic} to {target} "
            f"in {seconds:.1f} s",
            file=sys.stderr,
        )
    return 0


def _write(
    kind: str, batches: Any, path: Path, progress: Progress, where: list[ReadProgress]
) -> tuple[int, int]:
    """Every batch into `path` as `kind`: (rows, rows not valid); `where` gets the read's
    progress after each batch (the rows left shown)."""
    import pyarrow as pa

    writer: Any
    schema = batches.schema
    if kind == "parquet":
        import pyarrow.parquet as pq

        writer = pq.ParquetWriter(path, schema)
        write: Callable[[Any], None] = writer.write_batch
    elif kind == "arrow":
        writer = pa.ipc.new_file(str(path), schema)
        write = writer.write_batch
    elif kind == "csv":
        import pyarrow.csv as csv

        writer = csv.CSVWriter(str(path), _flat(schema.empty_table()).schema)

        def write(batch: Any) -> None:
            writer.write_table(_flat(pa.Table.from_batches([batch])))

    else:
        writer = path.open("w", encoding="utf-8")

        def write(batch: Any) -> None:
            rows = batch.to_pylist(maps_as_pydicts="strict")
            writer.writelines(json.dumps(row, default=_json, ensure_ascii=False) + "\n" for row in rows)

    rows = invalid = 0
    try:
        for batch in batches:
            write(batch)
            rows += batch.num_rows
            invalid += batch.num_rows - batch.column("_valid").true_count
            progress.update(rows, invalid, where[-1].rows_left if where else None)
            del where[:-1]
    finally:
        writer.close()
    return rows, invalid


def _flat(table: Any) -> Any:
    """A table CSV can hold: structs spread into columns (`value.id`, `messageId.ledgerId`), and
    what is left nested (lists, maps) or binary as JSON text."""
    import pyarrow as pa

    while any(pa.types.is_struct(field.type) for field in table.schema):
        table = table.flatten()
    for index, field in enumerate(table.schema):
        if pa.types.is_nested(field.type) or pa.types.is_binary(field.type):
            column = table.column(index).to_pylist(maps_as_pydicts="strict")
            text = pa.array(
                [None if v is None else json.dumps(v, default=_json, ensure_ascii=False) for v in column],
                pa.string(),
            )
            table = table.set_column(index, field.name, text)
    return table


def _json(value: Any) -> Any:
    """What JSON lacks: times as ISO 8601, bytes as base64, decimals as their exact text."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    raise TypeError(f"{type(value).__name__} is not JSON")
