"""The admin REST calls the data source plans with: partitions, last message ids, ledgers, and the
topics of a namespace (for `topicPattern`), on the package's admin client (`..admin`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import admin, subjects
from ..admin import full_topic_name
from ..errors import ConfigError, PulsarAdminError
from .offsets import Bound

__all__ = ["Ledger", "PulsarAdmin", "PulsarAdminError", "full_topic_name"]


@dataclass(frozen=True)
class Ledger:
    ledger_id: int
    entries: int


class PulsarAdmin(admin.PulsarAdmin):
    """The admin client, with the reads the Spark planner needs."""

    def partitions(self, topic: str) -> list[str]:
        """The partition topics of `topic` (the topic itself when it is not partitioned)."""
        topic = full_topic_name(topic)
        meta = self._get(f"{self._path(topic)}/partitions", f"get the partitions of {topic}")
        count = int(meta.get("partitions", 0))
        return [subjects.partition_topic(topic, i) for i in range(count)] if count > 0 else [topic]

    def last_message(self, partition_topic: str) -> Bound:
        """Everything written to a partition so far: its last entry, whole.

        The batch index the broker gives is that of the entry's last message (entries never grow),
        so the bound is the whole entry: planning then counts it as read, not as one more to read.
        """
        data = self._get(
            f"{self._path(partition_topic)}/lastMessageId", f"get the last message id of {partition_topic}"
        )
        return Bound(int(data["ledgerId"]), int(data["entryId"]), -1, True)

    def message_at(self, partition_topic: str, millis: int) -> Bound:
        """The bound before the first message of a partition published at or after `millis`
        (milliseconds since the epoch): everything published earlier. Past the last message it
        is the position the next message will take. (The broker finds the entry; the messages of
        a batched entry share its publish time.)"""
        what = f"find the first message of {partition_topic} published at or after {millis} ms"
        data = self._get(f"{self._path(partition_topic)}/messageid/{int(millis)}", what)
        return Bound(int(data["ledgerId"]), int(data["entryId"]), -1, False)

    def ledgers(self, partition_topic: str) -> list[Ledger]:
        """The ledgers of a partition with their entry counts, the open one last."""
        stats = self._get(
            f"{self._path(partition_topic)}/internalStats", f"get the ledgers of {partition_topic}"
        )
        ledgers = [
            Ledger(int(row["ledgerId"]), int(row.get("entries", 0))) for row in stats.get("ledgers", [])
        ]
        if ledgers:  # the open ledger reports 0 entries in the list; its count is separate
            last = ledgers[-1]
            ledgers[-1] = Ledger(last.ledger_id, max(last.entries, int(stats.get("currentLedgerEntries", 0))))
        return ledgers

    def topics_matching(self, pattern: str) -> list[str]:
        """The topics of a namespace whose full names match `pattern` (partitions folded in)."""
        try:
            full = subjects.full_topic_name(pattern)
        except ValueError as error:
            raise ConfigError(f"topicPattern {pattern!r}: {error}") from None
        scheme, tenant, namespace, _ = subjects.split_topic(full)
        if "*" in tenant or "*" in namespace:
            raise ConfigError(f"topicPattern {pattern!r}: the tenant and namespace must be literal")
        regex = re.compile(full)
        base = f"/admin/v2/{scheme}/{tenant}/{namespace}"
        topics = set(self._get(base, f"list the topics of {tenant}/{namespace}"))
        topics |= set(
            self._get(f"{base}/partitioned", f"list the partitioned topics of {tenant}/{namespace}")
        )
        logical = {subjects.partition_of(t)[0] for t in topics}
        return sorted(t for t in logical if regex.fullmatch(t))
