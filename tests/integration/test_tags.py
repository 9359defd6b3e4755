"""Tags: inline in Avro, JSON Schema and Protobuf (`confluent:tags`, `(confluent.field_meta).tags`),
and external ones in a schema's metadata with wildcards; the rules they select."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.confluent import meta_pb2
from conftest import require_confluent_registry
from contracts import contract, drain, everything_said, rule, subscribe, unique
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass
from schemas import order_message_class

from pulsar_external_schema import SCHEMA_ID_PROPERTY, DecodeError, EncodeError, consume, create_producer
from pulsar_external_schema.protobuf_text import file_descriptor_proto, render_proto
from pulsar_external_schema.redaction import REDACTED

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
        "title": unique("Person"),  # a schema of its own (see contracts.tagged_person)
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


def test_a_json_value_its_schema_refuses_on_read_is_dead_lettered_without_its_pii_values(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    """jsonschema quotes what it refuses (`'987-65-432' does not match ...`): read, as written, the
    fields tagged PII are redacted in the error, its chained causes and the DLQ copy's
    `__rule.exception`; other fields' values are still quoted."""
    person = {
        "title": unique("Person"),
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 5},
            "ssn": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{2}-[0-9]{4}$", "confluent:tags": ["PII"]},
        },
        "required": ["name", "ssn"],
    }
    schema = make_factory().json(json.dumps(person))
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"name": "Ann", "ssn": "123-45-6789"})
    schema_id = schema.encode(topic, {"name": "Ann", "ssn": "123-45-6789"}).schema_id
    with pytest.raises(EncodeError) as written:  # the producer's side, as confluent-kafka words it
        schema.encode(topic, {"name": "Bo", "ssn": "987-65-432"})
    assert "does not match" in str(written.value) and "987-65-432" not in everything_said(written.value)
    raw = pulsar_client.create_producer(topic)
    for refused in (
        {"name": "Bo", "ssn": "987-65-432"},
        {"name": "Bo", "ssn": 987654321},
        {"name": "Carolyn", "ssn": "111-22-3333"},
    ):
        raw.send(json.dumps(refused).encode(), properties={SCHEMA_ID_PROPERTY: schema_id.hex()})
    errors: list[Any] = []
    result = consume(
        subscribe(pulsar_client, topic, schema),
        lambda msg, value: None,
        timeout_millis=3_000,
        dead_letter_topic=f"{topic}-poison",
        on_error=lambda msg, error: errors.append(error),
    )
    assert (result.processed, result.dead_lettered) == (1, 3)
    assert [type(error).__name__ for error in errors] == ["DecodeError"] * 3
    said = [everything_said(error) for error in errors]
    assert "does not match" in said[0] and "is not of type 'string'" in said[1]
    assert not [text for text in said if "987-65-432" in text or "987654321" in text or "111-22-3333" in text]
    assert "'Carolyn' is too long" in said[2]  # not tagged: quoted, as confluent-kafka words it
    copies = drain(subscribe(pulsar_client, f"{topic}-poison"))
    exceptions = [copy.properties()["__rule.exception"] for copy in copies]
    assert len(exceptions) == 3 and all(REDACTED in text for text in exceptions[:2])
    assert not [text for text in exceptions if "987-65-432" in text or "987654321" in text]


def test_a_pii_field_of_a_referenced_json_schema_is_redacted_in_refusals_both_ways(
    make_factory: Any, registry_client: SchemaRegistryClient, topic: str
) -> None:
    """The tag sits in the referenced schema's own text, not in its root's: the refusal quoting
    the field's value, written or read, is redacted all the same (the referenced schema's rules
    need not run for its tags to count)."""
    address_subject = unique("address")
    address = {
        "type": "object",
        "properties": {"street": {"type": "string", "maxLength": 8, "confluent:tags": ["PII"]}},
        "required": ["street"],
    }
    registry_client.register_schema(address_subject, contract(address, "JSON"))
    person = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"}},
        "required": ["name", "home"],
    }
    registry_client.register_schema(
        f"{topic.removeprefix('persistent://').replace('/', '.')}-value",
        contract(
            person, "JSON", references=[{"name": "address.json", "subject": address_subject, "version": 1}]
        ),
    )
    schema = make_factory(**{"use.latest.version": True, "auto.register.schemas": False}).json(
        json.dumps(person)
    )
    written = schema.encode(topic, {"name": "Ann", "home": {"street": "Main 1"}})
    street = {"name": "Ann", "home": {"street": "12 Secret Street"}}
    with pytest.raises(EncodeError) as refused:
        schema.encode(topic, street)
    assert "is too long" in str(refused.value) and "Secret" not in everything_said(refused.value)
    with pytest.raises(DecodeError) as unread:
        schema.decode(topic, json.dumps(street).encode(), written.schema_id)
    assert "is too long" in str(unread.value) and "Secret" not in everything_said(unread.value)
