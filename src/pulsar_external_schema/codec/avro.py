"""Avro on the per-message path: fastavro's own calls on schemas parsed once.

The same calls confluent-kafka's Avro serdes make (`schemaless_writer` with their strictness,
`schemaless_reader` with the writer and reader schemas), on the schemas the serde parsed, so the
bytes and values are the same; what is left out is what the serde recomputes per message
(subject, schema lookups, inline tags, expanded schemas, a rule context per rule).
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema
from fastavro import schemaless_reader, schemaless_writer

from .. import _confluent
from .fields import FieldWalk, avro_walk
from .limits import DecodeLimits, Guard, avro_guard
from .values import avro_check

SCHEMA_TYPE = "AVRO"
#: fastavro's errors reach the caller unwrapped on the reference path too.
FINAL_ERRORS = True


def _interned(schema: Any) -> Any:
    """The parsed schema with its strings interned. Parsed from the registry's JSON, its keys are
    equal to fastavro's literals (`"type"`, `"name"`) but not the same objects, and every dict
    lookup fastavro makes per message then compares them character by character: ~7% of a
    7-field record's encode. Same content, so the same bytes."""
    if isinstance(schema, dict):
        return {sys.intern(key): _interned(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_interned(item) for item in schema]
    if isinstance(schema, str):
        return sys.intern(schema)
    return schema


def _is_bytes(parsed: Any) -> bool:
    """confluent-kafka writes and reads a bare `bytes` schema as the raw bytes."""
    return parsed == "bytes" or (isinstance(parsed, dict) and parsed.get("type") == "bytes")


def writer(serializer: Any, schema: Schema | None) -> Callable[[Any], bytes]:
    """value -> Avro binary, with `schema` (the registered writer) or the serializer's own; a
    value outside the schema's types is refused first (`values.py`), as on the reference path."""
    parsed = (
        _confluent.local_schema(serializer)[1] if schema is None else _confluent.parsed(serializer, schema)
    )
    parsed = _interned(parsed)
    if _is_bytes(parsed):
        return lambda value: value if isinstance(value, bytes) else value.encode()
    avro_options = _confluent.avro_options(serializer)
    options = {
        "strict": avro_options["strict"],
        "strict_allow_default": avro_options["strict_allow_default"],
        "disable_tuple_notation": False,
    }
    write = _prepared_writer(parsed, options) if _prepared_writes_work() else None
    if write is None:

        def write(value: Any) -> bytes:
            out = io.BytesIO()
            schemaless_writer(out, parsed, value, **options)
            return out.getvalue()

    check = avro_check(parsed)
    if check is None:
        return write
    unchecked = write

    def checked(value: Any) -> bytes:
        check(value)
        return unchecked(value)

    return checked


def _prepared_writer(schema: Any, options: dict[str, bool]) -> Callable[[Any], bytes]:
    """`schemaless_writer` with its preparation done once: per call it parses the (parsed) schema
    again into fresh named-schema tables and builds its options before the write, ~0.4 us of a
    7-field record's ~2.5 us. fastavro's compiled module writes in `write_data`, private: used
    only where `_prepared_writes_work` found it writing as `schemaless_writer` does."""
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
def _prepared_writes_work() -> bool:
    """Whether fastavro's compiled `write_data` takes the arguments `_prepared_writer` gives it and
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
            if _prepared_writer(schema, options)(value) != out.getvalue():
                return False
        return True
    except Exception:  # any change in fastavro's private module: the public call
        return False


def reader(deserializer: Any, writer_schema: Schema, reader_schema: Schema) -> Callable[[bytes], Any]:
    """Avro binary of `writer_schema` -> a value of `reader_schema` (schema resolution)."""
    parsed_writer = _interned(_confluent.parsed(deserializer, writer_schema))
    if _is_bytes(parsed_writer):
        return bytes
    parsed_reader = (
        None if reader_schema is writer_schema else _interned(_confluent.parsed(deserializer, reader_schema))
    )
    if parsed_reader == parsed_writer:
        parsed_reader = None  # fastavro makes the same decision, per message
    record_name = _confluent.avro_options(deserializer)["return_record_name"]
    prepared = _prepared_reader(parsed_writer, parsed_reader, record_name)
    if prepared is not None:
        return prepared

    def read(payload: bytes) -> Any:
        return schemaless_reader(io.BytesIO(payload), parsed_writer, parsed_reader, record_name)

    return read


def _prepared_reader(
    writer_schema: Any, reader_schema: Any, record_name: bool
) -> Callable[[bytes], Any] | None:
    """`schemaless_reader` with its preparation done once: per call it makes the named-schema
    tables, parses both (parsed) schemas again and builds its options before the decode itself,
    ~0.4 us of the ~2.3 us a 7-field record costs. fastavro's compiled module does the decode in
    `_read_data`, private: used only where `_prepared_reads_work` found it answering as
    `schemaless_reader` does (a fastavro that changed it gets the public call)."""
    return _make_prepared(writer_schema, reader_schema, record_name) if _prepared_reads_work() else None


def _make_prepared(writer_schema: Any, reader_schema: Any, record_name: bool) -> Callable[[bytes], Any]:
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
def _prepared_reads_work() -> bool:
    """Whether fastavro's compiled `_read_data` takes the arguments `_prepared_reader` gives it and
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
                prepared = _make_prepared(writer, reader_schema, record_name)
                if prepared(payload) != expected:
                    return False
        return True
    except Exception:  # any change in fastavro's private module: the public call
        return False


def columnar_schemas(
    deserializer: Any, writer_schema: Schema, reader_schema: Schema
) -> tuple[str, str] | None:
    """(writer, reader) as the Avro JSON a columnar decoder takes (the Spark source's native
    reader, arrow-avro), where its values are the ones `reader` gives: not where fastavro returns
    record names with union branches (`return_record_name`), and not yet for schemas with
    references (their named types would have to be written into the JSON)."""
    if _confluent.avro_options(deserializer)["return_record_name"]:
        return None
    if writer_schema.references or reader_schema.references:
        return None
    if writer_schema.schema_str is None or reader_schema.schema_str is None:
        return None
    return writer_schema.schema_str, reader_schema.schema_str


def field_walk(serde: Any, schema: Schema | None) -> FieldWalk | None:
    """How field rules walk the registered schema (rules only come with a registered one)."""
    return None if schema is None else avro_walk(_confluent.parsed(serde, schema))


def read_check(deserializer: Any, reader_schema: Schema) -> None:
    """Nothing to check once fastavro has read a value."""
    return None


def pool(serde: Any) -> None:
    """Avro values carry no descriptor pool (CEL sees them as plain values)."""
    return None


def guard(deserializer: Any, writer_schema: Schema, limits: DecodeLimits) -> Guard:
    """What a payload of `writer_schema` must pass before fastavro reads it (`limits.py`)."""
    return avro_guard(_confluent.parsed(deserializer, writer_schema), limits)
