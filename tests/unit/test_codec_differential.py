"""The compiled path against the reference path (confluent-kafka's serdes), case by case.

Every case runs through one schema twice: once with its codec (`codec/`), once with the codec
switched off, so both share the registry, the rule engine and the ids. They must agree on the
payload bytes and the schema id, the decoded value, and the outcome of every rule: which error,
with which text, and the DLQ copy (topic, bytes, properties, key). Records are generated with
hypothesis; rule sets cover every kind, mode and action the engine runs.

Where a case compiles, the test also checks that the reference serde was *not* called for it,
so a codec that silently fell back on every message would fail here.

Rule metrics are on for the whole module (`metrics/`): both ways must count the same rule
executions, with the same outcomes and actions, once each, also where a compiled rule fails and
the message falls back to the reference path.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import re
import types
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.schema_registry.serde import RuleError
from contracts import FakePulsarClient, contract, mock_factory, rule
from google.protobuf import descriptor_pb2
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemas import add_fields, message_class

from pulsar_external_schema import (
    ExternalSchema,
    ExternalSchemaError,
    KeyValue,
    SchemaRegistrySchemaFactory,
    metrics,
)
from pulsar_external_schema import schema_id as ids
from pulsar_external_schema.codec import PLAN_CACHE_SIZE, ReadPlan, Reference, WritePlan
from pulsar_external_schema.protobuf_text import file_descriptor_proto

TOPIC = "persistent://acme/orders/payments"
EXAMPLES = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# -- running one case both ways ---------------------------------------------------------------------


class Counting:
    """Wraps a reference serde and counts its calls."""

    def __init__(self, serde: Any) -> None:
        self.serde, self.calls = serde, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.serde(*args)


@pytest.fixture(autouse=True, scope="module")
def _rule_metrics() -> Iterator[None]:
    """On before any schema of this module builds a plan (plans are metered when built)."""
    metrics.enable_rule_metrics()
    yield
    metrics.disable_rule_metrics()


def _counted() -> dict[Any, int]:
    store = metrics.recording()
    assert store is not None
    return store.counts()


def outcome(call: Callable[[], Any], client: FakePulsarClient) -> tuple[Any, ...]:
    """What a call did: its result, or its error's type and text; the rule executions it counted;
    and the DLQ copies it wrote."""
    before, counted = len(client.sent), _counted()
    try:
        result: tuple[Any, ...] = ("ok", call())
    except ExternalSchemaError as error:
        # fastavro's errors name the buffer they read from by its address: not a difference
        result = ("error", type(error).__name__, re.sub(r" at 0x[0-9a-f]+", "", str(error)))
    after = _counted()
    executed = {key: n - counted.get(key, 0) for key, n in after.items() if n != counted.get(key, 0)}
    return (*result, executed, client.sent[before:])


class Both:
    """One external schema, run with and without its codec."""

    def __init__(self, schema: ExternalSchema, topic: str = TOPIC) -> None:
        self.schema, self.topic = schema, topic
        self.client = FakePulsarClient()
        schema._pulsar_client = self.client
        parts = [schema._part]
        key_part = getattr(schema, "_key_part", None)
        if key_part is not None:
            parts.append(key_part)
        self.parts = parts
        self.codecs = [part.codec for part in parts if part.codec is not None]
        assert len(self.codecs) == len(parts)
        self.serializers = [Counting(part.serializer) for part in parts]
        self.deserializers = [Counting(part.deserializer) for part in parts]
        for part, serializer, deserializer in zip(parts, self.serializers, self.deserializers, strict=True):
            part.serializer = serializer
            part.deserializer = deserializer

    @contextmanager
    def reference(self) -> Iterator[None]:
        for part in self.parts:
            part.codec = None
        # and the readers the parts keep, and the writers the codecs keep, for the schema's
        # short ways (emptied in place: the extension's `Encoder` holds the writers')
        kept = [
            (dict(part.readers), dict(codec.writers))
            for part, codec in zip(self.parts, self.codecs, strict=True)
        ]
        for part, codec in zip(self.parts, self.codecs, strict=True):
            part.readers.clear()
            codec.writers.clear()
        try:
            yield
        finally:
            for part, codec, (readers, writers) in zip(self.parts, self.codecs, kept, strict=True):
                part.codec = codec
                part.readers.clear()
                part.readers.update(readers)
                codec.writers.clear()
                codec.writers.update(writers)

    def reference_calls(self) -> int:
        return sum(counter.calls for counter in (*self.serializers, *self.deserializers))

    def encode(self, value: Any, properties: dict[str, str] | None = None) -> tuple[Any, ...]:
        def call() -> Any:
            context = self.schema.message_context(self.topic, dict(properties or {}), partition_key="k1")
            return tuple(self.schema.encode_for(self.topic, value, context))

        return outcome(call, self.client)

    def decode(self, data: bytes, schema_id: bytes | None, properties: dict[str, str] | None = None) -> Any:
        def call() -> Any:
            context = self.schema.message_context(self.topic, dict(properties or {}), partition_key="k1")
            return self.schema.decode(self.topic, data, schema_id, context)

        return outcome(call, self.client)

    def check(self, value: Any, properties: dict[str, str] | None = None, *, compiled: bool) -> Any:
        """Encode and decode `value` both ways; both must agree. Returns the (compiled) outcome."""
        with self.reference():
            expected = self.encode(value, properties)
        calls = self.reference_calls()
        got = self.encode(value, properties)
        assert got == expected
        if compiled and got[0] == "ok":
            assert self.reference_calls() == calls, "the compiled path called the reference serde"
        if got[0] != "ok":
            return got
        data, schema_id = got[1]
        with self.reference():
            expected_value = self.decode(data, schema_id, properties)
        calls = self.reference_calls()
        got_value = self.decode(data, schema_id, properties)
        assert got_value == expected_value
        if compiled and got_value[0] == "ok":
            assert self.reference_calls() == calls, "the compiled path called the reference deserializer"
        if not properties:
            self.check_short_ways(value, got, got_value)
        return got_value

    def check_short_ways(self, value: Any, encoded: tuple[Any, ...], decoded: tuple[Any, ...]) -> None:
        """A message without properties, as producers and pulsar-client send and read most: the
        schema's short ways (`encode_for` / `decode` with no context, kept per topic and id) give
        what the long way gave. (No context means no partition key: DLQ copies are not compared.)"""
        for _ in range(2):  # the first call keeps the codec's writer, the second uses it
            short = outcome(lambda: tuple(self.schema.encode_for(self.topic, value)), self.client)
            assert short[:-1] == encoded[:-1]
        data, schema_id = encoded[1]
        for _ in range(2):
            short = outcome(lambda: self.schema.decode(self.topic, data, schema_id), self.client)
            assert short[:-1] == decoded[:-1]


_SCHEMAS: dict[str, Both] = {}


def once(key: str, make: Callable[[], Both]) -> Both:
    """One schema per key for all of a test's generated cases (building one costs ~10 ms)."""
    if key not in _SCHEMAS:
        _SCHEMAS[key] = make()
    return _SCHEMAS[key]


def warm(both: Both, value: Any) -> None:
    """The first message of a topic goes the reference way (it resolves the writer): send one."""
    both.encode(value)


def plans(both: Both) -> tuple[Any, Any]:
    codec = both.codecs[0]
    assert codec is not None
    write = codec.writes.get(both.topic)
    reads = list(codec.reads.plans.values())
    return write, reads[0] if reads else None


# -- Avro --------------------------------------------------------------------------------------------

AVRO = {
    "type": "record",
    "name": "Payment",
    "namespace": "acme",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "amount", "type": "double"},
        {"name": "ok", "type": "boolean"},
        {"name": "blob", "type": "bytes"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["CARD", "CASH", "WIRE"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}],
            },
        },
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 4}},
    ],
}

