"""Encrypted fields (ENCRYPT rules, the local KMS) through the Spark source and the validation job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services
from contracts import contract, drain, encrypt_rule, rule, subscribe, tagged_person, unique
from spark_support import source_options, validate

from pulsar_external_schema import create_producer
from pulsar_external_schema.deadletter import RULE_NAME

FORMAT = "pulsar-external"
SECRET = "rule.executors._default_.param.secret"
ANN = {"name": "Annabel", "ssn": "123-45-6789"}
ZED = {"name": "Zedd", "ssn": "999-99-9999"}


def encrypted_topic(
    make_factory: Any, pulsar_client: Any, secret: str, *read_rules: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """A topic of two people whose `ssn` (tagged PII) an ENCRYPT rule encrypts with `secret`, and
    the record schema."""
    person = tagged_person()
    topic = f"persistent://public/default/{unique('spark-encrypted')}"
    rules = {"domainRules": [encrypt_rule(unique("kek")), *read_rules]}
    schema = make_factory(**{SECRET: secret}).avro(contract(person, ruleSet=rules))
    producer = create_producer(pulsar_client, topic, schema)
    for person_value in (ANN, ZED):
        producer.send(dict(person_value), partition_key=person_value["name"])
    return topic, person


@pytest.mark.usefixtures("reader_path")
def test_a_query_decrypts_with_its_own_secret_only(
    spark: Any, services: Services, pulsar_client: Any, make_factory: Any
) -> None:
    """The queries of one session (or of several Spark Connect sessions) share the Python workers:
    a query without the secret, or with another, reads ciphertext (the rule's onFailure is
    ERROR,NONE) even after a query with the secret decrypted on the same workers."""
    topic, _ = encrypted_topic(make_factory, pulsar_client, "the-producers-secret")

    def ssns(**options: str) -> list[str]:
        df = spark.read.format(FORMAT).options(**source_options(services, topic=topic, **options)).load()
        return sorted(row.ssn for row in df.select("value.ssn").collect())

    assert ssns(**{SECRET: "the-producers-secret"}) == [ANN["ssn"], ZED["ssn"]]
    for others in ({}, {SECRET: "another-secret"}):
        read = ssns(**others)
        assert len(read) == 2 and not {ANN["ssn"], ZED["ssn"]} & set(read), others
    assert ssns(**{SECRET: "the-producers-secret"}) == [ANN["ssn"], ZED["ssn"]]


def test_the_validation_job_forwards_and_dead_letters_ciphertext(
    services: Services, pulsar_client: Any, make_factory: Any, tmp_path: Path
) -> None:
    """With the secret, the job decrypts to judge; what it writes is the topic's own bytes."""
    secret = "the-producers-secret"
    not_zedd = rule("notZedd", "CONDITION", "CEL", "READ", "message.name != 'Zedd'", onFailure="DLQ")
    topic, person = encrypted_topic(make_factory, pulsar_client, secret, not_zedd)
    valid, dlq = f"{topic}-valid", f"{topic}-dlq"
    run = validate(
        services,
        *("--input", topic, "--valid", valid, "--dead-letter-topic", dlq),
        *("--checkpoint", str(tmp_path / "checkpoint"), "-p", f"{SECRET}={secret}"),
    )
    output, _ = run.communicate(timeout=300)
    assert run.returncode == 0, output
    assert "done: 1 valid, 1 dead-lettered" in output, output
    source = {m.partition_key(): m.data() for m in drain(subscribe(pulsar_client, topic, name="check"))}
    [forwarded] = drain(subscribe(pulsar_client, valid, name="check"))
    [dead] = drain(subscribe(pulsar_client, dlq, name="check"))
    assert forwarded.data() == source["Annabel"] and dead.data() == source["Zedd"]
    assert dead.properties()[RULE_NAME] == "notZedd"
    for written in (forwarded, dead):
        assert not any(p["ssn"].encode() in written.data() for p in (ANN, ZED))
        assert not any(p["ssn"] in json.dumps(written.properties()) for p in (ANN, ZED))
    app = make_factory(**{SECRET: secret}).avro(person)
    [read] = drain(subscribe(pulsar_client, valid, app, name="app"))
    assert read.value() == ANN
