"""The PIP-420 schema id codec: round trips, the Java client's vectors, malformed input."""

from __future__ import annotations

import io

import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId
from hypothesis import given
from hypothesis import strategies as st

from pulsar_external_schema import schema_id as ids
from pulsar_external_schema.errors import SchemaIdError

schema_ids = st.integers(min_value=0, max_value=2**32 - 1)
id_bytes = st.binary(min_size=1, max_size=64)


# -- the Java client's SchemaIdUtilTest vectors ---------------------------------------------


def test_magic_bytes_as_in_the_java_client() -> None:
    assert ids.to_metadata(bytes([1, 2, 3])) == bytes([0xFF, 1, 2, 3])
    assert ids.to_metadata(bytes([1, 2, 3]), key_value=True) == bytes([0xFE, 1, 2, 3])
    assert ids.from_metadata(bytes([0xFF, 1, 2, 3])) == (bytes([1, 2, 3]), False)
    assert ids.from_metadata(bytes([0xFE, 1, 2, 3])) == (bytes([1, 2, 3]), True)
    # Like removeMagicHeader: bytes without a magic byte come back unchanged.
    assert ids.from_metadata(bytes([1, 2, 3])) == (bytes([1, 2, 3]), False)


def test_a_confluent_id_in_metadata_is_ff_00_and_the_big_endian_id() -> None:
    assert ids.to_property(ids.confluent_id(1)) == "ff0000000001"
    assert ids.to_property(ids.confluent_id(0x01020304)) == "ff0001020304"


def test_key_value_id_layout() -> None:
    key, value = ids.confluent_id(7), ids.confluent_id(9)

    kv = ids.encode_key_value_ids(key, value)

    assert kv == b"\x00\x00\x00\x05" + key + b"\x00\x00\x00\x05" + value
    assert ids.to_property(kv, key_value=True) == "fe" + kv.hex()


# -- round trips ------------------------------------------------------------------------------


@given(schema_ids, st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=4))
def test_confluent_ids_agree_with_confluent_kafka(number: int, indexes: list[int]) -> None:
    ours = ids.confluent_id(number)
    theirs = SchemaId("AVRO", number).id_to_bytes()
    assert ours == theirs

    parsed = SchemaId("PROTOBUF")
    proto = SchemaId("PROTOBUF", number, message_indexes=indexes).id_to_bytes()
    parsed.from_bytes(io.BytesIO(proto))
    assert parsed.id == number
    ids.check_confluent_id(proto)
    assert ids.confluent_int_id(proto) == number


@given(id_bytes, st.booleans())
def test_property_round_trip(schema_id: bytes, key_value: bool) -> None:
    prop = ids.to_property(schema_id, key_value=key_value)

    assert prop == prop.lower()
    assert ids.from_property(prop) == (schema_id, key_value)


@given(st.binary(max_size=40), st.binary(max_size=40))
def test_key_value_ids_round_trip(key: bytes, value: bytes) -> None:
    assert ids.decode_key_value_ids(ids.encode_key_value_ids(key, value)) == (key, value)


@given(st.binary(max_size=64))
def test_any_bytes_either_decode_exactly_or_raise_schema_id_error(data: bytes) -> None:
    try:
        key, value = ids.decode_key_value_ids(data)
    except SchemaIdError:
        return
    assert ids.encode_key_value_ids(key, value) == data


# -- malformed input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated before the key length"),
        (b"\x00\x00\x00", "truncated before the key length"),
        (b"\x00\x00\x00\x05\x00", "bad key length 5"),
        (b"\xff\xff\xff\xff", "bad key length -1"),
        (b"\x00\x00\x00\x00", "truncated before the value length"),
        (b"\x00\x00\x00\x00\x00\x00\x00\x00\x01", "1 trailing bytes"),
    ],
)
def test_malformed_key_value_ids(data: bytes, message: str) -> None:
    with pytest.raises(SchemaIdError, match=message):
        ids.decode_key_value_ids(data)


@pytest.mark.parametrize(
    ("value", "message"),
    [("xyz", "is not hexadecimal"), ("", "is empty"), ("ff 00", "is not hexadecimal")],
)
def test_malformed_property(value: str, message: str) -> None:
    with pytest.raises(SchemaIdError, match=message):
        ids.from_property(value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "is empty"),
        (b"\x07\x00\x00\x00\x01", "starts with 0x07, not a Confluent id"),
        (b"\x00\x00\x01", "truncated: 3 of 5 bytes"),
        (b"\x01" + bytes(8), "truncated: 9 of 17 bytes"),
    ],
)
def test_check_confluent_id_rejects(data: bytes, message: str) -> None:
    with pytest.raises(SchemaIdError, match=message):
        ids.check_confluent_id(data)


def test_ids_outside_uint32_are_rejected() -> None:
    with pytest.raises(SchemaIdError, match="does not fit"):
        ids.confluent_id(2**32)
    with pytest.raises(SchemaIdError, match="empty schema id"):
        ids.to_metadata(b"")


def test_describe_names_integer_ids_and_shows_others_in_hex() -> None:
    assert ids.describe(ids.confluent_id(42)) == "42"
    assert ids.describe(b"\x01" + bytes(16)) == "01" + "00" * 16
