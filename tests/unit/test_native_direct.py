"""`ExternalSchema.encode` and `decode` through their one corridor, with the native extension's
`Encoder` and its part's kept `DirectWriter`s and `DirectReader`s (`native/src/direct.rs`) and
without them, where the compiled plan in Python (`codec/part.py`) takes every message. A schema
with the extension is held to one without it (the same bytes, ids, values and errors, in each
format and schema id location), and the kept writer and reader alone to the plan's answers.
"""

from __future__ import annotations

import base64
import gc
import json
import re
import time
import weakref
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from confluent_kafka.schema_registry.common.serde import get_original_key, set_original_key
from contracts import contract, mock_factory
from native_support import required_extension
from schemas import ORDER_JSON, order_message_class
from schemas import SHOP_ORDER as ORDER

from pulsar_external_schema import ExternalSchema, _native
from pulsar_external_schema.codec import FALLBACK
from pulsar_external_schema.errors import ExternalSchemaError
from pulsar_external_schema.protobuf_text import file_descriptor_proto
from pulsar_external_schema.schema import EncodeData

NATIVE = "_pulsar_external_schema_native"

TOPIC = "persistent://acme/shop/orders"
OTHER = "persistent://acme/shop/returns"
Order = order_message_class()
ORDER_DESCRIPTOR = base64.b64encode(file_descriptor_proto(Order).SerializeToString()).decode()

#: Per format: the schema's maker, and values in and outside it (a float for an integer, a
#: missing field, a wrong type, a value of no record at all).
FORMATS: dict[str, tuple[Callable[[Any], ExternalSchema], list[Any]]] = {
    "avro": (
        lambda factory: factory.avro(json.dumps(ORDER)),
        [{"id": 1, "item": "a"}, {"id": 2.5, "item": "b"}, {"id": 3}, {"id": "4", "item": "d"}, 5],
    ),
    "json": (
        lambda factory: factory.json(ORDER_JSON),
        [{"id": 1, "item": "a"}, {"id": 2.5, "item": "b"}, {"id": 3}, {"id": 4, "item": "d", "x": 1}, 5],
    ),
    "protobuf": (
        # the mock registry keeps the schema as the serialized descriptor
        lambda factory: factory.protobuf(Order, schema=contract(ORDER_DESCRIPTOR, "PROTOBUF")),
        [Order(id=1, item="a"), Order(id=2, item="é"), {"id": 3, "item": "c"}, 5],
    ),
}


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        result = call()
    except (ExternalSchemaError, TypeError) as error:  # each schema has a registry of its own
        return ("error", type(error).__name__, re.sub("mock://[0-9a-f]+", "mock://", str(error)))
    return ("ok", type(result).__name__, tuple(result) if isinstance(result, tuple) else result)


@pytest.fixture(params=["metadata", "prefix"])
def location(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _pair(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[Any], ExternalSchema], location: str
) -> tuple[ExternalSchema, ExternalSchema]:
    """The schema with the extension, and one without it (each on a registry of its own, so the
    ids they register are the same)."""
    with_it = make(mock_factory(**{"schema.id.location": location}))
    with monkeypatch.context() as patched:
        patched.setattr(_native, "extension", lambda: None)
        without = make(mock_factory(**{"schema.id.location": location}))
    return with_it, without


@pytest.fixture(params=sorted(FORMATS))
def both(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, location: str, native_extension: Any
) -> Iterator[tuple[ExternalSchema, ExternalSchema, list[Any]]]:
    make, values = FORMATS[request.param]
    with_it, without = _pair(monkeypatch, make, location)
    yield with_it, without, values
    with_it.close()
    without.close()


