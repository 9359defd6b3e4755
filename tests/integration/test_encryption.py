"""Field-level and payload encryption with the local KMS and the registry's DEK endpoints."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from conftest import Services, require_confluent_registry
from contracts import LOCAL_KMS_SECRET, contract, drain, encrypt_rule, rule, subscribe, tagged_person, unique

from pulsar_external_schema import DeadLetteredError, DecodeError, create_producer
from pulsar_external_schema.deadletter import resolve_dlq_topic
from pulsar_external_schema.errors import ConfigError
from pulsar_external_schema.schema_id import SCHEMA_ID_PROPERTY
from pulsar_external_schema.topic_schemas import ForwardedSchemas

SECRET = LOCAL_KMS_SECRET
ANN = {"name": "Ann", "ssn": "123-45-6789"}


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

    # Without the secret the rule fails, its action NONE passes the ciphertext on, and that does
    # not decode: the error says so (it said only `EOFError`).
    keyless = subscribe(pulsar_client, topic, make_factory().avro(tagged_person()), name="keyless")
    [unreadable] = drain(keyless)
    with pytest.raises(DecodeError) as failed:
        unreadable.value()
    assert "rule 'encryptPayload' (TRANSFORM ENCRYPT_PAYLOAD, READ) failed before it" in str(failed.value)
    assert "cannot load secret" in str(failed.value) and "action NONE" in str(failed.value)


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


def test_each_factory_encrypts_and_decrypts_with_its_own_kms_secret(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    """Two factories of one process, each with its own local-KMS secret (two tenants, or the
    queries of two Spark Connect sessions on the same Python workers), and one with none.

    Before, the first secret to reach the local KMS served every factory after it: the second
    tenant's DEK was wrapped with the first one's secret (its own could never read its data), the
    first tenant read the second one's fields in clear, and a factory without a secret too."""
    person = tagged_person()

    def contract_of(kek: str) -> Any:
        return contract(person, ruleSet={"domainRules": [encrypt_rule(kek)]})

    kek_one, kek_two = unique("kek"), unique("kek")
    one = make_factory(**{"rule.executors._default_.param.secret": "the-first-tenants-secret"})
    two = make_factory(**{"rule.executors._default_.param.secret": "the-second-tenants-secret"})
    create_producer(pulsar_client, topic, one.avro(contract_of(kek_one))).send(ANN)
    other = f"{topic}-two"
    create_producer(pulsar_client, other, two.avro(contract_of(kek_two))).send({"name": "Bo", "ssn": "987"})

    def read(factory: Any, where: str, kek: str) -> Any:
        consumer = subscribe(pulsar_client, where, factory.avro(contract_of(kek)), name=unique("r"))
        return consumer.receive(timeout_millis=10_000).value()["ssn"]  # one message on each topic

    assert read(one, topic, kek_one) == "123-45-6789"
    assert read(two, other, kek_two) == "987"
    # the rule's onFailure is ERROR,NONE: whoever cannot decrypt gets the ciphertext
    assert read(one, other, kek_two) not in ("987", "")
    assert read(make_factory(), topic, kek_one) not in ("123-45-6789", "")
    fresh = make_factory(**{"rule.executors._default_.param.secret": "the-second-tenants-secret"})
    assert read(fresh, other, kek_two) == "987"


def test_what_the_validation_tools_forward_decrypts_under_the_target_topics_subject(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    """A DEK is the registry's per KEK and subject, and a reader asks for its own topic's: what is
    forwarded untouched (`ForwardedSchemas`, under all the validation tools) takes its DEKs along,
    without the secret. A target subject with a DEK of its own for that KEK refuses it."""
    written = contract(tagged_person(), ruleSet={"domainRules": [encrypt_rule(unique("kek"))]})
    producers = make_factory(**SECRET)
    create_producer(pulsar_client, topic, producers.avro(written)).send(ANN)
    [message] = drain(subscribe(pulsar_client, topic, name="raw"))
    trusted, taken = f"{topic}-trusted", f"{topic}-taken"
    create_producer(pulsar_client, taken, producers.avro(written)).send({"name": "Bo", "ssn": "1"})

    forwarding = ForwardedSchemas(make_factory(), source_topic=topic)  # a job without the secret
    forwarding.forward(trusted, message.properties()[SCHEMA_ID_PROPERTY])
    pulsar_client.create_producer(trusted).send(message.data(), properties=message.properties())
    [copy] = drain(subscribe(pulsar_client, trusted, producers.avro(written), name="app"))
    assert copy.value() == ANN
    with pytest.raises(ConfigError, match=r"has a DEK of KEK kek-\w+ \(version 1, AES256_GCM\) of its own"):
        forwarding.forward(taken, message.properties()[SCHEMA_ID_PROPERTY])
