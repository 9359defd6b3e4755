"""Each branch of what `consume` does with a message, on a fake consumer and a fake client: no
broker. A failed message is acknowledged only once its DLQ copy is persisted."""

from __future__ import annotations

import warnings
from typing import Any

import pulsar
import pytest
from contracts import FakeConsumer, FakeMessage, FakePulsarClient

from pulsar_external_schema import (
    DeadLetteredError,
    DecodeError,
    RegistryUnavailableError,
    RuleViolationError,
    consume,
)
from pulsar_external_schema.deadletter import Fate, fate

TOPIC = "persistent://acme/orders/in"


def _bad(number: int, error: Exception | None = None) -> FakeMessage:
    return FakeMessage(number, error=error or DecodeError("malformed", topic=TOPIC, subject="s"), topic=TOPIC)


def _run(
    messages: list[FakeMessage], client: Any = None, **options: Any
) -> tuple[Any, FakeConsumer, list[Any]]:
    consumer = FakeConsumer(messages)
    handled: list[Any] = []
    result = consume(
        consumer, lambda msg, value: handled.append(value), timeout_millis=1, client=client, **options
    )
    return result, consumer, handled


def test_a_decoded_message_is_handled_then_acknowledged() -> None:
    result, consumer, handled = _run([FakeMessage(1, value={"a": 1})])
    assert (handled, consumer.acknowledged, result.processed) == ([{"a": 1}], [1], 1)


def test_a_message_a_rule_dead_lettered_is_acknowledged() -> None:
    error = DeadLetteredError(
        "r failed", rule="r", mode="READ", topic=TOPIC, dlq_topic="d", dlq_message_id="x"
    )
    result, consumer, _ = _run([_bad(1, error)])
    assert (consumer.acknowledged, result.dead_lettered) == ([1], 1)


def test_a_registry_outage_is_redelivered_never_dead_lettered() -> None:
    client = FakePulsarClient()
    outage = RegistryUnavailableError("cannot reach the registry", topic=TOPIC)
    result, consumer, _ = _run([_bad(1, outage)], client, dead_letter_topic="dlq")
    assert (consumer.negatively_acknowledged, result.redelivered, client.sent) == ([1], 1, [])


def test_without_a_dead_letter_topic_a_failed_message_is_redelivered() -> None:
    result, consumer, _ = _run([_bad(1)])
    assert (consumer.negatively_acknowledged, consumer.acknowledged, result.redelivered) == ([1], [], 1)


def test_a_failed_message_is_copied_then_acknowledged_once_persisted() -> None:
    client = FakePulsarClient(answer_delay=0.05)
    rule_error = RuleViolationError("rule 'r' failed", rule="r", mode="READ", topic=TOPIC, subject="s")
    result, consumer, _ = _run(
        [_bad(1), FakeMessage(2, value=2), _bad(3, rule_error)], client, dead_letter_topic="dlq"
    )
    assert sorted(consumer.acknowledged) == [1, 2, 3]
    assert (result.processed, result.dead_lettered, result.redelivered) == (1, 2, 0)
    first, third = client.sent
    assert (first["topic"], first["data"], first["key"]) == ("dlq", b"payload 1", "k1")
    assert first["properties"]["n"] == "1" and first["properties"]["__rule.topic"] == TOPIC
    assert "malformed" in first["properties"]["__rule.exception"]
    assert (third["properties"]["__rule.name"], third["properties"]["__rule.mode"]) == ("r", "READ")


def test_a_replayed_copy_that_fails_again_carries_only_this_failures_rule_properties() -> None:
    # A DLQ copy of rule r's failure, replayed, now fails to decode: its new copy must not keep
    # `__rule.name` (a replay of it would skip r, which did not fail this time) nor r's path.
    replayed = _bad(1)
    earlier = {"__rule.name": "r", "__rule.mode": "READ", "__rule.subject": "s", "__rule.path": "customer"}
    replayed.properties = lambda: {"n": "1", "__rule.topic": TOPIC, "__rule.exception": "r failed", **earlier}  # type: ignore[method-assign]
    client = FakePulsarClient()
    _run([replayed], client, dead_letter_topic="dlq")
    (copy,) = client.sent
    assert set(copy["properties"]) == {"n", "__rule.topic", "__rule.exception"}
    assert "malformed" in copy["properties"]["__rule.exception"]