def test_a_topics_messages_take_the_extensions_encoder_and_kept_writer_and_else_the_plan(
    both: tuple[ExternalSchema, ExternalSchema, list[Any]],
) -> None:
    with_it, without, values = both
    assert type(with_it.encode).__module__ == NATIVE and type(with_it.encode).__name__ == "Encoder"
    assert "encode" not in vars(without) and "encode_for" not in vars(without)  # the class's methods
    assert "decode" not in vars(with_it) and "decode" not in vars(without)  # the kept reader serves
    for _ in range(2):  # the reference path learns the plan, the plan's writer is kept
        with_it.encode(TOPIC, values[0])
        without.encode(TOPIC, values[0])
    codecs = [with_it._part.codec, without._part.codec]
    assert codecs[0] is not None and codecs[1] is not None
    kept = codecs[0].writers[TOPIC][0]
    assert (type(kept).__module__, type(kept).__name__) == (NATIVE, "DirectWriter")
    assert codecs[1].writers == {} and codecs[1].writes.get(TOPIC) is not None  # a plan, none kept
    encoded = with_it.encode(TOPIC, values[0])
    assert type(encoded) is EncodeData
    assert encoded == without.encode(TOPIC, values[0]) == without.encode(TOPIC, values[0])
    for _ in range(2):  # the plan is built, its reader kept
        with_it.decode(TOPIC, encoded.data, encoded.schema_id)
        without.decode(TOPIC, encoded.data, encoded.schema_id)
    if encoded.schema_id is not None:
        kept = with_it._part.readers[(TOPIC, encoded.schema_id)][0]
        assert (type(kept).__module__, type(kept).__name__) == (NATIVE, "DirectReader")
        python_reader = without._part.readers[(TOPIC, encoded.schema_id)][0]  # the plan's own read
        assert python_reader is not None and type(python_reader).__module__ != NATIVE
        assert len(codecs[1].reads) == 1
    assert with_it.decode(TOPIC, encoded.data, encoded.schema_id) == without.decode(
        TOPIC, encoded.data, encoded.schema_id
    )


def test_the_same_bytes_ids_and_errors_with_the_extension_and_without(
    both: tuple[ExternalSchema, ExternalSchema, list[Any]],
) -> None:
    with_it, without = both[0], both[1]
    calls: list[Callable[[ExternalSchema, Any], Any]] = [
        lambda schema, value: schema.encode(TOPIC, value),
        lambda schema, value: schema.encode_for(TOPIC, value),
        lambda schema, value: schema.encode_for(TOPIC, value, None),
        lambda schema, value: schema.encode_for(topic=OTHER, value=value),
        lambda schema, value: schema.encode(TOPIC, value, None),  # type: ignore[call-overload]  # not PIP-420's
        lambda schema, value: schema.encode(b"topic", value),  # type: ignore[call-overload]
        lambda schema, value: schema.encode(value),  # no topic bound
        lambda schema, value: schema.for_topic(OTHER).encode(value),
    ]
    for _ in range(3):  # the reference path, then the plan, then the kept writer
        for value in both[2]:
            for call in calls:
                assert _outcome(partial(call, with_it, value)) == _outcome(partial(call, without, value))


def test_the_same_values_and_errors_read_with_the_extension_and_without(
    both: tuple[ExternalSchema, ExternalSchema, list[Any]],
) -> None:
    with_it, without, values = both
    encoded = without.encode(TOPIC, values[0])
    assert with_it.encode(TOPIC, values[0]) == encoded  # each registry holds the schema, as id 1
    data, schema_id = encoded.data, encoded.schema_id
    unknown = b"\x00\x00\x00\x03\x09"
    payloads = [data, data[:-1], data + b"\xff", b"", b"\x00", b"{", b"\x00\x00\x00\x00\x01\x02"]
    calls: list[Callable[[ExternalSchema, bytes], Any]] = [
        lambda schema, payload: schema.decode(TOPIC, payload, schema_id),
        lambda schema, payload: schema.decode(TOPIC, payload, schema_id, None),
        lambda schema, payload: schema.decode(TOPIC, payload, schema_id=schema_id),
        lambda schema, payload: schema.decode(TOPIC, payload),
        lambda schema, payload: schema.decode(TOPIC, payload, unknown),
        lambda schema, payload: schema.decode(OTHER, payload, schema_id),
        lambda schema, payload: schema.decode(TOPIC, bytearray(payload), schema_id),  # type: ignore[arg-type]
        lambda schema, payload: schema.decode(TOPIC, payload, b"\xfe" + (schema_id or b"")),
        lambda schema, payload: schema.decode(TOPIC, payload, bytearray(schema_id or b"")),  # type: ignore[arg-type]
        lambda schema, payload: schema.decode(TOPIC, payload, schema_id, None, None),  # type: ignore[call-arg]
    ]
    for _ in range(3):  # the reference path, then the plan, then the kept reader
        for payload in payloads:
            for call in calls:
                assert _outcome(partial(call, with_it, payload)) == _outcome(partial(call, without, payload))


