"""Producers that send with the schema id in the message metadata (PIP-420).

pulsar-client calls `schema.encode(value) -> bytes` and has no way for a schema to set message
properties, so these thin wrappers encode with `schema.encode(topic, value)` themselves and put
the id in the `__schema_id` property. The underlying producer declares a BYTES schema, like
every consumer of an `ExternalSchema`.

    producer = create_producer(client, topic, schema)                 # pulsar.Client
    producer = await create_producer(async_client, topic, schema)     # pulsar.asyncio.Client

Data contracts run inside `send`: a rule that fails with ERROR raises `RuleViolationError`; with
DLQ, the copy is in the DLQ topic (through this client) when `DeadLetteredError` is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pulsar
import pulsar.asyncio

from . import schema_id as ids
from .admin import declare_external
from .rules.context import MessageContext
from .schema import ExternalSchema, check_external_schema


def encode_message(
    schema: ExternalSchema,
    topic: str,
    value: Any,
    properties: Mapping[str, str] | None = None,
    **options: Any,
) -> tuple[bytes, dict[str, str]]:
    """(payload, properties) of a message carrying `value`: encoded with `schema` for `topic` (its
    rules see the properties and the `partition_key` / `ordering_key` / `event_timestamp` in
    `options`), the schema id added as the `__schema_id` property (or Confluent's header
    properties, `schema.id.location=header`). Every sender of external-schema
    messages goes through here: these producers, and Pulsar Functions' `context.publish`."""
    context: MessageContext | None = None  # nothing for the rules to see: the schema makes one
    message_properties: dict[str, str] = {}  # only if a rule fails
    if properties or options:
        message_properties = dict(properties or {})
        context = schema.message_context(
            topic,
            message_properties,
            partition_key=options.get("partition_key"),
            ordering_key=options.get("ordering_key"),
            event_timestamp=options.get("event_timestamp"),
        )
    encoded = schema.encode_for(topic, value, context)
    message_properties.update(id_properties(schema, encoded.schema_id))
    return encoded.data, message_properties


def id_properties(schema: ExternalSchema, schema_id: bytes | None) -> dict[str, str]:
    """The properties that carry a message's schema id (`EncodeData.schema_id`; None in prefix
    mode, where the payload carries it): `__schema_id`, or Confluent's header properties
    (`schema.id.location=header`)."""
    if schema_id is None:
        return {}
    if schema.config.schema_id_location != "header":
        return {ids.SCHEMA_ID_PROPERTY: ids.to_property(schema_id, key_value=schema.is_key_value)}
    # Confluent's header names, for topics bridged to Kafka
    return ids.header_properties(schema_id, key_value=schema.is_key_value)


class _SchemaProducer:
    """What both producers share: the wrapped producer, the topic, and encoding with the id."""

    def __init__(self, producer: Any, topic: str, schema: ExternalSchema) -> None:
        self._producer = producer
        self._topic = topic
        self._schema = schema

    @property
    def schema(self) -> ExternalSchema:
        return self._schema

    def topic(self) -> str:
        return str(self._producer.topic())

    def producer_name(self) -> str:
        return str(self._producer.producer_name())


class Producer(_SchemaProducer):
    """A `pulsar.Producer` for values of an `ExternalSchema` (same methods, values instead of bytes)."""

    def send(self, value: Any, properties: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
        """Encode `value`, send it with its schema id, return the `MessageId`; keyword
        arguments as `pulsar.Producer.send` (partition_key, event_timestamp, ...)."""
        data, props = encode_message(self._schema, self._topic, value, properties, **kwargs)
        return self._producer.send(data, properties=props, **kwargs)

    def send_async(
        self,
        value: Any,
        callback: Callable[[Any, Any], None],
        properties: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Encode now (errors raise here), send in the background; `callback(result, msg_id)`."""
        data, props = encode_message(self._schema, self._topic, value, properties, **kwargs)
        self._producer.send_async(data, callback, properties=props, **kwargs)

    def flush(self) -> None:
        self._producer.flush()

    def close(self) -> None:
        self._producer.close()

    def last_sequence_id(self) -> int:
        return int(self._producer.last_sequence_id())

    def is_connected(self) -> bool:
        return bool(self._producer.is_connected())

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncProducer(_SchemaProducer):
    """The `pulsar.asyncio.Producer` counterpart of `Producer`."""

    async def send(self, value: Any, properties: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
        data, props = encode_message(self._schema, self._topic, value, properties, **kwargs)
        return await self._producer.send(data, properties=props, **kwargs)

    async def flush(self) -> None:
        await self._producer.flush()

    async def close(self) -> None:
        await self._producer.close()

    async def __aenter__(self) -> AsyncProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def create_producer(client: Any, topic: str, schema: ExternalSchema, **kwargs: Any) -> Any:
    """A producer for `topic` that sends values of `schema` with their schema ids.

    With a `pulsar.Client` it returns a `Producer`; with a `pulsar.asyncio.Client`, an awaitable of
    an `AsyncProducer`. Typed `Any`: pulsar-client ships no types, so overloads on its two client
    classes cannot tell them apart (both are `Any` to a type checker); typed code calls
    `create_async_producer` for the asyncio form and gets `AsyncProducer`. Keyword arguments
    go to the client's `create_producer` (producer_name, batching_enabled, ...).
    """
    check_external_schema(schema, kwargs, "create_producer")
    schema.attach_client(client)  # the DLQ action's way to Pulsar
    if isinstance(client, pulsar.asyncio.Client):
        return create_async_producer(client, topic, schema, **kwargs)
    declare_external(schema.config, topic)
    return Producer(
        client.create_producer(topic, schema=pulsar.schema.BytesSchema(), **kwargs), topic, schema
    )


async def create_async_producer(
    client: Any, topic: str, schema: ExternalSchema, **kwargs: Any
) -> AsyncProducer:
    """The asyncio form of `create_producer`, for a `pulsar.asyncio.Client`."""
    check_external_schema(schema, kwargs, "create_producer")
    schema.attach_client(client)
    await asyncio.to_thread(declare_external, schema.config, topic)
    producer = await client.create_producer(topic, schema=pulsar.schema.BytesSchema(), **kwargs)
    return AsyncProducer(producer, topic, schema)
