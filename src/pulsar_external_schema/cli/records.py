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

from google.protobuf import json_format

from ..schema import KeyValue


class RecordError(Exception):
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


Codec = PlainCodec | ProtobufCodec


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
