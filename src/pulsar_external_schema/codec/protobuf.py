"""Protobuf on the per-message path: the generated class's own `SerializeToString` and
`FromString`, and its descriptor pool for CEL (which sees real proto semantics)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema

from .. import _confluent
from .field_transforms import FieldWalk, protobuf_walk
from .limits import DecodeLimits, Guard, protobuf_guard

SCHEMA_TYPE = "PROTOBUF"
#: The reference wraps protobuf's DecodeError in its own: let it say what failed.
FINAL_ERRORS = False


def writer(serializer: Any, schema: Schema | None) -> Callable[[Any], bytes]:
    message_class = _confluent.protobuf_message_class(serializer)

    def write(message: Any) -> bytes:
        if not isinstance(message, message_class):
            raise TypeError("not a message of the serializer's class")  # the reference says which
        data: bytes = message.SerializeToString()
        return data

    return write


def reader(deserializer: Any, writer_schema: Schema, reader_schema: Schema) -> Callable[[bytes], Any]:
    from_string: Callable[[bytes], Any] = _confluent.protobuf_message_class(deserializer).FromString
    return from_string


def field_walk(serde: Any, schema: Schema | None) -> FieldWalk | None:
    """How field rules walk messages of the serde's class, named as the registered schema names
    them (rules only come with a registered schema)."""
    if schema is None:
        return None
    runtime = _confluent.protobuf_message_class(serde).DESCRIPTOR
    described = _confluent.protobuf_schema_descriptor(serde, schema, runtime.name)
    return None if described is None else protobuf_walk(described, runtime)


def read_check(deserializer: Any, reader_schema: Schema) -> None:
    """Nothing to check once protobuf has parsed a message."""
    return None


def checked_reader(deserializer: Any, reader_schema: Schema, read: Any, check: Any) -> None:
    """No check to join to the read (`read_check`)."""
    return None


def pool(serde: Any) -> Any:
    return _confluent.protobuf_message_class(serde).DESCRIPTOR.file.pool


def guard(deserializer: Any, writer_schema: Schema, limits: DecodeLimits) -> Guard:
    """What a payload must pass before protobuf parses it (`limits.py`)."""
    return protobuf_guard(limits)


def columnar_writer(serializer: Any, schema: Schema | None) -> None:
    """(No columnar encoder of this format.)"""
    return None


#: (No columnar decoder of this format.)
COLUMNAR_CHECKS = False


def columnar_schemas(deserializer: Any, writer_schema: Schema, reader_schema: Schema) -> None:
    """Protobuf messages have no columnar decoder (the native reader reads Avro and JSON Schema)."""
    return None
