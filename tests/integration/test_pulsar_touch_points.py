"""Each use of pulsar-client's private API (the functions of `_pulsar_client.py`), held to the
installed pulsar-client on the real broker: a release that renames or reshapes one fails here,
by name. pyproject.toml bounds pulsar-client to the tested minor line."""

from __future__ import annotations

import asyncio
from typing import Any

import _pulsar
import pulsar
import pulsar.asyncio
import pytest
from conftest import Services

from pulsar_external_schema import _pulsar_client


def test_bytes_is_the_schema_type_of_pulsar_clients_bytes_schema() -> None:
    assert pulsar.schema.BytesSchema().schema_info().schema_type() == _pulsar_client.BYTES


def test_raw_client_finds_the_cpp_client_behind_either_wrapper(services: Services) -> None:
    async def inside_a_loop() -> Any:  # pulsar.asyncio.Client wants a running loop
        asynchronous = pulsar.asyncio.Client(services.pulsar_url)
        try:
            return _pulsar_client.raw_client(asynchronous)
        finally:
            await asynchronous.close()

    client = pulsar.Client(services.pulsar_url)
    try:
        assert isinstance(_pulsar_client.raw_client(client), _pulsar.Client)
    finally:
        client.close()
    assert isinstance(asyncio.run(inside_a_loop()), _pulsar.Client)
    assert _pulsar_client.raw_client(None) is None
    with pytest.raises(TypeError, match="not int"):
        _pulsar_client.raw_client(7)


def test_a_bytes_producer_sends_raw_messages_with_their_metadata(
    services: Services, pulsar_client: Any, topic: str
) -> None:
    producer = _pulsar_client.bytes_producer(_pulsar_client.raw_client(pulsar_client), topic, batched=False)
    reader = pulsar_client.create_reader(topic, pulsar.MessageId.earliest)
    try:
        producer.send(_pulsar_client.raw_message(b"copy", {"a": "1"}, "key", "order", 1234))
        msg = reader.read_next(10_000)
    finally:
        producer.close()
        reader.close()

    assert (msg.data(), msg.properties(), msg.partition_key(), msg.ordering_key(), msg.event_timestamp()) == (
        b"copy",
        {"a": "1"},
        "key",
        "order",
        1234,
    )


def test_a_consumers_direct_calls_receive_and_acknowledge_as_its_own(pulsar_client: Any, topic: str) -> None:
    schema = pulsar.schema.StringSchema()
    consumer = pulsar_client.subscribe(topic, "touch", schema=schema)
    producer = pulsar_client.create_producer(topic, schema=schema)
    try:
        producer.send("hello")
        producer.send("again")
        assert _pulsar_client.consumer_schema(consumer) is schema
        calls = _pulsar_client.direct_calls(consumer)
        assert calls is not None
        receive, acknowledge = calls
        msg = receive(10_000)
        assert isinstance(msg, pulsar.Message) and msg.value() == "hello"
        acknowledge(msg)
        consumer.redeliver_unacknowledged_messages()
        assert consumer.receive(10_000).value() == "again"  # "hello" was acknowledged
        assert _pulsar_client.direct_calls(object()) is None
        assert _pulsar_client.consumer_schema(object()) is None
    finally:
        producer.close()
        consumer.close()


def test_a_readers_cpp_read_next_gives_messages_with_the_python_messages_methods(
    pulsar_client: Any, topic: str
) -> None:
    producer = pulsar_client.create_producer(topic)
    reader = pulsar_client.create_reader(topic, pulsar.MessageId.earliest)
    try:
        producer.send(b"x", properties={"p": "v"}, partition_key="k")
        msg = _pulsar_client.read_next(reader)(10_000)
        assert not isinstance(msg, pulsar.Message)  # the C++ message: no wrapper made
        assert (msg.data(), msg.properties(), msg.partition_key()) == (b"x", {"p": "v"}, "k")
        assert msg.message_id().entry_id() >= 0 and msg.publish_timestamp() > 0
    finally:
        producer.close()
        reader.close()
