"""How far a read has come (`arrow.ReadProgress`, given to `read_batches(progress=...)` after
each batch): entries read of the read's entries, from the last message id of a batch and the
partitions' ledgers, and the rows left estimated from them. The calls on the real services:
tests/integration/test_arrow.py and test_cli_export.py."""

from __future__ import annotations

import pyarrow as pa

from pulsar_external_schema.arrow import ReadProgress, _Extent
from pulsar_external_schema.reading.planning import TopicPartitionRange
from pulsar_external_schema.tasks.offsets import Bound
from pulsar_external_schema.tasks.topic_metadata import Ledger

EARLIEST = Bound(-1, -1, -1, False)


def batch_ending_at(ledger: int, entry: int) -> pa.RecordBatch:
    ids = pa.array([{"ledgerId": ledger, "entryId": entry, "batchIndex": 3}])
    return pa.RecordBatch.from_pydict({"messageId": ids})


def test_the_rows_left_are_the_entries_left_at_the_rows_an_entry_held() -> None:
    assert ReadProgress(rows=0, entries=0, total_entries=10).rows_left is None
    assert ReadProgress(rows=300, entries=3, total_entries=10).rows_left == 700
    assert ReadProgress(rows=1000, entries=10, total_entries=10).rows_left == 0


def test_entries_are_counted_across_ledgers_and_ranges() -> None:
    """Two ranges: a partition of two ledgers (5 and 4 entries) read whole, then a partition's
    entries 2..6 of one ledger."""
    ledgers = {"a": [Ledger(10, 5), Ledger(11, 4)], "b": [Ledger(20, 8)]}
    ranges = [
        TopicPartitionRange("a", EARLIEST, Bound(11, 3, -1, True)),
        TopicPartitionRange("b", Bound(20, 1, -1, True), Bound(20, 6, -1, True)),
    ]
    extent = _Extent(ranges, ledgers)
    assert extent.total == 9 + 5

    assert extent.after(0, batch_ending_at(10, 4), 500) == ReadProgress(500, 5, 14)  # first ledger
    assert extent.after(0, batch_ending_at(11, 0), 600) == ReadProgress(600, 6, 14)  # into the next
    assert extent.after(1, batch_ending_at(20, 2), 1000) == ReadProgress(1000, 9 + 1, 14)
    assert extent.after(1, batch_ending_at(20, 6), 1400) == ReadProgress(1400, 14, 14)
