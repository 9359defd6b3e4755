"""The Avro reader of the per-message path (codec/avro.py) against fastavro's `schemaless_reader`.

The reader calls fastavro's compiled decode with its preparation done once; it must answer as the
public call does, value for value and error for error, or not be used at all."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_external_schema import _fastavro

WRITER = {
    "type": "record",
    "name": "Order",
    "namespace": "acme",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": "double"},
        {"name": "ok", "type": "boolean"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "DONE"]}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 2}},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "lines",
            "type": {
                "type": "array",
                "items": {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"}]},
            },
        },
    ],
}
READER = {  # schema resolution: a field dropped, one added with its default, an int promoted
    **WRITER,
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "added", "type": "string", "default": "x"},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "DONE"]}},
        WRITER["fields"][11],  # lines: a named record inside an array
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}

records = st.fixed_dictionaries(
    {
        "id": st.integers(-(2**63), 2**63 - 1),
        "name": st.text(max_size=8),
        "note": st.none() | st.text(max_size=4),
        "qty": st.integers(-(2**31), 2**31 - 1),
        "price": st.floats(allow_nan=False),
        "ok": st.booleans(),
        "tags": st.lists(st.text(max_size=3), max_size=3),
        "attrs": st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=3),
        "state": st.sampled_from(["NEW", "DONE"]),
        "code": st.binary(min_size=2, max_size=2),
        "when": st.integers(0, 2**40),
        "lines": st.lists(st.fixed_dictionaries({"sku": st.text(max_size=3)}), max_size=2),
    }
)


def _outcome(read: Any, payload: bytes) -> tuple[str, Any]:
    try:
        return "ok", read(payload)
    except Exception as error:  # fastavro names the buffer it read from by its address
        return type(error).__name__, re.sub(r" at 0x[0-9a-f]+", "", str(error))


def _public(writer: Any, reader: Any, record_name: bool) -> Any:
    return lambda payload: schemaless_reader(io.BytesIO(payload), writer, reader, record_name)


def test_fastavro_here_takes_the_prepared_reader() -> None:
    assert _fastavro._reads_work()  # else the figures in docs/benchmarks.md are not ours


@settings(max_examples=300, deadline=None)
@given(record=records, cut=st.integers(0, 40), record_name=st.booleans())
def test_the_prepared_reader_answers_as_schemaless_reader(
    record: dict[str, Any], cut: int, record_name: bool
) -> None:
    writer, reader = parse_schema(WRITER), parse_schema(READER)
    out = io.BytesIO()
    schemaless_writer(out, writer, record)
    payload = out.getvalue()
    for reader_schema in (None, reader):
        prepared = _fastavro.prepared_reader(writer, reader_schema, record_name)
        assert prepared is not None
        public = _public(writer, reader_schema, record_name)
        assert _outcome(prepared, payload) == _outcome(public, payload)
        truncated = payload[: len(payload) * cut // 40]  # malformed: the same error, or the same value
        assert _outcome(prepared, truncated) == _outcome(public, truncated)


def test_a_fastavro_whose_private_decode_changed_gets_the_public_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import fastavro._read

    def changed(*args: Any) -> Any:
        raise TypeError("_read_data() takes 3 positional arguments")

    monkeypatch.setattr(fastavro._read, "_read_data", changed)
    _fastavro._reads_work.cache_clear()
    try:
        assert not _fastavro._reads_work()
        assert _fastavro.prepared_reader(parse_schema(WRITER), None, False) is None
    finally:
        monkeypatch.undo()
        _fastavro._reads_work.cache_clear()
    assert _fastavro._reads_work()