def test_an_encode_data_someone_holds_is_never_changed(
    both: tuple[ExternalSchema, ExternalSchema, list[Any]],
) -> None:
    with_it, without, values = both
    first, second = values[0], values[1] if not isinstance(values[1], dict) else values[0]
    held = [with_it.encode(TOPIC, first) for _ in range(3)]
    also = with_it.encode(TOPIC, second)
    assert all(encoded == without.encode(TOPIC, first) for encoded in held)
    assert also == without.encode(TOPIC, second)
    assert len({id(encoded) for encoded in (*held, also)}) == 4
    for _ in range(3):  # one no one holds any more is the one the next message gets
        encoded = with_it.encode(TOPIC, first)
        assert encoded.data == held[0].data
        assert hash(encoded) == hash(EncodeData(encoded.data, encoded.schema_id))
        assert encoded in {EncodeData(*held[0])}


def test_a_closed_schema_says_so_and_a_dropped_one_is_collected() -> None:
    schema = mock_factory().avro(json.dumps(ORDER))
    schema.encode(TOPIC, {"id": 1, "item": "a"})
    held = schema.encode_for, schema.decode  # one a caller kept goes the class's way too
    schema.close()
    assert "encode" not in vars(schema)
    with pytest.raises(ExternalSchemaError, match="closed"):
        schema.encode(TOPIC, {"id": 1, "item": "a"})
    with pytest.raises(ExternalSchemaError, match="closed"):
        held[0](TOPIC, {"id": 1, "item": "a"})
    with pytest.raises(ExternalSchemaError, match="closed"):
        held[1](TOPIC, b"\x02\x02a", b"\x00\x00\x00\x00\x01")
    with pytest.raises(ExternalSchemaError, match="closed"):
        schema.decode(TOPIC, b"\x02\x02a", b"\x00\x00\x00\x00\x01")
    # The encoder holds its schema (a call on a schema no name holds), and the collector frees
    # the two
    assert mock_factory().avro(json.dumps(ORDER)).encode(TOPIC, {"id": 1, "item": "a"}).data
    dropped = mock_factory().avro(json.dumps(ORDER))
    for _ in range(3):
        encoded = dropped.encode(TOPIC, {"id": 1, "item": "a"})
        dropped.decode(TOPIC, encoded.data, encoded.schema_id)
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert gone() is None


@pytest.fixture
def twin() -> Any:
    """The extension, whose `DirectWriter` and `DirectReader` a test makes (the native leg)."""
    return required_extension()


def _writer(twin: Any, write: Callable[[Any], bytes], **options: Any) -> Any:
    given: dict[str, Any] = {
        "prefix": b"",
        "schema_id": b"\x00\x00\x00\x00\x07",
        "expires_in": None,
        "key_parts": [],
        "clear_original_key": lambda: set_original_key(None),
    }
    return twin.DirectWriter(write, **{**given, **options})


def test_a_kept_writer_answers_as_the_plan_does(twin: Any) -> None:
    assert _writer(twin, lambda value: b"v" + value)(b"1") == (b"v1", b"\x00\x00\x00\x00\x07")
    prefixed = _writer(twin, lambda value: value, prefix=b"\x00\x00\x00\x00\x07")
    assert prefixed(b"1") == (b"\x00\x00\x00\x00\x071", b"\x00\x00\x00\x00\x07")

    def refuse(value: Any) -> bytes:
        raise ValueError("outside the schema")

    assert _writer(twin, refuse)(b"1") is None  # the long way says why

    def interrupted(value: Any) -> bytes:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # as the closure's `except Exception`
        _writer(twin, interrupted)(b"1")


def test_a_kept_writer_stops_when_its_plan_expires(twin: Any) -> None:
    assert _writer(twin, lambda value: value, expires_in=0.0)(b"1") is None
    assert _writer(twin, lambda value: value, expires_in=-5.0)(b"1") is None
    soon = _writer(twin, lambda value: value, expires_in=0.05)
    assert soon(b"1") is not None
    time.sleep(0.2)  # past it, on a clock of a few milliseconds' resolution
    assert soon(b"1") is None


def test_a_kept_writer_clears_a_key_parts_original_key(twin: Any) -> None:
    set_original_key("k1")
    _writer(twin, lambda value: value)(b"1")
    assert get_original_key() == "k1"  # no key part in the process: nothing to clear
    _writer(twin, lambda value: value, key_parts=[True])(b"1")
    assert get_original_key() is None


def test_a_value_schema_clears_a_key_parts_original_key_once_a_key_part_exists() -> None:
    factory = mock_factory()
    factory.key_value(factory.avro(json.dumps(ORDER)), factory.avro(json.dumps(ORDER)))
    schema = factory.avro(json.dumps(ORDER))
    for _ in range(3):
        set_original_key("k2")
        schema.encode(TOPIC, {"id": 1, "item": "a"})
        assert get_original_key() is None
    schema.close()


def _reader(twin: Any, read: Callable[[Any], Any], **options: Any) -> Any:
    given: dict[str, Any] = {
        "longest": -1,
        "check": None,
        "expires_in": None,
        "key_parts": [],
        "clear_original_key": lambda: set_original_key(None),
        "fallback": FALLBACK,
    }
    return twin.DirectReader(read, **{**given, **options})


def test_a_kept_reader_answers_as_the_plan_does(twin: Any) -> None:
    assert _reader(twin, bytes.upper)(b"ab") == b"AB"
    assert _reader(twin, bytes.upper)(b"") is FALLBACK  # the reference refuses a frame without a payload
    assert _reader(twin, bytes.upper, expires_in=0.0)(b"ab") is FALLBACK  # the long way builds it again
    checked: list[bytes] = []
    guarded = _reader(twin, bytes.upper, longest=2, check=checked.append)
    assert guarded(b"ab") == b"AB" and checked == []  # no longer than any value can be
    assert guarded(b"abc") == b"ABC" and checked == [b"abc"]

    def over(payload: bytes) -> None:
        raise ValueError("over the decoding limits")

    assert _reader(twin, bytes.upper, longest=0, check=over)(b"ab") is FALLBACK
    assert _reader(twin, json.loads)(b"{") is FALLBACK

    def interrupted(payload: bytes) -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _reader(twin, interrupted)(b"ab")
    set_original_key("k")
    _reader(twin, bytes.upper, key_parts=[True])(b"ab")
    assert get_original_key() is None


def test_a_writer_whose_plan_the_recheck_dropped_while_it_was_made_is_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema = mock_factory().avro(json.dumps(ORDER))
    codec = schema._part.codec
    assert codec is not None
    made = codec.direct_writer

    def dropped_meanwhile(topic: str) -> Any:
        writer = made(topic)
        codec.writes.drop(topic)  # what `_stale` does on the re-check's thread
        return writer

    monkeypatch.setattr(codec, "direct_writer", dropped_meanwhile)
    for _ in range(3):
        schema.encode(TOPIC, {"id": 1, "item": "a"})
        assert TOPIC not in codec.writers
    schema.close()
