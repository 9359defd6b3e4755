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
