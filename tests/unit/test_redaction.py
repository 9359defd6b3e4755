"""No value of a field tagged PII (or encrypted by a rule) in an error, a DLQ property, a chained
cause or a log line, whatever the engine or the format library quotes (`redaction.py`)."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

import pytest
from contracts import FakePulsarClient, contract, everything_said, mock_factory, rule

from pulsar_external_schema import DeadLetteredError, EncodeError, ExternalSchemaError, RuleViolationError
from pulsar_external_schema.redaction import REDACTED, sensitive_fields, sensitive_values

TOPIC = "persistent://acme/people/records"
SUBJECT = "acme.people.records-value"
SSN = "987-65-4321"
PERSON = {
    "type": "record",
    "name": "Person",
    "namespace": "acme",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "ssn", "type": ["null", "string"], "confluent:tags": ["PII"]},
    ],
}


def _schema(rules: list[dict[str, Any]], *, client: Any = None, schema: Any = PERSON, **parts: Any) -> Any:
    conf = {"cel.engine": "cel-python", "auto.register.schemas": False, "use.latest.version": True}
    factory = mock_factory(**conf)
    factory.registry_client.register_schema(
        SUBJECT, contract(schema, ruleSet={"domainRules": rules}, **parts)
    )
    made = factory.avro(json.dumps(schema))
    if client is not None:
        made._pulsar_client = client  # the DLQ action writes its copies there
    return made


def test_a_rule_engine_quoting_a_pii_value_is_redacted_in_the_error_and_its_causes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = _schema([rule("ssnNumeric", "CONDITION", "CEL", "WRITE", "int(message.ssn) > 0")])
    with caplog.at_level(logging.DEBUG), pytest.raises(RuleViolationError) as raised:
        schema.encode(TOPIC, {"name": "Ann", "ssn": SSN})
    assert REDACTED in str(raised.value)  # cel-python quoted it: StringType('<REDACTED>')
    assert SSN not in everything_said(raised.value)
    assert caplog.records, "cel-python logged nothing at DEBUG: the test would prove nothing"
    assert not [record for record in caplog.records if SSN in record.getMessage()]


def test_the_dlq_copy_carries_the_redacted_exception() -> None:
    client = FakePulsarClient()
    dlq = rule(
        "ssnNumeric",
        "CONDITION",
        "CEL",
        "WRITE",
        "int(message.ssn) > 0",
        onFailure="DLQ",
        params={"dlq.topic": "bad"},
    )
    schema = _schema([dlq], client=client)
    with pytest.raises(DeadLetteredError) as raised:
        schema.encode(TOPIC, {"name": "Ann", "ssn": SSN})
    [copy] = client.sent
    assert REDACTED in copy["properties"]["__rule.exception"]
    assert SSN not in json.dumps(copy["properties"]) and SSN not in everything_said(raised.value)


def test_a_pii_value_outside_its_type_is_named_by_its_field_only() -> None:
    schema = _schema([])
    with pytest.raises(EncodeError) as raised:
        schema.encode(TOPIC, {"name": "Ann", "ssn": 987654321})  # not a string: fastavro quotes it
    assert "field ssn: an int is not an Avro string or null" in str(raised.value)
    assert "987654321" not in everything_said(raised.value)


def test_values_of_other_fields_are_still_quoted() -> None:
    schema = _schema([rule("nameNumeric", "CONDITION", "CEL", "WRITE", "int(message.name) > 0")])
    with pytest.raises(ExternalSchemaError) as raised:
        schema.encode(TOPIC, {"name": "Ann-Marie", "ssn": SSN})
    assert "Ann-Marie" in str(raised.value)


def test_tags_from_the_metadata_and_from_encrypting_rules_count() -> None:
    plain = {**PERSON, "fields": [{"name": "name", "type": "string"}, {"name": "ssn", "type": "string"}]}
    by_metadata = contract(plain, metadata={"tags": {"PII": ["acme.Person.ssn"]}})
    assert sensitive_fields(by_metadata) == ["ssn"]
    tagged = {**plain, "fields": [{"name": "name", "type": "string", "confluent:tags": ["SECRET"]}]}
    encrypting = contract(
        tagged,
        ruleSet={
            "domainRules": [{"name": "enc", "kind": "TRANSFORM", "type": "ENCRYPT", "tags": ["SECRET"]}]
        },
    )
    assert sensitive_fields(encrypting) == ["name"]
    assert sensitive_fields(contract(tagged)) == []  # a tag no rule encrypts, and not PII


def test_protobuf_field_options_and_nested_values() -> None:
    proto = contract(
        'syntax = "proto3"; message P { '
        'string ssn = 1 [(confluent.field_meta) = { tags: "PII" }]; string n = 2; }',
        "PROTOBUF",
    )
    assert sensitive_fields(proto) == ["ssn"]
    value = {"people": [{"ssn": SSN, "n": "x"}, {"ssn": None}], "ssn": 123456}
    assert set(sensitive_values(value, ["ssn"])) == {SSN, "123456"}


def test_a_cause_that_prints_the_refused_value_from_its_attributes_is_replaced_by_its_redacted_text() -> None:
    """jsonschema's errors print the schema and the instance they refused from attributes, not
    from `args`: in a chain, such a cause is stood in for by its redacted text."""
    import jsonschema

    from pulsar_external_schema.redaction import scrub

    schema = {"properties": {"ssn": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{2}-[0-9]{4}$"}}}
    refusal = next(jsonschema.Draft7Validator(schema).iter_errors({"ssn": "SSN 987654321"}))
    assert "SSN 987654321" in str(refusal)
    try:
        try:
            raise refusal
        except jsonschema.ValidationError as cause:
            raise ExternalSchemaError("could not decode 25 bytes as JSON: ...") from cause
    except ExternalSchemaError as error:
        scrub(error, sensitive_values({"ssn": "SSN 987654321"}, ["ssn"]))
        assert type(error.__cause__) is Exception  # a stand-in: its text is all it holds
        assert str(error.__cause__).startswith("ValidationError: '<REDACTED>' does not match")
        assert "987654321" not in everything_said(error)
        assert "".join(traceback.format_exception(error)).count("987654321") == 0
