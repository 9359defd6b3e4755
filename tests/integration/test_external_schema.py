"""ExternalSchema on the real broker and registry: formats, versions, readers, partitions, asyncio."""

from __future__ import annotations

import asyncio
import json
from types import ModuleType
from typing import Any

import pulsar
import pulsar.asyncio
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from conftest import Services, create_partitioned_topic
from contracts import receive_all, subscribe, unique
from schemas import ORDER_JSON, ORDER_V1, ORDER_V2, order_message_class

from pulsar_external_schema import (
    SCHEMA_ID_PROPERTY,
    EncodeData,
    EncodeError,
    KeyValue,
    SchemaRegistrySchemaFactory,
    _native,
    create_producer,
)

KEY_SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "OrderKey",
        "namespace": "acme",
        "fields": [{"name": "customer", "type": "string"}],
    }
)


def nothing_more(consumer: Any) -> bool:
    try:
        consumer.receive(timeout_millis=1_000)
    except pulsar.Timeout:
        return True
    return False


def registered_id(registry: SchemaRegistryClient, subject: str) -> int:
    schema_id = registry.get_latest_version(subject).schema_id
    assert schema_id is not None
    return schema_id


# -- each format, through the broker -----------------------------------------------------------


def test_avro_through_the_broker_with_the_id_in_metadata(
    pulsar_client: Any,
    registry_client: SchemaRegistryClient,
    factory: SchemaRegistrySchemaFactory,
    topic: str,
) -> None:
    schema = factory.avro(ORDER_V1)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    orders = [{"id": i, "item": f"item-{i}"} for i in range(5)]
    for order in orders:
        producer.send(order)

    messages = receive_all(consumer, len(orders))

    assert [m.value() for m in messages] == orders
    subject = "public.default." + topic.rsplit("/", 1)[1] + "-value"
    assert schema.subject(topic) == subject
    schema_id = registered_id(registry_client, subject)
    # PIP-420 layout: 0xFF + Confluent's 0x00 + uint32 BE id, as lowercase hex.
    assert {m.properties()[SCHEMA_ID_PROPERTY] for m in messages} == {f"ff00{schema_id:08x}"}
    # The payload is the bare Avro body: no Confluent prefix inside.
    assert messages[0].data() == b"\x00" + b"\x0c" + b"item-0"
    producer.close()
    consumer.close()


def test_encode_decode_api(
    factory: SchemaRegistrySchemaFactory, registry_client: SchemaRegistryClient, topic: str
) -> None:
    schema = factory.avro(ORDER_V1)

    encoded = schema.encode(topic, {"id": 7, "item": "x"})

    assert isinstance(encoded, EncodeData)
    schema_id = registered_id(registry_client, schema.subject(topic) or "")
    assert encoded.schema_id == b"\x00" + schema_id.to_bytes(4, "big")
    assert schema.decode(topic, encoded.data, encoded.schema_id) == {"id": 7, "item": "x"}
    # decode also takes the id as it sits in the metadata (with its 0xFF magic byte).
    assert schema.decode(topic, encoded.data, b"\xff" + encoded.schema_id) == {"id": 7, "item": "x"}


def test_json_schema_through_the_broker(
    pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.json(ORDER_JSON)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    producer.send({"id": 1, "item": "pen"})
    with pytest.raises(
        EncodeError, match=r"could not serialize the value as JSON.*'item' is a required property"
    ):
        producer.send({"id": 2})

    (message,) = receive_all(consumer, 1)
    assert message.value() == {"id": 1, "item": "pen"}
    assert json.loads(message.data()) == {"id": 1, "item": "pen"}
    assert nothing_more(consumer)


def test_a_json_schema_with_a_reference_is_checked_by_the_native_extension_through_the_broker(
    native_extension: ModuleType,
    pulsar_client: Any,
    registry_client: SchemaRegistryClient,
    make_factory: Any,
    topic: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The extension's `JsonCodec` writes and reads a schema whose `$ref` the registry's
    referenced version resolves, through the schema's native `encode_for` and kept readers, and
    gives the bytes, values and errors of the Python path."""
    product_subject = unique("product")
    product = {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "price": {"type": "number", "minimum": 0}},
        "required": ["sku"],
    }
    registry_client.register_schema(
        product_subject, Schema.from_dict({"schema": json.dumps(product), "schemaType": "JSON"})
    )
    order = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "product": {"$ref": "product.json"}},
        "required": ["id", "product"],
    }
    root = Schema.from_dict(
        {
            "schema": json.dumps(order),
            "schemaType": "JSON",
            "references": [{"name": "product.json", "subject": product_subject, "version": 1}],
        }
    )
    schema = make_factory().json(root)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    sent = [{"id": n, "product": {"sku": f"s{n}", "price": n / 2}} for n in range(3)]
    for value in sent:
        producer.send(value)
    refused = {"id": 9, "product": {"sku": "s9", "price": -1}}
    with pytest.raises(EncodeError, match="could not serialize the value as JSON") as native_error:
        producer.send(refused)
    received = receive_all(consumer, 3)
    assert [m.value() for m in received] == sent
    assert nothing_more(consumer)

    codec = schema._part.codec
    writes = [plan.write for plan in codec.writes.plans.values() if hasattr(plan, "write")]
    reads = [plan.read for plan in codec.reads.plans.values() if hasattr(plan, "read")]
    assert [getattr(w, "__qualname__", "") for w in writes] == ["JsonCodec.write"]
    assert [getattr(r, "__qualname__", "") for r in reads] == ["JsonCodec.read"]
    # and the producer's messages took the schema's native `encode_for` and the kept writer
    assert type(schema.encode_for).__name__ == "Encoder"
    assert [type(w).__name__ for w, _ in codec.writers.values()] == ["DirectWriter"]
    assert {type(r).__name__ for r, _ in schema._part.readers.values()} == {"DirectReader"}

    # The Python path, the same schema with the extension hidden while its plans are built
    monkeypatch.setattr(_native, "extension", lambda: None)
    python = make_factory().json(root)
    for message, value in zip(received, sent, strict=True):
        assert python.encode(topic, value).data == message.data()
        schema_id = bytes.fromhex(message.properties()[SCHEMA_ID_PROPERTY])
        assert python.decode(topic, message.data(), schema_id) == value
    with pytest.raises(EncodeError) as python_error:
        python.encode(topic, refused)
    assert str(python_error.value) == str(native_error.value)


def test_protobuf_through_the_broker(
    pulsar_client: Any,
    registry_client: SchemaRegistryClient,
    factory: SchemaRegistrySchemaFactory,
    topic: str,
) -> None:
    order_cls = order_message_class()
    schema = factory.protobuf(order_cls)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    producer.send(order_cls(id=3, item="book"))

    (message,) = receive_all(consumer, 1)
    value = message.value()
    assert isinstance(value, order_cls)
    assert (value.id, value.item) == (3, "book")
    schema_id = registered_id(registry_client, schema.subject(topic) or "")
    # Protobuf ids carry the message index array (one 0 byte for the first message type).
    assert message.properties()[SCHEMA_ID_PROPERTY] == f"ff00{schema_id:08x}00"
    assert registry_client.get_schema(schema_id).schema_type == "PROTOBUF"


def test_key_value_through_the_broker(
    pulsar_client: Any,
    registry_client: SchemaRegistryClient,
    factory: SchemaRegistrySchemaFactory,
    topic: str,
) -> None:
    schema = factory.key_value(factory.avro(KEY_SCHEMA), factory.avro(ORDER_V1))
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)

    producer.send(KeyValue({"customer": "ann"}, {"id": 1, "item": "tea"}))
    producer.send(({"customer": "bob"}, None))

    first, second = receive_all(consumer, 2)
    assert first.value() == KeyValue({"customer": "ann"}, {"id": 1, "item": "tea"})
    assert second.value() == KeyValue({"customer": "bob"}, None)
    base = "public.default." + topic.rsplit("/", 1)[1]
    key_id = registered_id(registry_client, f"{base}-key")
    value_id = registered_id(registry_client, f"{base}-value")
    # 0xFE + int32 len + key id + int32 len + value id; an absent value has an empty id.
    assert (
        first.properties()[SCHEMA_ID_PROPERTY]
        == "fe00000005" + f"00{key_id:08x}" + "00000005" + f"00{value_id:08x}"
    )
    assert second.properties()[SCHEMA_ID_PROPERTY] == "fe00000005" + f"00{key_id:08x}" + "00000000"
    # Pulsar's INLINE key/value payload: int32 key length, key, int32 value length (-1: null), value.
    assert second.data() == b"\x00\x00\x00\x04" + b"\x06bob" + b"\xff\xff\xff\xff"


# -- many writer versions, reader schemas --------------------------------------------------------


def test_each_message_decodes_with_its_writer_schema_or_into_the_reader_schema(
    services: Services, pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    v1, v2 = factory.avro(ORDER_V1), factory.avro(ORDER_V2)
    writer_view = subscribe(pulsar_client, topic, v1, "writer")
    with SchemaRegistrySchemaFactory(
        {
            "schema.registry.url": services.registry_url,
            "use.latest.version": True,
        }
    ) as latest_factory:
        latest = latest_factory.avro(ORDER_V2)
        reader_view = subscribe(pulsar_client, topic, latest, "reader")
        create_producer(pulsar_client, topic, v1).send({"id": 1, "item": "old"})
        create_producer(pulsar_client, topic, v2).send({"id": 2, "item": "new", "quantity": 5})
        create_producer(pulsar_client, topic, v1).send({"id": 3, "item": "old again"})

        written = [m.value() for m in receive_all(writer_view, 3)]
        read = [m.value() for m in receive_all(reader_view, 3)]
        latest.close()

    assert written == [
        {"id": 1, "item": "old"},
        {"id": 2, "item": "new", "quantity": 5},
        {"id": 3, "item": "old again"},
    ]
    # Into the latest registered version: Avro schema resolution fills the default.
    assert read == [
        {"id": 1, "item": "old", "quantity": 1},
        {"id": 2, "item": "new", "quantity": 5},
        {"id": 3, "item": "old again", "quantity": 1},
    ]


def test_a_consumer_pinned_by_metadata_reads_newer_data_in_its_own_version(
    services: Services, pulsar_client: Any, registry_client: SchemaRegistryClient, topic: str
) -> None:
    from confluent_kafka.schema_registry import Metadata, MetadataProperties, Schema

    subject = "public.default." + topic.rsplit("/", 1)[1] + "-value"
    for major, schema_str in ((1, ORDER_V1), (2, ORDER_V2)):
        metadata = Metadata(None, MetadataProperties({"application.major.version": str(major)}), None)
        registry_client.register_schema(subject, Schema(schema_str, "AVRO", metadata=metadata))
    conf = {"schema.registry.url": services.registry_url}
    with (
        SchemaRegistrySchemaFactory(
            {**conf, "use.latest.with.metadata": "application.major.version=2"}
        ) as v2f,
        SchemaRegistrySchemaFactory(
            {**conf, "use.latest.with.metadata": "application.major.version=1"}
        ) as v1f,
    ):
        producer_schema = v2f.avro(ORDER_V2)
        consumer_schema = v1f.avro(ORDER_V1)
        consumer = subscribe(pulsar_client, topic, consumer_schema)
        create_producer(pulsar_client, topic, producer_schema).send({"id": 9, "item": "x", "quantity": 3})

        (message,) = receive_all(consumer, 1)
        assert message.value() == {"id": 9, "item": "x"}
        v2_id = registry_client.get_latest_with_metadata(
            subject, {"application.major.version": "2"}
        ).schema_id
        assert message.properties()[SCHEMA_ID_PROPERTY] == f"ff00{v2_id:08x}"
        producer_schema.close()
        consumer_schema.close()


# -- partitioned topics, readers, asyncio ----------------------------------------------------------


def test_partitioned_topic_is_one_subject(
    services: Services,
    pulsar_client: Any,
    registry_client: SchemaRegistryClient,
    factory: SchemaRegistrySchemaFactory,
    topic: str,
) -> None:
    create_partitioned_topic(services, topic, 4)
    schema = factory.avro(ORDER_V1)
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    for i in range(40):
        producer.send({"id": i, "item": "p"}, partition_key=f"customer-{i}")

    messages = receive_all(consumer, 40)

    assert sorted(m.value()["id"] for m in messages) == list(range(40))
    partitions = {m.topic_name() for m in messages}
    assert len(partitions) > 1
    assert all("-partition-" in name for name in partitions)
    local = topic.rsplit("/", 1)[1]
    assert [s for s in registry_client.get_subjects() if local in s] == [f"public.default.{local}-value"]


def test_reader_decodes_with_the_stock_client(
    pulsar_client: Any, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.avro(ORDER_V1)
    producer = create_producer(pulsar_client, topic, schema)
    for i in range(3):
        producer.send({"id": i, "item": "r"})

    reader = pulsar_client.create_reader(topic, pulsar.MessageId.earliest, schema=schema)
    values = [reader.read_next(timeout_millis=10_000).value() for _ in range(3)]

    assert values == [{"id": i, "item": "r"} for i in range(3)]
    reader.close()


def test_asyncio_producer_consumer_and_reader(
    services: Services, factory: SchemaRegistrySchemaFactory, topic: str
) -> None:
    schema = factory.avro(ORDER_V1)

    async def scenario() -> tuple[list[Any], list[Any]]:
        client = pulsar.asyncio.Client(services.pulsar_url)
        try:
            consumer = await client.subscribe(
                topic, "async", schema=schema, initial_position=pulsar.InitialPosition.Earliest
            )
            producer = await create_producer(client, topic, schema)
            for i in range(3):
                await producer.send({"id": i, "item": "async"})
            consumed = []
            for _ in range(3):
                message = await consumer.receive()
                consumed.append(message.value())
                await consumer.acknowledge(message)
            reader = await client.create_reader(topic, pulsar.MessageId.earliest, schema=schema)
            read = [(await reader.read_next()).value() for _ in range(3)]
            await producer.close()
            return consumed, read
        finally:
            await client.close()

    consumed, read = asyncio.run(scenario())

    assert consumed == read == [{"id": i, "item": "async"} for i in range(3)]