text = st.text(max_size=20)
longs = st.integers(-(2**63), 2**63 - 1)
ints = st.integers(-(2**31), 2**31 - 1)
avro_records = st.fixed_dictionaries(
    {
        "id": longs,
        "name": text,
        "count": ints,
        "ratio": st.floats(width=32, allow_nan=False),
        "amount": st.floats(allow_nan=False),
        "ok": st.booleans(),
        "blob": st.binary(max_size=16),
        "note": st.none() | text,
        "kind": st.sampled_from(["CARD", "CASH", "WIRE"]),
        "tags": st.lists(text, max_size=4),
        "attrs": st.dictionaries(text, longs, max_size=3),
        "address": st.fixed_dictionaries({"city": text, "zip": st.none() | ints}),
        "day": st.dates(datetime.date(1900, 1, 1), datetime.date(2200, 1, 1)),
        "at": st.datetimes(
            datetime.datetime(1970, 1, 1), datetime.datetime(2200, 1, 1), timezones=st.just(datetime.UTC)
        ).map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
        "price": st.decimals(-(10**6), 10**6, places=2, allow_nan=False, allow_infinity=False),
        "ref": st.uuids().map(str),
        "code": st.binary(min_size=4, max_size=4),
    }
)


def avro_schema(*rules: dict[str, Any], factory_conf: dict[str, Any] | None = None, **parts: Any) -> Both:
    factory = mock_factory(**(factory_conf or {}))
    rule_set: dict[str, Any] = {"ruleSet": {"domainRules": list(rules)}} if rules else {}
    return Both(factory.avro(contract(AVRO, **rule_set, **parts)))


@pytest.fixture(scope="module")
def avro_plain() -> Both:
    return avro_schema()


@pytest.fixture(scope="module")
def avro_condition() -> Both:
    return avro_schema(rule("cheap", "CONDITION", "CEL", "WRITEREAD", "message.amount < 1000.0"))


@given(record=avro_records)
@EXAMPLES
def test_avro_without_rules(avro_plain: Both, record: dict[str, Any]) -> None:
    warm(avro_plain, record)
    result = avro_plain.check(record, compiled=True)
    assert result[0] == "ok"
    assert type(plans(avro_plain)[0]) is WritePlan


@given(record=avro_records)
@EXAMPLES
def test_avro_with_a_cel_condition(avro_condition: Both, record: dict[str, Any]) -> None:
    warm(avro_condition, {**record, "amount": 1.0})
    result = avro_condition.check(record, compiled=True)
    if record["amount"] < 1000.0:
        assert result[0] == "ok"
    else:
        assert result[:2] == ("error", "RuleViolationError")
        assert "rule 'cheap' (CONDITION CEL, WRITE) failed" in result[2]
    write, read = plans(avro_condition)
    assert type(write) is WritePlan and write.rules and not write.steps  # the metered writer runs the rule
    assert read is None or type(read) is ReadPlan


