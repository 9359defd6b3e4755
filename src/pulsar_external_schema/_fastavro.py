"""Every use of fastavro's private API, in one module.

fastavro's public `schemaless_reader` / `schemaless_writer` redo their preparation on every call:
they make named-schema tables, parse the (parsed) schemas again and build their options before
the work itself, a sizeable share of what a small record costs. Its compiled modules do the
work in `_read._read_data` and `_write.write_data`, private: `prepared_reader` and
`prepared_writer` call them with the preparation done once, and only where a probe at first use
found them answering exactly as the public calls do (a fastavro that changed them gets None,
and the caller the public call). tests/unit/test_codec_avro_reader.py holds them to the public
calls on generated records.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

__all__ = ["prepared_reader", "prepared_writer"]


def prepared_writer(schema: Any, options: dict[str, bool]) -> Callable[[Any], bytes] | None:
    """`schemaless_writer(out, schema, value, **options)` as one call of the value, or None where
    fastavro's private `write_data` does not write as it does."""
    return _writer(schema, options) if _writes_work() else None


def _writer(schema: Any, options: dict[str, bool]) -> Callable[[Any], bytes]:
    """`schemaless_writer` with its preparation done once: per call it parses the (parsed) schema
    again into fresh named-schema tables and builds its options before the write (module doc).
    fastavro's compiled module writes in `write_data`, private: used only where `_writes_work` found
    it writing as `schemaless_writer` does."""
    from fastavro import parse_schema
    from fastavro._write import write_data  # type: ignore[attr-defined]

    named: dict[str, Any] = {}
    schema = parse_schema(schema, named)

    def write(value: Any) -> bytes:
        out = bytearray()
        write_data(out, value, schema, named, "", options)
        return bytes(out)

    return write


@functools.cache
def _writes_work() -> bool:
    """Whether fastavro's compiled `write_data` takes the arguments `prepared_writer` gives it and
    writes what `schemaless_writer` writes: a record with a named type used twice, a union and a
    default, loosely and strictly."""
    try:
        from fastavro._write import CYTHON_MODULE  # type: ignore[attr-defined]

        if not CYTHON_MODULE:
            return False
        schema = {
            "type": "record",
            "name": "probe",
            "fields": [
                {"name": "n", "type": "long"},
                {"name": "s", "type": ["null", "string"]},
                {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
                {"name": "f", "type": "E"},
                {"name": "d", "type": "int", "default": 7},
            ],
        }
        value = {"n": 42, "s": "hi", "e": "B", "f": "A"}
        for strict in (False, True):
            options = {"strict": False, "strict_allow_default": strict, "disable_tuple_notation": False}
            out = io.BytesIO()
            schemaless_writer(out, schema, value, strict_allow_default=strict)
            if _writer(schema, options)(value) != out.getvalue():
                return False
        return True
    except Exception:  # any change in fastavro's private module: the public call
        return False


def prepared_reader(
    writer_schema: Any, reader_schema: Any, record_name: bool
) -> Callable[[bytes], Any] | None:
    """`schemaless_reader` with its preparation done once: per call it makes the named-schema
    tables, parses both (parsed) schemas again and builds its options before the decode itself
    (module doc). fastavro's compiled module does the decode in
    `_read_data`, private: used only where `_reads_work` found it answering as
    `schemaless_reader` does (a fastavro that changed it gets the public call)."""
    return _reader(writer_schema, reader_schema, record_name) if _reads_work() else None


def _reader(writer_schema: Any, reader_schema: Any, record_name: bool) -> Callable[[bytes], Any]:
    from fastavro import parse_schema
    from fastavro._read import _default_named_schemas, _read_data  # type: ignore[attr-defined]

    named = _default_named_schemas()
    writer_schema = parse_schema(writer_schema, named["writer"])
    if reader_schema:
        reader_schema = parse_schema(reader_schema, named["reader"])
    options = {
        "return_record_name": record_name,
        "return_record_name_override": False,
        "handle_unicode_errors": "strict",
        "return_named_type": False,
        "return_named_type_override": False,
    }
    bytes_io = io.BytesIO

    def read(payload: bytes) -> Any:
        return _read_data(bytes_io(payload), writer_schema, named, reader_schema, options)

    return read


@functools.cache
def _reads_work() -> bool:
    """Whether fastavro's compiled `_read_data` takes the arguments `prepared_reader` gives it and
    answers as `schemaless_reader`: a record read as itself and through schema resolution."""
    try:
        from fastavro._read import CYTHON_MODULE  # type: ignore[attr-defined]

        if not CYTHON_MODULE:
            return False
        writer = {
            "type": "record",
            "name": "probe",
            "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": ["null", "string"]}],
        }
        reader = {
            "type": "record",
            "name": "probe",
            "fields": [
                {"name": "s", "type": ["null", "string"]},
                {"name": "added", "type": "int", "default": 7},
            ],
        }
        payload = b"\x54\x02\x04hi"
        for reader_schema in (None, reader):
            for record_name in (False, True):
                expected = schemaless_reader(io.BytesIO(payload), writer, reader_schema, record_name)
                prepared = _reader(writer, reader_schema, record_name)
                if prepared(payload) != expected:
                    return False
        return True
    except Exception:  # any change in fastavro's private module: the public call
        return False
