"""Prefix mode, interop with confluent-kafka's own serdes, registry request counts, and every error
a user can meet, on the real broker and registry."""

from __future__ import annotations

from typing import Any

import pulsar
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from conftest import Services
from contracts import subject_of, subscribe
from registry_proxy import counting_proxy
from schemas import ORDER_V1 as ORDER

from pulsar_external_schema import (
    SCHEMA_ID_PROPERTY,
    DecodeError,
    EncodeError,
    MissingSchemaIdError,
    RegistryUnavailableError,
    SchemaIdError,
    SchemaRegistrySchemaFactory,
    UnknownSchemaIdError,
    ValueOutsideSchemaError,
    create_producer,
)


def local_name(topic: str) -> str:
    return topic.rsplit("/", 1)[1]


def assert_topic_is_empty(client: Any, topic: str) -> None:
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    try:
        assert not reader.has_message_available()
    finally:
        reader.close()


# -- prefix mode ----------------------------------------------------------------------------------


def test_prefix_mode_puts_the_confluent_framing_in_the_payload(
    services: Services, pulsar_client: Any, registry_client: SchemaRegistryClient, topic: str
) -> None:
    conf = {"schema.registry.url": services.registry_url, "schema.id.location": "prefix"}
    with SchemaRegistrySchemaFactory(conf) as factory:
        schema = factory.avro(ORDER)
        consumer = subscribe(pulsar_client, topic, schema)
        create_producer(pulsar_client, topic, schema).send({"id": 1, "item": "a"})
        # In prefix mode a schema bound to its topic also works with pulsar-client's own producer.
        pulsar_client.create_producer(topic, schema=schema.for_topic(topic)).send({"id": 2, "item": "b"})

        messages = [consumer.receive(timeout_millis=10_000) for _ in range(2)]

        schema_id = registry_client.get_latest_version(subject_of(topic)).schema_id
        assert schema_id is not None
        for message in messages:
            assert SCHEMA_ID_PROPERTY not in message.properties()
            assert message.data()[:5] == b"\x00" + schema_id.to_bytes(4, "big")
        assert [m.value() for m in messages] == [{"id": 1, "item": "a"}, {"id": 2, "item": "b"}]
        schema.close()


# -- interop with confluent-kafka's serdes ------------------------------------------------------------


def test_our_messages_decode_with_confluent_kafka_deserializer(
    services: Services,
    registry_client: SchemaRegistryClient,
    factory: SchemaRegistrySchemaFactory,
    topic: str,
) -> None:
    schema = factory.avro(ORDER)
    encoded = schema.encode(topic, {"id": 5, "item": "interop"})
    assert encoded.schema_id is not None
    with SchemaRegistrySchemaFactory(
        {
            "schema.registry.url": services.registry_url,
            "schema.id.location": "prefix",
        }
    ) as prefix_factory:
        prefixed = prefix_factory.avro(ORDER).encode(topic, {"id": 6, "item": "prefixed"}).data

    theirs = AvroDeserializer(registry_client)
    ctx = SerializationContext(topic, MessageField.VALUE)

    # Metadata mode: schema id + payload is exactly Confluent's wire format.
    assert theirs(encoded.schema_id + encoded.data, ctx) == {"id": 5, "item": "interop"}
    assert theirs(prefixed, ctx) == {"id": 6, "item": "prefixed"}


