"""`rules.field_names.check_rule_fields`: the field names a rule set uses, against its schema, before it
is registered (a rule on a field the schema lacks fails on every record, or never fires)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pulsar_external_schema.cli.common import UsageError
from pulsar_external_schema.cli.schemas import contract_schema
from pulsar_external_schema.errors import RuleSetError
from pulsar_external_schema.rules.field_names import check_rule_fields

ADDRESS = {"type": "record", "name": "Address", "fields": [{"name": "zipcode", "type": "string"}]}
PERSON = json.dumps(
    {
        "type": "record",
        "name": "Person",
        "namespace": "acme",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "email", "type": ["null", "string"]},
            {"name": "address", "type": ["null", ADDRESS]},
            {"name": "previous", "type": {"type": "array", "items": "Address"}},
            {"name": "attributes", "type": {"type": "map", "values": "string"}},
            {"name": "home", "type": "acme.Address"},
        ],
    }
)
ORDER = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "customer": {"$ref": "#/$defs/customer"}},
    "$defs": {
        "customer": {
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "additionalProperties": False,
        }
    },
}


def cel(expr: str, rule_type: str = "CEL", **params: str) -> dict[str, Any]:
    rule = {"name": "r", "kind": "CONDITION", "type": rule_type, "mode": "WRITE", "expr": expr}
    return {"domainRules": [{**rule, "params": params} if params else rule]}


@pytest.mark.parametrize(
    "expr",
    [
        "size(message.name) > 0",
        "message.name.size() > 0 && message.name.startsWith('a')",
        "has(message.email) || message.address.zipcode != ''",
        "message.home.zipcode == 'x' && message.previous[0].zipcode == 'y'",
        "message.attributes.anykey == 'v'",  # a map's keys are data
        "message.name == 'message.nope'",  # text in a string
    ],
)
def test_names_the_avro_schema_has_pass(expr: str) -> None:
    check_rule_fields(cel(expr), "AVRO", PERSON)


@pytest.mark.parametrize(
    ("expr", "error"),
    [
        ("message.nmae == 'x'", "message.nmae: the schema has no field 'nmae'; did you mean 'name'?"),
        (
            "message.address.zip != ''",
            "message.address.zip: the schema has no field 'zip'; did you mean 'zipcode'?",
        ),
        ("message.f2 > 0", "message.f2: the schema has no field 'f2' (it has 'name', 'email', "),
    ],
)
def test_a_name_the_avro_schema_lacks_is_refused(expr: str, error: str) -> None:
    with pytest.raises(RuleSetError, match="rule 'r' \\(domainRules\\[0\\]\\): ") as raised:
        check_rule_fields(cel(expr), "AVRO", PERSON)
    assert error in str(raised.value)


def test_a_cel_field_guard_naming_no_field_is_refused() -> None:
    check_rule_fields(cel("name == 'email' ; value != ''", "CEL_FIELD"), "AVRO", PERSON)
    check_rule_fields(cel("typeName == 'STRING' ; value != ''", "CEL_FIELD"), "AVRO", PERSON)
    with pytest.raises(
        RuleSetError, match="name == 'emial': the schema has no field named 'emial'; did you mean 'email'"
    ):
        check_rule_fields(cel("name == 'emial' ; value != ''", "CEL_FIELD"), "AVRO", PERSON)
    # with the guard separator ignored, the whole text is one expression: nothing is a guard
    check_rule_fields(
        cel("name == 'emial' ; value", "CEL_FIELD", **{"cel.ignore.guard.separator": "true"}), "AVRO", PERSON
    )


def test_json_objects_are_open_unless_closed() -> None:
    order = json.dumps(ORDER)
    check_rule_fields(cel("message.note != ''"), "JSON", order)  # an open object may carry it
    with pytest.raises(
        RuleSetError, match=re.escape("message.amout: the schema has no field 'amout'; did you mean 'amount'")
    ):
        check_rule_fields(cel("message.amout > 0"), "JSON", order)  # but a near miss is a typo
    with pytest.raises(
        RuleSetError, match=re.escape("message.customer.name: the schema has no field 'name'")
    ):
        check_rule_fields(cel("message.customer.name != ''"), "JSON", order)  # closed: refused


def test_schemas_the_walk_cannot_follow_are_not_checked() -> None:
    check_rule_fields(cel("message.anything > 0"), "PROTOBUF", 'syntax = "proto3"; message M {}')
    check_rule_fields(cel("message.anything > 0"), "JSON", json.dumps({"allOf": [{"type": "object"}]}))
    check_rule_fields(cel("message.anything > 0"), "AVRO", '"string"')


def test_the_console_tools_refuse_it_before_registering() -> None:
    with pytest.raises(UsageError, match=r"--value-rule-set: rule 'r' .*did you mean 'name'"):
        contract_schema(PERSON, "avro", cel("message.nmae == 'x'"))
