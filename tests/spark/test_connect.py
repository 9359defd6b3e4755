"""The source and the sink through Spark Connect (`SparkSession.builder.remote("sc://...")`), how
Spark 4 users increasingly reach a cluster: a real Connect server (its jar ships in pyspark) on a
local master, and a client in a process of its own (a process holds a classic session or a
remote one, not both), with what the `[spark]` extra installs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from cli_support import cli
from conftest import Services

SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Reading",
        "fields": [{"name": "sensor", "type": "string"}, {"name": "v", "type": "int"}],
    }
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`sc://127.0.0.1:PORT` of a Spark Connect server started for these tests."""
    import pyspark

    home = Path(pyspark.__file__).parent
    port = free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                str(home / "bin" / "spark-submit"),
                "--class",
                "org.apache.spark.sql.connect.service.SparkConnectServer",
                "--master",
                "local[2]",
                "--conf",
                f"spark.connect.grpc.binding.port={port}",
                "--conf",
                "spark.connect.grpc.binding.address=127.0.0.1",
                "--conf",
                "spark.ui.enabled=false",
                "--conf",
                "spark.sql.session.timeZone=UTC",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the Spark Connect server did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def run_client(connect_url: str, services: Services, code: str) -> object:
    """`code` in a client process of its own, with `spark` a Connect session and the services'
    URLs in `options`; what it prints last, as JSON."""
    program = textwrap.dedent(
        f"""
        import json
        from pyspark.sql import SparkSession
        from pulsar_external_schema.spark import register

        spark = SparkSession.builder.remote({connect_url!r}).getOrCreate()
        register(spark)
        options = {{
            "service.url": {services.pulsar_url!r},
            "admin.url": {services.admin_url!r},
            "schema.registry.url": {services.registry_url!r},
        }}
        """
    ) + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_read_and_write_through_spark_connect(services: Services, topic: str, connect_url: str) -> None:
    records = [f'{{"sensor": "s{i}", "v": {i}}}' for i in range(5)]
    produced = cli(
        services, "produce", topic, "--value-schema", SCHEMA, *[a for r in records for a in ("-m", r)]
    )
    assert produced.returncode == 0, produced.stderr
    copy = f"{topic}-copy"
    registered = cli(services, "register", "--topic", copy, "--schema", SCHEMA)
    assert registered.returncode == 0, registered.stderr

    result = run_client(
        connect_url,
        services,
        f"""
        rows = spark.read.format("pulsar-external").options(**options).option("topic", {topic!r}).load()
        read = sorted(row["value"]["v"] for row in rows.where("_valid").collect())
        (
            rows.where("value.v % 2 = 0").select("key", "value")
            .write.format("pulsar-external").options(**options).option("topic", {copy!r})
            .mode("append").save()
        )
        print(json.dumps(read))
        """,
    )

    assert result == [0, 1, 2, 3, 4]
    copied = cli(services, "consume", copy, "--from-beginning", "--timeout-ms", "3000")
    assert copied.returncode == 0, copied.stderr
    assert sorted(json.loads(line)["v"] for line in copied.stdout.splitlines()) == [0, 2, 4]


def test_validation_job_through_spark_connect(
    services: Services, topic: str, connect_url: str, tmp_path: Path
) -> None:
    """The job's batch function pickles and runs in the server's Python, and each batch's counts
    reach `on_batch` in the client; then `validate --remote`, from the same checkpoint, forwards
    only what is new, once."""
    from spark_support import COMMAND, deduplicated_namespace, register_contract

    def produce(values: range) -> None:
        records = [f'{{"sensor": "s{v}", "v": {v}}}' for v in values]
        done = cli(
            services, "produce", topic, "--value-schema", SCHEMA, *[a for r in records for a in ("-m", r)]
        )
        assert done.returncode == 0, done.stderr

    produce(range(6))
    rule = {"name": "notThree", "kind": "CONDITION", "type": "CEL", "mode": "READ", "onFailure": "ERROR"}
    register_contract(services, topic, json.loads(SCHEMA), [{**rule, "expr": "message.v % 3 != 0"}])
    namespace = deduplicated_namespace(services)
    trusted, dlq, checkpoint = f"{namespace}/trusted", f"{namespace}/dlq", str(tmp_path / "checkpoint")
    counts = run_client(
        connect_url,
        services,
        f"""
        from pulsar_external_schema.spark import ValidationJob
        counts = []
        ValidationJob(
            input={topic!r}, valid={trusted!r}, dead_letter_topic={dlq!r}, checkpoint={checkpoint!r},
            options=options, on_batch=counts.append,
        ).run(spark)
        print(json.dumps([[c.batch_id, c.valid, c.invalid] for c in counts]))
        """,
    )
    assert isinstance(counts, list) and counts, counts
    assert [c[0] for c in counts] == list(range(len(counts)))  # each batch once, in order
    assert (sum(c[1] for c in counts), sum(c[2] for c in counts)) == (4, 2)

    produce(range(6, 9))
    env = {
        **os.environ,
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "PULSAR_ADMIN_URL": services.admin_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    command = [str(COMMAND), "validate", "--remote", connect_url, "--input", topic, "--valid", trusted]
    command += ["--dead-letter-topic", dlq, "--checkpoint", checkpoint]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "done: 2 valid, 1 dead-lettered" in done.stderr

    forwarded = cli(services, "consume", trusted, "--from-beginning", "--timeout-ms", "3000")
    assert forwarded.returncode == 0, forwarded.stderr
    assert sorted(json.loads(line)["v"] for line in forwarded.stdout.splitlines()) == [1, 2, 4, 5, 7, 8]
    dead = cli(services, "consume", dlq, "--from-beginning", "--timeout-ms", "3000", "--raw")
    assert dead.returncode == 0, dead.stderr
    assert len(dead.stdout.splitlines()) == 3


def test_validate_refuses_a_connect_url_it_cannot_reach_at_once(services: Services, tmp_path: Path) -> None:
    """Spark Connect's client retries an address where nothing listens for minutes."""
    from spark_support import COMMAND

    topic = "persistent://public/default/anything"
    command = [str(COMMAND), "validate", "--remote", f"sc://127.0.0.1:{free_port()}", "--input", topic]
    command += ["--valid", str(tmp_path / "v"), "--dead-letter-topic", f"{topic}-dlq"]
    command += ["--checkpoint", str(tmp_path / "c"), "--service-url", services.pulsar_url]
    command += ["--admin-url", services.admin_url, "--registry-url", services.registry_url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "cannot reach the Spark Connect server at 127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr
