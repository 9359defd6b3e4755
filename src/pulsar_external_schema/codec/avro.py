"""Avro on the per-message path: fastavro's own calls on schemas parsed once.

The same calls confluent-kafka's Avro serdes make (`schemaless_writer` with their strictness,
`schemaless_reader` with the writer and reader schemas), on the schemas the serde parsed, so the
bytes and values are the same; what is left out is what the serde recomputes per message
(subject, schema lookups, inline tags, expanded schemas, a rule context per rule).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema
from fastavro import schemaless_reader, schemaless_writer

from .. import _confluent, _fastavro
from .field_transforms import FieldWalk, avro_walk
from .limits import DecodeLimits, Guard, avro_guard
from .value_checks import avro_check

SCHEMA_TYPE = "AVRO"
#: fastavro's errors reach the caller unwrapped on the reference path too.
FINAL_ERRORS = True


def _interned(schema: Any) -> Any:
    """The parsed schema with its strings interned. Parsed from the registry's JSON, its keys are
    equal to fastavro's literals (`"type"`, `"name"`) but not the same objects, and every dict
    lookup fastavro makes per message then compares them character by character: a measurable
    share of a small record's encode. Same content, so the same bytes."""
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


def _writer_parsed(serializer: Any, schema: Schema | None) -> Any:
    """The parsed writer: `schema` (the registered one) or the serializer's own."""
    return _confluent.local_schema(serializer)[1] if schema is None else _confluent.parsed(serializer, schema)


def writer(serializer: Any, schema: Schema | None) -> Callable[[Any], bytes]:
    """value -> Avro binary, with `schema` (the registered writer) or the serializer's own; a
    value outside the schema's types is refused first (`value_checks.py`), as on the reference path."""
    parsed = _interned(_writer_parsed(serializer, schema))
    if _is_bytes(parsed):
        return lambda value: value if isinstance(value, bytes) else value.encode()
    avro_options = _confluent.avro_options(serializer)
    options = {
        "strict": avro_options["strict"],
        "strict_allow_default": avro_options["strict_allow_default"],
        "disable_tuple_notation": False,
    }
    write = _fastavro.prepared_writer(parsed, options)
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
    prepared = _fastavro.prepared_reader(parsed_writer, parsed_reader, record_name)
    if prepared is not None:
        return prepared

    def read(payload: bytes) -> Any:
        return schemaless_reader(io.BytesIO(payload), parsed_writer, parsed_reader, record_name)

    return read


#: A columnar decoder of this format gives the values of the reader schema; nothing checks them after.
COLUMNAR_CHECKS = False


def columnar_schemas(
    deserializer: Any, writer_schema: Schema, reader_schema: Schema
) -> tuple[str, str, tuple[tuple[str, str], ...], str] | None:
    """(writer, reader, no references, no base URI) as the Avro JSON a columnar decoder takes (the
    native reader, arrow-avro), where its values are the ones `reader` gives: not where fastavro returns
    record names with union branches (`return_record_name`). Each is written from the serde's
    parsed form (`standalone`), so a schema with references carries their named types."""
    if _confluent.avro_options(deserializer)["return_record_name"]:
        return None
    if writer_schema.schema_str is None or reader_schema.schema_str is None:
        return None
    writer_json = standalone(_confluent.parsed(deserializer, writer_schema))
    reader_json = standalone(_confluent.parsed(deserializer, reader_schema))
    if writer_json is None or reader_json is None:
        return None
    return writer_json, reader_json, (), ""


def columnar_writer(serializer: Any, schema: Schema | None) -> tuple[str, str] | None:
    """The writer `writer` writes with, as the Avro JSON a columnar encoder takes (`standalone`),
    and no message name; None where fastavro would not write it as Avro binary alone (a bare
    `bytes` schema is written as the bytes themselves)."""
    parsed = _writer_parsed(serializer, schema)
    text = None if _is_bytes(parsed) else standalone(parsed)
    return None if text is None else (text, "")


#: What fastavro adds to a parsed schema's top (no Avro attributes).
_FASTAVRO_KEYS = ("__fastavro_parsed", "__named_schemas")
#: The Avro types that define a name.
_NAMED = frozenset({"record", "error", "enum", "fixed"})


def standalone(parsed: Any) -> str | None:
    """A parsed schema (fastavro's, as `_confluent.parsed` / `_confluent.parse_avro` give it) as
    one self-contained Avro JSON text, for decoders that take no named types from elsewhere: in the
    parsed form every named type, the references' included, is written out at its first use under
    its full name, and named by it after. The definitions are written back as a name and its
    namespace (arrow-avro files a dotted `name` under the enclosing namespace, where the full
    name's uses do not find it). None where full names cannot say which type is meant: a type of
    the null namespace beside namespaced ones (a name without a dot is resolved in the enclosing
    namespace, so `Plain` inside `app.Order` would read as `app.Plain`)."""
    names: list[str] = []

    def written(node: Any) -> Any:
        if isinstance(node, list):
            return [written(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: value if key == "default" else written(value) for key, value in node.items()}
        kind, name = node.get("type"), node.get("name")
        if isinstance(kind, str) and kind in _NAMED and isinstance(name, str):
            names.append(name)
            namespace, _, short = name.rpartition(".")
            if namespace:
                out["name"], out["namespace"] = short, namespace
        return out

    if isinstance(parsed, dict):
        parsed = {key: value for key, value in parsed.items() if key not in _FASTAVRO_KEYS}
    text = json.dumps(written(parsed))
    if len({"." in name for name in names}) > 1:
        return None
    return text


def field_walk(serde: Any, schema: Schema | None) -> FieldWalk | None:
    """How field rules walk the registered schema (rules only come with a registered one)."""
    return None if schema is None else avro_walk(_confluent.parsed(serde, schema))


def read_check(deserializer: Any, reader_schema: Schema) -> None:
    """Nothing to check once fastavro has read a value."""
    return None


def checked_reader(deserializer: Any, reader_schema: Schema, read: Any, check: Any) -> None:
    """No check to join to the read (`read_check`)."""
    return None


def pool(serde: Any) -> None:
    """Avro values carry no descriptor pool (CEL sees them as plain values)."""
    return None


def guard(deserializer: Any, writer_schema: Schema, limits: DecodeLimits) -> Guard:
    """What a payload of `writer_schema` must pass before fastavro reads it (`limits.py`)."""
    return avro_guard(_confluent.parsed(deserializer, writer_schema), limits)