@given(record=avro_records, bad=st.sampled_from(["name", "count", "kind", "code", "tags"]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_avro_values_that_do_not_fit_fail_the_same_way(
    avro_plain: Both, record: dict[str, Any], bad: str
) -> None:
    wrong = {"name": 12, "count": "x", "kind": "GOLD", "code": b"\x00", "tags": 5}[bad]
    result = avro_plain.check({**record, bad: wrong}, compiled=True)
    assert result[:2] == ("error", "ValueOutsideSchemaError")
    assert f"field {bad}:" in result[2]


#: Values fastavro writes changed, each in the field that would change it: both paths refuse them.
_CHANGED_BY_FASTAVRO: list[tuple[str, Any]] = [
    ("count", 2.5),
    ("count", 2**31),
    ("count", -(2**31) - 1),
    ("count", True),
    ("id", 1.0),
    ("id", False),
    ("ratio", 1e300),
    ("ratio", "1.5"),
    ("amount", True),
    ("amount", "1.5"),
    ("ok", 1),
    ("ok", "yes"),
    ("ok", None),
    ("tags", "abc"),
    ("tags", {"a": 1}),
    ("tags", {"a", "b"}),
    ("attrs", {"a": 2.5}),
    ("address", {"city": "x", "zip": 2.5}),
    ("day", 2.5),
    ("day", datetime.datetime(2020, 1, 1, 12, 30)),
    ("at", 1.5),
]


@pytest.mark.parametrize(("field", "wrong"), _CHANGED_BY_FASTAVRO)
def test_avro_values_fastavro_would_change_are_refused_both_ways(
    avro_plain: Both, field: str, wrong: Any
) -> None:
    warm(avro_plain, _SAMPLE)
    result = avro_plain.check({**_SAMPLE, field: wrong}, compiled=True)
    assert result[:2] == ("error", "ValueOutsideSchemaError")
    assert f"field {field}" in result[2]
    assert result[2].startswith("refused to write a value outside the schema's types: ")
    if wrong is not None:  # never the value (it may be a PII field's), only its type
        assert repr(wrong) not in result[2].split(" (topic")[0]


@pytest.mark.parametrize(
    ("field", "right"),
    [
        ("count", 2**31 - 1),
        ("count", -(2**31)),
        ("ratio", 3),  # Avro promotes an int to float and double
        ("amount", 2**62),
        ("amount", float("inf")),
        ("ratio", float("-inf")),
        ("tags", ("a", "b")),
        ("day", 18000),  # the number a date is stored as
        ("at", 1_600_000_000_000),
        ("note", None),
    ],
)
def test_avro_values_inside_the_types_are_written_both_ways(avro_plain: Both, field: str, right: Any) -> None:
    warm(avro_plain, _SAMPLE)
    result = avro_plain.check({**_SAMPLE, field: right}, compiled=True)
    assert result[0] == "ok"


@given(data=st.binary(max_size=40))
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_avro_malformed_payloads_fail_the_same_way(avro_condition: Both, data: bytes) -> None:
    warm(avro_condition, _SAMPLE)
    schema_id = plans(avro_condition)[0].schema_id
    with avro_condition.reference():
        expected = avro_condition.decode(data, schema_id)
    calls = avro_condition.reference_calls()
    got = avro_condition.decode(data, schema_id)
    assert got == expected
    if data and got[0] == "error" and "could not decode" in got[2]:
        # fastavro refused it: its error is final, the payload is not decoded a second time
        assert avro_condition.reference_calls() == calls


_SAMPLE: dict[str, Any] = {
    "id": 1,
    "name": "n",
    "count": 1,
    "ratio": 0.5,
    "amount": 2.5,
    "ok": True,
    "blob": b"",
    "note": None,
    "kind": "CARD",
    "tags": [],
    "attrs": {},
    "address": {"city": "c", "zip": None},
    "day": datetime.date(2020, 1, 1),
    "at": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
    "price": decimal.Decimal("1.00"),
    "ref": str(uuid.uuid4()),
    "code": b"abcd",
}

# -- rule kinds, modes and actions ---------------------------------------------------------------------

CHEAP = "message.amount < 1000.0"


def cheap(record: dict[str, Any]) -> bool:
    return bool(record["amount"] < 1000.0)


def always(record: dict[str, Any]) -> bool:
    return True


def never(record: dict[str, Any]) -> bool:
    return False


#: name: (rules, which records the compiled path encodes without the reference serde)
RULE_CASES: dict[str, tuple[list[dict[str, Any]], Callable[[dict[str, Any]], bool]]] = {
    "condition WRITE": ([rule("r", "CONDITION", "CEL", "WRITE", CHEAP)], cheap),
    "condition READ": ([rule("r", "CONDITION", "CEL", "READ", CHEAP)], always),
    "condition WRITEREAD": ([rule("r", "CONDITION", "CEL", "WRITEREAD", CHEAP)], cheap),
    "two conditions": (
        [
            rule("a", "CONDITION", "CEL", "WRITEREAD", CHEAP),
            rule("b", "CONDITION", "CEL", "WRITEREAD", "size(message.name) < 15"),
        ],
        lambda record: cheap(record) and len(record["name"]) < 15,
    ),
    "guard": (
        [rule("g", "CONDITION", "CEL", "WRITE", f"message.ok ; {CHEAP}")],
        lambda record: not record["ok"] or cheap(record),
    ),
    "guard that errors": ([rule("g", "CONDITION", "CEL", "WRITE", f"message.nope > 1 ; {CHEAP}")], always),
    "body that errors": ([rule("e", "CONDITION", "CEL", "WRITE", "message.nope > 1")], never),
    "non-bool body": ([rule("n", "CONDITION", "CEL", "WRITE", "message.name")], never),
    "disabled": ([rule("d", "CONDITION", "CEL", "WRITEREAD", "false", disabled=True)], always),
    "onFailure NONE": ([rule("f", "CONDITION", "CEL", "WRITE", CHEAP, onFailure="NONE")], cheap),
    "onFailure DLQ": (
        [rule("q", "CONDITION", "CEL", "WRITEREAD", CHEAP, onFailure="DLQ", params={"dlq.topic": "bad"})],
        cheap,
    ),
    "comma actions": ([rule("c", "CONDITION", "CEL", "WRITEREAD", CHEAP, onFailure="NONE,ERROR")], cheap),
    "onSuccess ERROR": ([rule("s", "CONDITION", "CEL", "WRITE", CHEAP, onSuccess="ERROR")], never),
    "cel-python engine": (
        [rule("p", "CONDITION", "CEL", "WRITE", CHEAP, params={"cel.engine": "cel-python"})],
        never,
    ),
    "transform": ([rule("t", "TRANSFORM", "CEL", "WRITE", "message")], never),
    "CEL_FIELD": (
        [rule("f", "TRANSFORM", "CEL_FIELD", "WRITEREAD", "typeName == 'STRING' ; value + '!'")],
        never,
    ),
    "enableAt elsewhere": ([rule("x", "CONDITION", "CEL", "WRITEREAD", "false")], always),
}


@pytest.mark.parametrize("case", list(RULE_CASES))
@given(record=avro_records)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_rule_case_agrees(case: str, record: dict[str, Any]) -> None:
    rules, compiled = RULE_CASES[case]
    rule_set: dict[str, Any] = {"domainRules": rules}
    if case == "enableAt elsewhere":
        rule_set["enableAt"] = "BROKER"  # not ALL/CLIENT: the client runs none of it
    both = once(f"case {case}", lambda: Both(mock_factory().avro(contract(AVRO, ruleSet=rule_set))))
    warm(both, _SAMPLE)
    for value in (record, {**record, "amount": 5000.0}):
        both.check(value, compiled=compiled(value))
    write = plans(both)[0]
    assert (type(write) is WritePlan) == (compiled is not never), write


@given(record=avro_records)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_replayed_dlq_copy_skips_its_rule_both_ways(record: dict[str, Any]) -> None:
    both = once("replay", lambda: avro_schema(rule("cheap", "CONDITION", "CEL", "WRITEREAD", CHEAP)))
    warm(both, _SAMPLE)
    # a `__rule.name` property hands the message to the reference path, which skips that rule
    result = both.check({**record, "amount": 5000.0}, {"__rule.name": "cheap"}, compiled=False)
    assert result[0] == "ok"


def test_the_dlq_copy_is_the_same_both_ways() -> None:
    both = avro_schema(
        rule("q", "CONDITION", "CEL", "WRITEREAD", CHEAP, onFailure="DLQ", params={"dlq.topic": "bad"})
    )
    warm(both, _SAMPLE)
    result = both.check({**_SAMPLE, "amount": 5000.0}, {"trace": "t1"}, compiled=False)
    assert result[:2] == ("error", "DeadLetteredError")
    copy = result[-1][0]
    assert copy["topic"] == "persistent://acme/orders/bad"
    assert copy["properties"]["__rule.name"] == "q" and copy["properties"]["trace"] == "t1"
    assert copy["key"] == "k1"


#: READ rules a record of `amount` 5000 fails, where every step is a condition: the outcome of
#: the failure is the rule engine's, run on the value decoded once (`ReadPlan.rules`).
READ_FAILURES: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "ERROR": ([rule("r", "CONDITION", "CEL", "READ", CHEAP)], {}),
    "WRITEREAD, described": ([rule("r", "CONDITION", "CEL", "READ", CHEAP, doc="too dear")], {}),
    "DLQ": ([rule("q", "CONDITION", "CEL", "READ", CHEAP, onFailure="DLQ", params={"dlq.topic": "bad"})], {}),
    "NONE": ([rule("n", "CONDITION", "CEL", "READ", CHEAP, onFailure="NONE")], {}),
    "the second of two": (
        [
            rule("a", "CONDITION", "CEL", "READ", "size(message.name) < 100"),
            rule("b", "CONDITION", "CEL", "READ", CHEAP, onFailure="NONE,ERROR"),
        ],
        {},
    ),
    "a guard that holds": ([rule("g", "CONDITION", "CEL", "READ", f"true ; {CHEAP}")], {}),
    "Spark's invalid-message action": (
        [rule("q", "CONDITION", "CEL", "READ", CHEAP, onFailure="DLQ", params={"dlq.topic": "bad"})],
        {"rule_actions": "invalid"},
    ),
}


@pytest.mark.parametrize("case", list(READ_FAILURES))
@given(record=avro_records)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_failed_read_condition_gets_the_engines_outcome_without_a_second_decode(
    case: str, record: dict[str, Any]
) -> None:
    """With rule metrics off (plans of conditions alone), a record a READ condition fails is
    decoded once: its error, DLQ copy and properties are those the reference path gives, and the
    reference deserializer is not called."""
    from pulsar_external_schema.rules.actions import InvalidMessageAction

    rules, args = READ_FAILURES[case]
    metrics.disable_rule_metrics()
    try:
        factory_args = {"rule_actions": [InvalidMessageAction()]} if args else {}
        both = once(
            f"read failure {case}",
            lambda: Both(mock_factory(factory_args).avro(contract(AVRO, ruleSet={"domainRules": rules}))),
        )
        both.schema.encode_for(TOPIC, _SAMPLE)  # the first message resolves the writer

        def decoded(data: bytes, schema_id: Any, properties: dict[str, str]) -> tuple[Any, ...]:
            before = len(both.client.sent)
            try:
                context = both.schema.message_context(TOPIC, dict(properties), partition_key="k1")
                result: tuple[Any, ...] = ("ok", both.schema.decode(TOPIC, data, schema_id, context))
            except ExternalSchemaError as error:
                result = ("error", type(error).__name__, str(error), vars(error))
            return (*result, both.client.sent[before:])

        for value in (record, {**record, "amount": 5000.0}):
            data, schema_id = both.schema.encode_for(TOPIC, value)
            with both.reference():
                expected = decoded(data, schema_id, {"trace": "t1"})
            calls = both.reference_calls()
            assert decoded(data, schema_id, {"trace": "t1"}) == expected
            assert both.reference_calls() == calls, "the reference deserializer decoded the message again"
            assert type(plans(both)[1]) is ReadPlan and plans(both)[1].rules is not None
    finally:
        metrics.enable_rule_metrics()


# -- writer and reader versions, prefix mode, key/value ------------------------------------------------


def test_a_pinned_reader_version_resolves_like_the_reference() -> None:
    factory = mock_factory()
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "b", "type": "int", "default": 7}]}
    writer = factory.avro(json.dumps(v1))
    encoded = writer.encode(TOPIC, {"a": "x"})
    factory.registry_client.register_schema(
        "acme.orders.payments-value",
        contract(v2, ruleSet={"domainRules": [rule("r", "CONDITION", "CEL", "READ", "message.b == 7")]}),
    )
    reader = Both(sharing(factory, **{"use.latest.version": True}).avro(EMPTY))
    with reader.reference():
        expected = reader.decode(encoded.data, encoded.schema_id)
    got = reader.decode(encoded.data, encoded.schema_id)
    assert got == expected and got[1] == {"a": "x", "b": 7}
    assert type(plans(reader)[1]) is ReadPlan


EMPTY = json.dumps({"type": "record", "name": "R", "fields": []})


def sharing(factory: SchemaRegistrySchemaFactory, **conf: Any) -> SchemaRegistrySchemaFactory:
    """Another factory on the same in-memory registry (each `mock://` client has a store of its own)."""
    other = mock_factory(**conf)
    other._registry.client = other._registry.reader = factory.registry_client
    return other


@given(record=avro_records)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_prefix_mode_agrees(record: dict[str, Any]) -> None:
    both = once(
        "prefix", lambda: Both(mock_factory(**{"schema.id.location": "prefix"}).avro(json.dumps(AVRO)))
    )
    warm(both, _SAMPLE)
    result = both.check(record, compiled=True)
    assert result[0] == "ok"
    assert plans(both)[0].prefix == plans(both)[0].schema_id


