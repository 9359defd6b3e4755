"""Fixtures of the Spark tests (a pytest plugin of tests/conftest.py): a local SparkSession, and a
topic with three schema versions and invalid messages on it. pyspark is imported inside the
fixtures, so the other tests run without the spark extra."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Services, create_partitioned_topic
from contracts import unique

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "amount", "type": "double", "default": 0.0}]}
ORDER_V3 = {
    **ORDER_V1,
    "fields": [*ORDER_V2["fields"], {"name": "note", "type": ["null", "string"], "default": None}],
}
#: v3's contract: consumers refuse orders without a name.
CHECK_NAME = {
    "name": "checkName",
    "kind": "CONDITION",
    "type": "CEL",
    "mode": "READ",
    "expr": "size(message.name) > 0",
    "onFailure": "ERROR",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # else workers run a python without pyarrow
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # the workers import test classes by path (protobuf.message.class=schemas.Shipment)
    tests = str(Path(__file__).parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    from pulsar_external_schema.spark import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pulsar-external-schema tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


def offline_options(**extra: str) -> Any:
    """The Spark source's parsed options for unit tests: a broker, admin URL and registry that are
    never reached, plus `extra`."""
    from pulsar_external_schema.tasks.options import SourceOptions

    return SourceOptions.parse(
        {
            "service.url": "pulsar://x:6650",
            "admin.url": "http://x:8080",
            "schema.registry.url": "http://r",
            **extra,
        }
    )


#: The source's `reader` option (and the sink's `writer`) in the tests that read (`reader_path`);
#: auto elsewhere.
READER = {"path": "auto"}


@pytest.fixture(params=["auto", "python"])
def reader_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a test that reads once on each path: `reader=auto` (the native reader for Avro
    subjects; tests/spark/test_native.py fails where the extension is missing, never skips) and
    `reader=python`; its sinks' `data` rows are sent on the same path (`writer`)."""
    READER["path"] = request.param
    yield request.param
    READER["path"] = "auto"


def _paths() -> list[str]:
    return ["-p", f"reader={READER['path']}", "-p", f"writer={READER['path']}"]


def source_options(services: Services, **extra: str) -> dict[str, str]:
    return {
        "service.url": services.pulsar_url,
        "admin.url": services.admin_url,
        "schema.registry.url": services.registry_url,
        "reader": READER["path"],
        "writer": READER["path"],
        **extra,
    }


@dataclass
class Produced:
    """What was written to a topic: decoded values by order id, and the invalid messages."""

    topic: str
    valid: dict[int, dict[str, Any]] = field(default_factory=dict)
    rule_failures: set[int] = field(default_factory=set)
    garbage: list[str] = field(default_factory=list)  # kinds of undecodable messages

    @property
    def order_ids(self) -> list[int]:
        """Every order written, whatever a contract says about it."""
        return sorted([*self.valid, *self.rule_failures])

    @property
    def total(self) -> int:
        return len(self.valid) + len(self.rule_failures) + len(self.garbage)


def produce_orders(
    services: Services, client: Any, topic: str, start: int, count: int, version: int
) -> Produced:
    """`count` orders from id `start`, written with schema version 1, 2 or 3 (every 10th unnamed)."""
    from confluent_kafka.schema_registry import Schema

    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer

    produced = Produced(topic)
    conf: dict[str, Any] = {"schema.registry.url": services.registry_url}
    schema_text = json.dumps({1: ORDER_V1, 2: ORDER_V2, 3: ORDER_V3}[version])
    if version == 3:
        conf["use.latest.version"] = True
    with SchemaRegistrySchemaFactory(conf) as factory:
        schema = factory.avro(
            Schema(schema_text, "AVRO") if version < 3 else schema_text,
        )
        producer = create_producer(client, topic, schema, batching_enabled=True, batching_max_messages=7)
        for order_id in range(start, start + count):
            value: dict[str, Any] = {
                "id": order_id,
                "name": "" if order_id % 10 == 0 else f"order {order_id}",
            }
            if version >= 2:
                value["amount"] = order_id * 1.5
            if version >= 3:
                value["note"] = f"v3 {order_id}" if order_id % 2 else None
            producer.send_async(value, lambda *_: None, partition_key=str(order_id))
            expected = {
                "id": order_id,
                "name": value["name"],
                "amount": value.get("amount", 0.0),
                "note": value.get("note"),
            }
            if value["name"]:
                produced.valid[order_id] = expected
            else:
                produced.rule_failures.add(order_id)
        producer.flush()
        producer.close()
        schema.close()
    return produced


