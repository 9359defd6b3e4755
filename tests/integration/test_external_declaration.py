"""PIP-420's EXTERNAL schema type on the real 4.2 broker: with `pulsar.admin.url`, `create_producer`
and `subscribe` declare the topic EXTERNAL, as a Java PIP-420 client does, and the broker then refuses clients
with a native Pulsar schema on it; this package's producers and consumers go on working."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pulsar
import pulsar.asyncio
import pytest
from conftest import Services
from pulsar.schema import AvroSchema, Record, String

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer, subscribe
from pulsar_external_schema.errors import PulsarAdminError

RECORD = '{"type": "record", "name": "r", "fields": [{"name": "f1", "type": "string"}]}'


class Native(Record):  # type: ignore[misc]
    f1 = String()


def broker_schema(services: Services, topic: str) -> httpx.Response:
    tenant_namespace_name = topic.split("://", 1)[1]
    return httpx.get(f"{services.admin_url}/admin/v2/schemas/{tenant_namespace_name}/schema")


def factory(services: Services) -> SchemaRegistrySchemaFactory:
    return SchemaRegistrySchemaFactory(
        {"schema.registry.url": services.registry_url, "pulsar.admin.url": services.admin_url}
    )


@pytest.mark.usefixtures("external_type")  # PIP-420's EXTERNAL type: Pulsar 4.1+
def test_a_declared_topic_refuses_native_schemas_and_keeps_serving_ours(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    schema = factory(services).avro(RECORD)
    assert broker_schema(services, topic).status_code == 404  # nothing declared yet

    producer = create_producer(pulsar_client, topic, schema)
    declared = broker_schema(services, topic).json()
    assert declared["type"] == "EXTERNAL" and declared["data"] == ""

    producer.send({"f1": "ours"})
    consumer = pulsar_client.subscribe(
        topic, "ours", schema=schema, initial_position=pulsar.InitialPosition.Earliest
    )
    assert consumer.receive(10_000).value() == {"f1": "ours"}
    with pytest.raises(pulsar.exceptions.IncompatibleSchema):
        pulsar_client.create_producer(topic, schema=AvroSchema(Native))
    with pytest.raises(pulsar.exceptions.IncompatibleSchema):
        pulsar_client.subscribe(topic, "native", schema=AvroSchema(Native))
    with pytest.raises(pulsar.exceptions.IncompatibleSchema):
        pulsar_client.create_producer(topic, schema=pulsar.schema.StringSchema())
    # A producer without a schema (raw bytes) is accepted: the broker cannot tell (wire-format.md).
    pulsar_client.create_producer(topic).send(b"raw")
    # A second producer (here, or in another process) finds it declared and changes nothing.
    create_producer(pulsar_client, topic, schema).send({"f1": "again"})
    assert broker_schema(services, topic).json()["version"] == declared["version"]


@pytest.mark.usefixtures("external_type")  # PIP-420's EXTERNAL type: Pulsar 4.1+
def test_a_topic_a_native_producer_wrote_to_cannot_be_declared(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    pulsar_client.create_producer(topic, schema=AvroSchema(Native)).send(Native(f1="native"))

    with pytest.raises(PulsarAdminError) as raised:
        create_producer(pulsar_client, topic, factory(services).avro(RECORD))
    message = str(raised.value)
    assert f"{topic} already has a schema of type AVRO on the broker" in message
    assert "exists schema type AVRO, new schema type EXTERNAL" in message


@pytest.mark.usefixtures("external_type")  # PIP-420's EXTERNAL type: Pulsar 4.1+
def test_a_partitioned_topic_is_declared_for_all_its_partitions(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    name = topic.split("://", 1)[1]
    created = httpx.put(f"{services.admin_url}/admin/v2/persistent/{name}/partitions", json=2)
    assert created.status_code == 204

    create_producer(pulsar_client, topic, factory(services).avro(RECORD)).send({"f1": "x"})
    with pytest.raises(pulsar.exceptions.IncompatibleSchema):
        pulsar_client.create_producer(f"{topic}-partition-1", schema=AvroSchema(Native))


@pytest.mark.usefixtures("external_type")  # PIP-420's EXTERNAL type: Pulsar 4.1+
def test_subscribe_declares_a_topic_only_python_consumers_read(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    """A topic with only our consumer on it: declared by `subscribe`, so native-schema clients
    are refused there as on a topic our producer declared."""
    schema = factory(services).avro(RECORD)
    consumer = subscribe(pulsar_client, topic, "ours", schema)

    assert broker_schema(services, topic).json()["type"] == "EXTERNAL"
    with pytest.raises(pulsar.exceptions.IncompatibleSchema):
        pulsar_client.create_producer(topic, schema=AvroSchema(Native))
    create_producer(pulsar_client, topic, schema).send({"f1": "ours"})
    assert consumer.receive(10_000).value() == {"f1": "ours"}


def test_subscribe_without_an_admin_url_is_client_subscribe(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    schema = SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}).avro(RECORD)
    consumer = subscribe(
        pulsar_client, topic, "ours", schema, initial_position=pulsar.InitialPosition.Earliest
    )

    assert broker_schema(services, topic).status_code == 404
    assert consumer.subscription_name() == "ours"
    # Nothing protects the topic then: a native-schema producer is accepted, and its schema stored.
    pulsar_client.create_producer(topic, schema=AvroSchema(Native))
    assert broker_schema(services, topic).json()["type"] == "AVRO"


@pytest.mark.usefixtures("external_type")  # PIP-420's EXTERNAL type: Pulsar 4.1+
def test_subscribe_with_an_asyncio_client_declares_too(services: Services, topic: str) -> None:
    schema = factory(services).avro(RECORD)

    async def scenario() -> Any:
        client = pulsar.asyncio.Client(services.pulsar_url)
        try:
            consumer = await subscribe(client, topic, "ours", schema)
            declared = broker_schema(services, topic).json()["type"]
            producer = await create_producer(client, topic, schema)
            await producer.send({"f1": "async"})
            value = (await consumer.receive()).value()
            await producer.close()
            return declared, value
        finally:
            await client.close()

    assert asyncio.run(scenario()) == ("EXTERNAL", {"f1": "async"})
