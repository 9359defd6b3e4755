"""Journey 3: while a consumer of the trusted topic and the validation job run, the source gets a
compatible version 2, then a new major version with migration rules.

- v2 (a new optional field): the job registers it under the trusted topic's subject and forwards
  it; the consumer, pinned to major version 1, reads it;
- v3 (a renamed field, major version 2, with UPGRADE / DOWNGRADE migrations): the trusted topic's
  subject checks compatibility across major versions, refuses it, and the job stops, naming both
  subjects, before forwarding anything of that batch; once the operator gives the trusted subject
  the source's `compatibilityGroup`, the job goes on from its checkpoint, and the consumer reads
  the v3 order migrated down to major version 1, with the migration rules of the source's version.

Fails on the code before issue 34: the consumer of the trusted topic could not read its first
message (`ForeignSchemaIdError`); and nothing stopped the job forwarding a version the trusted
topic's readers cannot read."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark journeys need the spark extra: pip install -e '.[spark,dev]'"
)

from confluent_kafka.schema_registry import (
    ConfigCompatibilityLevel,
    Metadata,
    MetadataProperties,
    Schema,
    SchemaRegistryClient,
    ServerConfig,
)
from conftest import Services
from contracts import rule, subject_of
from journey_support import NAMED, ORDER
from spark_support import deduplicated_namespace, source_options

from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.spark import ValidationJob

pytestmark = pytest.mark.spark

MAJOR = "application.major.version"
ORDER_V2 = {
    **ORDER,
    "fields": [*ORDER["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
ORDER_V3 = {
    **ORDER,
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "product", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
NAMED_V3 = rule("named", "CONDITION", "CEL", "READ", "size(message.product) > 0")


def rename(old: str, new: str) -> str:
    return f"$merge([$sift($, function($v, $k) {{$k != '{old}'}}), {{'{new}': $.'{old}'}}])"


def major_version(major: int, *, override: bool = True) -> ServerConfig:
    """Schemas are compatible within a major version only; with `override`, every schema registered
    from now on is of `major`."""
    metadata = Metadata(None, MetadataProperties({MAJOR: str(major)}), None) if override else None
    return ServerConfig(
        compatibility=ConfigCompatibilityLevel.BACKWARD, compatibility_group=MAJOR, override_metadata=metadata
    )


def contract(
    schema: dict[str, Any], *rules: dict[str, Any], migrations: tuple[dict[str, Any], ...] = ()
) -> Schema:
    rule_set = {"domainRules": list(rules), "migrationRules": list(migrations)}
    return Schema.from_dict({"schemaType": "AVRO", "schema": json.dumps(schema), "ruleSet": rule_set})


def send(pulsar_client: Any, registry_url: str, topic: str, major: int, *orders: dict[str, Any]) -> None:
    conf = {"schema.registry.url": registry_url, "use.latest.with.metadata": f"{MAJOR}={major}"}
    with SchemaRegistrySchemaFactory(conf) as factory:
        schema = factory.avro(json.dumps(ORDER_V3 if major == 2 else ORDER_V2))
        with create_producer(pulsar_client, topic, schema) as producer:
            for order in orders:
                producer.send(order, partition_key=str(order["id"]))


def receive(consumer: Any, count: int, timeout_s: float = 90) -> list[tuple[str, Any]]:
    """`count` messages as they arrive (the job runs meanwhile), acknowledged: (key, value)."""
    got: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        try:
            message = consumer.receive(timeout_millis=1_000)
        except Exception:  # pulsar.Timeout: the job has not forwarded it yet
            continue
        got.append((message.partition_key(), message.value()))
        consumer.acknowledge(message)
    return got


#: How long the consumer of the trusted topic keeps the latest version it resolved.
CACHE_TTL_S = 1


def wait_for_version(
    registry: SchemaRegistryClient, subject: str, version: int, timeout_s: float = 90
) -> None:
    """Until `subject` has `version` (the running job registers it before forwarding)."""
    deadline = time.monotonic() + timeout_s
    while subject not in registry.get_subjects() or version not in registry.get_versions(subject):
        assert time.monotonic() < deadline, f"{subject} never got version {version}"
        time.sleep(0.2)


def wait_for(query: Any, timeout_s: float = 90) -> None:
    """Until the running job has processed everything there is (or stopped)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and query.isActive:
        progress = query.lastProgress
        if progress and progress.get("numInputRows") == 0 and not query.status["isDataAvailable"]:
            return
        time.sleep(0.5)


