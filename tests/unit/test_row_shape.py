"""What `write_table` and `import` take a table's rows for (`writing/shape.py`): messages, as
`read_table` gives them, or values, each row a record; and the message columns made of values."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pulsar_external_schema.errors import ConfigError
from pulsar_external_schema.writing.shape import RowShape


@pytest.mark.parametrize(
    ("names", "values"),
    [
        (["value"], False),
        (["key", "value", "eventTime", "properties"], False),
        (["key", "data", "properties", "topic", "partition", "_valid", "_error"], False),  # an export
        (["key", "value", "messageId.ledgerId", "messageId.entryId"], False),  # an export to CSV
        (["sku", "qty"], True),  # pa.Table.from_pylist(records)
        (["name", "value"], True),  # a record with a field named value
        (["key", "qty"], True),
    ],
)
def test_auto_takes_a_read_tables_columns_for_messages_and_any_other_for_values(
    names: list[str], values: bool
) -> None:
    assert RowShape.of(names).values is values


def test_rows_or_a_named_column_decides() -> None:
    assert RowShape.of(["value"], "values").values
    assert not RowShape.of(["sku"], "messages").values
    assert RowShape.of(["key", "value"], key_column="key").values


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rows": "records"}, "rows takes auto, messages, values, not 'records'"),
        ({"key_column": "id"}, "key_column 'id': the table has no such column (its columns: sku, at)"),
        ({"rows": "messages", "event_time_column": "at"}, "event_time_column names a column of values"),
    ],
)
def test_a_mistake_is_one_line_in_the_callers_words(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        RowShape.of(["sku", "at"], **kwargs)
    assert str(raised.value).startswith(message)
    flags = ("--rows", "--key-column", "--properties-column", "--event-time-column")
    with pytest.raises(ConfigError, match=r"^--key-column 'id'"):
        RowShape.of(["sku"], key_column="id", given_as=flags)


def test_a_row_of_values_is_the_value_and_the_named_columns_its_message_parts() -> None:
    properties = pa.array([[("origin", "a")], None], pa.map_(pa.string(), pa.string()))
    batch = pa.RecordBatch.from_pydict(
        {"id": [1, 2], "sku": ["x", "y"], "at": pa.array([0, 1000], pa.timestamp("ms")), "p": properties}
    )
    shape = RowShape.of(batch.schema.names, key_column="id", properties_column="p", event_time_column="at")

    messages = shape.message_batch(batch)

    assert messages.schema.names == ["value", "key", "properties", "eventTime"]
    assert messages.column("value").type == pa.struct(
        [("id", pa.int64()), ("sku", pa.string()), ("at", pa.timestamp("ms"))]
    )
    assert (
        messages.column("value").field("sku").buffers()[2] == batch.column("sku").buffers()[2]
    )  # not copied
    assert messages.column("key").to_pylist() == [1, 2]
    assert messages.column("properties").to_pylist() == [[("origin", "a")], None]
    assert list(RowShape.of(["value"]).messages([batch])) == [batch]  # messages pass as they are
