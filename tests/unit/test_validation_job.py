"""The validation job's parts that must hold wherever Spark runs its batch function: a Spark
Connect server unpickles it in a Python of its own, and reports its counts in the query's progress."""

from __future__ import annotations

import pickle
import threading
from types import SimpleNamespace
from typing import Any

from pulsar_external_schema.spark.pipeline import VERDICTS, BatchWriter, observed


class _Row:
    def __init__(self, **columns: Any) -> None:
        self._columns = columns

    def asDict(self) -> dict[str, Any]:  # pyspark Row spelling
        return dict(self._columns)


def writer() -> BatchWriter:
    return BatchWriter(
        input="persistent://public/default/in",
        valid="persistent://public/default/trusted",
        dead_letter_topic="persistent://public/default/dlq",
        checkpoint="/tmp/checkpoint",
        options={"service.url": "pulsar://localhost:6650"},
        producer_name="validate",
    )


def test_the_batch_function_pickles_with_its_clients_left_behind() -> None:
    function = writer()
    function._prefix = "validate-1234abcd"
    function._forwarded = SimpleNamespace(lock=threading.Lock())  # type: ignore[assignment]

    copy = pickle.loads(pickle.dumps(function))

    assert copy._forwarded is None and copy._prefix is None  # opened again where it runs
    assert (copy.input, copy.valid, copy.options) == (function.input, function.valid, function.options)
    assert function._forwarded is not None  # the original keeps its own


def test_verdicts_are_read_from_a_classic_or_a_connect_progress() -> None:
    classic = SimpleNamespace(observedMetrics={VERDICTS: _Row(valid=5, invalid=2)})
    schema = {"type": "struct", "fields": [{"name": "valid"}, {"name": "invalid"}]}
    connect = SimpleNamespace(observedMetrics={VERDICTS: _Row(values=[5, 2], schema=schema)})
    idle = SimpleNamespace(observedMetrics={})

    assert observed(classic, VERDICTS) == {"valid": 5, "invalid": 2}
    assert observed(connect, VERDICTS) == {"valid": 5, "invalid": 2}
    assert observed(idle, VERDICTS) is None


class _Text:
    """`session.read.text(path)` of a fake session: counts the Spark jobs reading the checkpoint."""

    def __init__(self, reads: list[str]) -> None:
        self.reads = reads

    def text(self, path: str) -> Any:
        self.reads.append(path)
        return SimpleNamespace(first=lambda: ('{"id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}',))


def test_the_producer_names_take_the_query_id_without_a_spark_job_where_spark_gives_it() -> None:
    """A classic session runs the batch function on the query's thread, where Spark sets the
    query id as a local property; a Spark Connect session has no SparkContext, and the id is read
    from the checkpoint's metadata. Both are the id the checkpoint keeps."""
    reads: list[str] = []
    context = SimpleNamespace(getLocalProperty={"sql.streaming.queryId": "0f1e2d3c-4b5a"}.get)
    classic = SimpleNamespace(sparkSession=SimpleNamespace(sparkContext=context, read=_Text(reads)))
    assert writer()._producer_prefix(classic) == "validate-0f1e2d3c"
    assert reads == []
    connect = SimpleNamespace(sparkSession=SimpleNamespace(read=_Text(reads)))
    assert writer()._producer_prefix(connect) == "validate-0f1e2d3c"
    assert reads == ["/tmp/checkpoint/metadata"]
