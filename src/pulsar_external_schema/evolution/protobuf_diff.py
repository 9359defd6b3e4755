"""Protobuf compatibility on file descriptors: field numbers, wire types, labels and oneofs.

Confluent's Protobuf rules, checked on `FileDescriptorProto`s (from a generated class, or a
serialized descriptor as confluent-kafka registers): a field is its number; renaming it, adding or
removing an optional field, adding a message or an enum value is compatible; changing a field's
wire-level kind is not (int32/int64/uint32/uint64/bool/enum share one kind, sint32/sint64 another,
string/bytes, fixed32/sfixed32, fixed64/sfixed64, float, double), nor a scalar <-> message <-> map
change, a message field's type, a numeric field's repeated label, the package, a removed message,
or moving fields into a oneof. `.proto` text is not parsed here: give the descriptor.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError, Message

from .differences import Difference

F = descriptor_pb2.FieldDescriptorProto

COMPATIBLE = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
        "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
    }
)

_SCALAR_KINDS = {
    F.TYPE_INT32: "number",
    F.TYPE_INT64: "number",
    F.TYPE_UINT32: "number",
    F.TYPE_UINT64: "number",
    F.TYPE_BOOL: "number",
    F.TYPE_ENUM: "number",
    F.TYPE_SINT32: "signed number",
    F.TYPE_SINT64: "signed number",
    F.TYPE_STRING: "string or bytes",
    F.TYPE_BYTES: "string or bytes",
    F.TYPE_FIXED32: "fixed32",
    F.TYPE_SFIXED32: "fixed32",
    F.TYPE_FIXED64: "fixed64",
    F.TYPE_SFIXED64: "fixed64",
    F.TYPE_FLOAT: "float",
    F.TYPE_DOUBLE: "double",
}

_MEANINGS = {
    "PACKAGE_CHANGED": "the package changed, so every message has another full name",
    "MESSAGE_REMOVED": "the reader has no message of this name",
    "FIELD_KIND_CHANGED": "the field changed between scalar, message and map",
    "FIELD_SCALAR_KIND_CHANGED": "the field's scalar type is not wire-compatible",
    "FIELD_NAMED_TYPE_CHANGED": "the field refers to another message type",
    "FIELD_NUMERIC_LABEL_CHANGED": "a numeric field changed between repeated and singular",
    "REQUIRED_FIELD_ADDED": "the reader requires a field the writer may not have written",
    "REQUIRED_FIELD_REMOVED": "the writer required a field the reader no longer has",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "a field moved into an existing oneof",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "several existing fields moved into one new oneof",
    "ONEOF_FIELD_REMOVED": "a field left a oneof",
}

ProtobufInput = descriptor_pb2.FileDescriptorProto | type[Message] | bytes | str


def file_descriptor(schema: ProtobufInput) -> descriptor_pb2.FileDescriptorProto:
    """A `FileDescriptorProto` from itself, a generated class, or its serialized (or base64) form."""
    if isinstance(schema, descriptor_pb2.FileDescriptorProto):
        return schema
    if isinstance(schema, type) and issubclass(schema, Message):
        proto = descriptor_pb2.FileDescriptorProto()
        schema.DESCRIPTOR.file.CopyToProto(proto)
        return proto
    raw = schema
    if isinstance(raw, str):
        try:
            raw = base64.b64decode(raw, validate=True)
        except ValueError:
            raise ValueError(
                "a Protobuf schema in text form cannot be checked here; pass the generated class or "
                "its FileDescriptorProto"
            ) from None
    proto = descriptor_pb2.FileDescriptorProto()
    try:
        proto.ParseFromString(raw)
    except DecodeError as error:
        raise ValueError(f"not a serialized FileDescriptorProto: {error}") from None
    return proto


def protobuf_differences(writer: ProtobufInput, reader: ProtobufInput) -> list[Difference]:
    """Every difference from the writer's file to the reader's."""
    old, new = file_descriptor(writer), file_descriptor(reader)
    found: list[tuple[str, str]] = []
    if old.package != new.package:
        found.append(("PACKAGE_CHANGED", old.package or "(no package)"))
    old_messages, new_messages = dict(_messages(old)), dict(_messages(new))
    for name, message in old_messages.items():
        if name not in new_messages:
            found.append(("MESSAGE_REMOVED", name))
        else:
            _compare_message(found, name, message, new_messages[name])
    found.extend(("MESSAGE_ADDED", name) for name in new_messages if name not in old_messages)
    old_enums, new_enums = dict(_enums(old)), dict(_enums(new))
    for name, enum in old_enums.items():
        if name not in new_enums:
            found.append(("ENUM_REMOVED", name))
            continue
        old_values = {v.number: v.name for v in enum.value}
        new_values = {v.number: v.name for v in new_enums[name].value}
        for number, value in old_values.items():
            if number not in new_values:
                found.append(("ENUM_CONST_REMOVED", f"{name}.{value}"))
            elif new_values[number] != value:
                found.append(("ENUM_CONST_CHANGED", f"{name}.{value}"))
        found.extend(
            ("ENUM_CONST_ADDED", f"{name}.{value}") for n, value in new_values.items() if n not in old_values
        )
    found.extend(("ENUM_ADDED", name) for name in new_enums if name not in old_enums)
    return [
        Difference(kind, path, _MEANINGS.get(kind, kind.lower().replace("_", " "))) for kind, path in found
    ]


def protobuf_incompatibilities(reader: ProtobufInput, writer: ProtobufInput) -> list[Difference]:
    """What stops `reader` from reading data written with `writer` (empty: it can)."""
    return [d for d in protobuf_differences(writer, reader) if d.kind not in COMPATIBLE]


def _messages(
    file: descriptor_pb2.FileDescriptorProto,
) -> Iterator[tuple[str, descriptor_pb2.DescriptorProto]]:
    def walk(prefix: str, messages: Any) -> Iterator[tuple[str, descriptor_pb2.DescriptorProto]]:
        for message in messages:
            if message.options.map_entry:
                continue
            name = f"{prefix}{message.name}"
            yield name, message
            yield from walk(f"{name}.", message.nested_type)

    yield from walk("", file.message_type)


def _enums(
    file: descriptor_pb2.FileDescriptorProto,
) -> Iterator[tuple[str, descriptor_pb2.EnumDescriptorProto]]:
    for enum in file.enum_type:
        yield enum.name, enum
    for name, message in _messages(file):
        for enum in message.enum_type:
            yield f"{name}.{enum.name}", enum


def _kind(field: descriptor_pb2.FieldDescriptorProto, message: descriptor_pb2.DescriptorProto) -> str:
    if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        entry = field.type_name.rsplit(".", 1)[-1]
        if any(n.name == entry and n.options.map_entry for n in message.nested_type):
            return "map"
        return "message"
    return "scalar"


def _oneof(field: descriptor_pb2.FieldDescriptorProto, message: descriptor_pb2.DescriptorProto) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return str(message.oneof_decl[field.oneof_index].name)


def _compare_message(
    found: list[tuple[str, str]],
    name: str,
    old: descriptor_pb2.DescriptorProto,
    new: descriptor_pb2.DescriptorProto,
) -> None:
    old_fields = {f.number: f for f in old.field}
    new_fields = {f.number: f for f in new.field}
    old_oneofs = {_oneof(f, old) for f in old.field} - {None}
    moved_into: dict[str, int] = {}
    for number, field in old_fields.items():
        path = f"{name}.{field.name}"
        other = new_fields.get(number)
        if other is None:
            if _oneof(field, old) is not None:
                found.append(("ONEOF_FIELD_REMOVED", path))
            found.append(
                ("REQUIRED_FIELD_REMOVED" if field.label == F.LABEL_REQUIRED else "FIELD_REMOVED", path)
            )
            continue
        before, after = _oneof(field, old), _oneof(other, new)
        if before is None and after is not None:
            if after in old_oneofs:
                found.append(("FIELD_MOVED_TO_EXISTING_ONEOF", path))
            else:
                moved_into[after] = moved_into.get(after, 0) + 1
        elif before is not None and after is None:
            found.append(("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", path))
        if field.name != other.name:
            found.append(("FIELD_NAME_CHANGED", path))
        kind, other_kind = _kind(field, old), _kind(other, new)
        if kind != other_kind:
            found.append(("FIELD_KIND_CHANGED", path))
        elif kind == "scalar":
            scalar, other_scalar = _SCALAR_KINDS.get(field.type), _SCALAR_KINDS.get(other.type)
            if scalar != other_scalar:
                found.append(("FIELD_SCALAR_KIND_CHANGED", path))
            elif (field.label == F.LABEL_REPEATED) != (other.label == F.LABEL_REPEATED):
                found.append(
                    (
                        "FIELD_STRING_OR_BYTES_LABEL_CHANGED"
                        if scalar == "string or bytes"
                        else "FIELD_NUMERIC_LABEL_CHANGED",
                        path,
                    )
                )
        elif kind == "message" and field.type_name.rsplit(".", 1)[-1] != other.type_name.rsplit(".", 1)[-1]:
            found.append(("FIELD_NAMED_TYPE_CHANGED", path))
    found.extend(
        ("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"{name}.{oneof}") for oneof, n in moved_into.items() if n > 1
    )
    new_oneofs = {_oneof(f, new) for f in new.field} - {None}
    found.extend(("ONEOF_ADDED", f"{name}.{oneof}") for oneof in sorted(new_oneofs - old_oneofs, key=str))
    found.extend(("ONEOF_REMOVED", f"{name}.{oneof}") for oneof in sorted(old_oneofs - new_oneofs, key=str))
    for number, field in new_fields.items():
        if number in old_fields:
            continue
        path = f"{name}.{field.name}"
        if _oneof(field, new) is not None:
            found.append(("ONEOF_FIELD_ADDED", path))
        found.append(("REQUIRED_FIELD_ADDED" if field.label == F.LABEL_REQUIRED else "FIELD_ADDED", path))