def test_confluent_kafka_serialized_data_decodes_through_our_schema(
    services: Services, pulsar_client: Any, registry_client: SchemaRegistryClient, topic: str
) -> None:
    # A Kafka-side producer: Confluent's serializer and Kafka's topic-name subject ({topic}-value).
    kafka_topic = local_name(topic)
    theirs = AvroSerializer(registry_client, ORDER)
    kafka_bytes = theirs(
        {"id": 7, "item": "from kafka"}, SerializationContext(kafka_topic, MessageField.VALUE)
    )
    assert registry_client.get_latest_version(f"{kafka_topic}-value").schema_id is not None

    # Bridged to Pulsar as raw bytes, no __schema_id: decoded from the Confluent prefix.
    pulsar_client.create_producer(topic).send(kafka_bytes)
    conf = {"schema.registry.url": services.registry_url, "subject.name.strategy": "short-topic"}
    with SchemaRegistrySchemaFactory(conf) as factory:
        schema = factory.avro(ORDER)
        assert schema.subject(topic) == f"{kafka_topic}-value"
        message = subscribe(pulsar_client, topic, schema).receive(timeout_millis=10_000)
        assert message.value() == {"id": 7, "item": "from kafka"}
        schema.close()


# -- registry requests are cached ------------------------------------------------------------------


@pytest.mark.slow
def test_registry_requests_do_not_grow_with_messages(
    services: Services, pulsar_client: Any, topic: str
) -> None:
    with counting_proxy(services.registry_url) as proxy:
        # Producer and consumer as in two processes: separate factories, separate caches.
        producing = SchemaRegistrySchemaFactory({"schema.registry.url": proxy.url})
        consuming = SchemaRegistrySchemaFactory({"schema.registry.url": proxy.url})
        writer, reader = producing.avro(ORDER), consuming.avro(ORDER)
        first = writer.encode(topic, {"id": 0, "item": "warm-up"})
        reader.decode(topic, first.data, first.schema_id)
        after_one = dict(proxy.requests)

        for i in range(100_000):
            encoded = writer.encode(topic, {"id": i, "item": "x"})
            assert reader.decode(topic, encoded.data, encoded.schema_id)["id"] == i
        after_100k = dict(proxy.requests)

        consumer = subscribe(pulsar_client, topic, reader)
        producer = create_producer(
            pulsar_client, topic, writer, batching_enabled=True, block_if_queue_full=True
        )
        results: list[Any] = []
        for i in range(2_000):
            producer.send_async({"id": i, "item": "broker"}, lambda result, msg_id: results.append(result))
        producer.flush()
        assert results == [pulsar.Result.Ok] * 2_000
        for _ in range(2_000):
            message = consumer.receive(timeout_millis=10_000)
            assert message.value()["item"] == "broker"
            consumer.acknowledge(message)
        after_broker = dict(proxy.requests)
        for closing in (writer, reader, producing, consuming):
            closing.close()

    schema_id = int.from_bytes((first.schema_id or b"")[1:], "big")
    # The producer registers once and fetches the registered schema once (for the rule set the
    # registry holds for it); the consumer fetches it once by id, and asks once which subjects
    # hold the id (`schema.id.subject.check`); whatever the volume.
    assert after_one == {
        f"POST /subjects/{subject_of(topic)}/versions": 1,
        f"GET /schemas/ids/{schema_id}": 2,
        f"GET /schemas/ids/{schema_id}/subjects": 1,
    }
    assert after_100k == after_one
    assert after_broker == after_one


# -- errors ---------------------------------------------------------------------------------------------