@given(key=text, record=avro_records)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_key_value_agrees(key: str, record: dict[str, Any]) -> None:
    def make() -> Both:
        factory = mock_factory()
        value_contract = contract(
            AVRO, ruleSet={"domainRules": [rule("r", "CONDITION", "CEL", "WRITE", CHEAP)]}
        )
        return Both(factory.key_value(factory.avro('"string"'), factory.avro(value_contract)))

    both = once("key/value", make)
    warm(both, KeyValue("k", _SAMPLE))
    both.check(KeyValue(key, record), compiled=True)
    both.check(KeyValue(key, {**record, "amount": 5000.0}), compiled=True)


# -- JSON Schema ---------------------------------------------------------------------------------------

JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Payment",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "maxLength": 12},
        "amount": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "name", "amount"],
}
json_records = st.fixed_dictionaries(
    {
        "id": st.integers(-(2**53), 2**53),
        "name": st.text(max_size=16),
        "amount": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-1000, 10**6),
    },
    optional={
        "tags": st.lists(st.text(max_size=5), max_size=3) | st.integers(),
        "address": st.fixed_dictionaries({"city": st.text(max_size=5)}) | st.just({}),
        "note": st.none() | st.text(max_size=5),
    },
)


@pytest.mark.parametrize(
    "rules", [[], [rule("cheap", "CONDITION", "CEL", "WRITEREAD", "message.amount < 1000.0")]]
)
@given(record=json_records)
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_json_schema_agrees(rules: list[dict[str, Any]], record: dict[str, Any]) -> None:
    rule_set = {"ruleSet": {"domainRules": rules}} if rules else {}
    both = once(f"json {rules}", lambda: Both(mock_factory().json(contract(JSON_SCHEMA, "JSON", **rule_set))))
    warm(both, {"id": 1, "name": "a", "amount": 1})
    both.check(record, compiled=True)
    assert type(plans(both)[0]) is WritePlan


# -- Protobuf ------------------------------------------------------------------------------------------


def _payment_class() -> Any:
    label = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="acme/payment.proto", package="acme", syntax="proto3")
    payment = proto.message_type.add(name="Payment")
    address = proto.message_type.add(name="Address")
    address.field.add(name="city", number=1, type=label.TYPE_STRING, label=label.LABEL_OPTIONAL)
    kind = proto.enum_type.add(name="Kind")
    for number, name in enumerate(["CARD", "CASH", "WIRE"]):
        kind.value.add(name=name, number=number)
    add_fields(
        payment,
        [
            ("id", 1, label.TYPE_INT64, label.LABEL_OPTIONAL, None),
            ("name", 2, label.TYPE_STRING, label.LABEL_OPTIONAL, None),
            ("amount", 3, label.TYPE_DOUBLE, label.LABEL_OPTIONAL, None),
            ("kind", 4, label.TYPE_ENUM, label.LABEL_OPTIONAL, ".acme.Kind"),
            ("tags", 5, label.TYPE_STRING, label.LABEL_REPEATED, None),
            ("address", 6, label.TYPE_MESSAGE, label.LABEL_OPTIONAL, ".acme.Address"),
            ("card", 7, label.TYPE_STRING, label.LABEL_OPTIONAL, None),
            ("iban", 8, label.TYPE_STRING, label.LABEL_OPTIONAL, None),
            ("count", 9, label.TYPE_UINT32, label.LABEL_OPTIONAL, None),
        ],
    )
    payment.oneof_decl.add(name="method")
    for field in payment.field:
        if field.name in ("card", "iban"):
            field.oneof_index = 0
    return message_class(proto, "acme.Payment")


PAYMENT = _payment_class()
ADDRESS: Any = GetMessageClass(  # a message class of a descriptor made here: no stub knows it
    PAYMENT.DESCRIPTOR.fields_by_name["address"].message_type
)
payments = st.builds(
    lambda fields, method: PAYMENT(**fields, **method),
    st.fixed_dictionaries(
        {
            "id": longs,
            "name": text,
            "amount": st.floats(allow_nan=False),
            "kind": st.integers(0, 2),
            "tags": st.lists(text, max_size=3),
            "address": st.builds(lambda city: ADDRESS(city=city), text),
            "count": st.integers(0, 2**32 - 1),
        }
    ),
    st.sampled_from([{}, {"card": "4111"}, {"iban": "DE00"}]),
)


@pytest.mark.parametrize(
    "rules", [[], [rule("cheap", "CONDITION", "CEL", "WRITEREAD", "message.amount < 1000.0")]]
)
@given(message=payments)
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_protobuf_agrees(rules: list[dict[str, Any]], message: Any) -> None:
    rule_set = {"ruleSet": {"domainRules": rules}} if rules else {}
    # The in-memory registry answers every format with what it stores, and the deserializer asks
    # for the serialized descriptor: so register that form here (the real registry gets .proto
    # text, tests/integration).
    serialized = base64.b64encode(file_descriptor_proto(PAYMENT).SerializeToString()).decode()
    both = once(
        f"protobuf {rules}",
        lambda: Both(mock_factory().protobuf(PAYMENT, schema=contract(serialized, "PROTOBUF", **rule_set))),
    )
    warm(both, PAYMENT(id=1))
    result = both.check(message, compiled=True)
    if not rules or message.amount < 1000.0:
        assert result[0] == "ok"
    assert type(plans(both)[0]) is WritePlan


# -- bounds and expiry ---------------------------------------------------------------------------------


def test_a_consumer_of_many_schema_ids_keeps_a_bounded_number_of_plans() -> None:
    factory = mock_factory()
    writer = factory.avro(
        json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]})
    )
    # One id read on 1,200 topics: their subjects do not hold it, so the subject check is off.
    reader = sharing(factory, **{"schema.id.subject.check": False}).avro(EMPTY)
    encoded = writer.encode(TOPIC, {"a": 1})
    for number in range(PLAN_CACHE_SIZE + 200):  # a plan per (topic, id): 1,200 topics, one id
        topic = f"persistent://acme/orders/t{number}"
        assert reader.decode(topic, encoded.data, encoded.schema_id) == {"a": 1}
    codec = reader._part.codec
    assert codec is not None
    assert len(codec.reads) == PLAN_CACHE_SIZE


def test_a_consumer_of_many_distinct_schemas_keeps_a_bounded_number_of_them() -> None:
    """1,200 schema ids, each a schema of its own: the plans and the deserializer's parsed schemas
    (confluent-kafka keeps every one it parsed, unbounded) stay at PLAN_CACHE_SIZE."""
    factory = mock_factory()
    reader = sharing(factory).avro(EMPTY)
    for number in range(PLAN_CACHE_SIZE + 200):
        fields = [{"name": f"f{number}", "type": "long"}]
        writer = factory.avro(json.dumps({"type": "record", "name": f"R{number}", "fields": fields}))
        encoded = writer.encode(TOPIC, {f"f{number}": number})
        assert reader.decode(TOPIC, encoded.data, encoded.schema_id) == {f"f{number}": number}
        writer.close()
    codec = reader._part.codec
    assert codec is not None
    assert len({schema_id for _, schema_id in codec.reads.plans}) == PLAN_CACHE_SIZE
    deserializer: Any = reader._part.deserializer
    assert len(deserializer._parsed_schemas.parsed_schemas) == PLAN_CACHE_SIZE


def test_plans_expire_with_the_latest_cache_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    from pulsar_external_schema.codec import plans as plans_module

    now = [1000.0]
    monkeypatch.setattr(plans_module, "monotonic", lambda: now[0])
    both = Both(mock_factory(**{"cache.latest.ttl.sec": 30}).avro(json.dumps(AVRO)))
    warm(both, _SAMPLE)
    assert type(plans(both)[0]) is WritePlan
    now[0] += 31
    assert both.codecs[0] is not None and both.codecs[0].writes.get(TOPIC) is None
    both.encode(_SAMPLE)  # resolved again on the reference path
    assert type(plans(both)[0]) is WritePlan


def test_a_rule_set_that_does_not_compile_says_why_once(caplog: pytest.LogCaptureFixture) -> None:
    both = avro_schema(rule("t", "TRANSFORM", "CEL_FIELD", "WRITE", "typeName == 'STRING' ; value"))
    with caplog.at_level("INFO", logger="pulsar_external_schema.codec.part"):
        for _ in range(5):
            both.encode(_SAMPLE)
    write = plans(both)[0]
    assert type(write) is Reference and "CEL_FIELD" in write.reason
    said = [r for r in caplog.records if "not compiled" in r.getMessage()]
    assert len(said) == 1 and "acme.orders.payments-value" in said[0].getMessage()


