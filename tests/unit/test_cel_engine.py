"""The compiled CEL executors: compiled once, converting only what is read, falling back when needed.

The corpus (test_cel_conformance.py) pins what expressions return; these pin how the executor
gets there, on confluent-kafka's in-memory registry (`mock://`).
"""

from __future__ import annotations

import base64
import decimal
import logging
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from contracts import contract, mock_factory, rule
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from pulsar_external_schema import ConfigError, RuleViolationError
from pulsar_external_schema.protobuf_text import file_descriptor_proto
from pulsar_external_schema.rules.cel import COMPILED, INTERPRETED, message_fields, to_cel

RECORD = {
    "type": "record",
    "name": "R",
    "namespace": "engine",
    "fields": [
        {"name": "f1", "type": "string"},
        {"name": "blob", "type": "bytes", "default": ""},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            "default": "\u0000",
        },
    ],
}


def with_rules(*rules: dict[str, Any]) -> Schema:
    return contract(RECORD, ruleSet={"domainRules": list(rules)})


def value(f1: str, **extra: Any) -> dict[str, Any]:
    return {"f1": f1, "blob": b"", "amount": decimal.Decimal("0.00"), **extra}


@pytest.mark.parametrize(
    ("expression", "fields"),
    [
        ("size(message.f1) < 10", {"f1"}),
        ("message.a.b == 1 && has(message.c)", {"a", "c"}),
        ("message . f1 == 'x'", {"f1"}),
        ("message.f1 == 'message.f2' && \"message\" != ''", {"f1"}),
        ("'''message''' == message.f1", {"f1"}),
        ("other.message == 1", set()),
        ("true", set()),
    ],
)
def test_only_the_fields_an_expression_names_are_converted(expression: str, fields: set[str]) -> None:
    assert message_fields(expression) == frozenset(fields)


@pytest.mark.parametrize(
    "expression",
    ["message", "size(message) > 1", "message['f1'] == 'x'", "[message][0].f1", "message // c\n.f1"],
)
def test_any_other_use_of_message_takes_all_of_it(expression: str) -> None:
    assert message_fields(expression) is None


def test_each_expression_is_compiled_once_whatever_the_number_of_messages() -> None:
    factory = mock_factory()
    schema = factory.avro(with_rules(rule("short", "CONDITION", "CEL", "WRITE", "size(message.f1) < 10")))
    for number in range(200):
        schema.encode("orders", value(f"v{number}"))
    assert len(factory.rules.executor("CEL").compiled) == 1


def test_a_transform_returning_the_message_keeps_every_field() -> None:
    # `message` used whole: the projection must not drop the fields the expression does not name.
    identity = rule("identity", "TRANSFORM", "CEL", "WRITE", "message")
    schema = mock_factory().avro(with_rules(identity))
    encoded = schema.encode("orders", value("x", blob=b"\x00\x01z"))
    assert schema.decode("orders", encoded.data, encoded.schema_id)["blob"] == b"\x00\x01z"


def test_cel_python_is_selected_by_config_and_by_rule_parameter() -> None:
    check = rule("short", "CONDITION", "CEL", "WRITE", "size(message.f1) < 10")
    factory = mock_factory(**{"cel.engine": "cel-python"})
    factory.avro(with_rules(check)).encode("orders", value("ok"))
    assert factory.rules.executor("CEL").engine == INTERPRETED
    assert factory.rules.executor("CEL_FIELD").executor.engine == INTERPRETED

    # cel-python has no trim(): a rule pinned to it fails where the default engine passes.
    trimmed = {
        "name": "trimmed",
        "kind": "CONDITION",
        "type": "CEL",
        "mode": "WRITE",
        "expr": "message.f1.trim() == 'x'",
    }
    default = mock_factory()
    default.avro(with_rules(trimmed)).encode("orders", value(" x "))
    assert default.rules.executor("CEL").engine == COMPILED
    pinned = {**trimmed, "params": {"cel.engine": "cel-python"}}
    with pytest.raises(RuleViolationError, match=r"rule 'trimmed' .*trim"):
        mock_factory().avro(with_rules(pinned)).encode("orders", value(" x "))


def test_an_unknown_engine_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError, match=r"'cel.engine' takes 'cel-expr-python' or 'cel-python', not 'fast'"
    ):
        mock_factory(**{"cel.engine": "fast"})


def test_confluent_extensions_fall_back_to_cel_python_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    check = rule("positive", "CONDITION", "CEL", "WRITE", "decimals.gt(decimal('2.5'), decimal('1.5'))")
    schema = mock_factory().avro(with_rules(check))
    with caplog.at_level(logging.WARNING, logger="pulsar_external_schema.rules.cel"):
        for _ in range(3):
            schema.encode("orders", value("x"))
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert "CEL rule 'positive'" in warnings[0] and "with cel-python" in warnings[0]


def test_a_value_the_compiled_engine_cannot_hold_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(Exception, match="Decimal"):
        to_cel(decimal.Decimal("1.5"))
    check = rule("amount", "CONDITION", "CEL", "WRITE", "message.amount != null")
    refusing = rule("noAmount", "CONDITION", "CEL", "WRITE", "message.amount == null")

    amount = value("x", amount=decimal.Decimal("1.50"))
    with caplog.at_level(logging.WARNING, logger="pulsar_external_schema.rules.cel"):
        mock_factory().avro(with_rules(check)).encode("orders", amount)
        with pytest.raises(RuleViolationError, match="noAmount"):  # cel-python's verdict is the rule's
            mock_factory().avro(with_rules(refusing)).encode("orders", amount)

    fell_back = [record.getMessage() for record in caplog.records]
    assert len(fell_back) == 2
    assert all("with cel-python" in line and "Decimal" in line for line in fell_back)


