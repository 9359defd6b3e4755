"""Offsets on a Pulsar topic partition: message ids (ledger, entry, batch index) as bounds.

A `Bound` says how much of a partition is behind a reader: every message before `position`, and
the message at `position` too when `inclusive`. The end of one micro-batch is the start of the
next, so a message is read exactly once whatever the boundary: a batch index inside an entry, a
whole entry (batch index -1), or a ledger that has no entries yet (entry -1).

`startingOffsets` / `endingOffsets` follow Spark's Kafka source: `earliest`, `latest`, or JSON
with a position per partition topic, where a starting position is the first message read and an
ending position the first message not read:

    {"persistent://public/default/orders-partition-0": {"ledgerId": 12, "entryId": 4, "batchIndex": 2},
     "persistent://public/default/orders-partition-1": "earliest"}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

_WHOLE_ENTRY = 1 << 31  # above any batch index


@dataclass(frozen=True)
class Bound:
    """Everything before (ledger, entry, batch), and that message too when `inclusive`.

    `batch == -1` stands for the whole entry: all of its messages when inclusive, none otherwise.
    """

    ledger: int
    entry: int
    batch: int = -1
    inclusive: bool = True

    def covers(self, ledger: int, entry: int, batch: int) -> bool:
        """True when the message at (ledger, entry, batch) is behind this bound."""
        if (ledger, entry) != (self.ledger, self.entry):
            return (ledger, entry) < (self.ledger, self.entry)
        if self.batch < 0:
            return self.inclusive
        return batch < self.batch or (batch == self.batch and self.inclusive)

    @property
    def is_earliest(self) -> bool:
        return self.ledger < 0

    @property
    def key(self) -> tuple[int, int, int]:
        """Orders bounds by how much they cover: a message with batch index i is covered when
        (ledger, entry) is smaller, or equal and i < the third element. Bounds that cover the
        same messages have the same key: (L, E, 2, inclusive) and (L, E, 3, exclusive)."""
        if self.batch < 0:
            sub = _WHOLE_ENTRY if self.inclusive else -1
        else:
            sub = self.batch + 1 if self.inclusive else self.batch
        return (self.ledger, self.entry, sub)

    def to_json(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger,
            "entryId": self.entry,
            "batchIndex": self.batch,
            "inclusive": self.inclusive,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Bound:
        return cls(
            int(value["ledgerId"]),
            int(value["entryId"]),
            int(value.get("batchIndex", -1)),
            bool(value.get("inclusive", True)),
        )


#: Nothing read yet.
EARLIEST = Bound(-1, -1, -1, True)


def parse_offsets(option: str, text: str | None, default: str) -> str | dict[str, Any]:
    """`earliest`, `latest`, or the per-partition JSON of a starting/ending offsets option."""
    value = (text or default).strip()
    if value.lower() in ("earliest", "latest"):
        return value.lower()
    try:
        parsed = json.loads(value)
    except ValueError as error:
        raise ConfigError(
            f"option {option!r}: expected 'earliest', 'latest' or JSON, got {value!r} ({error})"
        ) from None
    if not isinstance(parsed, dict):
        raise ConfigError(f"option {option!r}: the JSON must be an object keyed by partition topic")
    for topic, position in parsed.items():
        if isinstance(position, str) and position.lower() in ("earliest", "latest"):
            continue
        if not isinstance(position, dict) or "ledgerId" not in position or "entryId" not in position:
            raise ConfigError(
                f"option {option!r}: partition {topic!r} needs 'earliest', 'latest' or "
                f'{{"ledgerId": L, "entryId": E, "batchIndex": B}}, got {json.dumps(position)}'
            )
    return parsed


def user_bound(position: Mapping[str, Any]) -> Bound:
    """A position a user wrote: the first message read (start) or not read (end), so exclusive."""
    return Bound(
        int(position["ledgerId"]),
        int(position["entryId"]),
        int(position.get("batchIndex", -1)),
        bool(position.get("inclusive", False)),
    )
