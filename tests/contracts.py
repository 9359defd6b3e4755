"""Helpers for the data-contract tests: rule sets written as Confluent's documentation writes them."""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from typing import Any

import _pulsar
import pulsar
from confluent_kafka.schema_registry import Schema

from pulsar_external_schema import SchemaRegistrySchemaFactory

PERSON = {
    "type": "record",
    "name": "Person",
    "namespace": "acme",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "ssn", "type": "string"},
        {"name": "occupation", "type": "string", "default": ""},
    ],
}


def contract(schema: dict[str, Any] | str, schema_type: str = "AVRO", **parts: Any) -> Schema:
    """A schema with metadata / ruleSet, in the registry's JSON shape (as Confluent's docs write it)."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return Schema.from_dict({"schema": text, "schemaType": schema_type, **parts})


def rule(name: str, kind: str, type_: str, mode: str, expr: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "type": type_, "mode": mode, "expr": expr, **extra}


#: The local KMS's secret (the `local-kms` KEKs of the tests), as a factory config key.
LOCAL_KMS_SECRET = {"rule.executors._default_.param.secret": "a-local-kms-secret-for-tests"}


def tagged_person() -> dict[str, Any]:
    """A record with an inline PII tag, in a namespace of its own: AxonOps v0.2.1 gives a schema
    that equals a stored one but for `confluent:tags` the stored text (and id), tags dropped."""
    return {
        "type": "record",
        "name": "Person",
        "namespace": unique("acme.tagged").replace("-", "_"),
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
        ],
    }


def encrypt_rule(
    kek: str,
    *,
    name: str = "encryptPII",
    tags: tuple[str, ...] = ("PII",),
    params: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An ENCRYPT rule (WRITEREAD) on the fields tagged `tags`, with a local-KMS KEK named `kek`."""
    return {
        "name": name,
        "kind": "TRANSFORM",
        "type": "ENCRYPT",
        "mode": "WRITEREAD",
        "tags": list(tags),
        "params": {
            "encrypt.kek.name": kek,
            "encrypt.kms.type": "local-kms",
            "encrypt.kms.key.id": "mykey",
            **(params or {}),
        },
        "onFailure": "ERROR,NONE",
    }


def subscribe(client: Any, topic: str, schema: Any = None, name: str = "test") -> Any:
    kwargs = {"schema": schema} if schema is not None else {}
    return client.subscribe(topic, name, initial_position=pulsar.InitialPosition.Earliest, **kwargs)


def drain(consumer: Any, timeout_millis: int = 1_500) -> list[Any]:
    messages: list[Any] = []
    while True:
        try:
            message = consumer.receive(timeout_millis=timeout_millis)
        except pulsar.Timeout:
            return messages
        consumer.acknowledge(message)
        messages.append(message)


def receive_all(consumer: Any, count: int, timeout_millis: int = 15_000) -> list[Any]:
    """Exactly `count` messages, each acknowledged; each may take up to `timeout_millis` to come
    (geo-replication is asynchronous: its tests wait longer)."""
    messages = []
    for _ in range(count):
        message = consumer.receive(timeout_millis=timeout_millis)
        consumer.acknowledge(message)
        messages.append(message)
    return messages


def subject_of(topic: str) -> str:
    """The value subject the default strategy should give `topic`, spelled out here rather than
    asked of the package under test: `<tenant>.<namespace>.<local name>-value`."""
    parts = topic.split("://", 1)[-1].split("/")
    return ".".join(parts if len(parts) == 3 else ["public", "default", *parts]) + "-value"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def mock_factory(factory_args: dict[str, Any] | None = None, /, **conf: Any) -> SchemaRegistrySchemaFactory:
    """A factory on a fresh in-memory registry; `factory_args` go to the factory, `conf` to its config."""
    url = f"mock://{uuid.uuid4().hex}"
    return SchemaRegistrySchemaFactory({"schema.registry.url": url, **conf}, **(factory_args or {}))


