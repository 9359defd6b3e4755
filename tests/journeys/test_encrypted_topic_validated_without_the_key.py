"""Journey 10: a clinic's producers encrypt each patient's `ssn` (tagged PII, an ENCRYPT rule with
the local KMS) and hold the KMS secret, as does the application; the platform team runs the
validation job on Spark without it (a READ rule on `ward`, DLQ):

- the job judges each visit without the secret (it reads the ciphertext: the rule's onFailure is
  ERROR,NONE) and forwards the good ones untouched;
- the application reads the trusted topic as any topic, its own secret in its config: every `ssn`
  in clear;
- the operator reads the DLQ with `pulsar-external-schema consume` and no secret: ciphertext only;
- the application fixes the visit and sends it again; the next run passes it on.

Fails on the code before this journey: the trusted topic's readers found no DEK under its subject
(a DEK is the registry's per KEK and subject), so they read every `ssn` as ciphertext whatever
secret they held. And, before, a process whose first factory held one secret encrypted with it for
every other factory (`test_encryption.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

from cli_support import read_all, records
from conftest import Services
from contracts import contract, encrypt_rule, rule, unique
from journey_support import messages_by_key, read_values
from spark_support import deduplicated_namespace, source_options

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.deadletter import RULE_NAME
from pulsar_external_schema.spark import ValidationJob

pytestmark = pytest.mark.spark

SECRET = {"rule.executors._default_.param.secret": "the-clinics-local-kms-secret"}
VISITS: list[dict[str, Any]] = [
    {"id": 1, "ward": "A", "ssn": "123-45-6789"},
    {"id": 2, "ward": "", "ssn": "987-65-4321"},  # no ward: dead-lettered on read
    {"id": 3, "ward": "C", "ssn": "555-12-3456"},
]


def test_an_encrypted_topic_validated_by_a_team_without_the_key(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/visits", f"{namespace}/visits-valid", f"{namespace}/visits-dlq"
    visit = {
        "type": "record",
        "name": "Visit",
        "namespace": unique("clinic").replace("-", "_"),
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "ward", "type": "string"},
            {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
        ],
    }
    in_a_ward = rule("inAWard", "CONDITION", "CEL", "READ", "message.ward != ''", onFailure="DLQ")
    written = contract(visit, ruleSet={"domainRules": [encrypt_rule(unique("clinic-kek")), in_a_ward]})
    clinic = SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url, **SECRET})
    producer = create_producer(pulsar_client, source, clinic.avro(written))
    for value in VISITS:
        producer.send(dict(value), partition_key=str(value["id"]))
    on_the_topic = messages_by_key(pulsar_client, source)
    assert not any(v["ssn"].encode() in data for v in VISITS for data, _ in on_the_topic.values())

    # The platform team's job: the default config, no secret.
    job = ValidationJob(source, valid, dlq, str(tmp_path / "checkpoint"), source_options(services))
    job.run(spark)

    # The application: the trusted topic's schema from a factory that holds the secret.
    app = pulsar_client.subscribe(valid, "app", schema=clinic.avro(visit), initial_position=_earliest())
    read = read_values(app)
    assert [(key, value) for key, value, *_ in read] == [("1", VISITS[0]), ("3", VISITS[2])]
    assert all((data, properties) == on_the_topic[key] for key, _, data, properties in read)

    # The operator: the DLQ read as the source topic, without the secret.
    dead = read_all(services, dlq, "--schema-topic", source)
    [copy] = records(dead)
    assert (copy["id"], copy["ward"]) == (2, "") and copy["ssn"] not in ("987-65-4321", "")
    assert "987-65-4321" not in dead.stdout + dead.stderr
    raw_copies = messages_by_key(pulsar_client, dlq)
    assert raw_copies["2"][0] == on_the_topic["2"][0] and raw_copies["2"][1][RULE_NAME] == "inAWard"

    # The application fixes the visit and sends it again; the next run passes it on.
    fixed = {**VISITS[1], "ward": "B"}
    producer.send(dict(fixed), partition_key="2")
    job.run(spark)
    assert [(key, value) for key, value, *_ in read_values(app)] == [("2", fixed)]
    clinic.close()


def _earliest() -> Any:
    import pulsar

    return pulsar.InitialPosition.Earliest
