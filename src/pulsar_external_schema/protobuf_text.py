"""Render a Protobuf file descriptor as `.proto` source text.

confluent-kafka's Python serializer registers Protobuf schemas as a base64 `FileDescriptorProto`,
a form only Confluent Schema Registry parses. The Java serializer registers `.proto` text, which
every Confluent-compatible registry (AxonOps included) accepts and shows to people, so we
register that: rendered from the descriptor of the generated class, declaration order kept (the
message index array in the schema id depends on it).

Covers proto2 and proto3 files: messages (nested), enums, fields with labels, defaults and
options, maps, oneofs, proto3 `optional`, reserved ranges and names, extensions, services, file
options and custom options (rendered in aggregate syntax). Editions files are not supported.

The other way, the registry's `.proto` text compiled in this process into the `serialized` form
(a base64 `FileDescriptorProto`) that confluent-kafka's Protobuf serdes ask the registry for:
registries answer that form differently or not at all (AxonOps v0.2.1 answers 500 for a schema
that declares an enum; Apicurio gives raw bytes), and every registry keeps the text. The
registry clients `new_client` makes answer `fmt="serialized"` so, from the text they fetch (and
the texts of its references, by the names it imports them with), compiled by grpcio-tools'
protoc (`_protoc.py`) with the well-known types and Confluent's own files (rendered here from
confluent-kafka's descriptors): no request for the serialized form is ever made.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaRegistryClient
from google.protobuf import descriptor_pb2, text_encoding, text_format, unknown_fields
from google.protobuf.message import DecodeError, Message

from . import _protoc
from ._confluent import MockRegistryClient
from .errors import SchemaParseError, UnsupportedProtobufError
from .registry import new_client as _new_client

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


# -- the registry's text compiled into the serialized form ---------------------------------------

#: The format confluent-kafka's Protobuf serdes ask the registry for.
SERIALIZED = "serialized"
#: The compiled file's import path: no reference is named so.
_MAIN = "__registered__.proto"
#: Compiled forms kept per client (a bound: schemas in use, not an eviction policy).
_KEPT = 1024


def compile_registered(
    schema: Schema, text_of: Callable[[str, int], Schema]
) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor of a registered Protobuf schema's `.proto` text; `text_of(subject, version)`
    gives a referenced version (in text), fetched once per import path. Raises `SchemaParseError`
    where the texts do not compile."""
    files = dict(_confluent_sources())
    seen: set[str] = set()

    def walk(references: Any) -> None:
        for reference in references or ():
            name = reference.name or ""
            if name in seen:
                continue
            seen.add(name)
            referenced = text_of(reference.subject, reference.version)
            files[name] = referenced.schema_str or ""
            walk(referenced.references)

    walk(schema.references)
    files[_MAIN] = schema.schema_str or ""
    try:
        return _protoc.compile_file(_MAIN, files)
    except _protoc.ProtocError as error:
        raise SchemaParseError(f"the registered .proto text does not compile: {error}") from None


_CONFLUENT_SOURCES: list[tuple[str, str]] = []


def _confluent_sources() -> list[tuple[str, str]]:
    """Confluent's own `.proto` files (field metadata, decimals, variants), which schemas import
    and confluent-kafka's pools hold, rendered from its descriptors once."""
    if not _CONFLUENT_SOURCES:
        from confluent_kafka.schema_registry.confluent import meta_pb2
        from confluent_kafka.schema_registry.confluent.type import decimal_pb2, variant_pb2
        from confluent_kafka.schema_registry.confluent.types import decimal_pb2 as legacy_decimal_pb2

        for module in (meta_pb2, decimal_pb2, variant_pb2, legacy_decimal_pb2):
            proto = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
            _CONFLUENT_SOURCES.append((proto.name, render_proto(proto)))
    return _CONFLUENT_SOURCES


def _is_serialized(text: str) -> bool:
    """Whether a schema's text is already the serialized form (base64 of a descriptor; `.proto`
    text is never base64: spaces, quotes, semicolons)."""
    try:
        descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError, DecodeError):
        return False
    return True