def test_a_copy_the_broker_did_not_persist_leaves_the_message_for_redelivery() -> None:
    client = FakePulsarClient(fail_sends=True)
    result, consumer, _ = _run([_bad(1), _bad(2)], client, dead_letter_topic="dlq")
    assert (consumer.acknowledged, sorted(consumer.negatively_acknowledged)) == ([], [1, 2])
    assert (result.dead_lettered, result.redelivered) == (0, 2)


def test_a_storm_of_failures_does_not_wait_for_each_copy() -> None:
    # Each answer takes 50 ms: waiting for each in turn would take 10 s; the loop sends them all
    # and collects the answers as they come, and returns only when every one is applied.
    client = FakePulsarClient(answer_delay=0.05)
    result, consumer, _ = _run([_bad(n) for n in range(200)], client, dead_letter_topic="dlq")
    assert sorted(consumer.acknowledged) == list(range(200))
    assert (result.dead_lettered, len(client.sent)) == (200, 200)
    assert client.most_in_flight > 1  # copies were on their way together


def test_a_quiet_stream_does_not_hold_back_the_acknowledgements_of_copies() -> None:
    # No receive timeout, and 1 s of silence after a failed message: its original is
    # acknowledged when its copy's answer arrives, not when the next message does.
    client = FakePulsarClient(answer_delay=0.05)
    consumer = FakeConsumer([_bad(1), FakeMessage(2, value=2)], quiet={2: 1.0})
    consume(consumer, lambda msg, value: None, max_messages=2, dead_letter_topic="dlq", client=client)
    assert consumer.events == ["receive 1", "acknowledge 1", "receive 2", "acknowledge 2"]


def test_a_handler_that_raises_stops_the_loop_and_redelivers_its_message() -> None:
    consumer = FakeConsumer([FakeMessage(1, value=1), FakeMessage(2, value=2)])

    def handle(msg: Any, value: Any) -> None:
        raise RuntimeError("bug in the handler")

    with pytest.raises(RuntimeError):
        consume(consumer, handle, timeout_millis=1)
    assert (consumer.negatively_acknowledged, consumer.acknowledged) == ([1], [])


@pytest.mark.parametrize(
    ("error", "dead_letter_topic", "expected"),
    [
        (DeadLetteredError("r failed", rule="r", dlq_topic="d", dlq_message_id="x"), None, Fate.ACKNOWLEDGE),
        (DeadLetteredError("r failed", rule="r", dlq_topic="d", dlq_message_id="x"), "dlq", Fate.ACKNOWLEDGE),
        (RegistryUnavailableError("down"), "dlq", Fate.REDELIVER),  # an outage is not bad data
        (RegistryUnavailableError("down"), None, Fate.REDELIVER),
        (DecodeError("malformed"), None, Fate.REDELIVER),
        (DecodeError("malformed"), "dlq", Fate.COPY),
        (RuleViolationError("r failed", rule="r"), "dlq", Fate.COPY),
    ],
)
def test_one_policy_for_every_consume_path(error: Any, dead_letter_topic: str | None, expected: Fate) -> None:
    assert fate(error, dead_letter_topic) is expected


class FakeFunctionContext:
    """What `ExternalFunction.rejected` uses of a Pulsar Functions context."""

    def __init__(self, user_config: dict[str, str]) -> None:
        self.user_config = user_config
        self.published: list[tuple[str, bytes, dict[str, Any]]] = []

    def get_user_config_value(self, key: str) -> str | None:
        return self.user_config.get(key)

    def publish(self, topic: str, data: bytes, message_conf: dict[str, Any], callback: Any) -> None:
        import pulsar

        self.published.append((topic, data, message_conf["properties"]))
        if callback is not None:
            callback(pulsar.Result.Ok, None)