def register_contract(
    services: Services,
    topic: str,
    schema: dict[str, Any],
    rules: list[dict[str, Any]],
    schema_type: str = "AVRO",
) -> None:
    """Register `schema` with a rule set under the topic's value subject."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from pulsar_external_schema.subjects import TopicName

    name = TopicName.parse(topic)
    client = SchemaRegistryClient({"url": services.registry_url})
    client.register_schema(
        f"{name.tenant}.{name.namespace}.{name.local_name}-value",
        Schema.from_dict(
            {"schemaType": schema_type, "schema": json.dumps(schema), "ruleSet": {"domainRules": rules}}
        ),
    )


def register_v3_contract(services: Services, topic: str) -> None:
    register_contract(services, topic, ORDER_V3, [CHECK_NAME])


def send_garbage(services: Services, client: Any, topic: str) -> list[str]:
    """Messages no schema decodes: bad bytes under a real id, no id at all, an unknown id."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from pulsar_external_schema import schema_id as ids
    from pulsar_external_schema.subjects import TopicName

    name = TopicName.parse(topic)
    registry = SchemaRegistryClient({"url": services.registry_url})
    latest = registry.get_latest_version(f"{name.tenant}.{name.namespace}.{name.local_name}-value")
    assert latest.schema_id is not None
    real = ids.to_property(ids.confluent_id(latest.schema_id))
    unknown = ids.to_property(ids.confluent_id(987_654_321))
    producer = client.create_producer(topic, batching_enabled=False)
    kinds = []
    for i, (payload, properties, kind) in enumerate(
        [
            (b"\xff\xfe not avro", {ids.SCHEMA_ID_PROPERTY: real}, "malformed"),
            (b"plain bytes", {}, "no schema id"),
            (b"\x02\x04ab", {ids.SCHEMA_ID_PROPERTY: unknown}, "unknown schema id"),
        ]
    ):
        producer.send(payload, properties=properties, partition_key=f"garbage-{i}")
        kinds.append(kind)
    producer.close()
    return kinds


@pytest.fixture(scope="session")
def orders(services: Services, pulsar_client: Any) -> Produced:
    """A 4-partition topic: 40 orders with v1, 40 with v2, 40 with v3 (+ its READ rule), then 3
    messages nothing can decode. Every 10th order has no name and fails the rule."""
    topic = f"persistent://public/default/{unique('spark-orders')}"
    create_partitioned_topic(services, topic, 4)
    produced = produce_orders(services, pulsar_client, topic, 1, 40, 1)
    for more in (produce_orders(services, pulsar_client, topic, 41, 40, 2),):
        produced.valid.update(more.valid)
        produced.rule_failures |= more.rule_failures
    register_v3_contract(services, topic)
    more = produce_orders(services, pulsar_client, topic, 81, 40, 3)
    produced.valid.update(more.valid)
    produced.rule_failures |= more.rule_failures
    produced.garbage = send_garbage(services, pulsar_client, topic)
    return produced


def deduplicated_namespace(services: Services) -> str:
    """A namespace whose topics drop messages with a sequence id already persisted."""
    namespace = unique("validated")
    with httpx.Client(base_url=services.admin_url, timeout=30) as admin:
        admin.put(f"/admin/v2/namespaces/public/{namespace}", json={}).raise_for_status()
        admin.post(f"/admin/v2/namespaces/public/{namespace}/deduplication", json=True).raise_for_status()
        assert admin.get(f"/admin/v2/namespaces/public/{namespace}/deduplication").json() is True
    return f"persistent://public/{namespace}"


