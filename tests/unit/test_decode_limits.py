"""Decoding limits (`codec/limits.py`): a payload is checked against `decode.max.bytes` and
`decode.max.depth` before any decoder reads it, on the compiled path and the reference path.

Without the limits, the 6-byte payloads here make fastavro build 2^31 items (gigabytes), and the
5 KB one overflows its C stack and kills the test process.
"""

from __future__ import annotations

import io
import json
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from contracts import mock_factory
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from google.protobuf import descriptor_pb2
from schemas import message_class

from pulsar_external_schema import ConfigError, DecodeError, DecodeLimitError, ExternalSchema
from pulsar_external_schema.codec.limits import DecodeLimits, LimitExceeded, avro_guard, json_guard

TOPIC = "persistent://acme/orders/limits"
SUBJECT = "acme.orders.limits-value"

NULLS = {
    "type": "record",
    "name": "Pings",
    "namespace": "acme",
    "fields": [{"name": "pings", "type": {"type": "array", "items": "null"}}],
}
EMPTIES = {
    "type": "record",
    "name": "Marks",
    "namespace": "acme",
    "fields": [
        {
            "name": "marks",
            "type": {
                "type": "map",
                "values": {"type": "array", "items": {"type": "record", "name": "Nothing", "fields": []}},
            },
        }
    ],
}
LINKED = {
    "type": "record",
    "name": "Node",
    "namespace": "acme",
    "fields": [{"name": "value", "type": "int"}, {"name": "next", "type": ["null", "Node"]}],
}
ITEMS = {
    "type": "record",
    "name": "Basket",
    "namespace": "acme",
    "fields": [
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Item",
                    "fields": [{"name": "n", "type": "int"}, {"name": "label", "type": "string"}],
                },
            },
        }
    ],
}

#: An array block count of 2^31 - 1 (zig-zag varint), then the end of the array.
HUGE_COUNT = b"\xfe\xff\xff\xff\x0f\x00"


def _schema(schema: Any, **conf: Any) -> ExternalSchema:
    made: ExternalSchema = mock_factory(**conf).avro(json.dumps(schema))
    return made


def _linked(depth: int) -> dict[str, Any]:
    node: dict[str, Any] | None = None
    for value in range(depth):
        node = {"value": value, "next": node}
    assert node is not None
    return node


def _avro(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), value)
    return out.getvalue()


@contextmanager
def _peak_below(megabytes: int) -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
        assert tracemalloc.get_traced_memory()[1] < megabytes * 1024 * 1024
    finally:
        tracemalloc.stop()


def test_a_six_byte_payload_stating_billions_of_null_items_is_refused_before_allocating() -> None:
    schema = _schema(NULLS)
    schema_id = schema.encode(TOPIC, {"pings": [None, None]}).schema_id
    with _peak_below(20), pytest.raises(DecodeLimitError) as raised:
        schema.decode(TOPIC, HUGE_COUNT, schema_id)
    error = raised.value
    assert error.key == "decode.max.bytes"
    assert (error.topic, error.subject) == (TOPIC, SUBJECT)
    assert error.schema_id
    assert "6 bytes" in str(error) and "raise 'decode.max.bytes'" in str(error)
    assert isinstance(error, DecodeError)  # consume dead-letters it like any undecodable message


def test_items_that_take_no_bytes_nested_in_a_map_are_counted_too() -> None:
    schema = _schema(EMPTIES)
    schema_id = schema.encode(TOPIC, {"marks": {"a": [{}]}}).schema_id
    payload = b"\x02\x02k" + HUGE_COUNT + b"\x00"  # one map entry "k" -> 2^31 empty records
    with _peak_below(20), pytest.raises(DecodeLimitError):
        schema.decode(TOPIC, payload, schema_id)


def test_values_within_the_limits_decode_as_before() -> None:
    schema = _schema(NULLS)
    schema_id = schema.encode(TOPIC, {"pings": [None] * 3}).schema_id
    assert schema.decode(TOPIC, b"\x06\x00", schema_id) == {"pings": [None] * 3}
    linked = _schema(LINKED)
    value = _linked(50)
    encoded = linked.encode(TOPIC, value)
    assert linked.decode(TOPIC, encoded.data, encoded.schema_id) == value


def test_a_recursive_schema_nested_deeper_than_the_limit_is_refused() -> None:
    schema = _schema(LINKED)
    schema_id = schema.encode(TOPIC, _linked(3)).schema_id
    payload = b"\x00\x02" * 5000 + b"\x00\x00"  # 5,000 nodes: fastavro's C stack overflows
    with pytest.raises(DecodeLimitError) as raised:
        schema.decode(TOPIC, payload, schema_id)
    assert raised.value.key == "decode.max.depth"
    assert "100 levels" in str(raised.value)


def test_decode_max_depth_raises_the_depth_limit() -> None:
    schema = _schema(LINKED, **{"decode.max.depth": 300})
    value = _linked(250)
    encoded = schema.encode(TOPIC, value)
    assert schema.decode(TOPIC, encoded.data, encoded.schema_id) == value
    with pytest.raises(DecodeLimitError):
        schema.decode(TOPIC, _avro(LINKED, _linked(301)), encoded.schema_id)


def test_a_large_payload_is_walked_and_refused_over_decode_max_bytes_only() -> None:
    value = {"items": [{"n": n, "label": "x" * 10} for n in range(20_000)]}
    small = _schema(ITEMS, **{"decode.max.bytes": 1_000_000})
    encoded = small.encode(TOPIC, value)
    with pytest.raises(DecodeLimitError) as raised:
        small.decode(TOPIC, encoded.data, encoded.schema_id)
    assert "more than 1000000 bytes" in str(raised.value)
    roomy = _schema(ITEMS, **{"decode.max.bytes": 50_000_000})
    encoded = roomy.encode(TOPIC, value)
    assert roomy.decode(TOPIC, encoded.data, encoded.schema_id) == value


def test_the_reference_path_checks_the_limits_too() -> None:
    # The record name strategy cannot be compiled (the subject needs the writer's name): every
    # message takes confluent-kafka's deserializer, which reads with fastavro as well.
    schema = _schema(NULLS, **{"subject.name.strategy": "record"})
    schema_id = schema.encode(TOPIC, {"pings": []}).schema_id
    assert schema.decode(TOPIC, b"\x02\x00", schema_id) == {"pings": [None]}
    assert schema._part.codec is not None
    assert not any(type(plan).__name__ == "ReadPlan" for plan in schema._part.codec.reads.plans.values())
    with _peak_below(20), pytest.raises(DecodeLimitError):
        schema.decode(TOPIC, HUGE_COUNT, schema_id)


def test_decode_batch_reports_a_refused_payload_in_place() -> None:
    schema = _schema(NULLS)
    schema_id = schema.encode(TOPIC, {"pings": [None]}).schema_id
    results = schema.decode_batch(TOPIC, [(b"\x02\x00", schema_id, None), (HUGE_COUNT, schema_id, None)] * 2)
    assert results[0] == results[2] == {"pings": [None]}
    assert isinstance(results[1], DecodeLimitError) and isinstance(results[3], DecodeLimitError)


def test_json_nested_deeper_than_the_recursion_limit_is_a_depth_error() -> None:
    schema = mock_factory().json(json.dumps({"type": "array"}))
    schema_id = schema.encode(TOPIC, [1]).schema_id
    with pytest.raises(DecodeLimitError) as raised:
        schema.decode(TOPIC, b"[" * 100_000 + b"]" * 100_000, schema_id)
    assert raised.value.key == "decode.max.depth"


def test_json_payloads_are_estimated_from_their_structure() -> None:
    schema = mock_factory(**{"decode.max.bytes": 1_000_000}).json(json.dumps({"type": "array"}))
    schema_id = schema.encode(TOPIC, [1]).schema_id
    with pytest.raises(DecodeLimitError):
        schema.decode(TOPIC, b"[" + b"{}," * 100_000 + b"{}]", schema_id)
    assert schema.decode(TOPIC, b'["' + b"x" * 100_000 + b'"]', schema_id) == ["x" * 100_000]


def test_protobuf_payloads_are_checked_on_their_length() -> None:
    proto = descriptor_pb2.FileDescriptorProto(name="acme/note.proto", package="acme", syntax="proto3")
    proto.message_type.add(name="Note").field.add(name="text", number=1, type=9, label=1)
    note = message_class(proto, "acme.Note")
    schema = mock_factory(**{"decode.max.bytes": 100_000}).protobuf(note)
    schema_id = schema.encode(TOPIC, note(text="hi")).schema_id
    with pytest.raises(DecodeLimitError):
        schema.decode(TOPIC, b"\x0a\x80\x80\x01" + b"x" * 16_384, schema_id)


@pytest.mark.parametrize("key", ["decode.max.bytes", "decode.max.depth"])
def test_limits_must_be_positive(key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        mock_factory(**{key: 0})


def test_a_truncated_payload_is_left_to_fastavro() -> None:
    """A count with no items behind it: the guard lets it through (it bounds what a payload can
    make the decoder allocate, not whether the payload is whole), and fastavro refuses it."""
    schema = parse_schema(ITEMS)
    payload = b"\x80\x80\x80\x80\x01"
    avro_guard(schema, DecodeLimits(max_bytes=1000))(payload)
    with pytest.raises(EOFError):
        schemaless_reader(io.BytesIO(payload), schema)


def test_json_guard_passes_short_payloads_on_their_length() -> None:
    json_guard(DecodeLimits(max_bytes=10_000))(b"[{}]")
    with pytest.raises(LimitExceeded):
        json_guard(DecodeLimits(max_bytes=10_000))(b"[" + b"{}," * 1000 + b"{}]")


def test_a_payload_encrypted_whole_is_not_walked_as_if_it_were_avro() -> None:
    # ENCRYPT_PAYLOAD: the payload is ciphertext until the reference path decrypts it; walked as
    # Avro of this schema, random bytes state random counts of zero-size items and would be
    # refused as over the limits. (What the key's holder encrypted is authenticated: nobody else
    # can make a plaintext for the decoder.)
    rule = {
        "name": "encryptPayload",
        "kind": "TRANSFORM",
        "type": "ENCRYPT_PAYLOAD",
        "mode": "WRITEREAD",
        "params": {"encrypt.kek.name": "kek1", "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "k"},
    }
    factory = mock_factory(**{"rule.executors._default_.param.secret": "a-local-kms-secret-for-tests"})
    schema = factory.avro(
        Schema.from_dict(
            {"schema": json.dumps(NULLS), "schemaType": "AVRO", "ruleSet": {"encodingRules": [rule]}}
        )
    )
    for count in range(200):  # AES-GCM: a fresh nonce, so fresh ciphertext, each time
        value = {"pings": [None] * count}
        encoded = schema.encode(TOPIC, value)
        assert schema.decode(TOPIC, encoded.data, encoded.schema_id) == value
