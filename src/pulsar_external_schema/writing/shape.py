"""What a table's rows are, for `arrow.write_table` and the console's `import`: messages (a
`value` or `data` column beside the columns `read_table` gives: `key`, `properties`,
`eventTime`, ...) or values (each row a value, its columns the record's fields: what
`pa.Table.from_pylist(records)` or `polars.DataFrame.to_arrow()` gives).

`RowShape.of` decides once for a table's schema; `RowShape.messages` turns each batch of values
into the message columns `rows.TaskWriter` writes (the row as a `value` struct, by reference:
nothing is copied), with the message's key, properties and event time taken from the columns the
caller names. A key or event-time column stays a field of the value, as a record keyed by one of
its fields is (a Kafka producer's key); a properties column is the message's only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from ..errors import ConfigError
from ..tasks.columns import read_schema

__all__ = ["ARGUMENTS", "MESSAGE_COLUMNS", "ROWS", "RowShape", "holds_messages"]

#: The columns of a message table (`read_table`'s, with `include_data=True`: `tasks/columns.py`
#: says what they are): a table with a `value` or `data` column and no column outside these holds
#: messages.
MESSAGE_COLUMNS = frozenset(read_schema(pa.null(), include_data=True).names)

#: What `rows=` takes: `auto` (messages where the columns are a message table's, else values),
#: `messages`, `values`.
ROWS = ("auto", "messages", "values")

#: How `RowShape.of`'s errors name its arguments (`write_table`'s names).
ARGUMENTS = ("rows", "key_column", "properties_column", "event_time_column")


@dataclass(frozen=True)
class RowShape:
    """How the rows of a table become messages: as they are (`values` false), or each row a value
    with the message's key, properties and event time in the named columns."""

    values: bool
    key_column: str | None = None
    properties_column: str | None = None
    event_time_column: str | None = None

    @classmethod
    def of(
        cls,
        names: Iterable[str],
        rows: str = "auto",
        *,
        key_column: str | None = None,
        properties_column: str | None = None,
        event_time_column: str | None = None,
        given_as: tuple[str, str, str, str] = ARGUMENTS,
    ) -> RowShape:
        """The shape of a table of columns `names`; errors name the arguments as `given_as` does
        (the console's flags). A named column is a column of values: `rows` is then `values`."""
        names = list(names)
        if rows not in ROWS:
            raise ConfigError(f"{given_as[0]} takes {', '.join(ROWS)}, not {rows!r}")
        columns = (key_column, properties_column, event_time_column)
        named = {given: c for given, c in zip(given_as[1:], columns, strict=True) if c is not None}
        for given, column in named.items():
            if column not in names:
                raise ConfigError(
                    f"{given} {column!r}: the table has no such column (its columns: {', '.join(names)})"
                )
        if rows == "messages" and named:
            raise ConfigError(
                f"{', '.join(named)} names a column of values: give {given_as[0]}='values' (or 'auto'), "
                "or name the message's columns key, properties and eventTime"
            )
        values = rows == "values" or bool(named) or (rows == "auto" and not holds_messages(names))
        if values and not names:
            raise ConfigError("the table has no columns: each row of values needs the record's fields")
        return cls(values, key_column, properties_column, event_time_column)

    def messages(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """`batches` as the message columns `rows.TaskWriter` writes."""
        for batch in batches:
            yield self.message_batch(batch) if self.values else batch

    def message_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """One batch of values as messages: `value` (the row's fields but the properties column),
        and `key`, `properties`, `eventTime` where a column is named for them."""
        fields = [f for f in batch.schema if f.name != self.properties_column]
        value = pa.StructArray.from_arrays([batch.column(f.name) for f in fields], fields=fields)
        columns: dict[str, pa.Array] = {"value": value}
        for target, column in (
            ("key", self.key_column),
            ("properties", self.properties_column),
            ("eventTime", self.event_time_column),
        ):
            if column is not None:
                columns[target] = batch.column(column)
        return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


def holds_messages(names: Iterable[str]) -> bool:
    """Whether columns `names` are a message table's: a `value` or `data` column, and none that a
    message table does not have (a CSV's `messageId.ledgerId`, as `export` spreads a struct, is
    `messageId`'s)."""
    given = {name.split(".", 1)[0] for name in names}
    return bool(given & {"value", "data"}) and given <= MESSAGE_COLUMNS
