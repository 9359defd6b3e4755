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

import functools
import re
import struct
from typing import NamedTuple

from .errors import SchemaIdError

#: Message property that carries the metadata id, as lowercase hex.
SCHEMA_ID_PROPERTY = "__schema_id"

VALUE_MAGIC = 0xFF
KEY_VALUE_MAGIC = 0xFE
CONFLUENT_ID_MAGIC = 0x00
CONFLUENT_GUID_MAGIC = 0x01

_LENGTH = struct.Struct(">i")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")


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
