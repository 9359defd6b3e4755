"""Both CEL engines over the conformance corpus (tests/cel_corpus.py), Avro, JSON and Protobuf.

The compiled engine (cel-expr-python) must return each case's CEL result; cel-python, the
reference, must return the same, or what the case's documented `Differs` says.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from cel_corpus import (
    ALL_CASES,
    AVRO_SCHEMA,
    ERROR,
    FIELD_TYPES,
    FORMATS,
    JSON_SCHEMA,
    Case,
    counts,
    decoded_records,
)
from celpy import celtypes
from confluent_kafka.schema_registry import Rule, RuleMode, Schema
from confluent_kafka.schema_registry.serde import FieldContext, RuleContext
from confluent_kafka.serialization import MessageField, SerializationContext

from pulsar_external_schema.errors import CelEvaluationError
from pulsar_external_schema.rules.cel import (
    COMPILED,
    INTERPRETED,
    Activation,
    CelExecutor,
    CelFieldExecutor,
)

RECORDS = decoded_records()
SCHEMAS = {
    "avro": Schema(json.dumps(AVRO_SCHEMA), "AVRO"),
    "json": Schema(json.dumps(JSON_SCHEMA), "JSON"),
    "protobuf": Schema('syntax = "proto3"; package corpus;', "PROTOBUF"),
}
EXECUTORS = {COMPILED: CelExecutor(COMPILED), INTERPRETED: CelExecutor(INTERPRETED)}
FIELD_EXECUTORS = {COMPILED: CelFieldExecutor(COMPILED), INTERPRETED: CelFieldExecutor(INTERPRETED)}


def plain(value: Any) -> Any:
    """cel-python's values as plain Python ones, to compare with the compiled engine's."""
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.TimestampType):
        return datetime.datetime.fromtimestamp(value.timestamp(), datetime.UTC)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.BytesType):
        return bytes(value)
    if isinstance(value, bool | int | float | str | bytes) or value is None:
        return value
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def rule_context(case: Case, fmt: str) -> RuleContext:
    rule = Rule.from_dict(
        {
            "name": "corpus",
            "kind": "CONDITION" if case.condition else "TRANSFORM",
            "mode": "WRITE",
            "type": case.kind,
            "expr": case.expr,
        }
    )
    schema = SCHEMAS[fmt]
    context = SerializationContext("corpus", MessageField.VALUE)
    return RuleContext(
        None, context, schema, schema, "corpus-value", RuleMode.WRITE, rule, 0, [rule], None, None
    )


def field_context(case: Case, fmt: str, record: Any) -> tuple[FieldContext, Any]:
    if fmt == "protobuf":
        descriptor = record.DESCRIPTOR.fields_by_name[case.field]
        value = getattr(record, case.field)
        return (
            FieldContext(
                record,
                f"corpus.Person.{case.field}",
                case.field,
                FIELD_TYPES[case.field],
                set(case.tags),
                descriptor,
            ),
            value,
        )
    full_name = f"corpus.Person.{case.field}" if fmt == "avro" else f"$.{case.field}"
    return (
        FieldContext(record, full_name, case.field, FIELD_TYPES[case.field], set(case.tags)),
        record[case.field],
    )


def evaluate(case: Case, fmt: str, engine: str) -> Any:
    """The case's result on one engine: its value, or ERROR if it failed."""
    record = RECORDS[fmt]
    ctx = rule_context(case, fmt)
    try:
        if case.kind == "CEL_FIELD":
            field, value = field_context(case, fmt, record)
            executor = FIELD_EXECUTORS[engine].executor
            return plain(executor.run(ctx, value, Activation(record, field, value)))
        if case.condition:
            return plain(EXECUTORS[engine].run(ctx, record, Activation(record)))
        return plain(EXECUTORS[engine].evaluate(ctx, case.expr, Activation(record), field_rule=False))
    except CelEvaluationError:
        return ERROR


PARAMS = [
    pytest.param(case, fmt, id=f"{fmt}:{case.expr}")
    for case in ALL_CASES
    for fmt in FORMATS
    if fmt in case.formats
]


@pytest.mark.parametrize(("case", "fmt"), PARAMS)
def test_compiled_engine_returns_the_cel_result(case: Case, fmt: str) -> None:
    assert evaluate(case, fmt, COMPILED) == case.expected_for(fmt)


@pytest.mark.parametrize(("case", "fmt"), PARAMS)
def test_interpreted_engine_agrees_or_differs_as_documented(case: Case, fmt: str) -> None:
    assert evaluate(case, fmt, INTERPRETED) == case.interpreted_for(fmt)


def test_the_corpus_covers_what_the_issue_lists() -> None:
    total = counts()
    assert total.expressions >= 200
    for group in (
        "literals and arithmetic",
        "strings",
        "lists, maps and macros",
        "Confluent built-ins",
        "guards (conditions)",
        "null, missing fields and has()",
        "bytes",
        "timestamps and durations",
        "CEL_FIELD",
    ):
        assert total.groups[group] >= 5, group
    for builtin in ("isEmail", "isHostname", "isIpv4", "isIpv6", "isUri", "isUriRef", "isUuid"):
        results = {case.expected for case in ALL_CASES if builtin + "(" in case.expr}
        assert {True, False} <= results, f"{builtin}: needs a passing and a failing case"


def test_documented_differences_are_in_the_docs() -> None:
    with open("docs/data-contracts.md", encoding="utf-8") as docs:
        text = docs.read()
    for why in {case.differs.why for case in ALL_CASES if case.differs is not None}:
        assert why.split(":")[0].split(",")[0][:40] in " ".join(text.split()), why
