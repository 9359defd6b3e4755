"""`ExternalFunction`: a Pulsar Function that receives decoded values and publishes encoded ones.

    class Enrich(ExternalFunction):
        def handle(self, order, context):
            return {**order, "total": order["price"] * order["quantity"]}

Deployed with `FunctionSchema` on its inputs, the function's `handle` gets each value decoded with
its data contract applied. What it returns is encoded with the external schema of the output
topic (the subject's latest registered version, or `output_schema`) and published with the schema
id in the `__schema_id` property, which the runtime's own output path cannot set. The input is
acknowledged only after the output is persisted: a failed publish raises, and the runtime
redelivers the input.

Config comes from the function's user config (`--user-config`): this package's keys
(`schema.registry.url`, ...) and `dlq.topic` (alias `dead.letter.topic`), where messages that
could not be decoded go with `__rule.*` reasons, as do those of rules with the DLQ action. Without
it such messages raise, and the runtime redelivers them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

import pulsar
from pulsar.functions.function import Function

from ..config import is_config_key
from ..deadletter import (
    DLQ_TOPIC_KEY,
    Fate,
    configured_dead_letter_topic,
    dead_letter_properties,
    fate,
    resolve_dlq_topic,
)
from ..errors import ConfigError, PublishError
from ..factory import SchemaRegistrySchemaFactory
from ..producer import encode_message
from ..schema import ExternalSchema
from ..topic_schemas import registered_schema, schema_for
from .schema import Rejected

log = logging.getLogger(__name__)

#: User config key: the topic messages that cannot be decoded are copied to (alias
#: `dead.letter.topic`).
DEAD_LETTER_TOPIC = DLQ_TOPIC_KEY


def function_config(context: Any) -> dict[str, Any]:
    """This package's config keys from the function's user config (the rest is the user's)."""
    user_config = context.get_user_config_map() or {}
    return {key: value for key, value in user_config.items() if is_config_key(key)}


def publish_bytes(
    context: Any,
    topic: str,
    data: bytes,
    properties: Mapping[str, str],
    *,
    partition_key: str | None = None,
    event_timestamp: int | None = None,
    wait: bool = True,
    timeout_seconds: float = 30.0,
) -> None:
    """`context.publish` of raw bytes (the runtime's identity serde) with properties and key;
    with `wait`, returns once the broker has the message and raises `PublishError` if it does not."""
    message_conf: dict[str, Any] = {"properties": dict(properties)}
    if partition_key:
        message_conf["partition_key"] = partition_key
    if event_timestamp:
        message_conf["event_timestamp"] = event_timestamp
    done = threading.Event()
    outcome: list[Any] = []

    def sent(result: Any, _msg_id: Any) -> None:
        outcome.append(result)
        done.set()

    context.publish(topic, data, message_conf=message_conf, callback=sent if wait else None)
    if not wait:
        return
    if not done.wait(timeout_seconds):
        raise PublishError(
            f"publishing to {topic} did not complete within {timeout_seconds:.0f}s", topic=topic
        )
    if outcome[0] != pulsar.Result.Ok:
        raise PublishError(f"publishing to {topic} failed: {outcome[0]}", topic=topic)


class ExternalFunction(Function):  # type: ignore[misc]
    """Base class of functions on external schemas: override `handle(value, context)`."""

    #: The output's schema (text or dict); None: the latest registered version of the output subject.
    output_schema: ClassVar[str | dict[str, Any] | None] = None
    #: The format of `output_schema`: "avro", "json" or "protobuf" (with `output_message_class`).
    output_format: ClassVar[str] = "avro"
    #: The generated Protobuf class of the output (Protobuf outputs).
    output_message_class: ClassVar[Any] = None
    #: Wait until each output is persisted before the input is acknowledged (at-least-once).
    #: False publishes asynchronously: faster, but a failed publish only shows in the logs.
    wait_for_publish: ClassVar[bool] = True
    publish_timeout_seconds: ClassVar[float] = 30.0

    def __init__(self) -> None:
        self._factory: SchemaRegistrySchemaFactory | None = None
        self._outputs: dict[str, ExternalSchema] = {}

    def handle(self, value: Any, context: Any) -> Any:
        """Process one decoded value; a returned value (not None) goes to the output topic."""
        raise NotImplementedError(f"{type(self).__name__} must define handle(value, context)")

    def process(self, input: Any, context: Any) -> None:
        """Called by the runtime for each message."""
        if isinstance(input, Rejected):
            self.rejected(input, context)
            return None
        output = self.handle(input, context)
        if output is not None:
            topic = context.get_output_topic()
            if not topic:
                raise ConfigError(
                    f"{type(self).__name__}.handle returned a value, but the function has no output "
                    "topic (pulsar-admin functions create --output ...)"
                )
            self.publish(context, topic, output)
        return None

    def publish(
        self,
        context: Any,
        topic: str,
        value: Any,
        *,
        properties: Mapping[str, str] | None = None,
        partition_key: str | None = None,
        event_timestamp: int | None = None,
    ) -> None:
        """Encode `value` with `topic`'s external schema (its WRITE rules run) and publish it with
        its schema id in `__schema_id`."""
        data, message_properties = encode_message(
            self.output_schema_for(context, topic),
            topic,
            value,
            properties,
            partition_key=partition_key,
            event_timestamp=event_timestamp,
        )
        publish_bytes(
            context,
            topic,
            data,
            message_properties,
            partition_key=partition_key,
            event_timestamp=event_timestamp,
            wait=self.wait_for_publish,
            timeout_seconds=self.publish_timeout_seconds,
        )

    def rejected(self, rejected: Rejected, context: Any) -> None:
        """A message that could not be decoded, as `deadletter.fate` decides: copied to
        `dlq.topic` with `__rule.*` reasons; without one, or when the registry cannot be
        reached, its error is raised and the runtime redelivers the message."""
        error, msg = rejected.error, rejected.message
        dead_letter_topic = configured_dead_letter_topic(context.get_user_config_value)
        verdict = fate(error, dead_letter_topic)
        if verdict is Fate.ACKNOWLEDGE:
            log.warning("%s", rejected)  # its rule's DLQ action has persisted the copy already
            return
        if verdict is Fate.REDELIVER:
            raise error  # the runtime negatively acknowledges it: redelivered later
        assert dead_letter_topic is not None  # fate copies only with a topic
        target = resolve_dlq_topic(dead_letter_topic, rejected.topic)
        log.warning("%s; copying it to %s", rejected, target)
        publish_bytes(
            context,
            target,
            rejected.data,
            dead_letter_properties(msg, error),
            partition_key=msg.partition_key() or None,
            event_timestamp=msg.event_timestamp() or None,
            timeout_seconds=self.publish_timeout_seconds,
        )

    def output_schema_for(self, context: Any, topic: str) -> ExternalSchema:
        """The external schema values published to `topic` are encoded with (made once per topic)."""
        found = self._outputs.get(topic)
        if found is not None:
            return found
        factory = self._output_factory(context)
        if self.output_schema is not None:
            made = self._declared_schema(factory)
        else:
            made = schema_for(factory, registered_schema(factory, topic), self.output_message_class)
        self._outputs[topic] = made
        return made

    def _declared_schema(self, factory: SchemaRegistrySchemaFactory) -> ExternalSchema:
        assert self.output_schema is not None
        if self.output_format == "avro":
            return factory.avro(self.output_schema)
        if self.output_format == "json":
            return factory.json(self.output_schema)
        if self.output_format == "protobuf" and self.output_message_class is not None:
            return factory.protobuf(self.output_message_class)
        raise ConfigError(
            f"{type(self).__name__}.output_format must be 'avro', 'json' or 'protobuf' (with "
            f"output_message_class), not {self.output_format!r}"
        )

    def _output_factory(self, context: Any) -> SchemaRegistrySchemaFactory:
        if self._factory is None:
            config = function_config(context)
            if self.output_schema is None:
                # Write with what the registry holds for the output topic; never register a version.
                config.setdefault("use.latest.version", "true")
                config.setdefault("auto.register.schemas", "false")
            # A WRITE rule's DLQ action writes through the runtime's client (ContextImpl.pulsar_client).
            self._factory = SchemaRegistrySchemaFactory(
                config, client=getattr(context, "pulsar_client", None)
            )
        return self._factory
