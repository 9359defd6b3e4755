"""Rows on an executor (spark/rows.py): a value that does not fit its column."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")


from pulsar_external_schema.spark.rows import Rows
from pulsar_external_schema.spark.types import (
    json_type,
)


def test_a_value_that_does_not_fit_its_column_makes_its_row_invalid_not_the_batch() -> None:
    import pyarrow as pa

    from pulsar_external_schema.spark.columns import read_schema

    value_type, convert = json_type(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))
    schema = read_schema(value_type, include_data=False)
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema, timezone="UTC")
    rows = Rows(False, None, "persistent://t/n/a", 0)

    class Msg:
        def __init__(self, value: Any) -> None:
            self.value = value

        def properties(self) -> dict[str, str]:
            return {}

        def partition_key(self) -> str:
            return ""

        def publish_timestamp(self) -> int:
            return 1_000

        def event_timestamp(self) -> int:
            return 0

        def data(self) -> bytes:
            return b""

    for i, value in enumerate([{"n": 1}, {"n": "one"}, {"n": 3}]):
        rows.add(Msg(value), (1, i), -1, lambda msg, properties: msg.value)
    batch = rows.batch(arrow, arrow.field("value").type, convert)
    assert batch.schema == arrow
    table = pa.Table.from_batches([batch]).to_pylist()
    assert [r["_valid"] for r in table] == [True, False, True]
    assert [r["value"] for r in table] == [{"n": 1}, None, {"n": 3}]
    error = table[1]["_error"]
    assert "message ledger 1 entry 1 batch index -1 of persistent://t/n/a" in error
    assert "does not fit the value column typed from the reader schema: expected an integer" in error
    assert dict(table[1]["_failure"])["__rule.topic"] == "persistent://t/n/a"
