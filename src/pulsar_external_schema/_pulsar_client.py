"""Every use of pulsar-client's private API, in one module.

pulsar-client's Python classes wrap its C++ client (the `_pulsar` extension module), and a few
things this package needs are only there:

* the C++ client behind a `pulsar.Client` or `pulsar.asyncio.Client`, whose `create_producer`
  takes a `ProducerConfiguration`: DLQ copies are sent through it as BYTES, whatever wrapper (or
  none, in a Pulsar Function) the application holds (`deadletter.py`);
* the BYTES schema type a `pulsar.schema.Schema` subclass declares (pulsar-client's own schemas
  take it from `_pulsar` too);
* the C++ consumer and reader behind `pulsar.Consumer` and `pulsar.Reader`, and the message
  wrapper's two fields: the hot loops receive there and wrap what arrives as `receive` does,
  past the Python wrappers' argument checks (`consumer.py`, `reading/rows.py`);
* the schema a `pulsar.Consumer` was subscribed with (`Consumer._schema`), whose Pulsar client
  a `consume()` without `client=` dead-letters through.

Named `_pulsar_client` so that it is not mistaken for pulsar-client's own `_pulsar` module.
tests/unit/test_pulsar_touch_points.py holds each function to the installed pulsar-client,
whose version pyproject.toml bounds (`pulsar-client>=3.13.0,<3.14`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import _pulsar
import pulsar

__all__ = [
    "BYTES",
    "bytes_producer",
    "consumer_schema",
    "direct_calls",
    "raw_client",
    "raw_message",
    "read_next",
]

BYTES = _pulsar.SchemaType.BYTES
"""The schema type of raw bytes, which an external schema declares to pulsar-client."""


def raw_client(client: Any) -> Any:
    """The `_pulsar.Client` behind a `pulsar.Client` or `pulsar.asyncio.Client` (or itself, or
    any object with its `create_producer(topic, ProducerConfiguration)`)."""
    if client is None or isinstance(client, _pulsar.Client):
        return client
    inner = getattr(client, "_client", None)
    if isinstance(inner, _pulsar.Client):
        return inner
    if inner is None and callable(getattr(client, "create_producer", None)):
        return client
    raise TypeError(f"expected a pulsar.Client or pulsar.asyncio.Client, not {type(client).__name__}")


def bytes_producer(client: Any, topic: str, *, batched: bool) -> Any:
    """A BYTES producer of the C++ client `client` that waits for room when its queue is full;
    batched ones close a batch after 5 ms."""
    conf = _pulsar.ProducerConfiguration()
    conf.schema(_pulsar.SchemaInfo(BYTES, "BYTES", ""))
    conf.block_if_queue_full(True)
    conf.batching_enabled(batched)
    if batched:
        conf.batching_max_publish_delay_ms(5)
    return client.create_producer(topic, conf)


def raw_message(
    data: bytes,
    properties: dict[str, str],
    partition_key: str | None,
    ordering_key: str | None,
    event_timestamp: int | None,
) -> Any:
    """A C++ message, for a producer of `bytes_producer`."""
    builder = _pulsar.MessageBuilder().content(data)
    for name, value in properties.items():
        builder.property(name, value)
    if partition_key:
        builder.partition_key(partition_key)
    if ordering_key:
        builder.ordering_key(ordering_key)
    if event_timestamp:
        builder.event_timestamp(event_timestamp)
    return builder.build()


def consumer_schema(consumer: Any) -> Any:
    """The schema a `pulsar.Consumer` was subscribed with (None for anything else)."""
    return getattr(consumer, "_schema", None) if isinstance(consumer, pulsar.Consumer) else None


def direct_calls(consumer: Any) -> tuple[Callable[[int | None], Any], Callable[[Any], None]] | None:
    """(receive(timeout or None), acknowledge(message)) of a `pulsar.Consumer`, on its C++
    consumer: past the Python wrappers' argument checks and `isinstance` chains (a tenth of what
    a BYTES consumer spends on a message), wrapping what arrives as its `receive` does
    (a `pulsar.Message` whose `value()` decodes with the consumer's schema). None for anything
    that is not a `pulsar.Consumer`."""
    raw = getattr(consumer, "_consumer", None) if isinstance(consumer, pulsar.Consumer) else None
    if raw is None:
        return None
    schema, message, wait, take = consumer._schema, pulsar.Message, raw.receive, raw.acknowledge

    def receive(timeout_millis: int | None) -> Any:
        msg = message()
        msg._message = wait() if timeout_millis is None else wait(timeout_millis)
        msg._schema = schema
        return msg

    def acknowledge(msg: Any) -> None:
        take(msg._message)

    return receive, acknowledge


def read_next(reader: Any) -> Callable[..., Any]:
    """`read_next(timeout_ms)` of the C++ reader behind a `pulsar.Reader`: it returns C++
    messages, which have the methods of the Python `Message` without a wrapper made per message
    (a Python call per method)."""
    return getattr(reader, "_reader", reader).read_next  # type: ignore[no-any-return]
