"""Field-level and payload encryption with the local KMS and the registry's DEK endpoints."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from conftest import Services, require_confluent_registry
from contracts import LOCAL_KMS_SECRET, contract, drain, encrypt_rule, rule, subscribe, unique

from pulsar_external_schema import DeadLetteredError, create_producer
from pulsar_external_schema.deadletter import resolve_dlq_topic

SECRET = LOCAL_KMS_SECRET
ANN = {"name": "Ann", "ssn": "123-45-6789"}


def tagged_person() -> dict[str, Any]:
    """A record with an inline PII tag, in a namespace of its own: AxonOps v0.2.1 gives a schema
    that equals a stored one but for `confluent:tags` the stored text (and id), tags dropped."""
    return {
        "type": "record",
        "name": "Person",
        "namespace": unique("acme.tagged").replace("-", "_"),
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
        ],
    }


def test_tagged_fields_are_ciphertext_on_the_topic_and_plaintext_for_consumers(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    person = tagged_person()
    schema = make_factory(**SECRET).avro(
        contract(person, ruleSet={"domainRules": [encrypt_rule(unique("kek"))]})
    )
    raw = subscribe(pulsar_client, topic, name="raw")
    consumer = subscribe(pulsar_client, topic, schema, name="app")
    sent = dict(ANN)
    create_producer(pulsar_client, topic, schema).send(sent)
    assert sent == ANN  # encrypted on the topic, not in the caller's value (a retry stays right)

    [message] = drain(raw)
    assert b"123-45-6789" not in message.data()
    on_the_wire: Any = fastavro.schemaless_reader(io.BytesIO(message.data()), fastavro.parse_schema(person))
    assert on_the_wire["name"] == "Ann" and on_the_wire["ssn"] != "123-45-6789"
    assert [m.value() for m in drain(consumer)] == [ANN]


def test_payload_encryption(make_factory: Any, pulsar_client: Any, topic: str) -> None:
    payload_rule = {
        **encrypt_rule(unique("kek")),
        "name": "encryptPayload",
        "type": "ENCRYPT_PAYLOAD",
        "tags": [],
    }
    schema = make_factory(**SECRET).avro(contract(tagged_person(), ruleSet={"encodingRules": [payload_rule]}))
    raw = subscribe(pulsar_client, topic, name="raw")
    consumer = subscribe(pulsar_client, topic, schema, name="app")
    create_producer(pulsar_client, topic, schema).send(ANN)
    [message] = drain(raw)
    assert b"Ann" not in message.data() and b"123-45-6789" not in message.data()
    assert [m.value() for m in drain(consumer)] == [ANN]


def test_encrypted_fields_are_never_written_to_a_dlq_in_clear(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    bad = unique("bad-data")
    check = rule(
        "nameLen",
        "CONDITION",
        "CEL",
        "WRITE",
        "size(message.name) > 3",
        params={"dlq.topic": bad},
        onFailure="DLQ",
    )
    schema = make_factory(**SECRET).avro(
        contract(tagged_person(), ruleSet={"domainRules": [encrypt_rule(unique("kek")), check]})
    )
    dlq = subscribe(pulsar_client, resolve_dlq_topic(bad, topic))
    with pytest.raises(DeadLetteredError):
        create_producer(pulsar_client, topic, schema).send(ANN)
    [copy] = drain(dlq)
    assert b"123-45-6789" not in copy.data()
    assert json.loads(copy.data()) == {"name": "Ann", "ssn": "<REDACTED>"}


def test_dek_rotation(services: Services, make_factory: Any, pulsar_client: Any, topic: str) -> None:
    require_confluent_registry(
        services,
        "AxonOps v0.2.1 answers 422 for DEK version -1 (latest), which DEK rotation "
        "(encrypt.dek.expiry.days) reads",
    )
    schema = make_factory(**SECRET).avro(
        contract(
            tagged_person(),
            ruleSet={"domainRules": [encrypt_rule(unique("kek"), params={"encrypt.dek.expiry.days": "1"})]},
        )
    )
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send(ANN)
    assert [m.value() for m in drain(consumer)] == [ANN]