def roll_and_trim(services: Services, topic: str) -> None:
    """What a broker does to a topic in time (a ledger rolled over at an unload, a restart or a
    full ledger, then the ledgers no subscription needs deleted), done now: unload, then trim."""
    path = f"/admin/v2/persistent/{topic.removeprefix('persistent://')}"
    with httpx.Client(base_url=services.admin_url, timeout=60) as admin:
        # a deduplicated topic's position, snapshotted every 2 s (scripts/pulsar/standalone.conf.in)
        deadline = time.monotonic() + 150  # 2 s here, 2 min on a broker of defaults
        while time.monotonic() < deadline:
            stats = admin.get(f"{path}/internalStats").raise_for_status().json()
            dedup = stats.get("cursors", {}).get("pulsar.dedup")
            if dedup is None or _position(dedup["markDeletePosition"]) >= _last_written(stats):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the deduplication snapshot of {topic} did not reach its end in 150 s")
        admin.put(f"{path}/unload").raise_for_status()
        admin.post(f"{path}/trim").raise_for_status()


def subscriptions(services: Services, topic: str) -> list[str]:
    """The subscriptions the broker holds on `topic`."""
    path = f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/subscriptions"
    response = httpx.get(f"{services.admin_url}{path}", timeout=30)
    response.raise_for_status()
    return sorted(response.json())


def _position(text: str) -> tuple[int, int]:
    ledger, entry = text.split(":")
    return int(ledger), int(entry)


def _last_written(internal_stats: dict[str, Any]) -> tuple[int, int]:
    """A managed ledger's last entry: in its open ledger, or (after an unload opened an empty one)
    the last of a closed ledger."""
    last = _position(internal_stats["lastConfirmedEntry"])
    if last[1] >= 0:
        return last
    written = [ledger for ledger in internal_stats["ledgers"] if ledger.get("entries", 0) > 0]
    return (written[-1]["ledgerId"], written[-1]["entries"] - 1) if written else (-1, -1)


COMMAND = Path(sys.executable).parent / "pulsar-external-schema"


def validate(services: Services, *args: str, **popen: Any) -> subprocess.Popen[str]:
    """The `validate` console command on the services, on the reader path of the test, in a
    session of its own (so that a test can kill it and its Spark JVM with one signal)."""
    env = {
        **os.environ,
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "PULSAR_ADMIN_URL": services.admin_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    return subprocess.Popen(
        [str(COMMAND), "validate", "--master", "local[2]", *_paths(), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        **popen,
    )


def kill_after_commits(running: subprocess.Popen[str], checkpoint: Path, commits: int) -> None:
    """SIGKILL a running `validate` (and its Spark JVM) once its checkpoint holds `commits`
    committed micro-batches: mid-stream, maybe mid-batch, no clean shutdown."""
    done = checkpoint / "commits"
    deadline = time.monotonic() + 240
    while not (done.exists() and len([p for p in done.iterdir() if p.name.isdigit()]) >= commits):
        assert running.poll() is None, running.communicate()[0]
        assert time.monotonic() < deadline, "no micro-batch committed in time"
        time.sleep(0.2)
    os.killpg(running.pid, signal.SIGKILL)
    running.wait()


# -- the native reader against the Python path (test_native.py, test_spark_tls.py) --------------


class Spy:
    """Counts the rows the extension decoded itself (`_native`) in the batches it gave."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from pulsar_external_schema.reading import native

        self.native_rows = 0
        self.rows = 0
        finish = native.Finisher.finish

        def counting(finisher: Any, batch: Any) -> Any:
            self.native_rows += batch.column("_native").true_count
            self.rows += batch.num_rows
            return finish(finisher, batch)

        monkeypatch.setattr(native.Finisher, "finish", counting)


def assert_same(native_table: Any, python_table: Any) -> None:
    """Two `pyarrow.Table`s equal column for column; the first row that differs named."""
    assert native_table.num_rows == python_table.num_rows
    for name in python_table.column_names:
        n, p = native_table.column(name), python_table.column(name)
        if not n.equals(p):
            for i, (a, b) in enumerate(zip(n.to_pylist(), p.to_pylist(), strict=True)):
                assert a == b, f"column {name}, row {i}: native {a!r} != python {b!r}"
            raise AssertionError(f"column {name}: {n.type} != {p.type}")