# -- batches -------------------------------------------------------------------------------------------


def _same(result: Any) -> Any:
    """A batch entry as comparable data: a value, or an error's type and text."""
    if isinstance(result, ExternalSchemaError):
        return ("error", type(result).__name__, str(result))
    return ("ok", result)


@given(
    records=st.lists(avro_records, min_size=1, max_size=12),
    faults=st.lists(st.sampled_from(["none", "rule", "bytes", "replay", "no id", "kv id"]), min_size=12),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_batch_decodes_as_its_messages_one_by_one(records: list[dict[str, Any]], faults: list[str]) -> None:
    both = once(
        "batch", lambda: avro_schema(rule("cheap", "CONDITION", "CEL", "READ", CHEAP, onFailure="ERROR"))
    )
    schema = both.schema
    messages: list[tuple[bytes, bytes | None, dict[str, str] | None]] = []
    for record, fault in zip(records, faults, strict=False):
        if fault == "rule":
            record = {**record, "amount": 5000.0}
        encoded = schema.encode(TOPIC, record)
        data, schema_id = encoded.data, encoded.schema_id
        properties: dict[str, str] | None = None
        if fault == "bytes":
            data = b"\xff" * 3
        elif fault == "replay":
            record, properties = {**record, "amount": 5000.0}, {"__rule.name": "cheap"}
            data = schema.encode(TOPIC, record).data
        elif fault == "no id":
            schema_id = None
        elif fault == "kv id":
            schema_id = b"\xfe" + (schema_id or b"")
        messages.append((data, schema_id, properties))
    batch = [_same(result) for result in schema.decode_batch(TOPIC, messages)]
    with both.reference():
        one_by_one = [_same(decode_one(schema, *message)) for message in messages]
    assert batch == one_by_one


def decode_one(schema: ExternalSchema, data: bytes, schema_id: bytes | None, properties: Any) -> Any:
    try:
        return schema.decode(TOPIC, data, schema_id, schema.message_context(TOPIC, properties))
    except ExternalSchemaError as error:
        return error


def test_a_batch_of_one_schema_id_takes_the_compiled_path() -> None:
    both = avro_schema(rule("cheap", "CONDITION", "CEL", "READ", CHEAP))
    encoded = both.schema.encode(TOPIC, _SAMPLE)
    both.schema.decode(TOPIC, encoded.data, encoded.schema_id)  # the plan is built
    calls = both.reference_calls()
    values = both.schema.decode_batch(TOPIC, [(encoded.data, encoded.schema_id, None)] * 50)
    assert values == [both.schema.decode(TOPIC, encoded.data, encoded.schema_id)] * 50
    assert both.reference_calls() == calls


# -- CEL_FIELD transforms (Avro) -----------------------------------------------------------------------

PERSON = {
    "type": "record",
    "name": "Person",
    "namespace": "acme",
    "fields": [
        {"name": "name", "type": "string", "confluent:tags": ["PII"]},
        {"name": "email", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "age", "type": "int"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "blob", "type": "bytes"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 2}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [
                    {"name": "city", "type": "string", "confluent:tags": ["PII"]},
                    {"name": "zip", "type": ["null", "int"]},
                ],
            },
        },
        {"name": "labels", "type": {"type": "array", "items": "string"}},
    ],
}
people = st.fixed_dictionaries(
    {
        "name": text,
        "email": text,
        "note": st.none() | text,
        "age": ints,
        "score": st.floats(allow_nan=False, allow_infinity=False),
        "active": st.booleans(),
        "blob": st.binary(max_size=4),
        "kind": st.sampled_from(["A", "B"]),
        "code": st.binary(min_size=2, max_size=2),
        "address": st.fixed_dictionaries({"city": text, "zip": st.none() | ints}),
        "labels": st.lists(text, max_size=3),
    }
)


PERSON_SAMPLE = {
    "name": "n",
    "email": "e",
    "note": "x",
    "age": 4,
    "score": 1.5,
    "active": True,
    "blob": b"",
    "kind": "A",
    "code": b"ab",
    "address": {"city": "c", "zip": 1},
    "labels": [],
}


def _person(parts: dict[str, Any]) -> Schema:
    """PERSON as a contract with `parts`; `parts["schema"]`: with a date field, which the walk
    does not compile."""
    rest = {key: value for key, value in parts.items() if key != "schema"}
    if "schema" not in parts:
        return contract(PERSON, **rest)
    day = {"name": "day", "type": {"type": "int", "logicalType": "date"}, "default": 0}
    return contract({**PERSON, "fields": [*PERSON["fields"], day]}, **rest)


def field_rule(expr: str, mode: str = "WRITEREAD", **extra: Any) -> dict[str, Any]:
    return rule("f", "TRANSFORM", "CEL_FIELD", mode, expr, **extra)


FIELD_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str]] = {
    # name: (rules, contract parts, the write plan: compiled, reference, or none when every
    # message fails, so that no encode resolves the writer)
    "strings, tagged": (
        [field_rule("typeName == 'STRING' ; value == '' ? 'unspecified' : value + '!'", tags=["PII"])],
        {},
        "compiled",
    ),
    "every string, the array's items too": (
        [field_rule("typeName == 'STRING' ; value + '!'")],
        {},
        "compiled",
    ),
    "logical types stay on the reference path": (
        [field_rule("typeName == 'STRING' ; value + '!'")],
        {"schema": "with a date"},
        "reference",
    ),
    "a guard that reads the value": (
        [field_rule("value != null && typeName == 'STRING' ; value + '?'", tags=["PII"])],
        {},
        "compiled",
    ),
    "nullable fields by metadata tags": (
        [field_rule("typeName == 'NULL' ; 'was null'", tags=["OPT"])],
        {"metadata": {"tags": {"acme.Person.note": ["OPT"]}}},
        "compiled",
    ),
    "a null into an int: fails the same way": (
        [field_rule("typeName == 'NULL' ; 'was null'", tags=["OPT"])],
        {"metadata": {"tags": {"acme.Address.zip": ["OPT"]}}},
        "compiled",
    ),
    "ints, wildcard tags": (
        [field_rule("typeName == 'INT' ; value / 2", tags=["NUM"])],
        {"metadata": {"tags": {"acme.*.*": ["NUM"]}}},
        "compiled",
    ),
    "a body reading the message": (
        [field_rule("message.email + ':' + value", "WRITE", tags=["PII"])],
        {},
        "none",
    ),
    "a body of the wrong type": ([field_rule("typeName == 'STRING' ; 1", "WRITE", tags=["PII"])], {}, "none"),
    "two transforms of one tag: the first wins on write": (
        [
            field_rule("typeName == 'STRING' ; value + '1'", "WRITE", tags=["PII"]),
            field_rule("typeName == 'STRING' ; value + '2'", "WRITE", tags=["PII"]),
        ],
        {},
        "compiled",
    ),
    "a transform, then a condition": (
        [
            field_rule("typeName == 'STRING' ; value + '!'", "WRITE", tags=["PII"]),
            rule("c", "CONDITION", "CEL", "WRITE", "message.name.endsWith('!')"),
        ],
        {},
        "compiled",
    ),
}


def check_field_case(both: Both, sample: Any, value: dict[str, Any], plan: str, *, compiled: bool) -> Any:
    """One generated record through a field-rule case: both paths agree, the caller's value is
    unchanged, and the write plan is what the case says (compiled, reference, none)."""
    warm(both, sample)
    given_value = json.loads(json.dumps(value, default=lambda b: b.hex()))  # a copy to compare with
    result = both.check(value, compiled=compiled)
    assert json.loads(json.dumps(value, default=lambda b: b.hex())) == given_value, "the value was changed"
    write = plans(both)[0]
    assert {"compiled": WritePlan, "reference": Reference, "none": type(None)}[plan] is type(write), write
    return result


@pytest.mark.parametrize("case", list(FIELD_CASES))
@given(person=people)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_field_transforms_agree(case: str, person: dict[str, Any]) -> None:
    rules, parts, plan = FIELD_CASES[case]
    both = once(
        f"fields {case}",
        lambda: Both(mock_factory().avro(_person({**parts, "ruleSet": {"domainRules": rules}}))),
    )
    result = check_field_case(both, PERSON_SAMPLE, person, plan, compiled=plan == "compiled")
    if case == "strings, tagged" and result[0] == "ok":
        assert result[1]["name"] == ((person["name"] + "!!") if person["name"] else "unspecified!")
        assert result[1]["email"] == person["email"]  # not tagged PII


