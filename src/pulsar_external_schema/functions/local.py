"""Run a Pulsar Function in this process, the way Pulsar's Python runtime does: for tests and local
development against a real broker, without a functions worker.

    with LocalRunner(client, Enrich, inputs=["orders"], output="enriched",
                     custom_schema="pulsar_external_schema.functions.FunctionSchema",
                     schema_properties={"schema.registry.url": url},
                     user_config={"schema.registry.url": url}) as runner:
        result = runner.run(timeout_millis=2000)

What it reproduces of the runtime (`python_instance.py`, `contextimpl.py`): the custom input schema
is built from its class as the runtime builds it (by the number of `__init__` parameters),
`msg.value()` is called before the function, an exception in either negatively acknowledges the
message, a returned value goes to the output topic through the identity serde, and the input is
acknowledged after that send (at-least-once, auto-ack). `LocalContext` implements
`pulsar.functions.context.Context` with real producers; state is kept in memory.
"""

from __future__ import annotations

import base64
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pulsar
from pulsar.functions import serde
from pulsar.functions.context import Context

from .._imports import import_object
from ..errors import ConfigError

log = logging.getLogger(__name__)


def import_path(path: str) -> Any:
    """`module.Name` as the runtime imports it (`serde.X` is pulsar.functions.serde's)."""
    module_name, _, name = path.rpartition(".")
    return getattr(serde, name) if module_name == "serde" else import_object(path)


def make_input_schema(
    schema_class: str | type, record_class: Any, schema_properties: Mapping[str, Any]
) -> Any:
    """A custom input schema built as the runtime builds it: `__init__` with no argument,
    one (the record class, else the properties) or two (record class, properties)."""
    cls: Any = import_path(schema_class) if isinstance(schema_class, str) else schema_class
    count = len(inspect.signature(cls.__init__).parameters)  # self included, as the runtime counts
    if count == 1:
        return cls()
    if count == 2:
        try:
            return cls(record_class)
        except TypeError:
            return cls(schema_properties)
    if count == 3:
        return cls(record_class, schema_properties)
    raise ConfigError(f"invalid schema class {cls.__name__}: Pulsar's runtime cannot construct it")


class LocalContext(Context):  # type: ignore[misc]
    """`pulsar.functions.context.Context` backed by a real client, as the runtime's ContextImpl."""

    def __init__(
        self,
        client: pulsar.Client,
        *,
        inputs: Sequence[str],
        output: str | None = None,
        user_config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        tenant: str = "public",
        namespace: str = "default",
        name: str = "local-function",
        instance_id: int = 0,
    ) -> None:
        self.pulsar_client = client  # the attribute name ContextImpl uses
        self._inputs = list(inputs)
        self._output = output
        self._user_config = dict(user_config or {})
        self._secrets = dict(secrets or {})
        self._tenant, self._namespace, self._name, self._instance_id = tenant, namespace, name, instance_id
        self._message: Any = None
        self._consumer: Any = None
        self._producers: dict[str, Any] = {}
        self._serdes: dict[str, Any] = {}
        self.metrics: dict[str, list[float]] = {}
        self._state: dict[str, Any] = {}
        self.logger = logging.getLogger(f"pulsar_function.{tenant}.{namespace}.{name}")

    def set_current_message(self, message: Any, consumer: Any) -> None:
        self._message, self._consumer = message, consumer

    # -- the current message
    def get_message_id(self) -> Any:
        return self._message.message_id()

    def get_message_key(self) -> str:
        return str(self._message.partition_key())

    def get_message_eventtime(self) -> int:
        return int(self._message.event_timestamp())

    def get_message_properties(self) -> dict[str, str]:
        return dict(self._message.properties())

    def get_current_message_topic_name(self) -> str:
        return str(self._message.topic_name())

    def get_partition_key(self) -> str:
        return str(self._message.partition_key())

    def get_ordering_key(self) -> str:
        return str(self._message.ordering_key())

    # -- the function
    def get_function_tenant(self) -> str:
        return self._tenant

    def get_function_namespace(self) -> str:
        return self._namespace

    def get_function_name(self) -> str:
        return self._name

    def get_function_id(self) -> str:
        return f"{self._tenant}/{self._namespace}/{self._name}"

    def get_instance_id(self) -> int:
        return self._instance_id

    def get_function_version(self) -> str:
        return "local"

    def get_logger(self) -> logging.Logger:
        return self.logger

    def get_user_config_value(self, key: str) -> Any:
        return self._user_config.get(key)

    def get_user_config_map(self) -> dict[str, Any]:
        return dict(self._user_config)

    def get_secret(self, secret_name: str) -> str | None:
        return self._secrets.get(secret_name)

    def get_input_topics(self) -> list[str]:
        return list(self._inputs)

    def get_output_topic(self) -> str | None:
        return self._output

    def get_output_serde_class_name(self) -> str:
        return "serde.IdentitySerDe"

    def record_metric(self, metric_name: str, metric_value: float) -> None:
        self.metrics.setdefault(metric_name, []).append(metric_value)

    # -- publishing, as ContextImpl.publish
    def publish(
        self,
        topic_name: str,
        message: Any,
        serde_class_name: str = "serde.IdentitySerDe",
        properties: Mapping[str, str] | None = None,
        compression_type: Any = None,
        callback: Callable[[Any, Any], None] | None = None,
        message_conf: Mapping[str, Any] | None = None,
    ) -> None:
        topic_name = str(topic_name)
        if topic_name not in self._producers:
            self._producers[topic_name] = self.pulsar_client.create_producer(
                topic_name,
                block_if_queue_full=True,
                batching_enabled=True,
                batching_max_publish_delay_ms=10,
                compression_type=compression_type or pulsar.CompressionType.NONE,
                properties={"application": "pulsar-function", "id": self.get_function_id()},
            )
        if serde_class_name not in self._serdes:
            self._serdes[serde_class_name] = import_path(serde_class_name)()
        output = bytes(self._serdes[serde_class_name].serialize(message))
        conf = dict(message_conf or {})
        if properties:
            conf["properties"] = dict(properties)
        self._producers[topic_name].send_async(
            output, partial(self._sent, callback, topic_name, self._message and self.get_message_id()), **conf
        )

    def _sent(
        self, callback: Callable[[Any, Any], None] | None, topic: str, source: Any, result: Any, msg_id: Any
    ) -> None:
        if result != pulsar.Result.Ok:
            log.error(
                "failed to publish to topic %s with error %s with src message id %s", topic, result, source
            )
        if callback is not None:
            callback(result, msg_id)

    def ack(self, msgid: Any, topic: str) -> None:
        self._consumer.acknowledge(msgid)

    # -- state and counters, in memory
    def incr_counter(self, key: str, amount: int) -> None:
        self._state[key] = int(self._state.get(key, 0)) + amount

    def get_counter(self, key: str) -> int:
        return int(self._state.get(key, 0))

    def del_counter(self, key: str) -> None:
        self._state.pop(key, None)

    def put_state(self, key: str, value: Any) -> None:
        self._state[key] = value

    def get_state(self, key: str) -> Any:
        return self._state.get(key)

    def close(self) -> None:
        for producer in self._producers.values():
            producer.flush()
            producer.close()
        self._producers.clear()