class _CompilesProtobuf:
    """The registry calls that take `fmt`, answering `fmt="serialized"` for a Protobuf schema with
    the form compiled from the text the client fetches (and caches) instead; every other call and
    format as the client answers them."""

    def _setup(self) -> None:
        self._compiled: dict[Schema, Schema] = {}  # as fetched -> serialized
        self._compiled_lock = threading.Lock()

    def get_schema(
        self,
        schema_id: int,
        subject_name: str | None = None,
        fmt: str | None = None,
        reference_format: str | None = None,
    ) -> Schema:
        if fmt != SERIALIZED:
            return super().get_schema(schema_id, subject_name, fmt, reference_format)  # type: ignore[misc, no-any-return]
        return self._serialized(super().get_schema(schema_id, subject_name, None, reference_format))  # type: ignore[misc]

    def get_schema_by_guid(self, guid: str, fmt: str | None = None) -> Schema:
        if fmt != SERIALIZED:
            return super().get_schema_by_guid(guid, fmt)  # type: ignore[misc, no-any-return]
        return self._serialized(super().get_schema_by_guid(guid, None))  # type: ignore[misc]

    def get_version(
        self, subject_name: str, version: Any = "latest", deleted: bool = False, fmt: str | None = None
    ) -> RegisteredSchema:
        if fmt != SERIALIZED:
            return super().get_version(subject_name, version, deleted, fmt)  # type: ignore[misc, no-any-return]
        return self._registered(super().get_version(subject_name, version, deleted, None))  # type: ignore[misc]

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        if fmt != SERIALIZED:
            return super().get_latest_version(subject_name, fmt)  # type: ignore[misc, no-any-return]
        return self._registered(super().get_latest_version(subject_name, None))  # type: ignore[misc]

    def get_latest_with_metadata(
        self, subject_name: str, metadata: dict[str, str], deleted: bool = False, fmt: str | None = None
    ) -> RegisteredSchema:
        if fmt != SERIALIZED:
            return super().get_latest_with_metadata(subject_name, metadata, deleted, fmt)  # type: ignore[misc, no-any-return]
        return self._registered(super().get_latest_with_metadata(subject_name, metadata, deleted, None))  # type: ignore[misc]

    def _registered(self, found: RegisteredSchema) -> RegisteredSchema:
        schema = self._serialized(found.schema)
        if schema is found.schema:
            return found
        return RegisteredSchema(
            subject=found.subject,
            version=found.version,
            schema_id=found.schema_id,
            guid=found.guid,
            schema=schema,
        )

    def _serialized(self, schema: Schema) -> Schema:
        """The schema in the serialized form, kept by the schema as fetched (one object for each,
        as the client's cache keeps one: the serdes' parsed-schema caches key by it)."""
        if schema.schema_type != "PROTOBUF":
            return schema
        with self._compiled_lock:
            kept = self._compiled.get(schema)
        if kept is not None:
            return kept
        text = schema.schema_str or ""
        if _is_serialized(text):
            made = schema
        else:
            proto = compile_registered(schema, self._text_of)
            compiled = base64.b64encode(proto.SerializeToString()).decode("ascii")
            made = Schema(compiled, "PROTOBUF", schema.references, schema.metadata, schema.rule_set)
        with self._compiled_lock:
            if len(self._compiled) >= _KEPT:
                self._compiled.clear()
            self._compiled[schema] = made
        return made

    def _text_of(self, subject: str, version: int) -> Schema:
        found: RegisteredSchema = super().get_version(subject, version, True, None)  # type: ignore[misc]
        return found.schema


class ProtobufTextClient(_CompilesProtobuf, SchemaRegistryClient):
    """confluent-kafka's registry client, Protobuf's serialized form compiled here."""

    def __init__(self, conf: dict[str, Any]) -> None:
        super().__init__(conf)
        self._setup()


class ProtobufTextMockClient(_CompilesProtobuf, MockRegistryClient):
    """confluent-kafka's in-memory registry (`mock://`), likewise."""

    def __init__(self, conf: dict[str, Any]) -> None:
        super().__init__(conf)
        self._setup()


def new_client(registry: dict[str, Any]) -> SchemaRegistryClient:
    """`registry.new_client`'s client for a config's `registry` section, answering Protobuf's
    serialized form from the registry's text."""
    return _new_client(registry, ProtobufTextMockClient, ProtobufTextClient)
