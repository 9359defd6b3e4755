"""JSON lines to values and back, for the console producer and consumer.

Avro and JSON Schema values are plain JSON objects, as a Python producer sends them: a nullable
field is `"x"` or `null`, not Avro's tagged `{"string": "x"}`. Protobuf values use Protobuf's
JSON mapping (field names as in the `.proto` file; camelCase names are accepted too). Key/value
records are `{"key": ..., "value": ...}`.
"""

from __future__ import annotations

import datetime
import decimal
import json
import sys
import uuid
from typing import Any

import fastavro
from google.protobuf import json_format

from .._signal import InternalSignal
from ..schema import KeyValue


class RecordError(InternalSignal):
    """Why one line is not a record of the schema; printed with its line number."""


def parse_json(line: str) -> Any:
    """The line's JSON document. An error names the column, never the line's text: a record that
    is not valid JSON may still hold a field's secret or personal value."""
    try:
        return json.loads(line.rstrip("\r\n"))
    except json.JSONDecodeError as error:
        raise RecordError(f"not valid JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise RecordError(
            f"nested deeper than Python's recursion limit ({sys.getrecursionlimit()} levels)"
        ) from None


def decode_line(raw: bytes) -> str:
    """A line of input as text; an error names the first byte that is not UTF-8, not the text."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RecordError(
            f"not UTF-8 text: byte 0x{raw[error.start]:02x} at byte {error.start + 1} ({error.reason})"
        ) from None


class PlainCodec:
    """Avro and JSON Schema values: the parsed JSON goes to the serializer, which checks it."""

    def value(self, document: Any) -> Any:
        return document

    def document(self, value: Any) -> Any:
        return value


class AvroCodec(PlainCodec):
    """Avro values, checked for fields the schema does not have before the serializer sees them:
    fastavro drops them silently, and a misspelled field name would then be sent as its default
    (or fail as missing, far from the typo)."""

    def __init__(self, schema_text: str) -> None:
        try:
            self._schema: Any = fastavro.parse_schema(json.loads(schema_text), _write_hint=False)
        except Exception:  # named types from schema references: the serializer resolves them
            self._schema = None
        self._names = _named_types(self._schema, {})

    def value(self, document: Any) -> Any:
        if self._schema is not None:
            record = isinstance(self._schema, dict) and self._schema.get("type") == "record"
            if record and not isinstance(document, dict):
                kind = type(document).__name__.replace("list", "array").replace("NoneType", "null")
                raise RecordError(f"a {self._schema['name']} record is a JSON object, not a JSON {kind}")
            extra = _extra_field(document, self._schema, self._names, "")
            if extra is not None:
                raise RecordError(extra)
        return document


def _named_types(schema: Any, names: dict[str, Any]) -> dict[str, Any]:
    """Every named type of a parsed schema by its full name (later uses name it by a string)."""
    if isinstance(schema, list):
        for branch in schema:
            _named_types(branch, names)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "error", "enum", "fixed"):
            names[schema["name"]] = schema
        for field in schema.get("fields", ()):
            _named_types(field["type"], names)
        for key in ("items", "values"):
            if key in schema:
                _named_types(schema[key], names)
    return names


def _extra_field(value: Any, schema: Any, names: dict[str, Any], path: str) -> str | None:
    """Where `value` has a record field `schema` does not define, as an error, or None."""
    schema = names.get(schema, schema) if isinstance(schema, str) else schema
    if isinstance(schema, list):  # a union: a dict fits if one of its record branches takes it
        records = [names.get(b, b) if isinstance(b, str) else b for b in schema]
        records = [b for b in records if isinstance(b, dict) and b.get("type") in ("record", "error")]
        if not isinstance(value, dict) or not records:
            return _extra_field(value, next((b for b in records), None), names, path)
        reasons = [_extra_field(value, branch, names, path) for branch in records]
        return None if None in reasons else reasons[0]
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    items: list[tuple[Any, Any, str]] = []
    if kind in ("record", "error") and isinstance(value, dict):
        fields = {field["name"]: field["type"] for field in schema["fields"]}
        for key in value:
            if key not in fields:
                known = ", ".join(fields) or "none"
                return f"field {path}{key} is not in the schema (record {schema['name']} has: {known})"
        items = [(item, fields[key], f"{path}{key}.") for key, item in value.items()]
    elif kind == "array" and isinstance(value, list):
        items = [(item, schema["items"], f"{path.rstrip('.')}[{i}].") for i, item in enumerate(value)]
    elif kind == "map" and isinstance(value, dict):
        items = [(item, schema["values"], f"{path}{key}.") for key, item in value.items()]
    for item, item_schema, item_path in items:
        reason = _extra_field(item, item_schema, names, item_path)
        if reason is not None:
            return reason
    return None


class ProtobufCodec:
    """Values of a Protobuf message class, through Protobuf's JSON mapping."""

    def __init__(self, message_class: Any) -> None:
        self._message_class = message_class

    def value(self, document: Any) -> Any:
        try:
            return json_format.ParseDict(document, self._message_class())
        except json_format.ParseError as error:
            raise RecordError(f"not a {self._message_class.DESCRIPTOR.full_name}: {error}") from None

    def document(self, value: Any) -> Any:
        return json_format.MessageToDict(
            value, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )


Codec = PlainCodec | AvroCodec | ProtobufCodec


class RecordFormat:
    """A line of input to the value `Producer.send` takes, and a decoded value to a line."""

    def __init__(self, value: Codec, key: Codec | None = None) -> None:
        self._value = value
        self._key = key

    @property
    def key_value(self) -> bool:
        return self._key is not None

    def read(self, line: str) -> Any:
        document = parse_json(line)
        if self._key is None:
            return self._value.value(document)
        if not isinstance(document, dict) or set(document) != {"key", "value"}:
            raise RecordError('a key/value record is an object {"key": ..., "value": ...}')
        return KeyValue(self._key.value(document["key"]), self._value.value(document["value"]))

    def read_key_value(self, key: str, value: str) -> KeyValue:
        """A key/value record given as two JSON texts (`--parse-key`)."""
        assert self._key is not None
        return KeyValue(self._key.value(parse_json(key)), self._value.value(parse_json(value)))

    def document(self, value: Any) -> Any:
        if self._key is not None and isinstance(value, KeyValue):
            return {"key": self._key.document(value.key), "value": self._value.document(value.value)}
        return self._value.document(value)


def dumps(document: Any) -> str:
    """One JSON line; what JSON has no type for is written as Avro's JSON encoding writes it where
    there is one (bytes as a string of code points 0-255), else as text (decimals, dates, UUIDs)."""
    return json.dumps(document, ensure_ascii=False, separators=(", ", ": "), default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if hasattr(value, "DESCRIPTOR"):  # a Protobuf message inside a plain value
        return json_format.MessageToDict(value, preserving_proto_field_name=True)
    return str(value)
