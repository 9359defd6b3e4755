"""Schema ids on the wire: PIP-420 message metadata and the Confluent payload prefix.

Three layers, as in Pulsar's Java client (`SchemaIdUtil`, `KeyValueSchemaImpl`):

* the *Confluent id*: `0x00` + uint32 BE id (+ Protobuf message indexes as zig-zag varints), or
  `0x01` + 16-byte GUID. This is what `EncodeData.schema_id` holds for a value schema;
* the *key/value id*: int32 BE length + key id + int32 BE length + value id;
* the *metadata id*: a magic byte, `0xFF` for a value schema id and `0xFE` for a key/value id,
  in front of one of the above. Pulsar's `MessageMetadata.schema_id` (field 32) holds these bytes;
  the Python client cannot reach that field, so they travel as the lowercase hex of the exact same
  bytes in the `__schema_id` message property. When pulsar-client gains native support, this
  module is the one place to switch.

The Confluent *prefix* form (schema id inside the payload, as on Kafka) is handled by
confluent-kafka's own `SchemaId` parser; this module only frames and unframes metadata ids.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import re
import struct
from collections.abc import Mapping
from typing import NamedTuple

from .errors import SchemaIdError

#: Message property that carries the metadata id, as lowercase hex.
SCHEMA_ID_PROPERTY = "__schema_id"
#: confluent-kafka's header names for the Confluent ids (its `header_schema_id_serializer`), as
#: message properties: data bridged from Kafka with its headers, or `schema.id.location=header`.
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
#: Every property that may carry a message's schema id.
ID_PROPERTIES = (SCHEMA_ID_PROPERTY, VALUE_SCHEMA_ID_HEADER, KEY_SCHEMA_ID_HEADER)

VALUE_MAGIC = 0xFF
KEY_VALUE_MAGIC = 0xFE
CONFLUENT_ID_MAGIC = 0x00
CONFLUENT_GUID_MAGIC = 0x01

_LENGTH = struct.Struct(">i")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class KeyValueSchemaIds(NamedTuple):
    """The two Confluent ids of a key/value message; empty bytes where a side has none."""

    key: bytes
    value: bytes


def confluent_id(schema_id: int, message_indexes: bytes = b"") -> bytes:
    """`0x00` + uint32 BE id (+ already encoded Protobuf message indexes)."""
    if not 0 <= schema_id <= 0xFFFFFFFF:
        raise SchemaIdError(f"schema id {schema_id} does not fit in an unsigned 32-bit integer")
    return bytes([CONFLUENT_ID_MAGIC]) + schema_id.to_bytes(4, "big") + message_indexes


def confluent_int_id(id_bytes: bytes) -> int | None:
    """The integer id inside a Confluent id (`0x00` form), or None for the GUID form."""
    if len(id_bytes) >= 5 and id_bytes[0] == CONFLUENT_ID_MAGIC:
        return int.from_bytes(id_bytes[1:5], "big")
    return None


def describe(id_bytes: bytes) -> str:
    """A short human form for error messages: `42` for a Confluent id, else the hex."""
    number = confluent_int_id(id_bytes)
    return str(number) if number is not None else (id_bytes.hex() or "<empty>")


def encode_key_value_ids(key: bytes, value: bytes) -> bytes:
    """int32 BE length + key id + int32 BE length + value id."""
    return join_length_prefixed_pair(key, value)


def decode_key_value_ids(data: bytes) -> KeyValueSchemaIds:
    """Split a key/value id (without its magic byte) into the key and value ids."""
    try:
        key, value = split_length_prefixed_pair(data, allow_null=False)
    except ValueError as error:
        raise SchemaIdError(f"key/value schema id {data.hex()}: {error}") from None
    return KeyValueSchemaIds(key or b"", value or b"")


def join_length_prefixed_pair(key: bytes | None, value: bytes | None) -> bytes:
    """`int32 BE length + key + int32 BE length + value`; a None side is written as length -1."""
    return b"".join(
        _LENGTH.pack(-1) if part is None else _LENGTH.pack(len(part)) + part for part in (key, value)
    )


def split_length_prefixed_pair(data: bytes, *, allow_null: bool) -> tuple[bytes | None, bytes | None]:
    """Split `int32 BE length + key + int32 BE length + value`, the layout Pulsar uses for both
    key/value schema ids and INLINE key/value payloads (where length -1 means null)."""
    parts: list[bytes | None] = []
    offset = 0
    for side in ("key", "value"):
        if len(data) < offset + 4:
            raise ValueError(f"truncated before the {side} length ({len(data)} bytes)")
        (length,) = _LENGTH.unpack_from(data, offset)
        offset += 4
        if length == -1 and allow_null:
            parts.append(None)
            continue
        if length < 0 or len(data) < offset + length:
            raise ValueError(f"bad {side} length {length} ({len(data)} bytes)")
        parts.append(data[offset : offset + length])
        offset += length
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} trailing bytes")
    return parts[0], parts[1]


def to_metadata(schema_id: bytes, *, key_value: bool = False) -> bytes:
    """Add the PIP-420 magic byte: what Pulsar stores in `MessageMetadata.schema_id`."""
    if not schema_id:
        raise SchemaIdError("cannot put an empty schema id in message metadata")
    return bytes([KEY_VALUE_MAGIC if key_value else VALUE_MAGIC]) + schema_id


def from_metadata(metadata_id: bytes) -> tuple[bytes, bool]:
    """Remove the PIP-420 magic byte; returns (schema id, is key/value).

    Like the Java client's `SchemaIdUtil.removeMagicHeader`, bytes without a magic byte are
    returned as they are (a value id): the magic bytes never start a Confluent id.
    """
    if not metadata_id:
        raise SchemaIdError("the schema id in the message metadata is empty")
    magic = metadata_id[0]
    if len(metadata_id) == 1 and magic in (VALUE_MAGIC, KEY_VALUE_MAGIC):
        raise SchemaIdError(
            f"the schema id in the message metadata is only its magic byte 0x{magic:02x}, with no id "
            "after it (truncated)"
        )
    if magic == VALUE_MAGIC:
        return metadata_id[1:], False
    if magic == KEY_VALUE_MAGIC:
        return metadata_id[1:], True
    return metadata_id, False


@functools.lru_cache(maxsize=1024)  # per message, and a producer has few distinct ids
def to_property(schema_id: bytes, *, key_value: bool = False) -> str:
    """The `__schema_id` property value: lowercase hex of the metadata id."""
    return to_metadata(schema_id, key_value=key_value).hex()


def from_property(value: str) -> tuple[bytes, bool]:
    """Parse a `__schema_id` property value; returns (schema id, is key/value)."""
    return from_metadata(parse_hex(value))


@functools.lru_cache(maxsize=1024)  # per message, and a topic has few distinct ids
def parse_hex(value: str) -> bytes:
    """The bytes of a `__schema_id` property: hex digits only, no separators."""
    if not value:
        raise SchemaIdError(f"the {SCHEMA_ID_PROPERTY} property is empty")
    if not _HEX.fullmatch(value):
        raise SchemaIdError(f"the {SCHEMA_ID_PROPERTY} property {value!r} is not hexadecimal")
    return bytes.fromhex(value)


def check_confluent_id(id_bytes: bytes) -> None:
    """Raise unless `id_bytes` starts like a Confluent id (magic 0x00 + 4 bytes, or 0x01 + 16)."""
    _confluent_id_length(id_bytes)


def split_prefixed(data: bytes) -> tuple[bytes, bytes]:
    """(the Confluent id, the rest) of a payload in Confluent's framing (prefix mode, Kafka):
    the magic byte and its 4-byte id or 16-byte GUID, then the body (a Protobuf body's message
    indexes stay in the body, where confluent-kafka's deserializer reads them). Raises
    `SchemaIdError` when `data` does not start with one."""
    length = _confluent_id_length(data)
    return data[:length], data[length:]


def _confluent_id_length(id_bytes: bytes) -> int:
    if not id_bytes:
        raise SchemaIdError("the schema id is empty")
    magic = id_bytes[0]
    if magic == CONFLUENT_ID_MAGIC:
        needed = 5
    elif magic == CONFLUENT_GUID_MAGIC:
        needed = 17
    else:
        raise SchemaIdError(
            f"schema id {id_bytes.hex()} starts with 0x{magic:02x}, not a Confluent id "
            "(0x00 + 4-byte id, or 0x01 + 16-byte GUID)"
        )
    if len(id_bytes) < needed:
        raise SchemaIdError(f"schema id {id_bytes.hex()} is truncated: {len(id_bytes)} of {needed} bytes")
    return needed


def header_properties(schema_id: bytes, *, key_value: bool = False) -> dict[str, str]:
    """Confluent's `__value_schema_id` and `__key_schema_id` properties of `schema_id` (each
    Confluent id as hex), which `schema.id.location=header` writes instead of `__schema_id`, for
    topics bridged to Kafka."""
    if not key_value:
        return {VALUE_SCHEMA_ID_HEADER: schema_id.hex()}
    key, value = decode_key_value_ids(schema_id)
    found = {KEY_SCHEMA_ID_HEADER: key.hex(), VALUE_SCHEMA_ID_HEADER: value.hex()}
    return {name: text for name, text in found.items() if text}


def property_form(properties: Mapping[str, str]) -> str | None:
    """The message's schema id as a `__schema_id` value (hex of the metadata id), wherever its
    properties carry it: `__schema_id` first, then Confluent's `__value_schema_id` /
    `__key_schema_id`. None when they carry none (the payload may have the Confluent prefix)."""
    found = properties.get(SCHEMA_ID_PROPERTY)
    if found is not None:
        return found
    value_text = properties.get(VALUE_SCHEMA_ID_HEADER)
    key_text = properties.get(KEY_SCHEMA_ID_HEADER)
    if value_text is None and key_text is None:
        return None
    value = header_id(VALUE_SCHEMA_ID_HEADER, value_text) if value_text is not None else b""
    if key_text is None:
        return to_property(value)
    key = header_id(KEY_SCHEMA_ID_HEADER, key_text)
    return to_property(encode_key_value_ids(key, value), key_value=True)


@functools.lru_cache(maxsize=1024)
def header_id(name: str, text: str) -> bytes:
    """The Confluent id in a `__value_schema_id` / `__key_schema_id` property. Kafka headers are
    bytes and a bridge writes them as text its own way, so each unambiguous form is read: hex of
    the id bytes (`00000000 0b`, as this package writes), a GUID (`4f0c...-...`), a decimal id
    (`11`), base64 of the id bytes."""
    text = text.strip()
    candidates: list[bytes] = []
    if _GUID.fullmatch(text):
        candidates.append(bytes([CONFLUENT_GUID_MAGIC]) + bytes.fromhex(text.replace("-", "")))
    if _HEX.fullmatch(text):
        candidates.append(bytes.fromhex(text))
    if text.isdigit() and int(text) < 2**31:
        candidates.append(confluent_id(int(text)))
    with contextlib.suppress(binascii.Error, ValueError):
        candidates.append(base64.b64decode(text, validate=True))
    for candidate in candidates:
        if _is_confluent_id(candidate):
            return candidate
    raise SchemaIdError(
        f"the {name} property {text[:60]!r} is not a Confluent schema id (hex of 0x00 + 4-byte id or "
        "0x01 + 16-byte GUID, a GUID, a decimal id, or base64 of the id bytes)"
    )


def _is_confluent_id(id_bytes: bytes) -> bool:
    if len(id_bytes) == 17 and id_bytes[0] == CONFLUENT_GUID_MAGIC:
        return True
    return len(id_bytes) >= 5 and id_bytes[0] == CONFLUENT_ID_MAGIC  # + Protobuf message indexes
