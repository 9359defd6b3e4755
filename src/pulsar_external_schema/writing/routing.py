"""How a deduplicated write routes and batches its messages, the same on both paths and in every
run of a task: what makes the broker drop what a retried task sends again (`rows.TaskWriter`'s
pulsar-client producers, `native.NativeTopic`'s)."""

from __future__ import annotations

from typing import Any

__all__ = ["DETERMINISTIC_BATCHES", "keyless_name", "keyless_partition"]

#: Batching of a producer whose messages the broker deduplicates: batches closed by count and size
#: only, never by time, so a task run again groups its rows as the first run did. The broker
#: deduplicates a batch by its first and last sequence ids: a batch of a re-run that straddled
#: what the first run persisted (its first id seen, its last not) would be refused as a whole.
DETERMINISTIC_BATCHES: dict[str, Any] = {
    "batching_enabled": True,
    "batching_max_messages": 1000,
    "batching_max_allowed_size_in_bytes": 128 * 1024,
    "batching_max_publish_delay_ms": 24 * 3600 * 1000,
}


def keyless_name(producer_name: str) -> str:
    """The name a deduplicated task's keyless rows of a partitioned topic are sent under: a
    producer of their own, beside the keyed rows' producer on the same partition."""
    return f"{producer_name}-keyless"


def keyless_partition(task: int, partitions: int) -> int:
    """The partition a deduplicated task's keyless rows go to: one a task, the same in every run."""
    return task % partitions
