"""The few Pulsar admin REST calls the data source plans with: partitions, last message ids,
ledgers, and the topics of a namespace (for `topicPattern`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from ..errors import ConfigError, ExternalSchemaError
from ..subjects import TopicName
from .offsets import Bound

_PARTITION_SUFFIX = re.compile(r"-partition-\d+$")


class PulsarAdminError(ExternalSchemaError):
    """The Pulsar admin REST API refused a request or could not be reached."""


def full_topic_name(topic: str) -> str:
    """`orders` -> `persistent://public/default/orders`, as the Pulsar clients do."""
    if "://" in topic:
        return topic
    parts = topic.split("/")
    if len(parts) == 1:
        return f"persistent://public/default/{topic}"
    if len(parts) == 3:
        return f"persistent://{topic}"
    raise ConfigError(f"{topic!r} is not a topic name (use tenant/namespace/topic or a full name)")


@dataclass(frozen=True)
class Ledger:
    ledger_id: int
    entries: int


class PulsarAdmin:
    """A small synchronous client of the admin REST API (`admin.url`)."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def _get(self, path: str, what: str) -> Any:
        try:
            response = self._http.get(path)
        except httpx.HTTPError as error:
            raise PulsarAdminError(
                f"cannot reach the Pulsar admin API at {self.url} to {what}: {error}"
            ) from None
        if response.status_code != 200:
            raise PulsarAdminError(
                f"the Pulsar admin API at {self.url} could not {what}: "
                f"HTTP {response.status_code} {response.text[:300]}"
            )
        return response.json()

    @staticmethod
    def _path(topic: str) -> str:
        scheme, rest = topic.split("://", 1)
        return f"/admin/v2/{scheme}/{rest}"

    def partitions(self, topic: str) -> list[str]:
        """The partition topics of `topic` (the topic itself when it is not partitioned)."""
        topic = full_topic_name(topic)
        meta = self._get(f"{self._path(topic)}/partitions", f"get the partitions of {topic}")
        count = int(meta.get("partitions", 0))
        return [f"{topic}-partition-{i}" for i in range(count)] if count > 0 else [topic]

    def last_message(self, partition_topic: str) -> Bound:
        """Everything written to a partition so far: its last entry, whole.

        The batch index the broker gives is that of the entry's last message (entries never grow),
        so the bound is the whole entry: planning then counts it as read, not as one more to read.
        """
        data = self._get(
            f"{self._path(partition_topic)}/lastMessageId", f"get the last message id of {partition_topic}"
        )
        return Bound(int(data["ledgerId"]), int(data["entryId"]), -1, True)

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
        full = full_topic_name(pattern)
        scheme, rest = full.split("://", 1)
        try:
            name = TopicName.parse(full)
        except ValueError as error:
            raise ConfigError(f"topicPattern {pattern!r}: {error}") from None
        if "*" in name.tenant or "*" in name.namespace or "/" not in rest:
            raise ConfigError(f"topicPattern {pattern!r}: the tenant and namespace must be literal")
        regex = re.compile(full)
        base = f"/admin/v2/{scheme}/{name.tenant}/{name.namespace}"
        topics = set(self._get(base, f"list the topics of {name.tenant}/{name.namespace}"))
        topics |= set(
            self._get(f"{base}/partitioned", f"list the partitioned topics of {name.tenant}/{name.namespace}")
        )
        logical = {_PARTITION_SUFFIX.sub("", t) for t in topics}
        return sorted(t for t in logical if regex.fullmatch(t))