# -- CEL_FIELD transforms (JSON Schema) ----------------------------------------------------------------

JSON_PERSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string", "confluent:tags": ["PII"]},
        "email": {"type": "string"},
        "note": {"type": ["string", "null"]},
        "age": {"type": "integer"},
        "score": {"type": "number"},
        "active": {"type": "boolean"},
        "kind": {"enum": ["A", "B"]},
        "attrs": {"type": "object"},
        "labels": {"type": "array", "items": {"type": "string"}, "confluent:tags": ["PII"]},
        "address": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "confluent:tags": ["PII"]},
                "zip": {"type": "integer"},
            },
        },
    },
    "required": ["name", "age"],
}
json_people = st.fixed_dictionaries(
    {"name": st.text(max_size=8), "age": st.integers(-1000, 1000)},
    optional={
        "email": st.text(max_size=8),
        "note": st.none() | st.text(max_size=5),
        "score": st.floats(allow_nan=False, allow_infinity=False, width=32),
        "active": st.booleans(),
        "kind": st.sampled_from(["A", "B"]),
        "attrs": st.dictionaries(st.text(max_size=3), st.integers(0, 9), max_size=2),
        "labels": st.lists(st.text(max_size=4), max_size=3),
        "address": st.fixed_dictionaries(
            {}, optional={"city": st.text(max_size=5), "zip": st.integers(0, 99)}
        ),
    },
)
JSON_SAMPLE = {"name": "n", "age": 1, "email": "e", "labels": ["x"], "address": {"city": "c"}}

JSON_FIELD_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str]] = {
    "tagged strings, array items and nested fields": (
        [field_rule("typeName == 'STRING' ; value + '!'", tags=["PII"])],
        {},
        "compiled",
    ),
    "integers by a wildcard tag, on read too": (
        [field_rule("typeName == 'INT' ; value + 1", tags=["N"])],
        {"metadata": {"tags": {"$.age": ["N"], "$.address.*": ["N"]}}},
        "compiled",
    ),
    "a guard that reads the value": (
        [field_rule("value != '' ; value + '?'", "WRITE", tags=["PII"])],
        {},
        "compiled",
    ),
    "a type list the rule reaches: reference": (
        [field_rule("typeName == 'STRING' ; value + '!'")],
        {},
        "reference",
    ),
    "a transform the read validation refuses": (
        [field_rule("typeName == 'INT' ; 'not a number'", "READ", tags=["N"])],
        {"metadata": {"tags": {"$.age": ["N"]}}},
        "compiled",
    ),
}


@pytest.mark.parametrize("case", list(JSON_FIELD_CASES))
@given(person=json_people)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_json_field_transforms_agree(case: str, person: dict[str, Any]) -> None:
    rules, parts, plan = JSON_FIELD_CASES[case]
    both = once(
        f"json fields {case}",
        lambda: Both(
            mock_factory().json(contract(JSON_PERSON, "JSON", ruleSet={"domainRules": rules}, **parts))
        ),
    )
    refused = case == "a transform the read validation refuses"  # the reference says why
    check_field_case(both, JSON_SAMPLE, person, plan, compiled=plan == "compiled" and not refused)


# -- CEL_FIELD transforms (Protobuf) -------------------------------------------------------------------

PROTO_FIELD_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "every string, repeated, nested and oneof ones": (
        [field_rule("typeName == 'STRING' ; value + '!'")],
        {},
    ),
    "a tagged field": (
        [field_rule("typeName == 'STRING' ; value + '?'", tags=["PII"])],
        {"metadata": {"tags": {"acme.Payment.name": ["PII"], "acme.Address.*": ["PII"]}}},
    ),
    "longs and unsigned ints": (
        [field_rule("typeName == 'LONG' || typeName == 'INT' ; value + 1", tags=["N"])],
        {"metadata": {"tags": {"acme.Payment.id": ["N"], "acme.Payment.count": ["N"]}}},
    ),
    "a guard that reads the message": (
        [field_rule("message.amount < 1000.0 && typeName == 'STRING' ; value + '<'", "WRITE")],
        {},
    ),
}


@pytest.mark.parametrize("case", list(PROTO_FIELD_CASES))
@given(message=payments)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_protobuf_field_transforms_agree(case: str, message: Any) -> None:
    rules, parts = PROTO_FIELD_CASES[case]
    serialized = base64.b64encode(file_descriptor_proto(PAYMENT).SerializeToString()).decode()
    both = once(
        f"protobuf fields {case}",
        lambda: Both(
            mock_factory().protobuf(
                PAYMENT, schema=contract(serialized, "PROTOBUF", ruleSet={"domainRules": rules}, **parts)
            )
        ),
    )
    warm(both, PAYMENT(id=1, name="n"))
    before = message.SerializeToString()
    both.check(message, compiled=message.id < 2**63 - 1)
    assert message.SerializeToString() == before, "the message was changed"
    assert type(plans(both)[0]) is WritePlan


# -- ENCRYPT field rules ----------------------------------------------------------------------------

KMS = {"rule.executors._default_.param.secret": "a-local-kms-secret-for-tests"}
SIV = {"encrypt.dek.algorithm": "AES256_SIV"}  # deterministic: both paths write the same bytes


def encrypt_rule(
    params: dict[str, str] | None = None, mode: str = "WRITEREAD", tags: tuple[str, ...] = ("PII",)
) -> dict[str, Any]:
    return {
        "name": "enc",
        "kind": "TRANSFORM",
        "type": "ENCRYPT",
        "mode": mode,
        "tags": list(tags),
        "params": {
            "encrypt.kek.name": "kek1",
            "encrypt.kms.type": "local-kms",
            "encrypt.kms.key.id": "mykey",
            **(params or {}),
        },
    }


ENCRYPT_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str]] = {
    "tagged strings, nested too": ([encrypt_rule(SIV)], {}, "compiled"),
    "with DEK versions in the ciphertext": (
        [encrypt_rule({**SIV, "encrypt.dek.expiry.days": "1"})],
        {},
        "compiled",
    ),
    "bytes and a nullable string, by metadata tags": (
        [encrypt_rule(SIV, tags=("S",))],
        {"metadata": {"tags": {"acme.Person.blob": ["S"], "acme.Person.note": ["S"]}}},
        "compiled",
    ),
    "the string items of an array": (
        [encrypt_rule(SIV, tags=("S",))],
        {"metadata": {"tags": {"acme.Person.labels": ["S"]}}},
        "compiled",
    ),
    "an int field: refused the same way": (
        [encrypt_rule(SIV, tags=("S",))],
        {"metadata": {"tags": {"acme.Person.age": ["S"]}}},
        "none",
    ),
    "a transform, then encryption of its result": (
        [field_rule("typeName == 'STRING' ; value + '!'", "WRITE", tags=["PII"]), encrypt_rule(SIV)],
        {},
        "compiled",
    ),
}


@pytest.mark.parametrize("case", list(ENCRYPT_CASES))
@given(person=people)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_encryption_agrees(case: str, person: dict[str, Any]) -> None:
    rules, parts, plan = ENCRYPT_CASES[case]
    both = once(
        f"encrypt {case}",
        lambda: Both(mock_factory(**KMS).avro(_person({**parts, "ruleSet": {"domainRules": rules}}))),
    )
    result = check_field_case(both, PERSON_SAMPLE, person, plan, compiled=plan == "compiled")
    if plan == "compiled":
        assert result[0] == "ok"
        expected = person
        if "then" in case:  # the PII strings got their "!" before they were encrypted
            address = {**person["address"], "city": person["address"]["city"] + "!"}
            expected = {**person, "name": person["name"] + "!", "address": address}
        assert result[1] == expected  # decrypted back on read, both ways


