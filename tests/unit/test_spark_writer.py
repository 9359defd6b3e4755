"""The Spark sink's value conversions (spark/writer.py)."""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")


import pyarrow as pa

from pulsar_external_schema.writing.python_values import protobuf_jsonable, python_values


def test_writer_turns_arrow_maps_back_into_dicts_and_protobuf_values_into_json() -> None:
    value = pa.struct([("m", pa.map_(pa.string(), pa.int64())), ("e", pa.map_(pa.string(), pa.int64()))])
    rows = pa.array([{"m": [("a", 1), ("b", 2), ("a", 3)], "e": []}, None], value)
    # maps as dicts, the last of a repeated key kept (as a dict keeps it), an empty map empty
    assert python_values(rows) == [{"m": {"a": 3, "b": 2}, "e": {}}, None]
    inner = pa.map_(pa.string(), pa.int64())
    nested = pa.struct([("l", pa.list_(inner)), ("mm", pa.map_(pa.string(), inner)), ("n", pa.int64())])
    given = [{"l": [[("x", 1)], [], None], "mm": [("k", [("y", 2)]), ("z", None)], "n": 5}]
    assert python_values(pa.array(given, nested)) == [
        {"l": [{"x": 1}, {}, None], "mm": {"k": {"y": 2}, "z": None}, "n": 5}
    ]
    plain = pa.array([{"n": 1, "s": ["a"]}], pa.struct([("n", pa.int64()), ("s", pa.list_(pa.string()))]))
    assert python_values(plain) == [{"n": 1, "s": ["a"]}]  # no maps: Arrow's own form
    at = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert protobuf_jsonable({"b": b"\x01", "at": at, "n": None}) == {
        "b": "AQ==",
        "at": "2024-01-02T03:04:05Z",
    }
