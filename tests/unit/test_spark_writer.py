"""The Spark sink's value conversions (spark/writer.py)."""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")


from pulsar_external_schema.writing.rows import _plain, protobuf_jsonable


def test_writer_turns_arrow_maps_back_into_dicts_and_protobuf_values_into_json() -> None:
    assert _plain({"m": [("a", 1), ("b", 2)], "l": [1, 2]}) == {"m": {"a": 1, "b": 2}, "l": [1, 2]}
    at = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert protobuf_jsonable({"b": b"\x01", "at": at, "n": None}) == {
        "b": "AQ==",
        "at": "2024-01-02T03:04:05Z",
    }
