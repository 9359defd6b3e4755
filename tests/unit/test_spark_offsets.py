"""The Spark source's offsets (tasks/offsets.py): bounds, what they cover, their checkpoint JSON."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")


from pulsar_external_schema import ConfigError
from pulsar_external_schema.tasks.offsets import EARLIEST, Bound, parse_offsets, user_bound


def test_a_whole_entry_bound_covers_every_message_of_the_entry_or_none() -> None:
    whole = Bound(5, 3, -1, True)
    assert (
        whole.covers(5, 3, 0) and whole.covers(5, 3, 9) and whole.covers(5, 2, 4) and whole.covers(4, 99, 0)
    )
    assert not whole.covers(5, 4, 0) and not whole.covers(6, 0, -1)
    before = Bound(5, 3, -1, False)
    assert not before.covers(5, 3, 0) and not before.covers(5, 3, -1) and before.covers(5, 2, 7)


def test_a_batch_index_bound_splits_an_entry() -> None:
    through = Bound(5, 3, 2, True)
    assert [through.covers(5, 3, i) for i in range(5)] == [True, True, True, False, False]
    until = Bound(5, 3, 2, False)
    assert [until.covers(5, 3, i) for i in range(5)] == [True, True, False, False, False]


def test_earliest_covers_nothing_and_bounds_order_by_what_they_cover() -> None:
    assert not EARLIEST.covers(0, 0, -1) and EARLIEST.is_earliest
    ordered = [
        EARLIEST,
        Bound(1, 0, -1, False),
        Bound(1, 0, 0, False),
        Bound(1, 0, 0, True),
        Bound(1, 0, 4, True),
    ]
    ordered += [Bound(1, 0, -1, True), Bound(1, 1, -1, True), Bound(2, -1, -1, True)]
    assert sorted(ordered, key=lambda b: b.key) == ordered
    assert len({b.key for b in ordered}) == len(ordered)
    assert Bound(1, 0, 2, True).key == Bound(1, 0, 3, False).key  # the same messages
    # an empty new ledger (entry -1) covers every earlier ledger
    assert Bound(2, -1, -1, True).covers(1, 500, 3) and not Bound(2, -1, -1, True).covers(2, 0, -1)


def test_bounds_survive_the_checkpoint_json() -> None:
    bound = Bound(12, 4, 2, False)
    assert Bound.from_json(json.loads(json.dumps(bound.to_json()))) == bound


def test_user_positions_are_the_first_message_read_or_not_read() -> None:
    assert user_bound({"ledgerId": 3, "entryId": 1, "batchIndex": 2}) == Bound(3, 1, 2, False)
    assert user_bound({"ledgerId": 3, "entryId": 1}) == Bound(3, 1, -1, False)


def test_offsets_options_take_earliest_latest_or_json_per_partition() -> None:
    assert parse_offsets("startingOffsets", None, "earliest") == "earliest"
    assert parse_offsets("startingOffsets", " LATEST ", "earliest") == "latest"
    spec = {"persistent://t/n/a-partition-0": {"ledgerId": 1, "entryId": 2}, "persistent://t/n/b": "earliest"}
    assert parse_offsets("startingOffsets", json.dumps(spec), "earliest") == spec
    with pytest.raises(ConfigError, match="expected 'earliest', 'latest' or JSON"):
        parse_offsets("startingOffsets", "first", "earliest")
    with pytest.raises(ConfigError, match=r"partition 'p' needs"):
        parse_offsets("endingOffsets", '{"p": {"ledger": 1}}', "latest")
    with pytest.raises(ConfigError, match="keyed by partition topic"):
        parse_offsets("endingOffsets", "[1]", "latest")
