"""Dead letters: what happens to a message that fails, decided in one place for every consume path.

    fate(error, dead_letter_topic)            the policy (docs/operations.md shows it as a table)
    configured_dead_letter_topic(get)         the topic a config names (`dlq.topic`)
    dead_letter_properties(msg, error)        a copy's properties: the message's own + `__rule.*`
    failure_properties(topic, exception, ...) the `__rule.*` properties alone
    copy_properties(own, failure)             the two joined: every form of a copy uses it
    resolve_dlq_topic(topic, source_topic)    a bare name lives in the failing topic's namespace
    DeadLetterPublisher(client)               BYTES producers that persist the copies
    copy_to_dead_letter_topic(...)            a message's copy, waited for or not

The dead-letter topic has one name in each vocabulary: `dlq.topic` in a config (Confluent's key for
its DLQ action's topic: a factory's config, a function's user config, where it also sends every
rule's DLQ action there) and `dead_letter_topic` / `--dead-letter-topic` in Python and on the
command line (as pulsar-client's `ConsumerDeadLetterPolicy` and `pulsar-admin functions`).

The property names are confluent-kafka's DLQ header names. `consume()` / `consume_async()`, the
console consumer and `ExternalFunction` (with `ValidateFunction`) follow `fate`; the Spark
validation job writes its DLQ rows with `failure_properties` (an outage fails its task); a rule's DLQ
action (rules/actions.py) publishes through the same publisher and properties.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pulsar

from . import _pulsar_client
from .config import read_key
from .errors import (
    DeadLetteredError,
    ExternalSchemaError,
    RegistryUnavailableError,
    RuleViolationError,
)
from .subjects import split_topic

log = logging.getLogger(__name__)

_OK = pulsar.Result.Ok

#: Properties a DLQ copy carries besides the original ones (the names of Confluent's DLQ headers).
RULE_PREFIX = "__rule."
RULE_NAME = "__rule.name"
RULE_MODE = "__rule.mode"
RULE_SUBJECT = "__rule.subject"
RULE_TOPIC = "__rule.topic"
RULE_EXCEPTION = "__rule.exception"
#: Where in the message the part whose rule failed sits (rules of referenced schemas only).
RULE_PATH = "__rule.path"


#: The subscription the validation job creates on its dead-letter topic, so that the broker keeps
#: the dead letters until they are read (a topic with no subscription and no retention loses its
#: messages when its ledger rolls over).
DEAD_LETTER_SUBSCRIPTION = "dead-letters"

#: The config key of the dead-letter topic (Confluent's; `dead.letter.topic` is its earlier name,
#: `config.RENAMED`).
DLQ_TOPIC_KEY = "dlq.topic"


def configured_dead_letter_topic(get: Callable[[str], Any]) -> str | None:
    """The dead-letter topic `get(key)` names under `dlq.topic` (or an earlier spelling of it,
    `config.read_key`); None when none is set."""
    found = read_key(get, DLQ_TOPIC_KEY)
    return str(found) if found else None


class Fate(enum.Enum):
    """What a consume path does with a message it could not decode or whose rule failed."""

    ACKNOWLEDGE = "acknowledge"
    """A rule's DLQ action persisted its copy already (`DeadLetteredError`)."""
    REDELIVER = "redeliver"
    """Negatively acknowledge it: the registry cannot be reached (an outage is not bad data, and
    is never dead-lettered), or there is no dead-letter topic to copy it to."""
    COPY = "copy"
    """Copy it to the dead-letter topic; acknowledge it once the copy is persisted (redeliver it
    if that failed)."""


def fate(error: ExternalSchemaError, dead_letter_topic: str | None) -> Fate:
    """The one policy for a failed message (`consume`, the console consumer, `ExternalFunction`)."""
    if isinstance(error, DeadLetteredError):
        return Fate.ACKNOWLEDGE
    if isinstance(error, RegistryUnavailableError) or not dead_letter_topic:
        return Fate.REDELIVER
    return Fate.COPY


def failure_properties(
    topic: str | None,
    exception: str,
    *,
    rule: str | None = None,
    mode: str | None = None,
    subject: str | None = None,
    path: str | None = None,
) -> dict[str, str]:
    """The `__rule.*` properties a dead-letter copy carries (`__rule.name`, `.mode` and `.subject`
    only when a rule failed, `.path` when it was a referenced schema's rule on a part of the
    message); `__rule.name` makes a replay skip that rule."""
    properties = {RULE_TOPIC: topic or "", RULE_EXCEPTION: exception}
    if rule is not None:
        properties.update({RULE_NAME: rule, RULE_MODE: mode or "", RULE_SUBJECT: subject or ""})
    if path is not None:
        properties[RULE_PATH] = path
    return properties


