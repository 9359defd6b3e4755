"""Arrow's values as the Python values a producer takes (`python_values`), a value Python cannot
hold refused by name (`held`), and rows of a Protobuf subject as its messages
(`protobuf_converter`): the conversions of a write's Python path (`rows.TaskWriter`)."""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ..errors import ValueOutsideSchemaError
from ..tasks.options import SourceOptions

__all__ = [
    "NoPythonForm",
    "held",
    "protobuf_converter",
    "protobuf_jsonable",
    "protobuf_message",
    "python_values",
]


class NoPythonForm:
    """A row's value Python cannot hold (a time past the year 9999): `held` refuses it."""

    def __init__(self, why: str) -> None:
        self.why = why


def held(value: Any, topic: str, schema: Any) -> Any:
    """A value of `python_values` to be written to `topic` with `schema`, or the refusal, naming
    the topic and subject, of one it could not convert."""
    if type(value) is NoPythonForm:
        raise ValueOutsideSchemaError(
            f"refused to write a value outside the schema's types: the row's value has no Python form "
            f"({value.why})",
            path="",
            value_type="pyarrow value",
            schema_type="a value Python can hold",
            topic=topic,
            subject=schema.subject(topic),
        )
    return value


def python_values(column: pa.Array) -> list[Any]:
    """A `value` column's rows as the values a producer takes: Arrow's Python form, with maps as
    dicts (the last of a repeated key, as a dict keeps it). Only where the type has maps is a row
    walked again (pyarrow's own `maps_as_pydicts` costs several times the conversion). A row that
    has no Python form is a `NoPythonForm` (`held` refuses it)."""
    try:
        rows: list[Any] = column.to_pylist()
    except (OverflowError, ValueError, KeyError, pa.ArrowException):
        rows = [_python_value(column, i) for i in range(len(column))]
    convert = _maps_as_dicts(column.type)
    if convert is None:
        return rows
    return [row if type(row) is NoPythonForm else convert(row) for row in rows]


def _python_value(column: pa.Array, i: int) -> Any:
    try:
        return column[i].as_py()
    except (OverflowError, ValueError, KeyError, pa.ArrowException) as error:
        return NoPythonForm(str(error))


def _maps_as_dicts(kind: pa.DataType) -> Callable[[Any], Any] | None:
    """What turns a value of `kind` with maps (Arrow's key/value pairs) into one with dicts; None
    for a type without maps."""
    if pa.types.is_map(kind):
        item = _maps_as_dicts(kind.item_type)
        if item is None:
            return lambda pairs: None if pairs is None else dict(pairs)
        return lambda pairs: None if pairs is None else {k: item(v) for k, v in pairs}
    if pa.types.is_struct(kind):
        fields = [(kind.field(i).name, _maps_as_dicts(kind.field(i).type)) for i in range(kind.num_fields)]
        changed = [(name, convert) for name, convert in fields if convert is not None]
        if not changed:
            return None

        def struct(row: Any) -> Any:
            if row is None:
                return None
            return {**row, **{name: convert(row[name]) for name, convert in changed}}

        return struct
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        each = _maps_as_dicts(kind.value_type)
        if each is None:
            return None
        return lambda items: None if items is None else [each(v) for v in items]
    return None


def protobuf_converter(options: SourceOptions, topic: str, subject: str | None) -> Any:
    """What makes a row's Python value of `topic` the message protobuf writes (`protobuf_message`)."""
    from ..tasks.schemas import protobuf_class, resolve_reader_schema

    cls = protobuf_class(options, resolve_reader_schema(options, topic))
    return lambda value: protobuf_message(cls, value, topic, subject)


def protobuf_message(cls: Any, value: Any, topic: str | None = None, subject: str | None = None) -> Any:
    """A row's Python value as a message of `cls`, as protobuf's `ParseDict` builds it from the
    value's fields the message has (another field is dropped, as fastavro drops a key its record
    lacks); one it refuses (a number outside its field's range, a NaN, a value of another type,
    a name its enum lacks, two members of a oneof) raises a `ValueOutsideSchemaError` naming the
    field, never the value."""
    from google.protobuf import json_format

    try:
        return json_format.ParseDict(_fields_of(protobuf_jsonable(value), cls.DESCRIPTOR), cls())
    except json_format.ParseError as error:  # its text holds the value: only the field is told
        found = _PARSED_FIELD.search(str(error))
        where = found.group(1) if found else ""
        raise ValueOutsideSchemaError(
            "refused to write a value outside the schema's types: protobuf refused the row's "
            f"value{f' at field {where}' if where else ''} (a number outside its field's range, "
            "a NaN, a value of another type, a name its enum lacks, two members of a oneof)",
            path=where,
            value_type="pyarrow value",
            schema_type=f"Protobuf message {cls.DESCRIPTOR.full_name}",
            topic=topic,
            subject=subject,
        ) from None


#: Where `ParseDict`'s error names the field it refused.
_PARSED_FIELD = re.compile(r"Failed to parse (\w+) field")


def _fields_of(value: Any, message: Any) -> Any:
    """A jsonable message value with only the fields `message` has, at every depth (so that
    `ParseDict` need not ignore unknown fields, which would drop a name an enum lacks too)."""
    if not isinstance(value, dict):
        return value
    kept: dict[str, Any] = {}
    for name, item in value.items():
        field = message.fields_by_name.get(name)
        if field is None:
            continue
        inner = field.message_type
        if inner is not None and inner.GetOptions().map_entry:
            entry_value = inner.fields_by_name["value"].message_type
            if entry_value is not None and isinstance(item, dict):
                item = {k: _fields_of(v, entry_value) for k, v in item.items()}
        elif inner is not None:
            item = [_fields_of(v, inner) for v in item] if isinstance(item, list) else _fields_of(item, inner)
        kept[name] = item
    return kept


def protobuf_jsonable(value: Any) -> Any:
    """A row value as protobuf's `ParseDict` takes it (bytes as base64, times as RFC 3339)."""
    if isinstance(value, dict):
        return {k: protobuf_jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [protobuf_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return value
