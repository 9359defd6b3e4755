"""Protobuf on the per-message path: the generated class's own `SerializeToString` and
`FromString`, and its descriptor pool for CEL (which sees real proto semantics)."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema
from google.protobuf import descriptor_pb2

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


def columnar_writer(serializer: Any, schema: Schema | None) -> tuple[str, str]:
    """The serializer's message as a columnar encoder (`write_table`'s native one) takes it: its
    class's file and those it imports (`descriptor_set`), and its full name."""
    message = _confluent.protobuf_message_class(serializer).DESCRIPTOR
    return descriptor_set(message.file), message.full_name


#: A columnar decoder reads the message as `FromString` does; there is no check to run after.
COLUMNAR_CHECKS = False


def columnar_schemas(
    deserializer: Any, writer_schema: Schema, reader_schema: Schema
) -> tuple[str, str, tuple[tuple[str, str], ...], str] | None:
    """(the descriptor set, the message, ((the message, its indexes in the writer's file),), no
    base URI) as a columnar decoder (the native reader) takes them: the deserializer's class's
    file and those it imports, as one `FileDescriptorSet` in base64, and the class's full name,
    which it reads every payload as (`reader`). The indexes are the Confluent message indexes,
    in hex, that payloads of this message carry in the writer's file; None where that file has
    no message of the class's name (its payloads take `decode`)."""
    message = _confluent.protobuf_message_class(deserializer).DESCRIPTOR
    file_proto, _ = _confluent.parsed(deserializer, writer_schema)
    path = message_path(file_proto, message.full_name)
    if path is None:
        return None
    indexes = _confluent.message_indexes(path).hex()
    return descriptor_set(message.file), message.full_name, ((message.full_name, indexes),), ""


def message_path(file_proto: descriptor_pb2.FileDescriptorProto, full_name: str) -> list[int] | None:
    """Where message `full_name` is in a file (its index among the file's messages, then among
    that one's nested messages...), as Confluent's message indexes say it; None: not there."""
    prefix = f"{file_proto.package}." if file_proto.package else ""

    def find(messages: Any, scope: str) -> list[int] | None:
        for i, message in enumerate(messages):
            name = f"{scope}{message.name}"
            if name == full_name:
                return [i]
            if full_name.startswith(f"{name}."):
                inner = find(message.nested_type, f"{name}.")
                if inner is not None:
                    return [i, *inner]
        return None

    return find(file_proto.message_type, prefix)


@functools.lru_cache(maxsize=64)
def descriptor_set(file: Any) -> str:
    """A file and those it imports, dependencies first, as one `FileDescriptorSet` in base64 (the
    encoding of a registry's serialized form)."""
    ordered: list[Any] = []
    seen: set[str] = set()

    def add(current: Any) -> None:
        if current.name in seen:
            return
        seen.add(current.name)
        for dependency in current.dependencies:
            add(dependency)
        ordered.append(current)

    add(file)
    files = descriptor_pb2.FileDescriptorSet()
    for each in ordered:
        files.file.add().MergeFromString(each.serialized_pb)
    return base64.b64encode(files.SerializeToString()).decode("ascii")
