"""Tags: inline in Avro, JSON Schema and Protobuf (`confluent:tags`, `(confluent.field_meta).tags`),
and external ones in a schema's metadata with wildcards; the rules they select."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.confluent import meta_pb2
from conftest import require_confluent_registry
from contracts import contract, drain, rule, subscribe, unique
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass
from schemas import order_message_class

from pulsar_external_schema import create_producer
from pulsar_external_schema.protobuf_text import file_descriptor_proto, render_proto

MASK_PII = rule("maskPII", "TRANSFORM", "CEL_FIELD", "WRITE", "true ; 'XXX'", tags=["PII"])


def test_inline_avro_tags_and_external_tags_with_wildcards(
    make_factory: Any, registry_client: SchemaRegistryClient, pulsar_client: Any, topic: str
) -> None:
    namespace = unique("acme.tags").replace("-", "_")
    person = {
        "type": "record",
        "name": "Person",
        "namespace": namespace,
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "ssn", "type": "string"},
            {"name": "email", "type": "string"},
            {"name": "phone", "type": "string"},
            {"name": "card", "type": "string", "confluent:tags": ["PII"]},
        ],
    }
    external = {
        "**.ssn": ["PII"],  # ** spans path elements
        f"{namespace}.Pers*.email": ["PII"],  # * stays within one element
        f"{namespace}.Person.ph?ne": ["PII"],  # ? is one character
    }
    schema = make_factory().avro(
        contract(person, metadata={"tags": external}, ruleSet={"domainRules": [MASK_PII]})
    )
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send(
        {"name": "Ann", "ssn": "123", "email": "a@b.c", "phone": "555", "card": "4111"}
    )
    assert [m.value() for m in drain(consumer)] == [
        {"name": "Ann", "ssn": "XXX", "email": "XXX", "phone": "XXX", "card": "XXX"}
    ]


def test_inline_json_schema_tags(make_factory: Any, pulsar_client: Any, topic: str) -> None:
    person = {
        "title": unique("Person"),  # a schema of its own (see test_encryption.tagged_person)
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "ssn": {"type": "string", "confluent:tags": ["PII"]},
        },
        "additionalProperties": False,
    }
    schema = make_factory().json(contract(json.dumps(person), "JSON", ruleSet={"domainRules": [MASK_PII]}))
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send({"name": "Ann", "ssn": "123"})
    assert [m.value() for m in drain(consumer)] == [{"name": "Ann", "ssn": "XXX"}]


def tagged_protobuf_class() -> Any:
    """A message whose `ssn` carries `[(confluent.field_meta).tags = "PII"]`."""
    name = unique("acme/tagged").replace("-", "_")
    package = name.replace("/", ".")
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"{name}.proto", package=package, syntax="proto3", dependency=["confluent/meta.proto"]
    )
    message = proto.message_type.add(name="Person")
    string, optional = (
        descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    message.field.add(name="name", number=1, type=string, label=optional)
    ssn = message.field.add(name="ssn", number=2, type=string, label=optional)
    ssn.options.Extensions[meta_pb2.field_meta].tags.append("PII")  # type: ignore[attr-defined]
    pool = descriptor_pool.Default()  # already holds confluent/meta.proto (meta_pb2 imported)
    pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName(f"{package}.Person"))


def test_protobuf_field_option_tags(services: Any, make_factory: Any, pulsar_client: Any, topic: str) -> None:
    person = tagged_protobuf_class()
    text = render_proto(file_descriptor_proto(person))  # what the producer registers
    assert 'string ssn = 2 [(confluent.field_meta) = { tags: "PII" }];' in text, text
    require_confluent_registry(
        services, "AxonOps v0.2.1 cannot compile .proto files that import confluent/meta.proto"
    )
    factory = make_factory()
    schema = factory.protobuf(person)
    factory.registry_client.register_schema(
        schema.subject(topic), contract(text, "PROTOBUF", ruleSet={"domainRules": [MASK_PII]})
    )
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send(person(name="Ann", ssn="123"))
    [message] = drain(consumer)
    assert (message.value().name, message.value().ssn) == ("Ann", "XXX")


def test_protobuf_external_tags(make_factory: Any, pulsar_client: Any, topic: str) -> None:
    order = order_message_class()
    factory = make_factory()
    schema = factory.protobuf(order)
    factory.registry_client.register_schema(
        schema.subject(topic),
        contract(
            render_proto(file_descriptor_proto(order)),
            "PROTOBUF",
            metadata={"tags": {"**.item": ["PII"]}},
            ruleSet={"domainRules": [MASK_PII]},
        ),
    )
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send(order(id=1, item="secret"))
    [message] = drain(consumer)
    assert (message.value().id, message.value().item) == (1, "XXX")