@dataclass
class RunResult:
    """What `LocalRunner.run` did."""

    processed: int = 0
    """Messages the function returned from (acknowledged, their output sent)."""
    user_errors: list[Exception] = field(default_factory=list)
    """Exceptions the function raised (the message was negatively acknowledged)."""
    system_errors: list[Exception] = field(default_factory=list)
    """Exceptions before the function ran, e.g. in `msg.value()` (negatively acknowledged)."""


class LocalRunner:
    """One function instance over real topics, with at-least-once processing and auto-ack."""

    def __init__(
        self,
        client: pulsar.Client,
        function: Any,
        *,
        inputs: Sequence[str],
        output: str | None = None,
        custom_schema: str | type | None = None,
        schema_properties: Mapping[str, Any] | None = None,
        record_class: Any = None,
        user_config: Mapping[str, Any] | None = None,
        subscription: str | None = None,
        name: str = "local-function",
        negative_ack_redelivery_delay_ms: int = 60_000,
    ) -> None:
        self._function: Any = function() if inspect.isclass(function) else function
        self.context = LocalContext(client, inputs=inputs, output=output, user_config=user_config, name=name)
        self.schema = (
            make_input_schema(custom_schema, record_class, dict(schema_properties or {}))
            if custom_schema is not None
            else None
        )
        options: dict[str, Any] = {
            "consumer_type": pulsar.ConsumerType.Shared,
            "initial_position": pulsar.InitialPosition.Earliest,
            "negative_ack_redelivery_delay_ms": negative_ack_redelivery_delay_ms,
        }
        if self.schema is not None:
            options["schema"] = self.schema
        self._consumer = client.subscribe(list(inputs), subscription or f"public/default/{name}", **options)
        self._output = (
            client.create_producer(output, block_if_queue_full=True, batching_enabled=True)
            if output
            else None
        )
        self._identity = serde.IdentitySerDe()

    def run(self, *, max_messages: int | None = None, timeout_millis: int = 2_000) -> RunResult:
        """Process messages until none arrives for `timeout_millis` (or `max_messages` were received)."""
        result = RunResult()
        received = 0
        while max_messages is None or received < max_messages:
            try:
                msg = self._consumer.receive(timeout_millis=timeout_millis)
            except pulsar.Timeout:
                break
            received += 1
            try:
                value = msg.value() if self.schema is not None else self._identity.deserialize(msg.data())
            except Exception as error:
                log.error("message %s: %s", msg.message_id(), error)
                result.system_errors.append(error)
                self._consumer.negative_acknowledge(msg)
                continue
            self.context.set_current_message(msg, self._consumer)
            try:
                if hasattr(self._function, "process"):
                    output = self._function.process(value, self.context)
                else:  # a plain function of the value
                    output = self._function(value)
            except Exception as error:
                log.exception("exception while executing user method")
                result.user_errors.append(error)
                self._consumer.negative_acknowledge(msg)
                continue
            if output is not None and self._output is not None:
                self._output.send(
                    self._identity.serialize(output),
                    properties={
                        "__pfn_input_topic__": str(msg.topic_name()),
                        "__pfn_input_msg_id__": base64.urlsafe_b64encode(
                            msg.message_id().serialize()
                        ).decode(),
                    },
                )
            self._consumer.acknowledge(msg)
            result.processed += 1
        return result

    def close(self) -> None:
        self._consumer.close()
        if self._output is not None:
            self._output.close()
        self.context.close()
        close = getattr(self.schema, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
