"""Pulsar topic names -> registry subjects.

Subjects are derived from the cluster-independent part of a topic name (tenant, namespace,
local name, without any `-partition-N` suffix). That is what lets one registry serve a
partitioned topic as one subject, and geo-replicated clusters as one set of subjects.

A strategy has Confluent's signature, `(SerializationContext, record_name) -> subject`, so it
plugs straight into confluent-kafka's serializers; `ctx.topic` is the Pulsar topic name and
`ctx.field` says key or value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple

from confluent_kafka.serialization import MessageField, SerializationContext

from .errors import ConfigError

SubjectNameStrategy = Callable[[SerializationContext | None, str | None], str | None]

_PARTITION_SUFFIX = re.compile(r"-partition-\d+$")
_PARTITION_NUMBER = re.compile(r"-partition-(\d+)$")
_FULL_NAME = re.compile(r"^(persistent|non-persistent)://([^/]+)/([^/]+)/([^/]+)$")


class TopicName(NamedTuple):
    """The parts of a Pulsar topic name that identify it on every cluster."""

    tenant: str
    namespace: str
    local_name: str  # without the -partition-N suffix

    @classmethod
    def parse(cls, topic: str) -> TopicName:
        """Accept `persistent://t/ns/name`, `t/ns/name` and a bare `name` (public/default)."""
        return _parse_topic(topic)

    @classmethod
    def _parse(cls, topic: str) -> TopicName:
        if not topic:
            raise ValueError("a topic name is required to derive a subject")
        _scheme, tenant, namespace, local = split_topic(topic)
        return cls(tenant, namespace, _PARTITION_SUFFIX.sub("", local))

    @property
    def qualified(self) -> str:
        return f"{self.tenant}.{self.namespace}.{self.local_name}"


def split_topic(topic: str) -> tuple[str, str, str, str]:
    """(scheme, tenant, namespace, local name with any -partition-N) of a topic as Pulsar's clients
    take it: `persistent://t/ns/name`, `t/ns/name`, or a bare `name` (persistent, public/default).
    The one place a topic name is taken apart; raises ValueError for anything else."""
    match = _FULL_NAME.match(topic)
    if match:
        return match.group(1), match.group(2), match.group(3), match.group(4)
    parts = topic.split("/")
    if len(parts) == 1 and topic:
        return "persistent", "public", "default", topic
    if len(parts) == 3 and all(parts):
        return "persistent", parts[0], parts[1], parts[2]
    path = topic.partition("://")[2] or topic
    v1 = len(path.split("/")) == 4 and all(path.split("/"))
    old = "; tenant/cluster/namespace/topic is Pulsar's V1 form, not taken here" if v1 else ""
    raise ValueError(
        f"{topic!r} is not a Pulsar topic name "
        f"(expected persistent://tenant/namespace/topic, tenant/namespace/topic or topic{old})"
    )


def partition_of(topic: str) -> tuple[str, int]:
    """(the topic without its `-partition-N` suffix, N), or (the topic, -1) when it has none."""
    match = _PARTITION_NUMBER.search(topic)
    if match is None:
        return topic, -1
    return topic[: match.start()], int(match.group(1))


def partition_topic(topic: str, index: int) -> str:
    """The name of partition `index` of `topic` (Pulsar's `-partition-N`; `partition_of` reverses it)."""
    return f"{topic}-partition-{index}"


def full_topic_name(topic: str) -> str:
    """`orders` -> `persistent://public/default/orders`, as the Pulsar clients name it (a partition
    suffix is kept); raises ValueError for what is not a topic name."""
    scheme, tenant, namespace, local = split_topic(topic)
    return f"{scheme}://{tenant}/{namespace}/{local}"


def is_full_topic_name(text: str) -> bool:
    """`persistent://...` or `non-persistent://...`: a topic, not a path or a bare name."""
    return _FULL_NAME.match(text) is not None


@functools.lru_cache(maxsize=4096)
def _parse_topic(topic: str) -> TopicName:
    """Cached: the serializers name the subject of every message they encode."""
    return TopicName._parse(topic)


def _suffix(ctx: SerializationContext | None) -> str:
    return "key" if ctx is not None and ctx.field == MessageField.KEY else "value"


def _topic(ctx: SerializationContext | None) -> TopicName:
    if ctx is None or not ctx.topic:
        raise ValueError("this subject name strategy needs the topic name")
    return TopicName.parse(ctx.topic)


def topic_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str:
    """`{tenant}.{namespace}.{topic}-value` (or `-key`): the default, unique per topic across tenants."""
    return f"{_topic(ctx).qualified}-{_suffix(ctx)}"


def short_topic_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str:
    """`{topic}-value`: Confluent's TopicNameStrategy, for topics bridged to or from Kafka."""
    return f"{_topic(ctx).local_name}-{_suffix(ctx)}"


def full_topic_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str:
    """`persistent://{tenant}/{namespace}/{topic}-value`: Confluent's TopicNameStrategy on the full
    topic name (without a `-partition-N` suffix). A Java PIP-420 client hands its schema's
    `encode` the topic as the application spelled it, so this is the subject of a Java external
    schema that names subjects with TopicNameStrategy, on a producer given the full name
    (`short-topic` matches one given `orders`)."""
    topic = _topic(ctx)
    assert ctx is not None  # `_topic` raised otherwise
    scheme = split_topic(ctx.topic)[0]
    return f"{scheme}://{topic.tenant}/{topic.namespace}/{topic.local_name}-{_suffix(ctx)}"


def record_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str | None:
    """The fully qualified record name: one subject per record type, whatever the topic."""
    return record_name


def topic_record_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str | None:
    """`{tenant}.{namespace}.{topic}-{record name}`: several record types on one topic."""
    if record_name is None:
        return None
    return f"{_topic(ctx).qualified}-{record_name}"


STRATEGIES: dict[str, SubjectNameStrategy] = {
    "topic": topic_name_strategy,
    "short-topic": short_topic_name_strategy,
    "full-topic": full_topic_name_strategy,
    "record": record_name_strategy,
    "topic-record": topic_record_name_strategy,
}


def resolve_strategy(value: str | SubjectNameStrategy) -> SubjectNameStrategy:
    """A strategy from its config name (`topic`, `short-topic`, `full-topic`, `record`,
    `topic-record`) or a callable."""
    if callable(value):
        return value
    try:
        return STRATEGIES[value]
    except KeyError:
        raise ConfigError(
            f"subject.name.strategy {value!r} is not one of {', '.join(STRATEGIES)} (or a callable)"
        ) from None


def subject_for(
    strategy: SubjectNameStrategy, topic: str, *, key: bool = False, record_name: str | None = None
) -> str | None:
    """The subject `strategy` gives for a topic (helper for messages and tools)."""
    field = MessageField.KEY if key else MessageField.VALUE
    return strategy(SerializationContext(topic, field), record_name)