class FakeProducer:
    def __init__(self, sent: list[dict[str, Any]], topic: str, client: FakePulsarClient) -> None:
        self._sent, self._topic, self._client = sent, topic, client

    def send(self, message: Any) -> str:
        self._sent.append(
            {
                "topic": self._topic,
                "data": message.data(),
                "properties": message.properties(),
                "key": message.partition_key(),
            }
        )
        return "fake-id"  # one id: the error text names it, and both paths must say the same

    def send_async(self, message: Any, callback: Any) -> None:
        """Answered on another thread, as the client's IO thread answers, after `answer_delay`."""
        result = _pulsar.Result.Timeout if self._client.fail_sends else _pulsar.Result.Ok
        if result == _pulsar.Result.Ok:
            self.send(message)
        self._client.in_flight(+1)

        def answer() -> None:
            time.sleep(self._client.answer_delay)
            self._client.in_flight(-1)
            callback(result, "fake-id")

        threading.Thread(target=answer, daemon=True).start()

    def close(self) -> None:
        return None


class FakePulsarClient:
    """What the DLQ action needs of a `_pulsar.Client`: producers whose sends are recorded.
    Attach it with `schema._pulsar_client = FakePulsarClient()`."""

    def __init__(self, *, fail_sends: bool = False, answer_delay: float = 0.0) -> None:
        self.sent: list[dict[str, Any]] = []
        self.fail_sends = fail_sends
        self.answer_delay = answer_delay
        self.most_in_flight = 0
        """The most asynchronous sends that were waiting for their answer at once."""
        self._in_flight = 0
        self._lock = threading.Lock()

    def in_flight(self, change: int) -> None:
        with self._lock:
            self._in_flight += change
            self.most_in_flight = max(self.most_in_flight, self._in_flight)

    def create_producer(self, topic: str, conf: Any) -> FakeProducer:
        return FakeProducer(self.sent, topic, self)


class ReceivedMessage:
    """What `decode_message` reads of a received message: its bytes, properties and topic."""

    def __init__(self, data: bytes, properties: dict[str, str], topic: str) -> None:
        self._data, self._properties, self._topic = data, properties, topic

    def data(self) -> bytes:
        return self._data

    def properties(self) -> dict[str, str]:
        return self._properties

    def topic_name(self) -> str:
        return self._topic

    def message_id(self) -> str:
        return "(1,0,-1,0)"

    def partition_key(self) -> str:
        return ""

    ordering_key = partition_key

    def event_timestamp(self) -> int:
        return 0


class FakeMessage:
    """A received message: its value, or the error decoding it raises."""

    def __init__(
        self, number: int, value: Any = None, error: Exception | None = None, topic: str = "t"
    ) -> None:
        self.number, self._value, self._error, self._topic = number, value, error, topic

    def value(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def message_id(self) -> str:
        return f"({self.number},0,-1,0)"

    def data(self) -> bytes:
        return f"payload {self.number}".encode()

    def properties(self) -> dict[str, str]:
        return {"n": str(self.number)}

    def partition_key(self) -> str:
        return f"k{self.number}"

    def ordering_key(self) -> str:
        return ""

    def event_timestamp(self) -> int:
        return 0

    def publish_timestamp(self) -> int:
        return 0

    def topic_name(self) -> str:
        return self._topic


class FakeConsumer:
    """What the consume loops need of a `pulsar.Consumer`: messages to hand out, and a record of
    what was acknowledged (so each branch of the failure policy is testable without a broker)."""

    def __init__(self, messages: list[FakeMessage], quiet: dict[int, float] | None = None) -> None:
        self._messages = list(messages)
        self._quiet = dict(quiet or {})  # message number -> seconds of silence before it
        self.acknowledged: list[int] = []
        self.negatively_acknowledged: list[int] = []
        self.events: list[str] = []

    def receive(self, timeout_millis: int | None = None) -> FakeMessage:
        if not self._messages:
            raise pulsar.Timeout()
        number = self._messages[0].number
        silence = self._quiet.get(number, 0.0)
        if silence:
            waited = silence if timeout_millis is None else min(silence, timeout_millis / 1000)
            time.sleep(waited)
            self._quiet[number] = silence - waited
            if waited < silence:
                raise pulsar.Timeout()
        self.events.append(f"receive {number}")
        return self._messages.pop(0)

    def acknowledge(self, msg: FakeMessage) -> None:
        self.acknowledged.append(msg.number)
        self.events.append(f"acknowledge {msg.number}")

    def negative_acknowledge(self, msg: FakeMessage) -> None:
        self.negatively_acknowledged.append(msg.number)

    def close(self) -> None:
        self.events.append("close")


def everything_said(error: BaseException | None) -> str:
    """What a traceback says of the error and every exception chained to it (not the source
    lines it quotes, which hold the test's literals)."""
    said = []
    while error is not None:
        said.extend(traceback.format_exception_only(error))
        error = error.__cause__ or error.__context__
    return "".join(said)