@pytest.mark.parametrize("key", ["dlq.topic", "dead.letter.topic"])
def test_a_function_dead_letters_to_dlq_topic_or_its_old_alias(key: str) -> None:
    from pulsar_external_schema.functions import ExternalFunction
    from pulsar_external_schema.functions.schema import Rejected

    context = FakeFunctionContext({key: "orders-dlq"})
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        ExternalFunction().rejected(Rejected(DecodeError("malformed", topic=TOPIC), _bad(7)), context)
    renamed = [w for w in warned if issubclass(w.category, DeprecationWarning)]  # not a GC's ResourceWarning
    assert [str(w.message).split(" is ")[0] for w in renamed] == (
        ["config key 'dead.letter.topic'"] if key == "dead.letter.topic" else []
    )
    [(topic, data, properties)] = context.published
    assert (topic, data) == ("persistent://acme/orders/orders-dlq", b"payload 7")
    assert properties["n"] == "7" and properties["__rule.topic"] == TOPIC


def test_the_dead_letter_topic_under_two_names_is_an_error_as_any_key_is() -> None:
    from pulsar_external_schema import ConfigError
    from pulsar_external_schema.deadletter import configured_dead_letter_topic

    with pytest.warns(DeprecationWarning, match="use 'dlq.topic'"):
        assert configured_dead_letter_topic({"dead.letter.topic": "a"}.get) == "a"
    nothing: dict[str, str] = {}
    assert configured_dead_letter_topic(nothing.get) is None
    for other in ("a", "b"):  # one setting, two names: give one (config.read_key)
        with pytest.raises(ConfigError, match="same setting: give one"), pytest.warns(DeprecationWarning):
            configured_dead_letter_topic({"dlq.topic": "a", "dead.letter.topic": other}.get)


class FakeConsoleClient(FakePulsarClient):
    """A client whose `subscribe` hands out one fake consumer (the console consumer's view)."""

    def __init__(self, consumer: FakeConsumer, **options: Any) -> None:
        super().__init__(**options)
        self.consumer = consumer

    def subscribe(self, *args: Any, **kwargs: Any) -> FakeConsumer:
        return self.consumer


def _console(client: FakeConsoleClient, **args: Any) -> int:
    """The console consumer with the options its command line gives (the parser's own defaults)."""
    from pulsar_external_schema.cli import build_parser
    from pulsar_external_schema.cli.console import _ConsoleConsumer
    from pulsar_external_schema.cli.habits import settle

    argv = ["consume", TOPIC, "-s", "s", "--from-beginning", "--progress", "0", "--timeout-ms", "1"]
    namespace = build_parser().parse_args([*argv, "--service-url", "pulsar://fake"])
    settle(namespace, producing=False)
    for name, value in args.items():
        setattr(namespace, name, value)
    return _ConsoleConsumer(namespace, client, None).run()