@given(person=people)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_randomized_encryption_reads_back_both_ways(person: dict[str, Any]) -> None:
    # AES-GCM draws a nonce per value, so the two paths' bytes differ: each reads the other's.
    both = once(
        "encrypt gcm",
        lambda: Both(mock_factory(**KMS).avro(_person({"ruleSet": {"domainRules": [encrypt_rule()]}}))),
    )
    warm(both, PERSON_SAMPLE)
    calls = both.reference_calls()
    compiled = both.encode(person)
    assert both.reference_calls() == calls, "the compiled path called the reference serde"
    with both.reference():
        reference = both.encode(person)
    for written in (compiled, reference):
        assert written[0] == "ok"
        data, schema_id = written[1]
        with both.reference():
            assert both.decode(data, schema_id)[1] == person
        calls = both.reference_calls()
        assert both.decode(data, schema_id)[1] == person
        assert both.reference_calls() == calls, "the compiled path called the reference deserializer"
    assert fastavro_field(compiled[1][0]) != person["name"]  # ciphertext on the wire


def test_an_expired_dek_is_replaced_as_the_executor_replaces_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from confluent_kafka.schema_registry.rules.encryption import encrypt_executor
    from confluent_kafka.schema_registry.rules.encryption.dek_registry import mock_dek_registry_client

    now = [1_000_000_000_000]  # the executor's clock, and the one the mock registry stamps DEKs with
    monkeypatch.setattr(encrypt_executor.Clock, "now", lambda self: now[0])
    monkeypatch.setattr(mock_dek_registry_client, "time", types.SimpleNamespace(time=lambda: now[0] / 1000))
    rules = [encrypt_rule({**SIV, "encrypt.dek.expiry.days": "1"})]
    both = Both(mock_factory(**KMS).avro(_person({"ruleSet": {"domainRules": rules}})))
    warm(both, PERSON_SAMPLE)

    def version(written: tuple[Any, ...]) -> int:
        """The DEK version `name`'s ciphertext starts with (0x00 + 4 bytes)."""
        return int.from_bytes(base64.b64decode(fastavro_field(written[1][0]))[1:5], "big")

    first = both.encode(PERSON_SAMPLE)
    assert version(first) == 1
    now[0] += 2 * 24 * 60 * 60 * 1000  # two days: the DEK of one day has expired
    calls = both.reference_calls()
    rotated = both.encode(PERSON_SAMPLE)
    assert both.reference_calls() == calls and version(rotated) == 2
    with both.reference():
        assert both.encode(PERSON_SAMPLE) == rotated  # the reference writes with the same new DEK
    for written in (first, rotated):
        assert both.decode(*written[1])[1] == PERSON_SAMPLE


def fastavro_field(data: bytes) -> str:
    """The first field (`name`) of a PERSON payload."""
    import io

    import fastavro

    value: Any = fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(PERSON))
    return str(value["name"])


# -- JSONata migrations across major versions ---------------------------------------------------------

MAJOR = "application.major.version"
ID_FIELDS = {1: "ssn", 2: "socialSecurityNumber", 3: "taxId"}


def _person_of(id_field: str) -> dict[str, Any]:
    fields = [{"name": "name", "type": "string"}, {"name": id_field, "type": "string"}]
    return {"type": "record", "name": "Person", "namespace": "acme", "fields": fields}


def _renames(old: str, new: str) -> dict[str, Any]:
    """Confluent's documented migration pair: `old` renamed to `new` on UPGRADE, back on DOWNGRADE."""

    def rename(a: str, b: str) -> str:
        return f"$merge([$sift($, function($v, $k) {{$k != '{a}'}}), {{'{b}': $.'{a}'}}])"

    return {
        "migrationRules": [
            rule(f"{old}Up", "TRANSFORM", "JSONATA", "UPGRADE", rename(old, new)),
            rule(f"{new}Down", "TRANSFORM", "JSONATA", "DOWNGRADE", rename(new, old)),
        ]
    }


def _migrated(writer: int, reader: int) -> dict[Any, int]:
    """The migration rules a value written with major `writer` and read with `reader` runs, as
    rule metrics count them: each version's UPGRADE rule on the way up, DOWNGRADE on the way down."""
    if writer < reader:
        names = [(f"{ID_FIELDS[major - 1]}Up", "UPGRADE") for major in range(writer + 1, reader + 1)]
    else:
        names = [(f"{ID_FIELDS[major]}Down", "DOWNGRADE") for major in range(writer, reader, -1)]
    return {(name, "acme.orders.payments-value", mode, TOPIC, "passed", "NONE"): 1 for name, mode in names}


def _register_majors(shape: Callable[[str], dict[str, Any]], schema_type: str) -> SchemaRegistrySchemaFactory:
    """A factory whose registry holds the payments subject in three major versions, each
    version's id field renamed by the migration rules of the next."""
    factory = mock_factory()
    for major, field in ID_FIELDS.items():
        parts: dict[str, Any] = {"metadata": {"properties": {MAJOR: str(major)}}}
        if major > 1:
            parts["ruleSet"] = _renames(ID_FIELDS[major - 1], field)
        factory.registry_client.register_schema(
            "acme.orders.payments-value", contract(shape(field), schema_type, **parts)
        )
    return factory


def _three_majors() -> dict[int, Both]:
    """One subject with three major versions (1 -> 2 -> 3 renames the id field twice), and a
    schema pinned to each (`use.latest.with.metadata`), all on one in-memory registry."""
    factory = _register_majors(_person_of, "AVRO")
    return {
        major: Both(sharing(factory, **{"use.latest.with.metadata": f"{MAJOR}={major}"}).avro(EMPTY))
        for major in ID_FIELDS
    }


_MAJORS: dict[int, Both] = {}


@given(name=text, ident=text)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_migrations_across_two_major_versions_agree(name: str, ident: str) -> None:
    if not _MAJORS:
        _MAJORS.update(_three_majors())
    sides = _MAJORS
    for writer, writing in sides.items():
        written = writing.encode({"name": name, ID_FIELDS[writer]: ident})
        assert written[0] == "ok", written
        data, schema_id = written[1]
        for reader, reading in sides.items():
            with reading.reference():
                expected = reading.decode(data, schema_id)
            calls = reading.reference_calls()
            got = reading.decode(data, schema_id)
            migrated = _migrated(writer, reader)
            assert got == expected == ("ok", {"name": name, ID_FIELDS[reader]: ident}, migrated, [])
            if writer != reader:  # compiled: the migration chain ran without the reference
                assert reading.reference_calls() == calls, (writer, reader)


def _json_person_of(id_field: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"type": "string"}, id_field: {"type": "string"}},
        "required": ["name", id_field],
        "additionalProperties": False,
    }


def test_json_migrations_agree() -> None:
    factory = _register_majors(_json_person_of, "JSON")
    sides = {
        major: Both(
            sharing(factory, **{"use.latest.with.metadata": f"{MAJOR}={major}"}).json(
                json.dumps(_json_person_of(ID_FIELDS[major]))
            )
        )
        for major in ID_FIELDS
    }
    for writer, writing in sides.items():
        written = writing.encode({"name": "Ann", ID_FIELDS[writer]: "id-1"})
        assert written[0] == "ok", written
        for reader, reading in sides.items():
            with reading.reference():
                expected = reading.decode(*written[1])
            calls = reading.reference_calls()
            assert (
                reading.decode(*written[1])
                == expected
                == ("ok", {"name": "Ann", ID_FIELDS[reader]: "id-1"}, _migrated(writer, reader), [])
            )
            assert reading.reference_calls() == calls, (writer, reader)


def test_a_migration_that_fails_fails_the_same_way() -> None:
    factory = mock_factory()
    subject = "acme.orders.payments-value"
    registry = factory.registry_client
    registry.register_schema(subject, contract(_person_of("ssn"), metadata={"properties": {MAJOR: "1"}}))
    failing = rule(
        "toNumber", "TRANSFORM", "JSONATA", "UPGRADE", "$merge([$, {'taxId': $string($number($.ssn))}])"
    )
    v2 = contract(
        _person_of("taxId"), metadata={"properties": {MAJOR: "2"}}, ruleSet={"migrationRules": [failing]}
    )
    registry.register_schema(subject, v2)
    writer = Both(sharing(factory, **{"use.latest.with.metadata": f"{MAJOR}=1"}).avro(EMPTY))
    reader = Both(sharing(factory, **{"use.latest.with.metadata": f"{MAJOR}=2"}).avro(EMPTY))
    for ssn, ok in (("12", True), ("not a number", False)):
        data, schema_id = writer.encode({"name": "Ann", "ssn": ssn})[1]
        with reader.reference():
            expected = reader.decode(data, schema_id)
        got = reader.decode(data, schema_id)
        assert got == expected and (got[0] == "ok") is ok, got
    assert type(plans(reader)[1]) is ReadPlan


