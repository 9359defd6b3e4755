"""Planning a read on the driver: which partition topics, which offset ranges, in how many pieces.

`Planner` turns the source's options into `TopicPartitionRange`s, one per topic partition and
offset range (`startingOffsets` / `endingOffsets`, or a stream's micro-batch), through the admin
REST API: the partitions of each topic, their last messages, their ledgers (to check for data
that retention removed, and to split a range into `minPartitions` pieces of about as many
entries each). The executors read the ranges (`rows.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, ExternalSchemaError
from ..tasks.offsets import EARLIEST, Bound, user_bound
from ..tasks.options import SourceOptions
from ..tasks.topic_metadata import Ledger, PulsarAdmin

__all__ = ["Planner", "TopicPartitionRange", "advance", "earlier", "entries_between", "split_range"]

log = logging.getLogger(__name__)


@dataclass
class TopicPartitionRange:
    """What one task reads: a partition topic, after `start` up to and including `end` (Spark
    gets it as `reader.SparkPartition`)."""

    partition_topic: str
    start: Bound
    end: Bound


class Planner:
    """The driver's side of a read (module doc)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def admin(self) -> PulsarAdmin:
        assert self.options.admin_url is not None
        return PulsarAdmin(
            self.options.admin_url,
            token=self.options.auth_token,
            token_key="pulsar.auth.token",
            client=self.options.client,
        )

    def topics(self, admin: PulsarAdmin) -> list[str]:
        """The topics read: `topics`, or those `topicPattern` matches now."""
        if self.options.topic_pattern:
            return admin.topics_matching(self.options.topic_pattern)
        return list(self.options.topics)

    def partition_topics(self, admin: PulsarAdmin) -> list[str]:
        return [p for topic in self.topics(admin) for p in admin.partitions(topic)]

    def resolve(
        self,
        admin: PulsarAdmin,
        spec: str | dict[str, Any],
        partitions: Sequence[str],
        what: str,
        *,
        named: str | None = None,
    ) -> dict[str, Bound]:
        """The bounds an `earliest` / `latest` / JSON option means for these partitions (`what`:
        startingOffsets or endingOffsets; `named`: how errors name it, if not `option 'what'`)."""
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(partitions))
            if unknown:
                raise ConfigError(
                    f"{named or f'option {what!r}'} names partitions that are not read: {', '.join(unknown)} "
                    f"(partitions: {', '.join(partitions)})"
                )
        bounds = {}
        for partition in partitions:
            value = (
                spec.get(partition, "earliest" if what == "startingOffsets" else "latest")
                if isinstance(spec, dict)
                else spec
            )
            if value == "earliest":
                bounds[partition] = EARLIEST
            elif value == "latest":
                bounds[partition] = admin.last_message(partition)
            elif isinstance(value, dict):
                bounds[partition] = user_bound(value)
        return bounds

    def check_data_loss(
        self, admin: PulsarAdmin, partition: str, start: Bound, ledgers: list[Ledger] | None = None
    ) -> None:
        """Messages after `start` deleted by retention: an error, or a warning with failOnDataLoss=false.

        `ledgers`: the partition's ledgers if the caller has just fetched them."""
        if start.is_earliest:
            return
        if ledgers is None:
            ledgers = admin.ledgers(partition)
        if ledgers and start.ledger < ledgers[0].ledger_id:
            text = (
                f"partition {partition}: messages after ledger {start.ledger} entry {start.entry} were "
                f"deleted (the oldest ledger is now {ledgers[0].ledger_id}); retention removed data "
                "this query had not read yet"
            )
            if self.options.fail_on_data_loss:
                raise ExternalSchemaError(
                    text + "; set failOnDataLoss=false to go on from the oldest message"
                )
            log.warning("%s; going on from the oldest message (failOnDataLoss=false)", text)

    def ranges(
        self,
        admin: PulsarAdmin,
        start: dict[str, Bound],
        end: dict[str, Bound],
        known_ledgers: dict[str, list[Ledger]] | None = None,
    ) -> list[TopicPartitionRange]:
        """The ranges from `start` to `end` per partition (those with something to read), checked
        for data loss and split into `minPartitions` pieces."""
        ranges = []
        for partition, last in end.items():
            first = start.get(partition, EARLIEST)
            if first.key < last.key:
                ledgers = (known_ledgers or {}).get(partition)
                self.check_data_loss(admin, partition, first, ledgers)
                ranges.append(TopicPartitionRange(partition, first, last))
        return self.split(admin, ranges, known_ledgers)

    def split(
        self,
        admin: PulsarAdmin,
        ranges: list[TopicPartitionRange],
        known_ledgers: dict[str, list[Ledger]] | None = None,
    ) -> list[TopicPartitionRange]:
        """The ranges in at least `minPartitions` pieces (as Spark's Kafka source divides its
        partitions): each range gets a share of the pieces as large as its share of the entries.

        One reader per topic partition is what Pulsar serves one entry at a time, whatever the
        reader's queue, where two or four readers of one partition are served in parallel
        (docs/spark.md, "Sizing"). And a topic with fewer partitions than the
        cluster has cores leaves the others idle."""
        wanted = self.options.min_partitions
        if not wanted or len(ranges) >= wanted:
            return ranges
        known = known_ledgers or {}
        ledgers = {
            r.partition_topic: known.get(r.partition_topic) or admin.ledgers(r.partition_topic)
            for r in ranges
        }
        sizes = [entries_between(ledgers[r.partition_topic], r.start, r.end) for r in ranges]
        total = sum(sizes)
        pieces = []
        for piece, size in zip(ranges, sizes, strict=True):
            share = -(-wanted * size // total) if total else 1
            for first, last in split_range(ledgers[piece.partition_topic], piece.start, piece.end, share):
                pieces.append(TopicPartitionRange(piece.partition_topic, first, last))
        return pieces


def _first_unread(start: Bound) -> tuple[int, int]:
    """(ledger, entry) of the first entry `start` leaves (a part of) to read."""
    if start.is_earliest:
        return -1, 0
    if start.batch < 0 and start.inclusive:
        return start.ledger, start.entry + 1  # the whole entry is behind: the next one is read first
    return start.ledger, start.entry


def advance(ledgers: Sequence[Ledger], start: Bound, entries: int) -> Bound | None:
    """The bound `entries` entries after `start` (None when fewer are written)."""
    ledger, entry = _first_unread(start)
    remaining = entries
    for row in ledgers:
        if row.ledger_id < ledger:
            continue
        first = entry if row.ledger_id == ledger else 0
        available = row.entries - max(first, 0)
        if available <= 0:
            continue
        if remaining <= available:
            return Bound(row.ledger_id, max(first, 0) + remaining - 1, -1, True)
        remaining -= available
    return None


def entries_between(ledgers: Sequence[Ledger], start: Bound, end: Bound) -> int:
    """How many entries a range after `start` up to `end` reads (in whole or in part)."""
    ledger, entry = _first_unread(start)
    count = 0
    for row in ledgers:
        if row.ledger_id < ledger:
            continue
        if row.ledger_id > end.ledger:
            break
        first = max(entry, 0) if row.ledger_id == ledger else 0
        last = end.entry if row.ledger_id == end.ledger else row.entries - 1
        count += max(0, last - first + 1)
    return count


def split_range(
    ledgers: Sequence[Ledger], start: Bound, end: Bound, pieces: int
) -> list[tuple[Bound, Bound]]:
    """(start, end) of `pieces` ranges of about as many entries each, which together read what
    the range after `start` up to `end` reads; each ends after a whole entry, the last at `end`."""
    total = entries_between(ledgers, start, end)
    if pieces <= 1 or total <= 1:
        return [(start, end)]
    step = -(-total // pieces)
    ranges = []
    first = start
    while True:
        bound = advance(ledgers, first, step)
        if bound is None or bound.key >= end.key:
            ranges.append((first, end))
            return ranges
        ranges.append((first, bound))
        first = bound


def earlier(a: Bound, b: Bound) -> Bound:
    return a if a.key <= b.key else b
