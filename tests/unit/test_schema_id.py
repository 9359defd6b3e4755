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
    with pytest.raises(SchemaIdError, match=message):
        ids.split_prefixed(data)


@given(schema_ids, st.binary(max_size=32), st.binary(min_size=16, max_size=16))
def test_a_prefixed_payload_splits_into_confluent_kafkas_id_and_body(
    number: int, body: bytes, guid: bytes
) -> None:
    """As confluent-kafka's `SchemaId.from_bytes` reads the framing (a Protobuf body's message
    indexes stay in the body here, where its deserializer reads them)."""
    for prefix in (ids.confluent_id(number), bytes([ids.CONFLUENT_GUID_MAGIC]) + guid):
        id_bytes, rest = ids.split_prefixed(prefix + body)
        theirs = SchemaId("AVRO")
        theirs.from_bytes(io.BytesIO(prefix + body))
        assert (id_bytes, rest) == (prefix, body)
        assert ids.confluent_int_id(id_bytes) == theirs.id


def test_ids_outside_uint32_are_rejected() -> None:
    with pytest.raises(SchemaIdError, match="does not fit"):
        ids.confluent_id(2**32)
    with pytest.raises(SchemaIdError, match="empty schema id"):
        ids.to_metadata(b"")


def test_describe_names_integer_ids_and_shows_others_in_hex() -> None:
    assert ids.describe(ids.confluent_id(42)) == "42"
    assert ids.describe(b"\x01" + bytes(16)) == "01" + "00" * 16


# -- Confluent's header names as properties ----------------------------------------------------

ID_11 = b"\x00\x00\x00\x00\x0b"
GUID = "4f0c2d3e-1a2b-4c5d-8e9f-0a1b2c3d4e5f"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("000000000b", ID_11),  # hex, as this package writes it
        ("000000000B", ID_11),
        ("11", ID_11),  # a decimal id
        ("AAAAAAs=", ID_11),  # base64 of the id bytes
        (GUID, b"\x01" + bytes.fromhex(GUID.replace("-", ""))),
        ("01" + GUID.replace("-", ""), b"\x01" + bytes.fromhex(GUID.replace("-", ""))),
        ("000000000b0200", ID_11 + b"\x02\x00"),  # Protobuf message indexes follow the id
    ],
)
def test_a_header_id_is_read_in_each_unambiguous_form(text: str, expected: bytes) -> None:
    assert ids.header_id(ids.VALUE_SCHEMA_ID_HEADER, text) == expected


@pytest.mark.parametrize("text", ["", "zz", "ff000000000b", "0x0b", "-3", "99999999999"])
def test_a_header_id_that_is_no_confluent_id_names_the_property(text: str) -> None:
    with pytest.raises(SchemaIdError, match=r"the __value_schema_id property .* is not a Confluent"):
        ids.header_id(ids.VALUE_SCHEMA_ID_HEADER, text)


def test_the_id_is_found_in_schema_id_first_then_in_confluent_headers() -> None:
    assert ids.property_form({}) is None
    assert ids.property_form({"__schema_id": "ff000000000c", "__value_schema_id": "11"}) == "ff000000000c"
    assert ids.property_form({"__value_schema_id": "11"}) == "ff000000000b"
    key_value = ids.property_form({"__key_schema_id": "7", "__value_schema_id": "11"})
    assert key_value is not None
    assert ids.from_property(key_value) == (
        ids.encode_key_value_ids(b"\x00\x00\x00\x00\x07", ID_11),
        True,
    )


@pytest.mark.parametrize("key_value", [False, True])
def test_header_properties_round_trip_through_the_reader(key_value: bool) -> None:
    schema_id = ids.encode_key_value_ids(b"\x00\x00\x00\x00\x07", ID_11) if key_value else ID_11
    written = ids.header_properties(schema_id, key_value=key_value)
    assert "__schema_id" not in written and written["__value_schema_id"] == "000000000b"
    assert ids.property_form(written) == ids.to_property(schema_id, key_value=key_value)