def test_the_console_consumer_stops_on_a_registry_outage_and_leaves_the_message_for_later(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outage = RegistryUnavailableError("registry down", topic=TOPIC)
    consumer = FakeConsumer([FakeMessage(1, value=b"a"), _bad(2, outage), FakeMessage(3, value=b"c")])
    assert _console(FakeConsoleClient(consumer), dead_letter_topic="dlq") == 1
    assert (consumer.acknowledged, consumer.negatively_acknowledged) == ([1], [2])
    assert "receive 3" not in consumer.events  # stopped: an outage is not bad data to skip
    err = capsys.readouterr().err
    assert "message 2 (2,0,-1,0): registry down" in err and "stopped" in err


def test_the_console_consumer_sends_dead_letter_copies_without_waiting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    consumer = FakeConsumer([_bad(n) for n in range(1, 41)] + [FakeMessage(41, value=b"ok")])
    client = FakeConsoleClient(consumer, answer_delay=0.05)
    assert _console(client, dead_letter_topic="dlq") == 1
    assert sorted(consumer.acknowledged) == list(range(1, 42))  # each once its copy is persisted
    assert len(client.sent) == 40 and client.most_in_flight > 1  # not one round trip each
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("; copying it to dlq (acknowledged once persisted)")
    assert err[-1].endswith(
        "1 message from persistent://acme/orders/in, 40 failed (40 dead-lettered, 0 redelivered later)"
    )


def test_the_console_consumer_exits_0_when_stdout_closes_early(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    class Closed(io.StringIO):  # `consume ... | head -1`, after head has exited
        def write(self, text: str) -> int:
            raise BrokenPipeError

    consumer = FakeConsumer([FakeMessage(1, value=b"a"), FakeMessage(2, value=b"b")])
    monkeypatch.setattr(sys, "stdout", Closed())
    assert _console(FakeConsoleClient(consumer)) == 0
    assert consumer.negatively_acknowledged == [1] and "receive 2" not in consumer.events
    assert capsys.readouterr().err.strip().endswith("0 failed, stopped: stdout was closed")


class _Raw(bytes):
    """A C++ message, as far as the loop and its log line read it."""

    def message_id(self) -> str:
        return f"id of {self.decode()}"


class _RawConsumer:
    """What a `pulsar.Consumer` wraps: pulsar-client's C++ consumer, as far as `consume` calls it."""

    def __init__(self, payloads: list[bytes]) -> None:
        self.waiting = [_Raw(payload) for payload in payloads]
        self.acknowledged: list[bytes] = []
        self.negatively_acknowledged: list[bytes] = []

    def receive(self, timeout_millis: int | None = None) -> bytes:
        if not self.waiting:
            raise pulsar.Timeout("no message")
        return self.waiting.pop(0)

    def acknowledge(self, raw: bytes) -> None:
        self.acknowledged.append(raw)

    def negative_acknowledge(self, raw: bytes) -> None:
        self.negatively_acknowledged.append(raw)


class _Schema:
    """Decodes b"ok ..." to its text; anything else fails as a malformed payload."""

    def decode_message(self, raw: bytes) -> str:
        if not raw.startswith(b"ok"):
            raise DecodeError("malformed", topic=TOPIC, subject="s")
        return raw.decode()


def test_a_pulsar_consumer_is_called_past_its_python_wrappers(monkeypatch: pytest.MonkeyPatch) -> None:
    """`consume` on a `pulsar.Consumer` receives and acknowledges on the C++ consumer it wraps
    (the wrappers' checks cost ~0.3 us a message) and hands `handle` a `pulsar.Message` all the
    same; a failed message and a failed handler still take the wrapper's negative acknowledge."""

    def wrapper_called(*args: Any) -> None:
        raise AssertionError("the Python wrapper was called")

    consumer = pulsar.Consumer()
    consumer._consumer = raw = _RawConsumer([b"ok 1", b"bad", b"ok 2"])
    consumer._schema = _Schema()
    monkeypatch.setattr(pulsar.Consumer, "receive", wrapper_called)
    monkeypatch.setattr(pulsar.Consumer, "acknowledge", wrapper_called)
    handled: list[tuple[bytes, str]] = []

    def handle(msg: Any, value: str) -> None:
        assert isinstance(msg, pulsar.Message)
        handled.append((msg._message, value))

    result = consume(consumer, handle, timeout_millis=1)
    assert handled == [(b"ok 1", "ok 1"), (b"ok 2", "ok 2")]
    assert (raw.acknowledged, raw.negatively_acknowledged) == ([b"ok 1", b"ok 2"], [b"bad"])
    assert (result.processed, result.redelivered) == (2, 1)

    def broken(msg: Any, value: str) -> None:
        raise RuntimeError("bad code")

    raw.waiting = [_Raw(b"ok 3")]
    with pytest.raises(RuntimeError, match="bad code"):
        consume(consumer, broken, timeout_millis=1)
    assert raw.negatively_acknowledged == [b"bad", b"ok 3"]
