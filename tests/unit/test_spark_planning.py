"""Planning a Spark read on the driver (reading/planning.py): entries across ledgers, ranges split in
pieces, minPartitions, data lost to retention."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from spark_support import offline_options

from pulsar_external_schema import ExternalSchemaError
from pulsar_external_schema.reading.planning import (
    Planner,
    TopicPartitionRange,
    advance,
    entries_between,
    split_range,
)
from pulsar_external_schema.tasks.offsets import EARLIEST, Bound
from pulsar_external_schema.tasks.topic_metadata import Ledger

LEDGERS = [Ledger(3, 4), Ledger(7, 0), Ledger(9, 3)]


def test_advance_counts_entries_across_ledgers() -> None:
    assert advance(LEDGERS, EARLIEST, 2) == Bound(3, 1, -1, True)
    assert advance(LEDGERS, EARLIEST, 5) == Bound(9, 0, -1, True)  # the empty ledger is skipped
    assert advance(LEDGERS, Bound(3, 1, -1, True), 2) == Bound(3, 3, -1, True)
    assert advance(LEDGERS, Bound(3, 3, -1, True), 1) == Bound(9, 0, -1, True)
    # a start inside an entry: that entry still counts
    assert advance(LEDGERS, Bound(3, 1, 2, True), 1) == Bound(3, 1, -1, True)
    assert advance(LEDGERS, Bound(9, 1, -1, True), 5) is None  # fewer written: no cap


class _Admin:
    def __init__(self, ledgers: list[Ledger]) -> None:
        self._ledgers = ledgers

    def ledgers(self, partition: str) -> list[Ledger]:
        return self._ledgers


def _covered(ledgers: list[Ledger], start: Bound, end: Bound) -> list[tuple[int, int, int]]:
    """The messages (ledger, entry, batch index) a range reads, with three messages per entry."""
    return [
        (row.ledger_id, entry, batch)
        for row in ledgers
        for entry in range(row.entries)
        for batch in range(3)
        if not start.covers(row.ledger_id, entry, batch) and end.covers(row.ledger_id, entry, batch)
    ]


def test_entries_between_counts_what_a_range_reads() -> None:
    assert entries_between(LEDGERS, EARLIEST, Bound(9, 2, -1, True)) == 7
    assert entries_between(LEDGERS, Bound(3, 1, -1, True), Bound(9, 0, -1, True)) == 3
    assert entries_between(LEDGERS, Bound(3, 1, 2, True), Bound(3, 1, -1, True)) == 1  # a part of one


@pytest.mark.parametrize("pieces", [1, 2, 3, 4, 7, 20])
@pytest.mark.parametrize(
    ("start", "end"),
    [
        (EARLIEST, Bound(9, 2, -1, True)),
        (Bound(3, 0, 1, True), Bound(9, 1, 2, False)),  # bounds inside entries
        (Bound(3, 2, -1, True), Bound(9, 0, -1, True)),
    ],
)
def test_a_range_split_in_pieces_reads_each_message_once(start: Bound, end: Bound, pieces: int) -> None:
    ranges = split_range(LEDGERS, start, end, pieces)
    assert ranges[0][0] == start and ranges[-1][1] == end
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # contiguous
    read = [message for first, last in ranges for message in _covered(LEDGERS, first, last)]
    assert read == _covered(LEDGERS, start, end)  # each once, in order
    total = entries_between(LEDGERS, start, end)
    step = -(-total // pieces)  # entries per piece, the last one takes what is left
    assert len(ranges) == -(-total // step)


def test_min_partitions_divides_the_larger_partitions_more() -> None:
    big = [Ledger(3, 90)]
    small = [Ledger(5, 10)]
    planner = Planner(offline_options(minPartitions="10"))
    admin: Any = _Admin(big)
    ranges = [
        TopicPartitionRange("persistent://t/n/a-partition-0", EARLIEST, Bound(3, 89, -1, True)),
        TopicPartitionRange("persistent://t/n/a-partition-1", EARLIEST, Bound(5, 9, -1, True)),
    ]
    pieces = planner.split(admin, ranges, {"persistent://t/n/a-partition-1": small})
    counts = {
        p: sum(1 for r in pieces if r.partition_topic == p) for p in (r.partition_topic for r in ranges)
    }
    assert counts == {"persistent://t/n/a-partition-0": 9, "persistent://t/n/a-partition-1": 1}
    assert Planner(offline_options()).split(admin, ranges) == ranges  # one Spark partition each by default


def test_deleted_messages_fail_the_query_unless_told_to_go_on(caplog: pytest.LogCaptureFixture) -> None:
    admin: Any = _Admin([Ledger(9, 3)])
    with pytest.raises(ExternalSchemaError, match=r"retention removed data.*failOnDataLoss=false"):
        Planner(offline_options()).check_data_loss(admin, "persistent://t/n/a", Bound(3, 1, -1, True))
    Planner(offline_options(failOnDataLoss="false")).check_data_loss(admin, "persistent://t/n/a", Bound(3, 1))
    assert "going on from the oldest message" in caplog.text
    Planner(offline_options()).check_data_loss(admin, "persistent://t/n/a", Bound(9, 1))  # nothing lost
    Planner(offline_options()).check_data_loss(admin, "persistent://t/n/a", EARLIEST)

    class NoCalls:
        def ledgers(self, partition: str) -> list[Ledger]:
            raise AssertionError("ledgers fetched again")

    fetched: Any = NoCalls()  # ledgers latestOffset just fetched are not asked for twice
    with pytest.raises(ExternalSchemaError, match="retention removed data"):
        Planner(offline_options()).check_data_loss(fetched, "persistent://t/n/a", Bound(3, 1), [Ledger(9, 3)])
