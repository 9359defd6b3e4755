"""One topic, this package and a Java PIP-420 client (Pulsar's Java client 4.2, from the broker's
own jars) with an external schema backed by the same registry: tests/interop/
ExternalSchemaInterop.java, run as a single source file. What each side reads of the other:

- Python producer -> Java consumer: Pulsar's Python client cannot set metadata field 32, so the
  Java consumer finds no id there and reads the `__schema_id` property (the recipe a Java team
  uses until it can); the broker accepts its EXTERNAL schema only on a topic declared EXTERNAL
  (`pulsar.admin.url`), and refuses it on an active topic written without a schema.
- Java producer -> Python consumer: the id is in field 32 only, which Python cannot read:
  `MissingSchemaIdError`, saying what the Java producer must add; with `__schema_id` set too, the
  message decodes.
- Arrow tables: the native reader reads field 32 (`read_table(reader="native")` gives the Java
  producer's values; the Python path cannot, and its rows say so), and the native sender writes
  it beside `__schema_id` (`write_table(writer="native")`: the Java consumer finds it there).
- The subject: a Java schema's `encode` is given the topic as the application spelled it, so
  Confluent's TopicNameStrategy there gives `{spelling}-value`, which `short-topic` / `full-topic`
  match here.

Skipped, with the reason, where no `java` runs or the broker's jars are not on this machine (the
Docker path runs the broker in a container)."""

from __future__ import annotations

import json
from typing import Any

import pulsar
import pytest
from conftest import Services, create_partitioned_topic
from java_support import java, needs_java

from pulsar_external_schema import (
    MissingSchemaIdError,
    SchemaRegistrySchemaFactory,
    create_producer,
)

RECORD = '{"type": "record", "name": "r", "fields": [{"name": "f1", "type": "string"}]}'
pytestmark = [needs_java, pytest.mark.usefixtures("external_type")]  # Java PIP-420: 4.1+


def factory(services: Services, **config: Any) -> SchemaRegistrySchemaFactory:
    return SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url, **config})


def test_python_producer_to_java_consumer(services: Services, topic: str, pulsar_client: Any) -> None:
    schema = factory(services, **{"pulsar.admin.url": services.admin_url}).avro(RECORD)
    producer = create_producer(pulsar_client, topic, schema)  # declares the topic EXTERNAL
    producer.send({"f1": "from python"})

    assert java(services, "consume", topic, "java", "1") == ['{"f1": "from python"} property']