def test_a_failing_guard_skips_the_rule_as_in_the_java_client() -> None:
    guarded = rule("guarded", "CONDITION", "CEL", "WRITE", "message.missing > 1 ; false")
    mock_factory().avro(with_rules(guarded)).encode("orders", value("x"))


def test_ignore_guard_separator_makes_the_semicolon_part_of_the_expression() -> None:
    guarded = rule(
        "literal", "CONDITION", "CEL", "WRITE", "false ; true", params={"cel.ignore.guard.separator": "true"}
    )
    with pytest.raises(RuleViolationError, match=r"rule 'literal' .*does not compile"):
        mock_factory().avro(with_rules(guarded)).encode("orders", value("x"))


def test_a_condition_must_return_a_bool() -> None:
    check = rule("notBool", "CONDITION", "CEL", "WRITE", "message.f1")
    with pytest.raises(RuleViolationError, match=r"returned str 'x', not a bool"):
        mock_factory().avro(with_rules(check)).encode("orders", value("x"))


def test_nul_bytes_and_strings_reach_the_engine_whole() -> None:
    # cel-expr-python 0.1.3 cuts plain str/bytes at a NUL; without the workaround both would fail.
    checks = (
        rule("blob", "CONDITION", "CEL", "WRITE", "size(message.blob) == 3 && message.blob == b'\\x00ab'"),
        rule("text", "CONDITION", "CEL", "WRITE", "size(message.f1) == 3"),
    )
    mock_factory().avro(with_rules(*checks)).encode("orders", value("a\x00b", blob=b"\x00ab"))


def test_compile_errors_name_the_rule_and_the_position() -> None:
    broken = rule("broken", "CONDITION", "CEL", "WRITE", "size(message.f1) <")
    with pytest.raises(RuleViolationError) as failure:
        mock_factory().avro(with_rules(broken)).encode("orders", value("x"))
    assert "rule 'broken'" in str(failure.value)
    assert "CEL expression 'size(message.f1) <' does not compile: 1:" in str(failure.value)


def test_cel_field_rules_run_per_field_on_the_compiled_engine() -> None:
    upper = rule("upper", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'f1' ; value.upperAscii()")
    schema = mock_factory().avro(with_rules(upper))
    encoded = schema.encode("orders", value("shout"))
    assert schema.decode("orders", encoded.data, encoded.schema_id)["f1"] == "SHOUT"


def test_protobuf_presence_and_unsigned_fields_follow_proto_semantics() -> None:
    # Proto semantics: a uint32 compares with 7u, has() is presence of the proto3 optional field.
    reading = reading_message_class()
    factory = mock_factory(**{"use.latest.version": True, "auto.register.schemas": False})
    schema = factory.protobuf(reading)
    check = rule("unsigned", "CONDITION", "CEL", "WRITE", "message.count == 7u && !has(message.note)")
    # The in-memory registry cannot parse .proto text: register the descriptor (base64), as the
    # Python serializer's own format.
    text = base64.b64encode(file_descriptor_proto(reading).SerializeToString()).decode()
    factory.registry_client.register_schema(
        schema.subject("readings"), contract(text, "PROTOBUF", ruleSet={"domainRules": [check]})
    )
    schema.encode("readings", reading(count=7))
    with pytest.raises(RuleViolationError, match="rule 'unsigned'"):
        schema.encode("readings", reading(count=7, note="x"))


def reading_message_class() -> Any:
    proto = descriptor_pb2.FileDescriptorProto(name="engine/reading.proto", package="engine", syntax="proto3")
    message = proto.message_type.add(name="Reading")
    message.oneof_decl.add(name="_note")
    t = descriptor_pb2.FieldDescriptorProto
    message.field.add(name="count", number=1, type=t.TYPE_UINT32, label=t.LABEL_OPTIONAL)
    message.field.add(
        name="note", number=2, type=t.TYPE_STRING, label=t.LABEL_OPTIONAL, proto3_optional=True, oneof_index=0
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName("engine.Reading"))


def test_str_subclasses_in_a_message_stay_on_the_compiled_engine(caplog: pytest.LogCaptureFixture) -> None:
    # confluent-kafka's own field transforms leave cel-python strings in the caller's dict.
    from celpy import celtypes

    check = rule("short", "CONDITION", "CEL", "WRITE", "size(message.f1) < 10 && message.f1 == 'x'")
    schema = mock_factory().avro(with_rules(check))
    with caplog.at_level(logging.WARNING, logger="pulsar_external_schema.rules.cel"):
        schema.encode("orders", value(celtypes.StringType("x")))
    assert caplog.records == []


def test_cel_python_transforms_write_plain_python_values_back() -> None:
    upper = rule("fill", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'f1' ; value + '!'")
    schema = mock_factory(**{"cel.engine": "cel-python"}).avro(with_rules(upper))
    encoded = schema.encode("orders", value("x"))
    decoded = schema.decode("orders", encoded.data, encoded.schema_id)
    assert decoded["f1"] == "x!"
    from celpy import celtypes

    from pulsar_external_schema.rules.cel import plain_interpreted

    result = plain_interpreted(
        {"a": [celtypes.StringType("x"), celtypes.BoolType(True), celtypes.IntType(2)]}
    )
    assert [type(item) for item in result["a"]] == [str, bool, int]
