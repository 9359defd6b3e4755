"""Spark's JVMs start in about half the time in the tests: a class-data-sharing archive of what a
Spark session loads (made once a machine, kept in the cache scripts/services uses, keyed by the
Java and the PySpark it was made with) and the JIT's first tier only.

A test starts a dozen Spark JVMs per run (a session per worker, each `validate` command, the
Spark Connect server), and one spends most of its ~9 s loading and verifying classes (~4 s with
these). Neither option changes what a JVM does, only how soon it starts: both are passed in
`SPARK_SUBMIT_OPTS`, which every `spark-submit` (and so PySpark's own) reads, and a JVM whose class
path the archive does not match ignores it. `PES_SPARK_CDS=0` turns this off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: what the archive is made of: a session, a DataFrame query, a Python UDF over Arrow, and a
#: Python data source read as a batch and as an available-now stream (what the package's source
#: and the validation job load)
_WORKLOAD = """
import tempfile
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

class Reader(DataSourceReader):
    def read(self, partition):
        yield (1, "a")

class Stream(DataSourceStreamReader):
    def initialOffset(self):
        return {"n": 0}
    def latestOffset(self):
        return {"n": 1}
    def partitions(self, start, end):
        return [InputPartition(0)]
    def read(self, partition):
        yield (1, "a")

class Source(DataSource):
    @classmethod
    def name(cls):
        return "warm"
    def schema(self):
        return "id int, name string"
    def reader(self, schema):
        return Reader()
    def streamReader(self, schema):
        return Stream()

spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.dataSource.register(Source)
spark.range(100).selectExpr("id", "cast(id as string) s").groupBy("s").count().collect()
spark.range(10).mapInArrow(lambda batches: batches, "id long").collect()
spark.read.format("warm").load().collect()
with tempfile.TemporaryDirectory() as where:
    query = (
        spark.readStream.format("warm").load().writeStream
        .foreachBatch(lambda frame, batch: frame.count())
        .option("checkpointLocation", where).trigger(availableNow=True).start()
    )
    query.awaitTermination(120)
spark.stop()
"""

_MAKE_TIMEOUT_SECONDS = 240


def faster_spark_jvms() -> None:
    """Sets `SPARK_SUBMIT_OPTS` for this process and the ones it starts (the archive made first
    where this machine has none); leaves it alone where PySpark or Java is not installed, or the
    archive cannot be made (Spark then starts as it does without these tests)."""
    if os.environ.get("PES_SPARK_CDS") == "0" or "-XX:SharedArchiveFile" in os.environ.get(
        "SPARK_SUBMIT_OPTS", ""
    ):
        return
    archive = _archive()
    if archive is None:
        return
    options = [
        f"-XX:SharedArchiveFile={archive}",
        "-XX:TieredStopAtLevel=1",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
    ]
    given = os.environ.get("SPARK_SUBMIT_OPTS")
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join([*([given] if given else []), *options])


def _archive() -> Path | None:
    spec = importlib.util.find_spec("pyspark")
    java = shutil.which("java", path=_java_path())
    if spec is None or spec.origin is None or java is None:
        return None
    jars = sorted(p.name for p in (Path(spec.origin).parent / "jars").glob("*.jar"))
    try:
        version = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=True
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    key = hashlib.sha256(
        "\n".join([version, os.path.realpath(java), importlib.metadata.version("pyspark"), *jars]).encode()
    ).hexdigest()[:16]
    cache = Path(os.environ.get("PES_CACHE_DIR", Path.home() / ".cache" / "pulsar-external-schema"))
    archive, failed = cache / f"spark-cds-{key}.jsa", cache / f"spark-cds-{key}.failed"
    if archive.exists():
        return archive
    if failed.exists():
        return None
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / "spark-cds.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one maker (the other workers wait for it)
        if not archive.exists() and not failed.exists():
            _make(archive, failed)
    return archive if archive.exists() else None


def _java_path() -> str | None:
    home = os.environ.get("JAVA_HOME")
    return os.pathsep.join([str(Path(home) / "bin"), os.environ.get("PATH", "")]) if home else None


def _make(archive: Path, failed: Path) -> None:
    partial = archive.with_suffix(".partial")
    env = {
        **os.environ,
        "SPARK_SUBMIT_OPTS": f"-XX:ArchiveClassesAtExit={partial}",
        "PYSPARK_PYTHON": sys.executable,
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", _WORKLOAD],
            env=env,
            capture_output=True,
            text=True,
            timeout=_MAKE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        failed.write_text(f"{error}\n")
        return
    if done.returncode == 0 and partial.exists():
        partial.rename(archive)
    else:
        failed.write_text(done.stderr[-3000:])
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