def test_a_java_external_consumer_is_refused_on_an_undeclared_topic_python_wrote(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    create_producer(pulsar_client, topic, factory(services).avro(RECORD)).send({"f1": "x"})

    with pytest.raises(AssertionError) as refused:
        java(services, "consume", topic, "java", "1")
    assert "Failed to add schema to an active topic with empty(BYTES) schema" in str(refused.value)


def test_java_producer_to_python_consumer(services: Services, topic: str, pulsar_client: Any) -> None:
    schema = factory(services).avro(RECORD)
    subject = schema.subject(topic)
    assert subject is not None
    schema.encode(topic, {"f1": "registers the schema"})
    sent = java(
        services, "produce", topic, subject, json.dumps({"f1": "field 32 only"}),
        "--property", json.dumps({"f1": "and __schema_id"}),
    )  # fmt: skip
    assert len(sent) == 2

    consumer = pulsar_client.subscribe(
        topic, "python", schema=schema, initial_position=pulsar.InitialPosition.Earliest
    )
    only_field32 = consumer.receive(10_000)
    with pytest.raises(MissingSchemaIdError) as raised:
        only_field32.value()
    assert "A Java PIP-420 producer puts the id in metadata field 32" in str(raised.value)
    assert consumer.receive(10_000).value() == {"f1": "and __schema_id"}
    # The Java side reads both from field 32, which its client wrote.
    assert java(services, "consume", topic, "java", "2") == [
        '{"f1": "field 32 only"} field32',
        '{"f1": "and __schema_id"} field32',
    ]


def test_a_java_schema_is_given_the_topic_as_spelled_to_encode_and_the_partition_to_decode(
    services: Services, topic: str, subject: str
) -> None:
    """What a Java external schema can derive a subject from (Pulsar Java client 4.2)."""
    factory(services, **{"subject.name.strategy": lambda ctx, record: subject}).avro(RECORD).encode(
        topic, {"f1": "registers the schema"}
    )
    local = topic.removeprefix("persistent://public/default/")
    create_partitioned_topic(services, f"{topic}-parts", 2)
    spellings = [f"{local}-short", f"public/default/{local}-mid", f"{topic}-full", f"{local}-parts"]

    seen = java(services, "topics", subject, *spellings)

    assert seen[:3] == [
        f"{spelled} encode={spelled} decode=persistent://public/default/{spelled.rsplit('/', 1)[-1]}"
        for spelled in spellings[:3]
    ]
    assert seen[3].startswith(f"{local}-parts encode={local}-parts decode={topic}-parts-partition-")


@pytest.mark.parametrize(("spelling", "strategy"), [("short", "short-topic"), ("full", "full-topic")])
def test_a_java_producer_naming_subjects_with_topic_name_strategy_shares_them_with_one_setting(
    services: Services, topic: str, pulsar_client: Any, spelling: str, strategy: str
) -> None:
    """The Java producer names its subject `{topic it was given}-value` (Confluent's
    TopicNameStrategy, as a Java external schema over Confluent's serializers does); ours, with
    `subject.name.strategy` set to match its spelling, registers and reads the same subject."""
    spelled = topic.removeprefix("persistent://public/default/") if spelling == "short" else topic
    schema = factory(services, **{"subject.name.strategy": strategy}).avro(RECORD)
    assert schema.subject(topic) == f"{spelled}-value"
    create_producer(pulsar_client, topic, schema).send({"f1": "from python"})

    # The Java side finds the version ours registered under the subject it derives itself.
    assert (
        len(java(services, "produce", spelled, "@topic", "--property", json.dumps({"f1": "from java"}))) == 1
    )

    consumer = pulsar_client.subscribe(
        topic, "python", schema=schema, initial_position=pulsar.InitialPosition.Earliest
    )
    assert [consumer.receive(10_000).value() for _ in range(2)] == [
        {"f1": "from python"},
        {"f1": "from java"},
    ]


def test_a_java_producer_joins_a_topic_only_python_consumers_read(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    """Accepted without a declaration: the broker refuses a new schema on a topic with producers
    or stored data ("active"), and a consumer makes a topic neither."""
    schema = factory(services).avro(RECORD)
    subject = schema.subject(topic)
    assert subject is not None
    schema.encode(topic, {"f1": "registers the schema"})
    earliest = pulsar.InitialPosition.Earliest
    consumer = pulsar_client.subscribe(topic, "python", schema=schema, initial_position=earliest)

    java(services, "produce", topic, subject, "--property", json.dumps({"f1": "from java"}))
    assert consumer.receive(10_000).value() == {"f1": "from java"}


def test_a_java_producers_messages_read_into_a_table_by_field_32_natively(
    services: Services, topic: str
) -> None:
    from native_support import required_extension

    from pulsar_external_schema.arrow import read_table

    required_extension()
    schema = factory(services).avro(RECORD)
    subject = schema.subject(topic)
    assert subject is not None
    schema.encode(topic, {"f1": "registers the schema"})
    java(
        services, "produce", topic, subject, json.dumps({"f1": "field 32 only"}),
        "--property", json.dumps({"f1": "and __schema_id"}),
    )  # fmt: skip
    where: dict[str, Any] = {"service_url": services.pulsar_url, "admin_url": services.admin_url}
    config = {"schema.registry.url": services.registry_url}

    native = read_table(topic, config=config, reader="native", **where).to_pylist()
    python = read_table(topic, config=config, reader="python", **where).to_pylist()

    assert [(r["value"], r["_valid"]) for r in native] == [
        ({"f1": "field 32 only"}, True),
        ({"f1": "and __schema_id"}, True),
    ]
    assert native[0]["schemaId"] == native[1]["schemaId"] is not None
    assert dict(native[0]["properties"]) == {}  # the id was in field 32 alone
    # pulsar-client's Message does not give field 32: the Python path says where the id is
    assert [r["_valid"] for r in python] == [False, True]
    assert "field 32" in python[0]["_error"] and "reader='native'" in python[0]["_error"]


def test_the_native_sender_writes_field_32_for_java_consumers(services: Services, topic: str) -> None:
    """Messages read with their payloads and sent on untouched by the native sender (as the Spark
    sink and `import --untouched` forward them): the id in field 32 too, where a Java PIP-420
    consumer looks first."""
    import pyarrow as pa
    from native_support import required_extension

    from pulsar_external_schema.arrow import read_table, write_table

    required_extension()
    config = {"schema.registry.url": services.registry_url, "pulsar.admin.url": services.admin_url}
    values = pa.table({"value": [{"f1": f"from arrow {i}"} for i in range(3)]})
    schema = factory(services).avro(RECORD)
    write_table(topic, values, service_url=services.pulsar_url, schema=schema, config=config, writer="python")
    read = read_table(
        topic, service_url=services.pulsar_url, admin_url=services.admin_url, config=config, include_data=True
    )
    copy = f"{topic}-copy"

    written = write_table(
        copy,
        read.select(["data", "properties"]),
        service_url=services.pulsar_url,
        config=config,
        writer="native",
    )

    assert written.sent == 3
    assert java(services, "consume", copy, "java", "3") == [
        '{"f1": "from arrow 0"} field32',
        '{"f1": "from arrow 1"} field32',
        '{"f1": "from arrow 2"} field32',
    ]