def test_consumer_errors_name_topic_subject_and_schema_id(
    pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.avro(ORDER)
    good = schema.encode(topic, {"id": 1, "item": "ok"})
    assert good.schema_id is not None
    raw = pulsar_client.create_producer(topic)
    raw.send(b'{"id": 1}')  # no __schema_id, not Confluent-framed
    raw.send(good.data, properties={SCHEMA_ID_PROPERTY: "not-hex"})
    raw.send(good.data, properties={SCHEMA_ID_PROPERTY: "ff00000f4240"})  # id 1000000: unknown
    raw.send(good.data, properties={SCHEMA_ID_PROPERTY: "ff07" + good.schema_id[1:].hex()})  # bad magic
    raw.send(good.data[:1], properties={SCHEMA_ID_PROPERTY: "ff" + good.schema_id.hex()})  # truncated
    raw.send(good.data, properties={SCHEMA_ID_PROPERTY: "fe00"})  # a key/value id on a value schema

    consumer = subscribe(pulsar_client, topic, schema)
    expected = [
        (
            MissingSchemaIdError,
            "no __schema_id (or __value_schema_id) property and its payload does not start with a "
            "Confluent schema id (first byte 0x7b)",
        ),
        (SchemaIdError, "the __schema_id property 'not-hex' is not hexadecimal"),
        (UnknownSchemaIdError, "unknown schema"),
        (SchemaIdError, "starts with 0x07, not a Confluent id"),
        (DecodeError, "could not decode 1 bytes as AVRO"),
        (SchemaIdError, "key/value schema id (0xfe) but this is a value schema"),
    ]
    for error_type, text in expected:
        message = consumer.receive(timeout_millis=10_000)
        with pytest.raises(error_type) as caught:
            message.value()
        error = caught.value
        assert text in str(error)
        assert error.topic == topic and topic in str(error)
        assert error.subject == subject_of(topic) and subject_of(topic) in str(error)
        consumer.acknowledge(message)


def test_unknown_schema_id_error_names_the_id(
    pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.avro(ORDER)
    with pytest.raises(UnknownSchemaIdError) as caught:
        schema.decode(topic, b"\x02\x02x", b"\xff\x00\x00\x0f\x42\x40")
    assert caught.value.schema_id == "1000000"
    assert "schema id 1000000" in str(caught.value)
    assert "Schema not found" in str(caught.value)


def test_bad_values_and_plain_producers_send_nothing(
    pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.avro(ORDER)
    producer = create_producer(pulsar_client, topic, schema)

    with pytest.raises(EncodeError) as caught:
        producer.send({"id": "not a number", "item": "x"})
    assert caught.value.topic == topic
    assert caught.value.subject == subject_of(topic)
    assert "field id: a str is not an Avro long (64-bit integer)" in str(caught.value)
    assert isinstance(caught.value, ValueOutsideSchemaError) and caught.value.path == "id"

    with pytest.raises(EncodeError, match=r"cannot set the __schema_id property.*create_producer"):
        pulsar_client.create_producer(topic, schema=schema).send({"id": 1, "item": "x"})

    assert_topic_is_empty(pulsar_client, topic)


def test_registry_outage_is_named_and_cached_schemas_keep_working(services: Services, topic: str) -> None:
    with counting_proxy(services.registry_url) as proxy:
        factory = SchemaRegistrySchemaFactory({"schema.registry.url": proxy.url, "max.retries": 0})
        schema = factory.avro(ORDER)
        encoded = schema.encode(topic, {"id": 1, "item": "before"})
        proxy.stop()

        # Cached: the schema id and the writer schema are known, no request is needed.
        assert (
            schema.decode(topic, schema.encode(topic, {"id": 2, "item": "x"}).data, encoded.schema_id)["id"]
            == 2
        )
        other = factory.avro(ORDER.replace('"Order"', '"Refund"'))
        with pytest.raises(RegistryUnavailableError) as caught:
            other.encode(topic, {"id": 3, "item": "after"})
        assert proxy.url in str(caught.value)
        assert caught.value.topic == topic
        assert caught.value.subject == subject_of(topic)
        with pytest.raises(RegistryUnavailableError, match="cannot reach the registry"):
            schema.decode(topic, encoded.data, b"\xff\x00\x00\x0f\x42\x41")  # an id not seen before
        schema.close()
        other.close()
        factory.close()


def test_close_releases_the_registry_client_once_nothing_uses_it(services: Services) -> None:
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url})
    first, second = factory.avro(ORDER), factory.avro(ORDER)
    session = factory.registry_client._rest_client.session

    first.close()
    factory.close()
    assert not session.is_closed  # `second` still uses it
    second.close()
    assert session.is_closed
    with pytest.raises(Exception, match="this schema was closed"):
        first.encode("t", {"id": 1, "item": "x"})
