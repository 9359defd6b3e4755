"""The validation job's parts that must hold wherever Spark runs its batch function: a Spark
Connect server unpickles it in a Python of its own, and reports its counts in the query's progress."""

from __future__ import annotations

import pickle
from types import SimpleNamespace
from typing import Any

import pytest

from pulsar_external_schema.spark.pipeline import VERDICTS, BatchWriter, observed


class _Row:
    def __init__(self, **columns: Any) -> None:
        self._columns = columns

    def asDict(self) -> dict[str, Any]:  # pyspark Row spelling
        return dict(self._columns)


def writer() -> BatchWriter:
    return BatchWriter(
        input="persistent://public/default/in",
        valid="/tmp/trusted",
        dead_letter_topic="persistent://public/default/dlq",
        checkpoint="/tmp/checkpoint",
        options={"service.url": "pulsar://localhost:6650"},
        producer_name="validate",
    )


def test_the_batch_function_pickles_with_its_query_id_left_behind() -> None:
    function = writer()
    function._prefix = "validate-1234abcd"

    copy = pickle.loads(pickle.dumps(function))

    assert copy._prefix is None  # found again where it runs (a Connect server's own Python)
    assert (copy.input, copy.valid, copy.options) == (function.input, function.valid, function.options)
    assert function._prefix == "validate-1234abcd"  # the original keeps its own


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


def test_a_forwarding_jobs_verdicts_reach_on_batch_and_the_metrics_from_its_progress() -> None:
    """To a topic, the tasks forward as they read and the query's progress carries their counts,
    with the failing ones by rule: as a classic session gives them, and as the Connect client
    parses them (each struct its values and schema)."""
    from pulsar_external_schema import metrics
    from pulsar_external_schema.spark.pipeline import ValidationJob

    failed_schema = {"type": "struct", "fields": [{"name": "_rule"}, {"name": "count"}]}
    row_schema = {"type": "struct", "fields": [{"name": "valid"}, {"name": "invalid"}, {"name": "failed"}]}
    classic = _Row(valid=7, invalid=3, failed=[_Row(_rule="checkQty", count=2), _Row(_rule=None, count=1)])
    connect = _Row(
        values=[
            7,
            3,
            [
                {"values": ["checkQty", 2], "schema": failed_schema},
                {"values": [None, 1], "schema": failed_schema},
            ],
        ],
        schema=row_schema,
    )
    for row in (classic, connect):
        counts: list[Any] = []
        job = ValidationJob(
            "persistent://public/default/in",
            "persistent://public/default/trusted",
            "persistent://public/default/dlq",
            "/tmp/checkpoint",
            {"service.url": "pulsar://x", "admin.url": "http://x", "schema.registry.url": "http://r"},
            on_batch=counts.append,
        )
        query = SimpleNamespace(recentProgress=[SimpleNamespace(batchId=0, observedMetrics={VERDICTS: row})])
        store = metrics.enable_rule_metrics()
        store.clear()
        try:
            assert job._report(query, -1) == 0
            said = {(s.topic, s.verdict, s.rule): s.count for s in store.validated()}
        finally:
            metrics.disable_rule_metrics()
        assert [(c.batch_id, c.valid, c.invalid) for c in counts] == [(0, 7, 3)]
        assert said == {
            ("persistent://public/default/in", "valid", ""): 7,
            ("persistent://public/default/in", "dead_lettered", "checkQty"): 2,
            ("persistent://public/default/in", "dead_lettered", ""): 1,
        }


def test_the_command_makes_the_jobs_dead_letter_subscription_unless_told_otherwise(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pulsar_external_schema.cli.parsers import build_parser
    from pulsar_external_schema.cli.validate import kept_by
    from pulsar_external_schema.deadletter import DEAD_LETTER_SUBSCRIPTION
    from pulsar_external_schema.spark import ValidationJob

    required = ["validate", "--input", "in", "--valid", "/tmp/v", "--dlq", "persistent://a/b/dlq"]
    parser = build_parser()
    for given, expected in [([], DEAD_LETTER_SUBSCRIPTION), (["audit"], "audit"), ([""], None)]:
        flag = ["--dead-letter-subscription", *given] if given else []
        args = parser.parse_args([*required, "--checkpoint", "/tmp/c", *flag])
        job = ValidationJob(
            input="persistent://a/b/in",
            valid="/tmp/v",
            dead_letter_topic="persistent://a/b/dlq",
            checkpoint="/tmp/c",
            options={
                "service.url": "pulsar://b:6650",
                "admin.url": "http://a",
                "schema.registry.url": "http://r",
            },
            dead_letter_subscription=kept_by(args.dead_letter_subscription),
        )
        assert job.dead_letter_subscription == expected
    # the help names the job's own default
    with pytest.raises(SystemExit):
        parser.parse_args(["validate", "--help"])
    assert f"(default: {DEAD_LETTER_SUBSCRIPTION};" in " ".join(capsys.readouterr().out.split())
