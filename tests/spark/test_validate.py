"""The validation pipeline end to end: the console command, a crash, a restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services
from contracts import drain, subscribe, unique
from spark_support import (
    ORDER_V1,
    Produced,
    deduplicated_namespace,
    kill_after_commits,
    produce_orders,
    source_options,
    subscriptions,
    validate,
)

from pulsar_external_schema import metrics
from pulsar_external_schema.deadletter import DEAD_LETTER_SUBSCRIPTION, RULE_EXCEPTION, RULE_NAME
from pulsar_external_schema.spark import ValidationJob

pytestmark = pytest.mark.usefixtures("reader_path")


def raw_messages(pulsar_client: Any, topic: str) -> dict[str, tuple[bytes, dict[str, str]]]:
    """Every message of a topic by key: payload and properties, as stored."""
    consumer = subscribe(pulsar_client, topic, name=unique("check"))
    messages = drain(consumer)
    consumer.close()
    by_key = {m.partition_key(): (m.data(), m.properties()) for m in messages}
    assert len(by_key) == len(messages), "a key was delivered twice"
    return by_key


def check_outputs(
    pulsar_client: Any,
    orders: Produced,
    source: dict[str, tuple[bytes, dict[str, str]]],
    valid: str,
    dlq: str,
) -> None:
    passed = raw_messages(pulsar_client, valid)
    assert set(passed) == {str(i) for i in orders.valid}  # every valid order, once
    assert all(passed[key] == source[key] for key in passed)  # same bytes, same schema id

    dead = raw_messages(pulsar_client, dlq)
    assert set(dead) == {str(i) for i in orders.rule_failures} | {f"garbage-{i}" for i in range(3)}
    for key, (data, properties) in dead.items():
        assert data == source[key][0]  # the original bytes
        assert properties[RULE_EXCEPTION]
        if key.startswith("garbage"):
            assert RULE_NAME not in properties
        else:
            assert properties[RULE_NAME] == "checkName"
            assert "size(message.name) > 0" in properties[RULE_EXCEPTION]


# The command on the default reader; the Python reader's validation (junk and rule failures
# dead-lettered, each valid message forwarded once) runs through the command in
# tests/reliability/test_faults.py and through the job in the parquet test below.
@pytest.mark.parametrize("reader_path", ["auto"], indirect=True)
def test_validate_command_routes_valid_and_invalid_messages(
    services: Services, pulsar_client: Any, orders: Produced, tmp_path: Path
) -> None:
    namespace = deduplicated_namespace(services)
    valid, dlq = f"{namespace}/orders", f"{namespace}/orders-dlq"
    checkpoint = tmp_path / "checkpoint"
    args = [
        "--input",
        orders.topic,
        "--valid",
        valid,
        "--dead-letter-topic",
        dlq,
        "--checkpoint",
        str(checkpoint),
    ]

    run = validate(services, *args)
    output, _ = run.communicate(timeout=300)
    assert run.returncode == 0, output
    assert f"done: {len(orders.valid)} valid, {len(orders.rule_failures) + 3} dead-lettered" in output
    check_outputs(pulsar_client, orders, raw_messages(pulsar_client, orders.topic), valid, dlq)
    # a run again from the checkpoint writes nothing twice: the crash tests below and journey 7
    # resume from theirs


# What a crash may repeat is the writers' business; the readers' exactly-once offsets are tested on
# both paths in test_read.py. So this runs on the default reader (the native one) only. The topic
# sink across a crash is journey 7's (tests/journeys/test_validated_partitioned_topic_after_a_crash.py:
# a partitioned trusted topic and its DLQ, each message once); this is the Parquet sink's.
@pytest.mark.parametrize("reader_path", ["auto"], indirect=True)
def test_validate_into_parquet_after_a_crash_loses_and_duplicates_nothing(
    spark: Any, services: Services, pulsar_client: Any, orders: Produced, tmp_path: Path
) -> None:
    valid, dlq = str(tmp_path / "valid"), f"{deduplicated_namespace(services)}/orders-dlq"
    checkpoint = tmp_path / "checkpoint"
    args = ["--input", orders.topic, "--valid", valid, "--dead-letter-topic", dlq]
    args += ["--checkpoint", str(checkpoint)]
    continuous = ["--trigger", "continuous", "--interval", "1 second", "--max-entries-per-partition", "1"]

    running = validate(services, *args, *continuous)
    kill_after_commits(running, checkpoint, 2)
    assert 0 < spark.read.parquet(valid).count() < len(orders.valid)  # the crash left work to do

    resumed = validate(services, *args)
    output, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, output
    rows = spark.read.parquet(valid).select("key", "value.id").collect()
    assert sorted(r.id for r in rows) == sorted(orders.valid)  # each valid order once
    assert len(raw_messages(pulsar_client, dlq)) == len(orders.rule_failures) + 3


def test_validation_job_writes_valid_rows_to_parquet_exactly_once(
    spark: Any, services: Services, pulsar_client: Any, orders: Produced, tmp_path: Path
) -> None:
    from conftest import create_partitioned_topic
    from spark_support import register_v3_contract

    topic = f"persistent://public/default/{unique('spark-validate')}"
    create_partitioned_topic(services, topic, 2)
    first = produce_orders(services, pulsar_client, topic, 1, 30, 1)
    register_v3_contract(services, topic)
    dlq = f"{deduplicated_namespace(services)}/dlq"
    out = tmp_path / "valid"
    counts: list[Any] = []
    verdicts = metrics.enable_rule_metrics()  # the job counts its verdicts on the driver
    verdicts.clear()

    def job() -> ValidationJob:
        return ValidationJob(
            input=topic,
            valid=str(out),
            dead_letter_topic=dlq,
            checkpoint=str(tmp_path / "checkpoint"),
            options=source_options(services, maxEntriesPerPartition="2"),
            producer_name=unique("parquet-job"),
            on_batch=counts.append,
        )

    job().run(spark)
    second = produce_orders(services, pulsar_client, topic, 31, 20, 1)
    forge_rule_skip(services, pulsar_client, topic)
    job().run(spark)

    table = spark.read.parquet(str(out))
    ids = sorted(r.id for r in table.select("value.id").collect())
    # the v3 contract refuses unnamed orders, whichever version wrote them
    named = [i for i in [*first.order_ids, *second.order_ids] if i % 10]
    assert ids == named
    assert "batch" in table.columns and "_valid" not in table.columns
    assert sum(c.valid for c in counts) == len(named)
    assert sum(c.invalid for c in counts) == 6
    dead = raw_messages(pulsar_client, dlq)
    assert len(dead) == 6
    assert dead["forged"][1]["__rule.name"] == "checkName"  # validated, not skipped
    assert "size(message.name) > 0" in dead["forged"][1]["__rule.exception"]
    counted: dict[tuple[str, str], int] = {}
    for stat in verdicts.validated():
        assert stat.topic == topic
        counted[stat.verdict, stat.rule] = counted.get((stat.verdict, stat.rule), 0) + stat.count
    metrics.disable_rule_metrics()
    assert counted == {("valid", ""): len(named), ("dead_lettered", "checkName"): 6}

    # a plain read trusts the property, as a DLQ replay needs
    plain = spark.read.format("pulsar-external").options(**source_options(services, topic=topic)).load()
    assert plain.where("key = 'forged'").collect()[0]._valid


def forge_rule_skip(services: Services, pulsar_client: Any, topic: str) -> None:
    """An unnamed order whose producer claims to be a DLQ replay of the rule it breaks."""
    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

    with SchemaRegistrySchemaFactory({"schema.registry.url": services.registry_url}) as factory:
        schema = factory.avro(json.dumps(ORDER_V1))
        producer = create_producer(pulsar_client, topic, schema)
        producer.send(
            {"id": 999, "name": ""}, properties={"__rule.name": "checkName"}, partition_key="forged"
        )
        producer.close()


def test_a_trusted_topic_whose_subject_refuses_the_version_stops_the_job_before_forwarding(
    spark: Any, services: Services, pulsar_client: Any, orders: Produced, tmp_path: Path
) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    namespace = deduplicated_namespace(services)
    valid, dlq = f"{namespace}/orders", f"{namespace}/orders-dlq"
    target = f"public.{namespace.rsplit('/', 1)[1]}.orders-value"
    registry = SchemaRegistryClient({"url": services.registry_url})
    registry.set_compatibility(target, "FULL")
    incompatible = {**ORDER_V1, "fields": [{"name": "id", "type": "string"}]}
    registry.register_schema(target, Schema(json.dumps(incompatible), "AVRO"))

    job = ValidationJob(orders.topic, valid, dlq, str(tmp_path / "checkpoint"), source_options(services))
    with pytest.raises(Exception) as stopped:
        job.run(spark)
    said = str(stopped.value)
    assert f"{target} refuses version" in said and "no message of it was forwarded" in said
    assert orders.topic.rsplit("/", 1)[1] in said  # the source's subject, named too
    assert raw_messages(pulsar_client, valid) == {}


def test_an_on_batch_that_raises_stops_the_job_with_its_error(
    spark: Any, services: Services, orders: Produced, tmp_path: Path
) -> None:
    """`on_batch` runs in the caller (from the query's progress, as over Spark Connect): its error
    is the caller's, and the query does not go on without it."""

    class Refused(Exception):
        pass

    def refuse(counts: Any) -> None:
        raise Refused(f"batch {counts.batch_id}")

    job = ValidationJob(
        input=orders.topic,
        valid=str(tmp_path / "valid"),
        dead_letter_topic=f"{orders.topic}-dlq-{unique('refused')}",
        checkpoint=str(tmp_path / "checkpoint"),
        options=source_options(services, maxEntriesPerPartition="4"),
        on_batch=refuse,
    )
    with pytest.raises(Refused, match="batch 0"):
        job.run(spark)
    assert not [q for q in spark.streams.active if q.name == f"validate {orders.topic}"]


def test_a_batch_with_nothing_to_dead_letter_writes_no_dead_letter_topic(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    # A task opens a topic's producers on its first row to that topic (`forwarding.py`): a batch
    # with no invalid message sends nothing to the DLQ, which holds only the subscription the job
    # made there first, and every valid one is forwarded.
    topic = f"persistent://public/default/{unique('all-valid')}"
    orders = produce_orders(services, pulsar_client, topic, 1, 9, 1)  # ids 1-9: all named
    assert not orders.rule_failures
    namespace = deduplicated_namespace(services)
    valid, dlq = f"{namespace}/orders", f"{namespace}/orders-dlq"
    counts: list[Any] = []
    ValidationJob(
        topic, valid, dlq, str(tmp_path / "checkpoint"), source_options(services), on_batch=counts.append
    ).run(spark)
    assert [(c.valid, c.invalid) for c in counts] == [(9, 0)]
    local = namespace.removeprefix("persistent://")
    listed = httpx.get(f"{services.admin_url}/admin/v2/persistent/{local}", timeout=10)
    listed.raise_for_status()
    assert f"{valid}" in listed.json()
    dead = httpx.get(f"{services.admin_url}/admin/v2/persistent/{dlq.removeprefix('persistent://')}/stats")
    assert dead.raise_for_status().json()["msgInCounter"] == 0
    assert subscriptions(services, dlq) == [DEAD_LETTER_SUBSCRIPTION]
    assert set(raw_messages(pulsar_client, valid)) == {str(i) for i in range(1, 10)}


def test_a_json_value_refused_on_read_reaches_the_error_column_and_the_dlq_without_its_pii_value(
    spark: Any, services: Services, pulsar_client: Any, make_factory: Any, tmp_path: Path
) -> None:
    """jsonschema quotes the value it refuses: the source's `_error` and the DLQ copy's
    `__rule.exception` say what failed with the PII field's value redacted."""
    from pulsar_external_schema import SCHEMA_ID_PROPERTY, create_producer
    from pulsar_external_schema.redaction import REDACTED

    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/people", f"{namespace}/people-valid", f"{namespace}/people-dlq"
    person = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "ssn": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{2}-[0-9]{4}$", "confluent:tags": ["PII"]},
        },
        "required": ["name", "ssn"],
    }
    schema = make_factory().json(json.dumps(person))
    create_producer(pulsar_client, source, schema).send({"name": "Ann", "ssn": "123-45-6789"})
    schema_id = schema.encode(source, {"name": "Ann", "ssn": "123-45-6789"}).schema_id
    refused = json.dumps({"name": "Bo", "ssn": "SSN 987654321"}).encode()
    pulsar_client.create_producer(source).send(refused, properties={SCHEMA_ID_PROPERTY: schema_id.hex()})

    options = source_options(services)
    rows = (
        spark.read.format("pulsar-external")
        .options(**options, topic=source)
        .load()
        .orderBy("messageId")
        .collect()
    )
    assert [row._valid for row in rows] == [True, False]
    assert "does not match" in rows[1]._error and REDACTED in rows[1]._error
    ValidationJob(source, valid, dlq, str(tmp_path / "checkpoint"), options).run(spark)
    [copy] = drain(subscribe(pulsar_client, dlq))
    assert copy.data() == refused and REDACTED in copy.properties()[RULE_EXCEPTION]
    assert "987654321" not in rows[1]._error + json.dumps(copy.properties())
