"""Journey: a data engineer gets the package as a user gets it, from wheels, on a machine without
Rust. `scripts/dist` builds the release files; they are installed into a fresh virtualenv outside
the repository (`pip install 'pulsar-external-schema[native,spark]'`, resolved from that folder),
on a PATH with no cargo; the console tool says the native extension serves; the quickstart runs;
and an Avro topic is read with `reader=native` on a standalone Spark cluster (a master and a
worker on 127.0.0.1) whose executor runs that virtualenv's Python, as a cluster's nodes would.

Fails on the code before issue 57: there were no wheels (`pip install '...[native]'` could not
resolve, the extra was unpinned), and the extension was built only by scripts/bootstrap, from a
clone, with cargo."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, Services
from contracts import unique

from pulsar_external_schema import _native
from pulsar_external_schema._version import VERSION

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 600


def run(*args: str | Path, env: dict[str, str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(
        [str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, (
        f"{args[:3]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """The release files built, and installed into a fresh virtualenv; the user's environment."""
    if shutil.which("cargo") is None:
        pytest.fail(
            "scripts/dist needs Rust's cargo to build the extension's wheel (scripts/test runs where it is)"
        )
    home = tmp_path_factory.mktemp("user")
    dist = home / "dist"
    # as a release is built from a shell: not with what other tests put in this process's environment
    shell = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYSPARK"))}
    run(REPO / "scripts" / "dist", dist, env=shell, cwd=home, timeout=1800)
    files = sorted(p.name for p in dist.iterdir())
    assert [f for f in files if f.startswith("pulsar_external_schema_native-") and f.endswith(".whl")] == [
        f"pulsar_external_schema_native-{VERSION}-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
    ], files
    assert len(files) == 4, files  # the two packages' sdists and wheels

    venv = home / "venv"
    run(Path(sys.base_prefix) / "bin" / "python3", "-m", "venv", venv, env=dict(os.environ), cwd=home)
    without_rust = os.pathsep.join(
        d for d in os.environ["PATH"].split(os.pathsep) if d and not Path(d, "cargo").exists()
    )
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PES_", "PYSPARK"))
        },
        "PATH": f"{venv / 'bin'}{os.pathsep}{without_rust}",
    }
    assert shutil.which("cargo", path=env["PATH"]) is None and shutil.which("rustc", path=env["PATH"]) is None
    run(
        venv / "bin" / "pip",
        "install",
        "--quiet",
        "--find-links",
        dist,
        f"pulsar-external-schema[native,spark]=={VERSION}",
        env=env,
        cwd=home,
        timeout=1200,
    )
    yield venv, env


def test_the_wheels_install_where_there_is_no_rust_and_the_extension_serves(
    installed: tuple[Path, dict[str, str]], services: Services, tmp_path: Path
) -> None:
    venv, env = installed
    where = run(
        venv / "bin" / "python",
        "-c",
        "import pulsar_external_schema, _pulsar_external_schema_native as n; "
        "print(pulsar_external_schema.__file__); print(n.__file__)",
        env=env,
        cwd=tmp_path,
    )
    assert all(line.startswith(str(venv)) for line in where.splitlines()), where  # not the clone's
    assert run(venv / "bin" / "pulsar-external-schema", "--version", env=env, cwd=tmp_path).splitlines() == [
        f"pulsar-external-schema {VERSION}",
        f"native extension: pulsar-external-schema-native {VERSION} (ABI {_native.ABI})",
    ]

    shutil.copy(REPO / "examples" / "quickstart.py", tmp_path / "quickstart.py")
    urls = {
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "PULSAR_ADMIN_URL": services.admin_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    said = run(venv / "bin" / "python", "quickstart.py", env={**env, **urls}, cwd=tmp_path)
    assert "summary: 6 produced, 6 consumed and decoded" in said, said


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        assert process.poll() is None, f"{log.name} exited:\n{log.read_text(errors='replace')[-3000:]}"
        time.sleep(0.5)
    pytest.fail(f"no '{text}' in {seconds} s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def standalone(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> Iterator[str]:
    """A Spark standalone master and one worker (1 core) from the virtualenv's pyspark."""
    venv, env = installed
    found = run(
        venv / "bin" / "python",
        "-c",
        "import pyspark, os; print(os.path.dirname(pyspark.__file__))",
        env=env,
        cwd=tmp_path,
    )
    spark_home = found.strip()
    cluster_env = {
        **env,
        "SPARK_HOME": spark_home,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp_path),
    }
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(Path(spark_home) / "bin" / "spark-class")
    commands = {
        "master": [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
        ],
        "worker": [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            master_url,
            "--host",
            "127.0.0.1",
            "--webui-port",
            str(free_port()),
            "--cores",
            "1",
            "--memory",
            "1g",
            "--work-dir",
            str(tmp_path / "work"),
        ],
    }
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for name, waited in (
            ("master", "I have been elected leader"),
            ("worker", "Successfully registered with master"),
        ):
            log = tmp_path / f"{name}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    commands[name],
                    env=cluster_env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            processes.append(process)
            wait_for(log, waited, process)
        yield master_url
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, 15)
            process.wait(timeout=30)


READ = """
import json, sys
import pulsar
from pyspark.sql import SparkSession
from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
from pulsar_external_schema.spark import register

master, service_url, admin_url, registry_url, topic, rows = sys.argv[1:]
schema = {"type": "record", "name": "Reading", "fields": [
    {"name": "id", "type": "long"}, {"name": "sensor", "type": "string"}]}
client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
with SchemaRegistrySchemaFactory({"schema.registry.url": registry_url}) as factory:
    producer = create_producer(client, topic, factory.avro(json.dumps(schema)), batching_enabled=True)
    for i in range(int(rows)):
        producer.send_async({"id": i, "sensor": f"s{i % 5}"}, lambda result, message_id: None)
    producer.flush()
client.close()

spark = (SparkSession.builder.master(master).appName("installed from wheels")
    .config("spark.pyspark.python", sys.executable).config("spark.ui.enabled", "false")
    .config("spark.executor.memory", "512m").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
register(spark)

def on_the_executor(_):
    from pulsar_external_schema import _native
    return _native.describe()

executors = spark.sparkContext.parallelize([0], 1).map(on_the_executor).collect()
df = (spark.read.format("pulsar-external").option("service.url", service_url)
    .option("admin.url", admin_url).option("schema.registry.url", registry_url)
    .option("topic", topic).option("reader", "native").load())
got = df.selectExpr(
    "count(*) AS n", "sum(value.id) AS total", "count(DISTINCT value.sensor) AS sensors").first()
print(json.dumps({"executors": executors, "rows": got.n, "total": got.total, "sensors": got.sensors}))
spark.stop()
"""


def test_a_standalone_clusters_executor_reads_natively_from_the_installed_wheel(
    installed: tuple[Path, dict[str, str]], standalone: str, services: Services, tmp_path: Path
) -> None:
    venv, env = installed
    script = tmp_path / "read.py"
    script.write_text(textwrap.dedent(READ))
    topic = f"persistent://public/default/{unique('wheels')}"
    out = run(
        venv / "bin" / "python",
        script,
        standalone,
        services.pulsar_url,
        services.admin_url,
        services.registry_url,
        topic,
        str(ROWS),
        env=env,
        cwd=tmp_path,
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {
        "executors": [f"native extension: pulsar-external-schema-native {VERSION} (ABI {_native.ABI})"],
        "rows": ROWS,
        "total": ROWS * (ROWS - 1) // 2,
        "sensors": 5,
    }
