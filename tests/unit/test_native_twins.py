"""The native reader's and sender's decisions held to their twins, without a broker: how the reader
reads a message's schema id and body (`native/src/columns.rs` against the Python path's
`schema_id.py`), where a message falls in a range (`native/src/bounds.rs` against
`tasks.offsets.Bound`), and where the sender cuts its batched entries (`native/src/send.rs`
against pulsar-client's producer, which the Python path sends with, modelled here from its source).
The native reader may leave any message to the Python path; where it answers, it answers as the
Python path would. The sender's key routing is held to partitions pulsar-client's own producer
chose (recorded below; `tests/spark/test_write.py` checks more on the broker): pulsar-client does
not expose its hash.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from native_support import required_extension

from pulsar_external_schema import schema_id as ids
from pulsar_external_schema.errors import SchemaIdError
from pulsar_external_schema.tasks.offsets import Bound

# -- a message's schema id and body ------------------------------------------------------------

HEX = "0123456789abcdefABCDEF"

#: `__schema_id` values: the everyday one (a Confluent numeric id in PIP-420's metadata form, in
#: either case) and the forms around it (a GUID, a key/value id, Protobuf indexes, no magic byte,
#: too short, not hex).
everyday_ids = st.integers(0, 2**32 - 1).flatmap(
    lambda n: st.sampled_from([f"ff00{n:08x}", f"FF00{n:08X}", f"fF00{n:08x}"])
)
schema_id_values = st.one_of(
    everyday_ids,
    st.text(HEX, max_size=40),
    st.integers(0, 2**32 - 1).map(lambda n: f"00{n:08x}"),
    st.integers(0, 2**32 - 1).map(lambda n: f"ff00{n:08x}00"),
    st.just("ff01" + "ab" * 16),
    st.integers(0, 2**32 - 1).map(lambda n: f"fe{n:08x}"),
    st.text(max_size=14),
)
properties = st.dictionaries(
    st.sampled_from(
        ["__schema_id", "__value_schema_id", "__key_schema_id", "__rule.name", "colour", "__rule"]
    ),
    st.text(max_size=12),
    max_size=4,
).flatmap(
    lambda given: st.one_of(
        st.just(given),
        schema_id_values.map(lambda value: {**given, ids.SCHEMA_ID_PROPERTY: value}),
    )
)
payloads = st.one_of(
    st.binary(max_size=12),
    st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=8)).map(
        lambda pair: ids.confluent_id(pair[0]) + pair[1]
    ),
)


def python_reading(props: dict[str, str], payload: bytes) -> tuple[int, bytes] | None:
    """The Confluent numeric id and the body the Python path decodes this message's value with
    (`ExternalSchema.decode_message` and `FieldSerde.decode`), for a message without `__rule.*`
    properties and with a numeric id; None for any other."""
    if any(key.startswith("__rule.") for key in props):
        return None
    try:
        raw = ids.property_form(props)
        if raw is not None:
            id_bytes, key_value = ids.from_metadata(ids.parse_hex(raw))
            if key_value:
                return None
            ids.check_confluent_id(id_bytes)
            body = payload
        else:
            id_bytes, body = ids.split_prefixed(payload)
    except SchemaIdError:
        return None
    number = ids.confluent_int_id(id_bytes)
    return None if number is None else (number, body)


@settings(max_examples=600, deadline=None)
@given(props=properties, payload=payloads)
def test_where_the_native_reader_takes_a_message_it_reads_the_id_and_body_the_python_path_reads(
    props: dict[str, str], payload: bytes
) -> None:
    schema_id, skip, python = required_extension()._testing.framing(props, payload)
    if not python:
        assert (schema_id, payload[skip:]) == python_reading(props, payload)


#: PIP-420's `MessageMetadata.schema_id` (field 32): the bytes whose hex `__schema_id` carries,
#: or none, or empty, or bytes of no form.
field_32 = st.one_of(
    st.none(),
    st.just(b""),
    everyday_ids.map(bytes.fromhex),
    st.binary(max_size=8),
    st.integers(0, 2**32 - 1).map(lambda n: bytes.fromhex(f"fe{n:08x}")),
)


@settings(max_examples=600, deadline=None)
@given(props=properties, payload=payloads, metadata_id=field_32)
def test_field_32_reads_as_the_python_path_reads_the_same_bytes_in_the_property(
    props: dict[str, str], payload: bytes, metadata_id: bytes | None
) -> None:
    """pulsar-client's Python `Message` does not give field 32 (Java PIP-420 producers write only
    that): the native reader reads it as the Python path reads the same bytes as `__schema_id`
    (`schema_id.py`: the property is their hex), and leaves the message to the Python path where
    the two say different ids."""
    schema_id, skip, python = required_extension()._testing.framing(props, payload, metadata_id)
    given = ids.SCHEMA_ID_PROPERTY in props
    effective = props if given or not metadata_id else {**props, ids.SCHEMA_ID_PROPERTY: metadata_id.hex()}
    if not python:
        assert (schema_id, payload[skip:]) == python_reading(effective, payload)
    if given and metadata_id and not python:
        assert bytes.fromhex(props[ids.SCHEMA_ID_PROPERTY]) == metadata_id  # they agree


def test_a_java_pip_420_message_is_read_by_its_field_32() -> None:
    native = required_extension()._testing
    field32 = bytes.fromhex("ff000000002a")
    assert native.framing({"colour": "red"}, b"\x02ab", field32) == (42, 0, False)
    assert native.framing({ids.SCHEMA_ID_PROPERTY: "FF000000002A"}, b"", field32) == (42, 0, False)
    assert native.framing({ids.SCHEMA_ID_PROPERTY: "ff0000000029"}, b"", field32)[2]  # disagree


@settings(max_examples=200, deadline=None)
@given(
    schema_id=everyday_ids,
    other=st.dictionaries(st.sampled_from(["colour", "region"]), st.text(max_size=8), max_size=2),
    payload=st.binary(max_size=8),
)
def test_the_everyday_forms_are_the_native_readers_own(
    schema_id: str, other: dict[str, str], payload: bytes
) -> None:
    native = required_extension()._testing
    assert native.framing({**other, ids.SCHEMA_ID_PROPERTY: schema_id}, payload) == (
        int(schema_id[4:], 16),
        0,
        False,
    )
    prefixed = ids.confluent_id(7) + payload
    assert native.framing(other, prefixed) == (7, 5, False)


# -- where a message falls in a range ----------------------------------------------------------

small = st.integers(0, 3)
bounds = st.builds(Bound, small, small, st.integers(-1, 3), st.booleans())
places = st.tuples(small, small, st.integers(-1, 3))


def _position(bound: Bound) -> tuple[int, int, int, bool]:
    return (bound.ledger, bound.entry, bound.batch, bound.inclusive)


@settings(max_examples=600, deadline=None)
@given(
    start=st.none() | bounds,
    end=bounds,
    last_written=st.tuples(small, small),
    place=places,
    later=st.lists(places, max_size=6),
)
def test_a_messages_place_in_a_range_is_the_python_bounds(
    start: Bound | None,
    end: Bound,
    last_written: tuple[int, int],
    place: tuple[int, int, int],
    later: list[tuple[int, int, int]],
) -> None:
    def python_place(ledger: int, entry: int, batch: int) -> str:
        if start is not None and start.covers(ledger, entry, batch):
            return "before"
        return "inside" if end.covers(ledger, entry, batch) else "after"

    first = None if start is None else _position(start)
    verdict, done = required_extension()._testing.range_place(first, _position(end), last_written, place)
    assert verdict == python_place(*place)
    if done:  # nothing written after this entry is inside the range
        for ledger, entry, batch in later:
            if place[:2] < (ledger, entry) <= last_written:
                assert python_place(ledger, entry, batch) != "inside"


# -- where the sender cuts its batched entries ---------------------------------------------------


def pulsar_client_batch_starts(sizes: list[int], max_messages: int, max_bytes: int) -> list[int]:
    """Where pulsar-client's producer starts each batched entry for messages of these payload
    sizes sent in order, batches closed by count and size only (the Spark sink's
    `DETERMINISTIC_BATCHES`): `ProducerImpl::sendAsync` sends the open batch when a message does
    not fit in it (`BatchMessageContainerBase::hasEnoughSpace`), adds the message, and sends the
    batch when it is then full (`isFull`); sending an empty batch sends nothing."""
    starts: list[int] = []
    batch: list[int] = []

    def send() -> None:
        if batch:
            starts.append(batch[0])
            batch.clear()

    for index, size in enumerate(sizes):
        if not (len(batch) < max_messages and sum(sizes[i] for i in batch) + size <= max_bytes):
            send()
        batch.append(index)
        if len(batch) >= max_messages or sum(sizes[i] for i in batch) >= max_bytes:
            send()
    send()  # the producer's flush
    return starts


@settings(max_examples=600, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), max_size=40),
    max_messages=st.integers(0, 6),
    max_bytes=st.integers(0, 100),
)
def test_the_native_sender_cuts_batches_where_pulsar_client_does(
    sizes: list[int], max_messages: int, max_bytes: int
) -> None:
    native = required_extension()._testing
    assert native.batch_starts(sizes, max_messages, max_bytes) == pulsar_client_batch_starts(
        sizes, max_messages, max_bytes
    )


def test_the_sinks_batches_are_cut_by_count_and_by_size() -> None:
    from pulsar_external_schema.writing.routing import DETERMINISTIC_BATCHES

    limits = (
        DETERMINISTIC_BATCHES["batching_max_messages"],
        DETERMINISTIC_BATCHES["batching_max_allowed_size_in_bytes"],
    )
    native = required_extension()._testing
    assert native.batch_starts([10] * 2500, *limits) == [0, 1000, 2000]  # by count
    assert native.batch_starts([50_000] * 5, *limits) == [0, 2, 4]  # a third is above 128 KiB
    assert native.batch_starts([200_000, 1, 1], *limits) == [0, 1]  # above the limit: alone


# -- where the sender routes a keyed message ----------------------------------------------------

#: Keys of every length boost's hash reads differently (1-3, 4-7 and 8+ bytes, with a tail of
#: each), multi-byte UTF-8 and whitespace ...
ROUTED_KEYS = [
    "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijkl",
    "abcdefghijklmnop", "abcdefghijklmnopq", "order-1", "order-42", "customer:9001", "0", "1", "17",
    "4711", "ключ", "日本語キー", "clé", "🔑", "a🔑b", " ", "key with spaces", "x" * 23, "y" * 31,
    "z" * 32, "w" * 33, "0123456789" * 7, "ÿ", "éè", "tab\there",
]  # fmt: skip
#: ... and the partition pulsar-client 3.13's producer sent each to (default `BoostHash`, batching
#: off), on topics of 7, 13 and 64 partitions of a Pulsar 4.2 standalone, 2026-11-29.
ROUTED_BY_PULSAR_CLIENT = {
    7: "4 1 4 5 0 2 3 5 6 0 1 2 6 6 2 2 2 6 3 4 6 5 2 6 3 5 4 0 1 2 2 0 6 5",
    13: "11 5 11 3 9 10 3 9 10 5 5 7 6 8 0 6 11 12 0 8 1 9 12 3 0 11 11 7 7 8 6 1 2 4",
    64: "28 54 61 34 5 24 38 14 46 10 58 57 14 54 56 26 15 62 2 61 62 13 59 2 31 21 2 32 49 13 40 47 46 2",
}


def test_the_native_sender_routes_keys_to_the_partitions_pulsar_client_chose() -> None:
    import pyarrow as pa

    native = required_extension()
    for partitions, expected in ROUTED_BY_PULSAR_CLIENT.items():
        routed = native.key_partitions(pa.array(ROUTED_KEYS), partitions).to_pylist()
        assert routed == [int(partition) for partition in expected.split()], partitions


def test_a_message_without_a_key_is_routed_by_the_sender_not_the_hash() -> None:
    import pyarrow as pa

    routed = required_extension().key_partitions(pa.array(["a", None, "", "ab"]), 7).to_pylist()
    assert routed == [4, None, None, 1]
