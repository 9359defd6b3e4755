"""A broker of the 4.0 LTS line (tests/lts_support.py), which predates PIP-420: a declaration asked
for with `pulsar.admin.url` is refused in one line naming the broker's release, from each entry
point that declares (producers, consumers, the Spark sink), and nothing is declared; without it,
producers and consumers with a data contract work there as on 4.1+.

Fails on the code before issue 59: the declaration logged a warning and returned, so the user who
asked for it was not told that it did not happen."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pulsar
import pytest
from conftest import SERVICES_SCRIPT, Services
from contracts import drain, subscribe
from journey_support import NAMED, ORDER, POSITIVE, avro_order
from spark_support import register_contract

from pulsar_external_schema import (
    PulsarAdminError,
    RuleViolationError,
    SchemaRegistrySchemaFactory,
    UnsupportedBrokerError,
    create_producer,
)
from pulsar_external_schema import subscribe as subscribe_declared
from pulsar_external_schema.admin import lacks_external_type


def refusal(lts: Services, release: str, topic: str) -> str:
    """The one line a declaration of `topic` on the LTS broker is refused with (`topics` where
    Spark's driver asks before it knows them)."""
    return (
        f"cannot declare {topic} EXTERNAL: the broker at {lts.admin_url} runs Pulsar {release}, "
        "and the EXTERNAL schema type (PIP-420) needs Pulsar 4.1 or newer; leave out "
        "'pulsar.admin.url' to go on without the declaration"
    )


def broker_schema(lts: Services, topic: str) -> int:
    return httpx.get(f"{lts.admin_url}/admin/v2/schemas/{topic.split('://', 1)[1]}/schema").status_code


def test_the_services_script_took_the_newest_4_0_release_it_could_and_says_which(lts_release: str) -> None:
    version = lts_release
    assert version.startswith("4.0.") and lacks_external_type(version)
    env = subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), "env", "--instance", "lts"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"PULSAR_VERSION={version}" in env.stdout


def test_producers_and_consumers_asked_to_declare_are_refused_in_one_line_and_nothing_is_declared(
    lts_pulsar: Services, lts_release: str, topic: str
) -> None:
    client = pulsar.Client(lts_pulsar.pulsar_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    config = {"schema.registry.url": lts_pulsar.registry_url, "pulsar.admin.url": lts_pulsar.admin_url}
    try:
        with SchemaRegistrySchemaFactory(config) as factory:
            declarations: list[Callable[[], Any]] = [
                lambda: create_producer(client, topic, avro_order(factory)),
                lambda: subscribe_declared(client, topic, "app", avro_order(factory)),
            ]
            for declare in declarations:
                with pytest.raises(UnsupportedBrokerError) as raised:
                    declare()
                assert str(raised.value) == refusal(lts_pulsar, lts_release, topic)
                assert isinstance(raised.value, PulsarAdminError)
                assert raised.value.broker_version == lts_release
    finally:
        client.close()
    assert broker_schema(lts_pulsar, topic) == 404  # nothing declared, nothing half-done


def test_without_the_declaration_a_data_contract_works_on_4_0(lts_pulsar: Services, topic: str) -> None:
    register_contract(lts_pulsar, topic, ORDER, [POSITIVE, NAMED])
    client = pulsar.Client(lts_pulsar.pulsar_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        with SchemaRegistrySchemaFactory({"schema.registry.url": lts_pulsar.registry_url}) as factory:
            consumer = subscribe(client, topic, avro_order(factory))
            producer = create_producer(client, topic, avro_order(factory))
            producer.send({"id": 1, "item": "tea", "qty": 2})
            with pytest.raises(RuleViolationError, match="positive"):
                producer.send({"id": 2, "item": "jam", "qty": 0})
            producer.send({"id": 3, "item": "", "qty": 1})
            received = drain(consumer, 3_000)
            assert [m.value() for m in received[:1]] == [{"id": 1, "item": "tea", "qty": 2}]
            assert "__schema_id" in received[0].properties()  # the id where 4.0 lets it travel
            with pytest.raises(RuleViolationError, match="named"):
                received[1].value()
            assert len(received) == 2
    finally:
        client.close()
    assert broker_schema(lts_pulsar, topic) == 404


@pytest.mark.spark
def test_the_spark_sink_asked_to_declare_is_refused_before_any_task(
    spark: Any, lts_pulsar: Services, lts_release: str, topic: str
) -> None:
    register_contract(lts_pulsar, topic, ORDER, [])
    rows = spark.createDataFrame(
        [({"id": 1, "item": "tea", "qty": 2},)], "value struct<id:long,item:string,qty:int>"
    )
    options = {
        "service.url": lts_pulsar.pulsar_url,
        "admin.url": lts_pulsar.admin_url,
        "schema.registry.url": lts_pulsar.registry_url,
        "topic": topic,
    }
    declaring = {**options, "pulsar.admin.url": lts_pulsar.admin_url}
    with pytest.raises(Exception) as raised:  # Spark's error, carrying the package's line
        rows.write.format("pulsar-external").mode("append").options(**declaring).save()
    said = str(raised.value)
    assert refusal(lts_pulsar, lts_release, "topics") in said
    assert "TaskSetManager" not in said and "Lost task" not in said  # refused on the driver
    # without the option the same write goes through
    rows.write.format("pulsar-external").mode("append").options(**options).save()
    assert broker_schema(lts_pulsar, topic) == 404
