"""Render a Protobuf file descriptor as `.proto` source text.

confluent-kafka's Python serializer registers Protobuf schemas as a base64 `FileDescriptorProto`,
a form only Confluent Schema Registry parses. The Java serializer registers `.proto` text, which
every Confluent-compatible registry (AxonOps included) accepts and shows to people, so we
register that: rendered from the descriptor of the generated class, declaration order kept (the
message index array in the schema id depends on it).

Covers proto2 and proto3 files: messages (nested), enums, fields with labels, defaults and
options, maps, oneofs, proto3 `optional`, reserved ranges and names, extensions, services, file
options and custom options (rendered in aggregate syntax). Editions files are not supported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from google.protobuf import descriptor_pb2, text_encoding, text_format, unknown_fields
from google.protobuf.message import Message

from .errors import UnsupportedProtobufError

F = descriptor_pb2.FieldDescriptorProto

_SCALARS = {
    F.TYPE_DOUBLE: "double",
    F.TYPE_FLOAT: "float",
    F.TYPE_INT64: "int64",
    F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32",
    F.TYPE_FIXED64: "fixed64",
    F.TYPE_FIXED32: "fixed32",
    F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes",
    F.TYPE_UINT32: "uint32",
    F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64",
    F.TYPE_SINT32: "sint32",
    F.TYPE_SINT64: "sint64",
}
_MAX_FIELD_NUMBER = 536870911


def file_descriptor_proto(message_type: type[Message]) -> descriptor_pb2.FileDescriptorProto:
    """The `FileDescriptorProto` of the file that defines a generated message class."""
    proto = descriptor_pb2.FileDescriptorProto()
    message_type.DESCRIPTOR.file.CopyToProto(proto)
    return proto


def render_proto(file: descriptor_pb2.FileDescriptorProto) -> str:
    """`.proto` source for `file` that compiles back to an equivalent descriptor."""
    syntax = file.syntax or "proto2"
    if syntax not in ("proto2", "proto3"):
        raise UnsupportedProtobufError(f"{file.name}: syntax {syntax!r} (editions) cannot be rendered")
    out = [f'syntax = "{syntax}";']
    if file.package:
        out.append(f"package {file.package};")
    public, weak = set(file.public_dependency), set(file.weak_dependency)
    for index, dependency in enumerate(file.dependency):
        kind = "public " if index in public else "weak " if index in weak else ""
        out.append(f'import {kind}"{dependency}";')
    out.extend(f"option {option};" for option in _options(file.options))
    for enum in file.enum_type:
        out.extend(_enum(enum, ""))
    for message in file.message_type:
        out.extend(_message(message, "", syntax))
    out.extend(_extensions(file.extension, "", syntax))
    for service in file.service:
        out.extend(_service(service))
    return "\n".join(out) + "\n"


def _options(options: Message) -> list[str]:
    """`name = value` for every option set, custom (extension) options as `(full.name)`."""
    if len(unknown_fields.UnknownFieldSet(options)):
        raise UnsupportedProtobufError(
            f"{type(options).__name__} holds a custom option whose extension is not loaded in Python; "
            "import the generated module that defines it (e.g. confluent's meta_pb2) first"
        )
    rendered: list[str] = []
    for field, value in options.ListFields():
        name = f"({field.full_name})" if field.is_extension else field.name
        values = value if field.is_repeated else [value]
        rendered.extend(f"{name} = {_option_value(field, item)}" for item in values)
    return rendered


def _option_value(field: object, value: object) -> str:
    if isinstance(value, Message):
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, bytes):
        return '"' + text_encoding.CEscape(value, as_utf8=False) + '"'
    enum_type = getattr(field, "enum_type", None)
    if enum_type is not None and isinstance(value, int):
        return str(enum_type.values_by_number[value].name)
    return repr(value)


def _quote(text: str) -> str:
    # CEscape takes str too (the stubs say bytes): with as_utf8 it escapes control characters only.
    return '"' + text_encoding.CEscape(text, as_utf8=True) + '"'  # type: ignore[arg-type]


def _message(message: descriptor_pb2.DescriptorProto, indent: str, syntax: str) -> list[str]:
    inner = indent + "  "
    maps = {nested.name: nested for nested in message.nested_type if nested.options.map_entry}
    out = [f"{indent}message {message.name} {{"]
    out.extend(f"{inner}option {option};" for option in _options(message.options))
    out.extend(_reserved(message.reserved_range, message.reserved_name, inner, end_inclusive=False))
    for enum in message.enum_type:
        out.extend(_enum(enum, inner))
    for nested in message.nested_type:
        if not nested.options.map_entry:
            out.extend(_message(nested, inner, syntax))
    oneofs_done: set[int] = set()
    for field in message.field:
        in_real_oneof = field.HasField("oneof_index") and not field.proto3_optional
        if not in_real_oneof:
            out.append(inner + _field(field, syntax, maps, in_oneof=False))
            continue
        if field.oneof_index in oneofs_done:
            continue
        oneofs_done.add(field.oneof_index)
        oneof = message.oneof_decl[field.oneof_index]
        out.append(f"{inner}oneof {oneof.name} {{")
        out.extend(f"{inner}  option {option};" for option in _options(oneof.options))
        members = [
            f for f in message.field if f.HasField("oneof_index") and f.oneof_index == field.oneof_index
        ]
        out.extend(f"{inner}  " + _field(member, syntax, maps, in_oneof=True) for member in members)
        out.append(f"{inner}}}")
    for extension_range in message.extension_range:
        end = "max" if extension_range.end - 1 >= _MAX_FIELD_NUMBER else str(extension_range.end - 1)
        out.append(f"{inner}extensions {extension_range.start} to {end};")
    out.extend(_extensions(message.extension, inner, syntax))
    out.append(f"{indent}}}")
    return out


def _field(
    field: descriptor_pb2.FieldDescriptorProto,
    syntax: str,
    maps: dict[str, descriptor_pb2.DescriptorProto],
    *,
    in_oneof: bool,
) -> str:
    if field.type == F.TYPE_GROUP:
        raise UnsupportedProtobufError(f"field {field.name}: proto2 groups cannot be rendered")
    map_entry = maps.get(field.type_name.rsplit(".", 1)[-1]) if field.label == F.LABEL_REPEATED else None
    if map_entry is not None and field.type_name.endswith("." + map_entry.name):
        key, value = map_entry.field[0], map_entry.field[1]
        declaration = f"map<{_type(key)}, {_type(value)}> {field.name} = {field.number}"
    else:
        declaration = f"{_label(field, syntax, in_oneof)}{_type(field)} {field.name} = {field.number}"
    options = []
    if field.HasField("default_value"):
        options.append(f"default = {_default(field)}")
    if field.HasField("json_name") and field.json_name != _default_json_name(field.name):
        options.append(f"json_name = {_quote(field.json_name)}")
    options.extend(_options(field.options))
    return declaration + (f" [{', '.join(options)}]" if options else "") + ";"


def _label(field: descriptor_pb2.FieldDescriptorProto, syntax: str, in_oneof: bool) -> str:
    if in_oneof:
        return ""
    if field.label == F.LABEL_REPEATED:
        return "repeated "
    if field.label == F.LABEL_REQUIRED:
        return "required "
    if syntax == "proto2" or field.proto3_optional:
        return "optional "
    return ""


def _type(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type in (F.TYPE_MESSAGE, F.TYPE_ENUM) or field.type_name:
        return field.type_name  # fully qualified with a leading dot: valid, and unambiguous
    return _SCALARS[field.type]


def _default(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type == F.TYPE_STRING:
        return _quote(field.default_value)
    if field.type == F.TYPE_BYTES:
        return f'"{field.default_value}"'  # already C-escaped in the descriptor
    return field.default_value


def _default_json_name(name: str) -> str:
    return re.sub(r"_([a-zA-Z0-9])", lambda m: m.group(1).upper(), name)


def _enum(enum: descriptor_pb2.EnumDescriptorProto, indent: str) -> list[str]:
    inner = indent + "  "
    out = [f"{indent}enum {enum.name} {{"]
    out.extend(f"{inner}option {option};" for option in _options(enum.options))
    out.extend(_reserved(enum.reserved_range, enum.reserved_name, inner, end_inclusive=True))
    for value in enum.value:
        options = _options(value.options)
        suffix = f" [{', '.join(options)}]" if options else ""
        out.append(f"{inner}{value.name} = {value.number}{suffix};")
    out.append(f"{indent}}}")
    return out


def _reserved(
    ranges: Iterable[object], names: Iterable[str], indent: str, *, end_inclusive: bool
) -> list[str]:
    out = []
    parts = []
    for reserved in ranges:
        start, end = reserved.start, reserved.end  # type: ignore[attr-defined]
        last = end if end_inclusive else end - 1
        if last >= _MAX_FIELD_NUMBER or (end_inclusive and last >= 2**31 - 1):
            parts.append(f"{start} to max")
        else:
            parts.append(str(start) if start == last else f"{start} to {last}")
    if parts:
        out.append(f"{indent}reserved {', '.join(parts)};")
    quoted = [_quote(name) for name in names]
    if quoted:
        out.append(f"{indent}reserved {', '.join(quoted)};")
    return out


def _extensions(fields: Iterable[descriptor_pb2.FieldDescriptorProto], indent: str, syntax: str) -> list[str]:
    by_extendee: dict[str, list[descriptor_pb2.FieldDescriptorProto]] = {}
    for field in fields:
        by_extendee.setdefault(field.extendee, []).append(field)
    out = []
    for extendee, members in by_extendee.items():
        out.append(f"{indent}extend {extendee} {{")
        out.extend(f"{indent}  " + _field(member, syntax, {}, in_oneof=False) for member in members)
        out.append(f"{indent}}}")
    return out


def _service(service: descriptor_pb2.ServiceDescriptorProto) -> list[str]:
    out = [f"service {service.name} {{"]
    out.extend(f"  option {option};" for option in _options(service.options))
    for method in service.method:
        client = "stream " if method.client_streaming else ""
        server = "stream " if method.server_streaming else ""
        options = _options(method.options)
        body = " { " + " ".join(f"option {o};" for o in options) + " }" if options else ";"
        out.append(
            f"  rpc {method.name} ({client}{method.input_type}) returns ({server}{method.output_type}){body}"
        )
    out.append("}")
    return out