# -- the short ways: a message without properties ------------------------------------------------------

AVRO_SAMPLE = {
    "id": 1,
    "name": "n",
    "count": 2,
    "ratio": 0.5,
    "amount": 10.0,
    "ok": True,
    "blob": b"b",
    "note": None,
    "kind": "CARD",
    "tags": ["t"],
    "attrs": {"a": 1},
    "address": {"city": "c", "zip": None},
    "day": datetime.date(2024, 1, 2),
    "at": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    "price": decimal.Decimal("1.25"),
    "ref": str(uuid.UUID(int=7)),
    "code": b"abcd",
}


def test_messages_without_properties_take_the_short_ways_once_a_plan_is_built() -> None:
    both = Both(mock_factory().avro(json.dumps(AVRO)))
    record = AVRO_SAMPLE
    codec = both.schema._part.codec
    assert codec is not None
    first = both.schema.encode_for(TOPIC, record)  # the reference: it resolves the writer
    assert codec.writers == {}
    both.schema.encode_for(TOPIC, record)  # the codec's plan: and the extension's writer is kept
    assert (TOPIC in codec.writers) == codec.keeps_writers
    calls = both.reference_calls()
    again = both.schema.encode_for(TOPIC, record)
    assert again == first and both.reference_calls() == calls
    assert first.schema_id is not None
    both.schema.decode(TOPIC, first.data, first.schema_id)
    both.schema.decode(TOPIC, first.data, first.schema_id)
    assert (TOPIC, first.schema_id) in both.schema._part.readers  # kept on both paths
    assert both.schema.decode(TOPIC, first.data, first.schema_id) == both.schema.decode(
        TOPIC, first.data, first.schema_id, both.schema.message_context(TOPIC)
    )
    both.schema.close()
    with pytest.raises(ExternalSchemaError, match="closed"):
        both.schema.decode(TOPIC, first.data, first.schema_id)
    with pytest.raises(ExternalSchemaError, match="closed"):
        both.schema.encode_for(TOPIC, record)


def test_a_malformed_payload_on_the_short_way_fails_as_on_the_long_one() -> None:
    both = Both(mock_factory().avro(json.dumps(AVRO)))
    record = AVRO_SAMPLE
    encoded = both.schema.encode_for(TOPIC, record)
    for _ in range(2):
        both.schema.decode(TOPIC, encoded.data, encoded.schema_id)
    assert encoded.schema_id is not None
    short = outcome(lambda: both.schema.decode(TOPIC, encoded.data[:3], encoded.schema_id), both.client)
    context = both.schema.message_context(TOPIC)
    long = outcome(
        lambda: both.schema.decode(TOPIC, encoded.data[:3], encoded.schema_id, context), both.client
    )
    assert short[0] == "error" and short == long


class _Received:
    """A received message as pulsar-client's `Message.value()` hands it to the schema."""

    def __init__(self, data: bytes, schema_id: bytes) -> None:
        self._data, self._id = data, schema_id

    def properties(self) -> dict[str, str]:
        return {"__schema_id": ids.to_property(self._id)}

    def topic_name(self) -> str:
        return TOPIC

    def data(self) -> bytes:
        return self._data

    def partition_key(self) -> str:
        return ""

    def ordering_key(self) -> str:
        return ""

    def event_timestamp(self) -> int:
        return 0

    def message_id(self) -> str:
        return "(1,0,-1,0)"


def test_a_received_message_takes_the_short_way_decode_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    both = Both(mock_factory().avro(json.dumps(AVRO)))
    encoded = both.schema.encode_for(TOPIC, AVRO_SAMPLE)
    assert encoded.schema_id is not None
    message = _Received(encoded.data, encoded.schema_id)
    expected = both.schema.decode(TOPIC, encoded.data, encoded.schema_id, both.schema.message_context(TOPIC))
    assert both.schema.decode_message(message) == expected  # the first: the plan is built
    assert both.schema.decode_message(message) == expected  # its direct reader is kept
    assert (TOPIC, ids.to_metadata(encoded.schema_id)) in both.schema._part.readers

    def no_plan_lookup(*args: Any) -> Any:
        raise AssertionError("the message went past the direct reader")

    monkeypatch.setattr(both.schema._part, "decode_compiled", no_plan_lookup)
    monkeypatch.setattr(both.schema._part, "decode", no_plan_lookup)
    assert both.schema.decode_message(message) == expected


def test_a_received_message_skips_parsing_its_schema_id_property_once_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    both = Both(mock_factory().avro(json.dumps(AVRO)))
    encoded = both.schema.encode_for(TOPIC, AVRO_SAMPLE)
    assert encoded.schema_id is not None
    message = _Received(encoded.data, encoded.schema_id)
    expected = both.schema.decode(TOPIC, encoded.data, encoded.schema_id, both.schema.message_context(TOPIC))
    for _ in range(2):
        assert both.schema.decode_message(message) == expected
    assert (TOPIC, ids.to_property(encoded.schema_id)) in both.schema._part.readers

    def no_parse(value: str) -> bytes:
        raise AssertionError("the property was parsed again")

    monkeypatch.setattr(ids, "parse_hex", no_parse)
    assert both.schema.decode_message(message) == expected
    # A malformed payload under a known property still fails as on the long way (which parses).
    monkeypatch.undo()
    cut = _Received(encoded.data[:3], encoded.schema_id)
    short = outcome(lambda: both.schema.decode_message(cut), both.client)
    long = outcome(
        lambda: both.schema.decode(
            TOPIC, encoded.data[:3], encoded.schema_id, both.schema.message_context(TOPIC)
        ),
        both.client,
    )
    assert short[0] == "error" and short[1:] == long[1:]


def test_a_reader_kept_by_decode_serves_received_messages_past_the_property_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`decode` keeps the direct reader under the metadata id; the first received message of the
    same id keeps it under its property too, so the next one is not parsed."""
    both = Both(mock_factory().avro(json.dumps(AVRO)))
    encoded = both.schema.encode_for(TOPIC, AVRO_SAMPLE)
    assert encoded.schema_id is not None
    metadata = ids.parse_hex(ids.to_property(encoded.schema_id))  # the id as a message carries it
    for _ in range(2):
        both.schema.decode(TOPIC, encoded.data, metadata)
    kept = both.schema._part.readers[(TOPIC, metadata)]
    message = _Received(encoded.data, encoded.schema_id)
    expected = both.schema.decode_message(message)
    assert both.schema._part.readers[(TOPIC, ids.to_property(encoded.schema_id))] is kept

    def no_parse(value: str) -> bytes:
        raise AssertionError("the property was parsed again")

    monkeypatch.setattr(ids, "parse_hex", no_parse)
    assert both.schema.decode_message(message) == expected


def test_a_dek_a_read_could_not_get_is_asked_for_again_only_after_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reader without the secret: each of its messages takes the reference path (which tries the
    DEK and gives the rule's verdict); the compiled path does not try it for every message too.
    Here the compiled path's DEK lookup fails and the reference path, which has the secret, reads."""
    from pulsar_external_schema import _confluent
    from pulsar_external_schema.rules import encryption

    schema = mock_factory(**KMS).avro(_person({"ruleSet": {"domainRules": [encrypt_rule(SIV)]}}))
    sent = [schema.encode(TOPIC, PERSON_SAMPLE) for _ in range(5)]
    asked = []

    def no_dek(transform: Any, ctx: Any, version: Any) -> Any:
        if ctx.rule_mode == RuleMode.READ:
            asked.append(version)
        raise RuleError("no KMS secret")

    monkeypatch.setattr(_confluent, "dek_key", no_dek)  # the module encryption.py calls it in
    assert [schema.decode(TOPIC, e.data, e.schema_id) for e in sent] == [PERSON_SAMPLE] * 5
    assert len(asked) == 1
    monkeypatch.setattr(encryption, "DEK_RETRY_SECONDS", 0.0)  # no window: each message asks
    again = mock_factory(**KMS).avro(_person({"ruleSet": {"domainRules": [encrypt_rule(SIV)]}}))
    for e in [again.encode(TOPIC, PERSON_SAMPLE) for _ in range(5)]:
        assert again.decode(TOPIC, e.data, e.schema_id) == PERSON_SAMPLE
    assert len(asked) >= 1 + 5