def test_a_compatible_version_and_a_new_major_version_reach_a_running_consumer_of_the_trusted_topic(
    spark: Any, services: Services, pulsar_client: Any, tmp_path: Path
) -> None:
    registry = SchemaRegistryClient({"url": services.registry_url})
    namespace = deduplicated_namespace(services)
    source, valid, dlq = f"{namespace}/orders", f"{namespace}/orders-valid", f"{namespace}/orders-dlq"
    source_subject, valid_subject = subject_of(source), subject_of(valid)
    registry.set_config(source_subject, major_version(1))
    v1_id = registry.register_schema(source_subject, contract(ORDER, NAMED))

    # The consumer of the trusted topic: the default config, pinned to major version 1.
    conf = {"schema.registry.url": services.registry_url, "use.latest.with.metadata": f"{MAJOR}={1}"}
    app_factory = SchemaRegistrySchemaFactory({**conf, "cache.latest.ttl.sec": CACHE_TTL_S})
    app = pulsar_client.subscribe(valid, "app", schema=app_factory.avro(json.dumps(ORDER)))

    job = ValidationJob(
        source,
        valid,
        dlq,
        str(tmp_path / "checkpoint"),
        source_options(services),
        trigger="continuous",
        interval="1 second",
    )
    send(pulsar_client, services.registry_url, source, 1, {"id": 1, "item": "tea", "qty": 1})
    query = job.start(spark)
    try:
        assert receive(app, 1) == [("1", {"id": 1, "item": "tea", "qty": 1})]
        resolved_at = time.monotonic()  # the consumer asked the registry for its latest version

        # A compatible version 2 (a field with a default), registered while everything runs.
        v2_id = registry.register_schema(source_subject, contract(ORDER_V2, NAMED))
        send(
            pulsar_client, services.registry_url, source, 1, {"id": 2, "item": "jam", "qty": 2, "note": "v2"}
        )
        # The consumer reads with the latest major-1 version it knows, cached for its TTL: once the
        # job has registered v2 under the trusted subject and that time is over, with v2.
        wait_for_version(registry, valid_subject, 2)
        time.sleep(max(0.0, resolved_at + CACHE_TTL_S + 0.2 - time.monotonic()))
        assert receive(app, 1) == [("2", {"id": 2, "item": "jam", "qty": 2, "note": "v2"})]
        assert [registry.get_version(valid_subject, n).schema_id for n in (1, 2)] == [v1_id, v2_id]

        # A new major version: `item` renamed `product`, with migrations both ways.
        registry.set_config(source_subject, major_version(2))
        migrations = [
            rule("itemToProduct", "TRANSFORM", "JSONATA", "UPGRADE", rename("item", "product")),
            rule("productToItem", "TRANSFORM", "JSONATA", "DOWNGRADE", rename("product", "item")),
        ]
        v3_id = registry.register_schema(
            source_subject, contract(ORDER_V3, NAMED_V3, migrations=tuple(migrations))
        )
        send(
            pulsar_client,
            services.registry_url,
            source,
            2,
            {"id": 3, "product": "kite", "qty": 3, "note": None},
        )
        with pytest.raises(Exception) as failed:
            query.awaitTermination(120)
        stopped = str(failed.value)
    finally:
        if query.isActive:
            query.stop()
    assert f"{valid_subject} refuses version 3 of {source_subject} (schema id {v3_id})" in stopped
    assert "no message of it was forwarded" in stopped
    assert receive(app, 1, timeout_s=3) == []

    # The operator lets the trusted subject hold major versions side by side, as the source does.
    registry.set_config(valid_subject, major_version(0, override=False))
    query = job.start(spark)  # from the checkpoint: the refused batch again
    try:
        assert receive(app, 1) == [("3", {"id": 3, "item": "kite", "qty": 3, "note": None})]  # migrated down
        wait_for(query)
    finally:
        query.stop()
    stored = registry.get_version(valid_subject, 3).schema.to_dict()
    assert registry.get_version(valid_subject, 3).schema_id == v3_id
    assert stored["metadata"]["properties"][MAJOR] == "2"
    assert [r["name"] for r in stored["ruleSet"]["migrationRules"]] == ["itemToProduct", "productToItem"]