def copy_properties(
    own: Mapping[str, str] | Iterable[tuple[str, str]] | None, failure: Mapping[str, str]
) -> dict[str, str]:
    """A DLQ copy's properties: the message's `own` less any `__rule.*`, plus `failure`'s.

    The `__rule.*` a message brings are an earlier failure's (a replayed copy's) or a producer's.
    Kept beside this failure's, they would describe a failure that did not happen this time: a
    replayed copy that now fails to decode would keep the old `__rule.name`, and a replay of it
    would skip that rule. The Spark validation job's Parquet target says the same in Spark SQL
    (`spark/pipeline.py`)."""
    items = own.items() if isinstance(own, Mapping) else own or ()
    properties = {k: v for k, v in items if not k.startswith(RULE_PREFIX)}
    properties.update(failure)
    return properties


def dead_letter_properties(msg: Any, error: ExternalSchemaError) -> dict[str, str]:
    """The properties of `msg`'s DLQ copy: its own, plus `__rule.*` saying what failed where."""
    rule = error if isinstance(error, RuleViolationError) else None
    return copy_properties(
        msg.properties(),
        failure_properties(
            error.topic or msg.topic_name(),
            str(error),
            rule=(rule.rule or "") if rule else None,
            mode=rule.mode if rule else None,
            subject=rule.subject if rule else None,
        ),
    )


def resolve_dlq_topic(topic: str, source_topic: str | None) -> str:
    """A bare DLQ topic name lives in the failing topic's tenant and namespace."""
    if "/" in topic or not source_topic:
        return topic
    try:
        scheme, tenant, namespace, _ = split_topic(source_topic)
    except ValueError:
        return topic
    return f"{scheme}://{tenant}/{namespace}/{topic}"


def copy_to_dead_letter_topic(
    publisher: DeadLetterPublisher,
    topic: str,
    msg: Any,
    error: ExternalSchemaError,
    done: Callable[[bool, str], None] | None = None,
) -> None:
    """`msg`'s copy in `topic`: its bytes, key and event time, and `dead_letter_properties`.
    Persisted when this returns; with `done`, sent without waiting, and `done(persisted, result)`
    says later (on a Pulsar client thread)."""
    meta = {
        "partition_key": msg.partition_key() or None,
        "ordering_key": msg.ordering_key() or None,
        "event_timestamp": msg.event_timestamp() or None,
    }
    if done is None:
        publisher.publish(topic, msg.data(), dead_letter_properties(msg, error), **meta)
    else:
        publisher.publish_async(topic, msg.data(), dead_letter_properties(msg, error), done, **meta)


class DeadLetterPublisher:
    """BYTES producers on one Pulsar client, one per DLQ topic, made on first use. `publish`
    waits until the copy is persisted (a rule's DLQ action); `publish_async` does not, and says
    through its callback (a consume loop, which acknowledges the original then)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._producers: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()

    def publish(
        self,
        topic: str,
        data: bytes,
        properties: dict[str, str],
        *,
        partition_key: str | None = None,
        ordering_key: str | None = None,
        event_timestamp: int | None = None,
    ) -> Any:
        """Send and wait until the broker has persisted the copy; returns its message id."""
        message = _pulsar_client.raw_message(data, properties, partition_key, ordering_key, event_timestamp)
        return self._producer_for(topic, batched=False).send(message)

    def publish_async(
        self,
        topic: str,
        data: bytes,
        properties: dict[str, str],
        done: Callable[[bool, str], None],
        *,
        partition_key: str | None = None,
        ordering_key: str | None = None,
        event_timestamp: int | None = None,
    ) -> None:
        """Send without waiting; `done(persisted, result)` is called on a Pulsar client thread once
        the broker answered (or the send timed out). Blocks only while the producer's queue is full."""
        message = _pulsar_client.raw_message(data, properties, partition_key, ordering_key, event_timestamp)

        def sent(result: Any, _message_id: Any) -> None:
            done(result == _OK, str(result))

        self._producer_for(topic, batched=True).send_async(message, sent)

    def _producer_for(self, topic: str, *, batched: bool) -> Any:
        """A waiting send goes alone (batching would add its delay to every one); sends that do
        not wait go in batches, so a storm of copies is a few broker requests, not one each."""
        with self._lock:
            producer = self._producers.get((topic, batched))
            if producer is None:
                # a storm of copies waits for room in the producer's queue, never fails
                producer = _pulsar_client.bytes_producer(self._client, topic, batched=batched)
                self._producers[(topic, batched)] = producer
            return producer

    def close(self) -> None:
        with self._lock:
            producers, self._producers = list(self._producers.values()), {}
        for producer in producers:
            try:
                producer.close()
            except Exception as error:  # closing must not hide what the caller is doing
                log.warning("could not close a DLQ producer: %s", error)
