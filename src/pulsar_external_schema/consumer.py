"""Consumers of an `ExternalSchema`, and consume loops where a bad message never blocks a
subscription and is never lost.

    consumer = subscribe(client, topic, "sub", schema)  # client.subscribe, declaring EXTERNAL first
    consume(consumer, handle)                       # pulsar.Consumer, handle(msg, value)
    await consume_async(consumer, handle)           # pulsar.asyncio.Consumer, handle may be async

For each message: decode `msg.value()` with the consumer's schema, call `handle(msg, value)`, and
acknowledge when it returns. When decoding fails:

* a rule failed with the DLQ action (`DeadLetteredError`): its copy is already persisted in the
  DLQ topic, so the message is acknowledged;
* the registry cannot be reached (`RegistryUnavailableError`): negatively acknowledged, Pulsar
  redelivers it later;
* anything else (a rule with ERROR, a malformed payload, an unknown schema id): copied to
  `dead_letter_topic` when one is given, and acknowledged once the broker has persisted the copy
  (the loop does not wait for it: see `_Loop`), else negatively acknowledged (with the consumer's
  `dead_letter_policy`, Pulsar moves it to its own DLQ after `max_redeliver_count`).

`on_error(msg, error)` sees every failure (default: a warning in the log). An exception from
`handle` negatively acknowledges the message and ends the loop: bad code is not bad data.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import queue
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pulsar
import pulsar.asyncio

from . import _pulsar_client
from ._pulsar_client import raw_client
from .admin import declare_external
from .deadletter import DeadLetterPublisher, Fate, copy_to_dead_letter_topic, fate
from .errors import ExternalSchemaError
from .schema import ExternalSchema, check_external_schema

log = logging.getLogger(__name__)

Handler = Callable[[Any, Any], Any]
ErrorHandler = Callable[[Any, ExternalSchemaError], None]


@dataclass
class ConsumeResult:
    """What one `consume` call did."""

    processed: int = 0
    """Messages handled and acknowledged."""
    dead_lettered: int = 0
    """Messages in a DLQ topic (by a rule's DLQ action, or copied to `dead_letter_topic`), acknowledged."""
    redelivered: int = 0
    """Messages negatively acknowledged, to be delivered again."""


def subscribe(client: Any, topic: str, subscription: str, schema: ExternalSchema, **kwargs: Any) -> Any:
    """`client.subscribe(topic, subscription, schema=schema, **kwargs)`, after declaring the topic's
    schema EXTERNAL on the broker when the schema's factory has `pulsar.admin.url`, as
    `create_producer` does and as a Java PIP-420 consumer does on connect: from then on the broker
    refuses native-schema clients on the topic (PIP-420's protection), even before anything is
    written. Without `pulsar.admin.url`, it is `client.subscribe`.

    With a `pulsar.asyncio.Client` it returns an awaitable of its consumer. Raises
    `PulsarAdminError` when the topic has a native schema or the admin API refuses."""
    check_external_schema(schema, kwargs, "subscribe")
    if isinstance(client, pulsar.asyncio.Client):
        return _subscribe_async(client, topic, subscription, schema, **kwargs)
    declare_external(schema.config, topic)
    return client.subscribe(topic, subscription, schema=schema, **kwargs)


async def _subscribe_async(
    client: Any, topic: str, subscription: str, schema: ExternalSchema, **kwargs: Any
) -> Any:
    await asyncio.to_thread(declare_external, schema.config, topic)
    return await client.subscribe(topic, subscription, schema=schema, **kwargs)


class _Loop:
    """The decisions both loops share; the sync and asyncio loops only differ in how they wait.

    A failed message's copy is sent to `dead_letter_topic` without waiting: the loop goes on with
    the next message, and the original is acknowledged when the broker has persisted its copy
    (negatively acknowledged if that failed). The loop applies those answers between messages
    (`answered`) and waits for the last ones before it returns (`outstanding`), so a storm of
    failures runs at the DLQ topic's produce rate instead of one round trip per message.
    """

    def __init__(
        self,
        consumer: Any,
        dead_letter_topic: str | None,
        client: Any,
        on_error: ErrorHandler | None,
    ) -> None:
        self.result = ConsumeResult()
        self.dead_letter_topic = dead_letter_topic
        self.on_error = on_error or _log_error
        self.publisher: DeadLetterPublisher | None = None
        self._answers: queue.SimpleQueue[tuple[Any, bool, str]] = queue.SimpleQueue()
        self.outstanding = 0
        """Copies sent whose answer the loop has not applied yet."""
        if dead_letter_topic is not None:
            client = client or getattr(_pulsar_client.consumer_schema(consumer), "pulsar_client", None)
            if client is None:
                raise TypeError(
                    "consume(..., dead_letter_topic=...) needs client= (the consumer's pulsar.Client)"
                )
            self.publisher = DeadLetterPublisher(raw_client(client))

    def settle(self, msg: Any, error: ExternalSchemaError) -> bool | None:
        """Decide a failed message's fate: True to acknowledge it, False to redeliver it, None
        when its copy is on the way (`answered` gives the verdict later)."""
        self.on_error(msg, error)
        verdict = fate(error, self.dead_letter_topic)
        if verdict is Fate.ACKNOWLEDGE:
            self.result.dead_lettered += 1
            return True
        if verdict is Fate.REDELIVER:
            self.result.redelivered += 1
            return False
        assert self.dead_letter_topic is not None and self.publisher is not None
        topic = self.dead_letter_topic
        answers = self._answers

        def done(persisted: bool, result: str) -> None:  # on a Pulsar client thread
            answers.put((msg, persisted, result))

        try:
            copy_to_dead_letter_topic(self.publisher, topic, msg, error, done)
        except Exception as failure:
            log.error("could not copy message %s to %s: %s", msg.message_id(), topic, failure)
            self.result.redelivered += 1
            return False
        self.outstanding += 1
        return None

    def answered(self, timeout: float | None = None) -> list[tuple[Any, bool]]:
        """(message, acknowledge?) for each copy the broker answered since the last call; with
        `timeout`, waits that long for the first one."""
        verdicts: list[tuple[Any, bool]] = []
        while self.outstanding:
            try:
                msg, persisted, result = self._answers.get(
                    block=timeout is not None and not verdicts, timeout=timeout
                )
            except queue.Empty:
                break
            self.outstanding -= 1
            if persisted:
                self.result.dead_lettered += 1
            else:
                log.error(
                    "could not copy message %s to %s: %s", msg.message_id(), self.dead_letter_topic, result
                )
                self.result.redelivered += 1
            verdicts.append((msg, persisted))
        return verdicts

    def close(self) -> None:
        if self.publisher is not None:
            self.publisher.close()


#: Longest a loop waits for the broker's answer to its last DLQ copies (a send times out at 30 s).
_LAST_ANSWERS_SECONDS = 60.0
#: While copies wait for their answer, a waiting loop wakes this often to acknowledge their
#: originals: a stream that goes quiet must not leave them unacknowledged until its next message.
_ANSWER_POLL_SECONDS = 0.1


def _receive(
    receive: Callable[[int | None], Any],
    timeout_millis: int | None,
    loop: _Loop,
    apply: Callable[[list[tuple[Any, bool]]], None],
) -> Any:
    """`receive(timeout_millis)`; while DLQ copies are outstanding, in short waits between which
    their answers are applied."""
    if not loop.outstanding:  # the usual case: one plain receive
        return receive(timeout_millis)
    deadline = None if timeout_millis is None else time.monotonic() + timeout_millis / 1000
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not loop.outstanding:
            return receive(None if left is None else int(left * 1000))
        wait = _ANSWER_POLL_SECONDS if left is None else min(_ANSWER_POLL_SECONDS, left)
        try:
            return receive(max(1, int(wait * 1000)))
        except pulsar.Timeout:
            apply(loop.answered())
            if deadline is not None and time.monotonic() >= deadline:
                raise


def _calls(consumer: Any) -> tuple[Callable[[int | None], Any], Callable[[Any], None]]:
    """(receive(timeout or None), acknowledge(message)) of a consumer: a `pulsar.Consumer`'s
    straight on its C++ consumer (`_pulsar_client.direct_calls`); any other consumer's as they are."""
    direct = _pulsar_client.direct_calls(consumer)
    if direct is not None:
        return direct

    def receive(timeout_millis: int | None) -> Any:
        return consumer.receive() if timeout_millis is None else consumer.receive(timeout_millis)

    return receive, consumer.acknowledge


def consume(
    consumer: Any,
    handle: Handler,
    *,
    max_messages: int | None = None,
    timeout_millis: int | None = None,
    dead_letter_topic: str | None = None,
    client: Any = None,
    on_error: ErrorHandler | None = None,
) -> ConsumeResult:
    """Receive, decode, handle and acknowledge until `max_messages` or a receive timeout."""
    loop = _Loop(consumer, dead_letter_topic, client, on_error)

    def apply(verdicts: list[tuple[Any, bool]]) -> None:
        for msg, persisted in verdicts:
            (consumer.acknowledge if persisted else consumer.negative_acknowledge)(msg)

    receive, acknowledge = _calls(consumer)
    result = loop.result
    try:
        seen = 0
        while max_messages is None or seen < max_messages:
            try:
                msg = _receive(receive, timeout_millis, loop, apply)
            except pulsar.Timeout:
                break
            seen += 1
            try:
                value = msg.value()
            except ExternalSchemaError as error:
                verdict = loop.settle(msg, error)
                if verdict is not None:
                    (acknowledge if verdict else consumer.negative_acknowledge)(msg)
            else:
                try:
                    handle(msg, value)
                except BaseException:
                    consumer.negative_acknowledge(msg)
                    raise
                acknowledge(msg)
                result.processed += 1
            if loop.outstanding:
                apply(loop.answered())
    finally:
        deadline = time.monotonic() + _LAST_ANSWERS_SECONDS
        while loop.outstanding and time.monotonic() < deadline:
            apply(loop.answered(timeout=max(0.0, deadline - time.monotonic())))
        loop.close()
    return loop.result


async def consume_async(
    consumer: Any,
    handle: Callable[[Any, Any], Awaitable[Any] | Any],
    *,
    max_messages: int | None = None,
    dead_letter_topic: str | None = None,
    client: Any = None,
    on_error: ErrorHandler | None = None,
) -> ConsumeResult:
    """The `pulsar.asyncio.Consumer` form of `consume`; `handle` may be a coroutine function.

    Runs until `max_messages` (or until cancelled: a receive is never abandoned mid-message by
    a timeout, so nothing is received and then dropped)."""
    loop = _Loop(consumer, dead_letter_topic, client, on_error)

    async def apply(verdicts: list[tuple[Any, bool]]) -> None:
        for msg, persisted in verdicts:
            await (consumer.acknowledge if persisted else consumer.negative_acknowledge)(msg)

    stopping = asyncio.Event()

    async def answers() -> None:
        """Acknowledges the originals of answered copies while the loop awaits a message (a
        pending receive is never cancelled: it could drop the message it was receiving)."""
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), _ANSWER_POLL_SECONDS)
            if loop.outstanding:
                await apply(loop.answered())

    pump = asyncio.ensure_future(answers())
    try:
        seen = 0
        while max_messages is None or seen < max_messages:
            msg = await consumer.receive()
            seen += 1
            try:
                value = msg.value()
            except ExternalSchemaError as error:
                verdict = loop.settle(msg, error)
                if verdict is not None:
                    await (consumer.acknowledge if verdict else consumer.negative_acknowledge)(msg)
            else:
                try:
                    outcome = handle(msg, value)
                    if inspect.isawaitable(outcome):
                        await outcome
                except BaseException:
                    await consumer.negative_acknowledge(msg)
                    raise
                await consumer.acknowledge(msg)
                loop.result.processed += 1
    finally:
        stopping.set()
        await pump  # ends after applying what it took: nothing is left half-acknowledged
        deadline = time.monotonic() + _LAST_ANSWERS_SECONDS
        while loop.outstanding and time.monotonic() < deadline:
            await apply(loop.answered())
            if loop.outstanding:
                await asyncio.sleep(0.005)
        loop.close()
    return loop.result


def _log_error(msg: Any, error: ExternalSchemaError) -> None:
    log.warning("message %s: %s", msg.message_id(), error)
