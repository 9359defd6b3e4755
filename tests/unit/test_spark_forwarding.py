"""The validation job's forwarding where a range is read (spark/forwarding.py): what a DLQ copy
carries, and the counts Spark gets. The sends themselves run on the real services
(tests/spark/test_validate.py, the journeys)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from spark_support import offline_options

from pulsar_external_schema import ConfigError
from pulsar_external_schema.spark import forwarding
from pulsar_external_schema.spark.source import PulsarExternalDataSource

PROPERTIES = pa.map_(pa.string(), pa.string())


def read_batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """The columns of a range's batch that forwarding reads."""
    columns = {
        "key": pa.array([r["key"] for r in rows], pa.string()),
        "data": pa.array([r["data"] for r in rows], pa.binary()),
        "properties": pa.array([list(r["properties"].items()) for r in rows], PROPERTIES),
        "eventTime": pa.array([None] * len(rows), pa.timestamp("us", tz="UTC")),
        "schemaId": pa.array([r["schemaId"] for r in rows], pa.int32()),
        "_valid": pa.array([r["_valid"] for r in rows], pa.bool_()),
        "_rule": pa.array([r.get("_rule") for r in rows], pa.string()),
        "_failure": pa.array(
            [list(r["_failure"].items()) if r.get("_failure") else None for r in rows], PROPERTIES
        ),
    }
    return pa.RecordBatch.from_pydict(columns)


def test_a_dead_letter_copy_keeps_bytes_and_properties_less_a_producers_rule_claims() -> None:
    batch = read_batch(
        [
            {
                "key": "k",
                "data": b"\x00payload",
                "properties": {"__schema_id": "AQ", "__rule.name": "forged", "app": "x"},
                "schemaId": 1,
                "_valid": False,
                "_rule": "checkQty",
                "_failure": {"__rule.name": "checkQty", "__rule.exception": "qty > 0 failed"},
            }
        ]
    )
    copy = forwarding.dead_letter_copies(batch)
    assert copy.schema.names == ["key", "data", "properties", "eventTime"]
    assert copy.column("data").to_pylist() == [b"\x00payload"] and copy.column("key").to_pylist() == ["k"]
    assert dict(copy.column("properties").to_pylist()[0]) == {
        "__schema_id": "AQ",
        "app": "x",
        "__rule.name": "checkQty",
        "__rule.exception": "qty > 0 failed",
    }


class _Writer:
    """A task's writer of one topic, recording what it was given."""

    made: ClassVar[list[_Writer]] = []

    def __init__(self, options: Any, base: int, task: int, *, source_topic: str) -> None:
        self.options, self.base, self.task, self.source_topic = options, base, task, source_topic
        self.batches: list[pa.RecordBatch] = []
        self.finished = False
        _Writer.made.append(self)

    def write(self, batch: pa.RecordBatch) -> None:
        self.batches.append(batch)

    def finish(self) -> None:
        self.finished = True

    def close(self) -> None:
        pass


def test_a_range_is_sent_to_its_two_topics_and_spark_gets_the_counts_once_all_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _Writer.made = []
    monkeypatch.setattr(forwarding, "TaskWriter", _Writer)
    monkeypatch.setattr(forwarding, "micro_batch_id", lambda: 7)
    monkeypatch.setattr(forwarding, "task_partition", lambda: 1)
    monkeypatch.setattr(forwarding, "_query_id", lambda: "0f1e2d3c-4b5a")
    options = offline_options(
        forwardTo="persistent://public/t/valid",
        deadLetterTopic="persistent://public/t/dlq",
        producerName="validate",
    )
    row = {"key": "a", "data": b"x", "properties": {}, "schemaId": 1, "_valid": True}
    bad = {**row, "_valid": False, "_rule": "r", "_failure": {"__rule.name": "r"}}

    def batches() -> Iterator[pa.RecordBatch]:
        yield read_batch([row, bad, row])
        yield read_batch([row, {**bad, "schemaId": None, "_rule": None}])

    counts = list(forwarding.forward_partition(options, "persistent://public/in/o-partition-1", batches()))

    valid, dead = _Writer.made
    assert [w.options.topics for w in (valid, dead)] == [
        ("persistent://public/t/valid",),
        ("persistent://public/t/dlq",),
    ]
    assert [w.options.producer_name for w in (valid, dead)] == [
        "validate-0f1e2d3c-valid",
        "validate-0f1e2d3c-dlq",
    ]
    assert (valid.base, valid.task, valid.source_topic) == (7, 1, "persistent://public/in/o")
    assert valid.options.register_forwarded and not dead.options.register_forwarded
    assert sum(b.num_rows for b in valid.batches) == 3 and sum(b.num_rows for b in dead.batches) == 2
    assert valid.finished and dead.finished
    assert len(counts) == 1  # after everything was sent
    assert sorted(counts[0].to_pylist(), key=str) == sorted(
        [
            {"schemaId": 1, "_valid": True, "_rule": None, "count": 3},
            {"schemaId": 1, "_valid": False, "_rule": "r", "count": 1},
            {"schemaId": None, "_valid": False, "_rule": None, "count": 1},
        ],
        key=str,
    )


def test_forwarding_is_refused_outside_a_stream() -> None:
    source = PulsarExternalDataSource(
        {
            "service.url": "pulsar://localhost:6650",
            "schema.registry.url": "http://r",
            "forwardTo": "persistent://public/t/valid",
            "deadLetterTopic": "persistent://public/t/dlq",
        }
    )
    with pytest.raises(ConfigError, match="'forwardTo' is for streams"):
        source.reader(source.schema())
