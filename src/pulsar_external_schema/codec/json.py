"""JSON Schema on the per-message path: the serde's own `json.dumps`/`json.loads` and its
validator, built once per schema.

As confluent-kafka's JSON serdes: a value is validated against the writer schema before it is
written (when validation is on), and a decoded value against the reader schema.

Where the native extension is installed (`_native.py`), a validated write, and a read whose value
goes to the check with no READ rule between, is one call of its `JsonCodec`: the check of the
value in place, and orjson's `dumps`/`loads` (json_validation.py). It hands what it is not sure
of (values other than plain JSON, values the schema refuses, payloads orjson may read otherwise
than `json`) to the Python functions below, which decide and word it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from confluent_kafka.schema_registry import Schema

from .. import _confluent, _native
from .field_transforms import FieldWalk, json_walk
from .limits import DecodeLimits, Guard, json_guard
from .value_checks import json_dumps, json_loads

SCHEMA_TYPE = "JSON"
#: The reference wraps validation errors in its own: let it say what failed.
FINAL_ERRORS = False


def _validator(serde: Any, schema: Schema | None, parsed: Any) -> Any:
    parsed_schema, refs = parsed
    if schema is None or parsed_schema is None or refs is None:
        return None
    return _confluent.json_validator(serde, schema, parsed_schema, refs)


def writer(serializer: Any, schema: Schema | None) -> Callable[[Any], bytes]:
    encode, _, validate = _confluent.json_functions(serializer)
    if schema is None:
        validator = _validator(serializer, *_confluent.local_schema(serializer))
    else:
        validator = _validator(serializer, schema, _confluent.parsed(serializer, schema))
    check = validator.validate if validate and validator is not None else None

    def write(value: Any) -> bytes:
        if check is not None:
            check(value)
        text = encode(value)
        return text if type(text) is bytes else text.encode("utf8") if isinstance(text, str) else bytes(text)

    native = _native_codec(validator if check is not None and encode is json_dumps else None, write=write)
    return write if native is None else native.write


def reader(deserializer: Any, writer_schema: Schema, reader_schema: Schema) -> Callable[[bytes], Any]:
    decode: Callable[[bytes], Any] = _confluent.json_functions(deserializer)[1]
    return decode


def read_check(deserializer: Any, reader_schema: Schema) -> Callable[[Any], Any] | None:
    """The last step of a read: the value, as the READ rules left it, against the reader schema."""
    validate = _confluent.json_functions(deserializer)[2]
    validator = _validator(deserializer, reader_schema, _confluent.parsed(deserializer, reader_schema))
    if not validate or validator is None:
        return None
    check = validator.validate

    def validated(value: Any) -> Any:
        check(value)
        return value

    return validated


def checked_reader(
    deserializer: Any, reader_schema: Schema, read: Callable[[bytes], Any], check: Callable[[Any], Any]
) -> Callable[[bytes], Any] | None:
    """`check(read(payload))` in one call, where the native extension has the reader schema's
    check and `read` is `json_loads`; else None."""
    if read is not json_loads:
        return None
    validator = _validator(deserializer, reader_schema, _confluent.parsed(deserializer, reader_schema))

    def read_otherwise(payload: bytes) -> Any:
        return check(read(payload))

    native = _native_codec(validator, read=read_otherwise)
    return None if native is None else native.read


def _native_codec(validator: Any, *, write: Any = None, read: Any = None) -> Any:
    """The extension's `JsonCodec` over `validator`'s native check, with the Python `write` and
    `read` for what it leaves; None without one."""
    check = getattr(validator, "native", None)
    module = _native.extension() if check is not None else None
    if module is None:
        return None
    return module.JsonCodec(
        check, loads=orjson.loads, dumps=orjson.dumps, read_otherwise=read, write_otherwise=write
    )


def field_walk(serde: Any, schema: Schema | None) -> FieldWalk | None:
    """How field rules walk the registered schema (rules only come with a registered one)."""
    return None if schema is None else json_walk(_confluent.parsed(serde, schema)[0])


def pool(serde: Any) -> None:
    return None


def guard(deserializer: Any, writer_schema: Schema, limits: DecodeLimits) -> Guard:
    """What a payload must pass before `json.loads` reads it (`limits.py`)."""
    return json_guard(limits)


def columnar_writer(serializer: Any, schema: Schema | None) -> None:
    """(No columnar encoder of this format: its values are written one by one.)"""
    return None


#: A columnar decoder of this format checks each value against the reader schema itself.
COLUMNAR_CHECKS = True


def columnar_schemas(
    deserializer: Any, writer_schema: Schema, reader_schema: Schema
) -> tuple[str, str, tuple[tuple[str, str], ...], str] | None:
    """(schema, schema, references, base URI) of the reader schema's check, as the native reader
    builds it (what the extension's check of the per-message path is built from), where the
    values the reader gives are the JSON text's own (`json_loads`, validated, no `from_dict`);
    else None."""
    _, decode, validate = _confluent.json_functions(deserializer)
    if decode is not json_loads or not validate:
        return None
    validator = _validator(deserializer, reader_schema, _confluent.parsed(deserializer, reader_schema))
    source = getattr(validator, "native_source", None)
    if source is None:
        return None
    return source[0], source[0], source[1], source[2]
