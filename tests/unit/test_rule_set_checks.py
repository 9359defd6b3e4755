"""`check_rule_set` / `check_metadata`: a contract that cannot run is refused before it is
registered, naming the rule and the key; and the console tools' read-back check finds what a
registry did not keep."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError

from pulsar_external_schema import ConfigError, RuleSetError, check_metadata, check_rule_set
from pulsar_external_schema.cli.common import CommandError
from pulsar_external_schema.cli.schemas import _missing, register


def cel(**changes: Any) -> dict[str, Any]:
    rule = {"name": "c", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "size(message.f1) < 10"}
    return {"domainRules": [{**rule, **changes}]}


def upgrade(expr: str) -> dict[str, Any]:
    return {
        "migrationRules": [
            {"name": "m", "kind": "TRANSFORM", "type": "JSONATA", "mode": "UPGRADE", "expr": expr}
        ]
    }


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"domainRule": []}, "the rule set has an unknown key 'domainRule'; did you mean 'domainRules'?"),
        (
            cel(onfailure="DLQ"),
            "rule 'c' (domainRules[0]) has an unknown key 'onfailure'; did you mean 'onFailure'?",
        ),
        (cel(expr="size(message.f1 < 10"), "CEL expression 'size(message.f1 < 10' does not compile"),
        (cel(mode="UPGRADE"), "mode (of domainRules) is 'UPGRADE', not one of WRITE, READ, WRITEREAD"),
        (cel(kind="CHECK"), "kind is 'CHECK', not one of CONDITION, TRANSFORM"),
        (cel(type="CEL_FEILD", kind="TRANSFORM"), "type is 'CEL_FEILD'; did you mean 'CEL_FIELD'?"),
        (cel(onFailure="EROR"), "onFailure is 'EROR'; did you mean 'ERROR'?"),
        (cel(onFailure="DLQ,ERROR"), "two actions (A,B) are for WRITEREAD and UPDOWN rules"),
        (cel(name=None), "domainRules[0] has no 'name'"),
        (cel(kind="TRANSFORM"), "a CEL transform is CEL_FIELD"),
        (
            cel(type="CEL_FIELD", kind="TRANSFORM", expr="name == 'f1' ; value +"),
            "CEL expression ' value +' does not compile",
        ),
        (
            cel(type="ENCRYPT", kind="TRANSFORM", mode="WRITEREAD", expr=None, tags=["PII"]),
            "an ENCRYPT rule needs the 'encrypt.kek.name' param",
        ),
        (upgrade("$merge([$, {'b': $.a}"), "JSONata expression \"$merge([$, {'b': $.a}\" does not parse"),
        ({"domainRules": {}}, "domainRules is a list of rules, not a JSON object"),
        ([], "a rule set is a JSON object"),
    ],
)
def test_a_rule_set_that_cannot_run_is_refused_with_the_rule_and_key(document: Any, expected: str) -> None:
    with pytest.raises(RuleSetError) as raised:
        check_rule_set(document)
    assert expected in str(raised.value)
    assert isinstance(raised.value, ConfigError)


@pytest.mark.parametrize(
    "document",
    [
        cel(onFailure="DLQ", params={"dlq.topic": "bad"}),
        cel(mode="WRITEREAD", onFailure="DLQ,ERROR"),
        cel(type="CEL_FIELD", kind="TRANSFORM", expr="name == 'f1' ; value + 'x'"),
        cel(type="CEL_FIELD", kind="TRANSFORM", expr="a;b", params={"cel.ignore.guard.separator": "true"})
        | {
            "domainRules": [
                {**cel()["domainRules"][0], "type": "CEL_FIELD", "kind": "TRANSFORM", "expr": "value"}
            ]
        },
        cel(type="ENCRYPT", kind="TRANSFORM", expr=None, params={"encrypt.kek.name": "k"}),
        upgrade("$merge([$sift($, function($v, $k) {$k != 'a'}), {'b': $.a}])"),
        cel(type="MY_OWN_CHECK", onFailure="MyAction"),  # another client may run these
        {"domainRules": [], "migrationRules": [], "encodingRules": [], "enableAt": "CLIENT"},
    ],
)
def test_a_rule_set_that_runs_is_returned_as_a_rule_set(document: Any) -> None:
    rule_set = check_rule_set(document)
    assert len(rule_set.domain_rules or []) + len(rule_set.migration_rules or []) == sum(
        len(document.get(key, [])) for key in ("domainRules", "migrationRules")
    )


def test_metadata_keys_and_properties_are_checked() -> None:
    with pytest.raises(RuleSetError, match="unknown key 'propertys'; did you mean 'properties'"):
        check_metadata({"propertys": {"a": "b"}})
    with pytest.raises(RuleSetError, match='"properties" maps names to strings'):
        check_metadata({"properties": {"major": 2}})
    metadata = check_metadata({"properties": {"major": "2"}, "tags": {"r.f1": ["PII"]}, "sensitive": ["a"]})
    assert metadata.properties is not None and metadata.properties.properties == {"major": "2"}


def test_the_read_back_check_names_what_the_registry_did_not_keep() -> None:
    given = {
        "ruleSet": {**cel(onFailure="DLQ"), "enableAt": "CLIENT"},
        "metadata": {"properties": {"a": "b"}},
    }
    kept_rule = {**cel(onFailure="DLQ")["domainRules"][0], "disabled": False}  # a default added
    stored: dict[str, Any] = {
        "ruleSet": {"migrationRules": [], "domainRules": [kept_rule]},
        "metadata": {"properties": {"a": "b", "confluent:version": "1"}},
    }
    assert _missing(stored, given, "") == 'ruleSet.enableAt ("CLIENT")'
    assert _missing({**stored, "ruleSet": {**stored["ruleSet"], "enableAt": "CLIENT"}}, given, "") is None
    assert _missing({**stored, "ruleSet": {"domainRules": []}}, given, "") == "ruleSet.domainRules[0] 'c'"
    dropped_action = {"domainRules": [{**kept_rule, "onFailure": None}], "enableAt": "CLIENT"}
    assert _missing({**stored, "ruleSet": dropped_action}, given, "") == "ruleSet.domainRules[0] 'c'"
    assert _missing({**stored, "metadata": {}}, given | {"ruleSet": {}}, "") == 'metadata.properties.a ("b")'


class _Registry:
    """A registry client that registers as asked and keeps what `stored` says it keeps."""

    def __init__(self, stored: dict[str, Any], *, ids_endpoint: bool = True) -> None:
        self.stored, self.ids_endpoint = stored, ids_endpoint
        self._rest_client = self

    def register_schema_full_response(self, subject: str, schema: Any, normalize_schemas: bool) -> Any:
        return SimpleNamespace(schema_id=5, version=None)

    def get(self, path: str, query: Any = None) -> Any:
        if path.startswith("schemas/ids/"):
            if not self.ids_endpoint:
                raise SchemaRegistryError(404, 404, "HTTP 404 Not Found")
            return [{"subject": "orders-value", "version": 3}]
        assert path in ("subjects/orders-value/versions/3", "subjects/orders-value/versions/latest"), path
        return {"id": 5, "version": 3, **self.stored}


@pytest.mark.parametrize("ids_endpoint", [True, False], ids=["ids endpoint", "latest version only"])
def test_registering_reads_the_version_back_and_refuses_a_dropped_contract(ids_endpoint: bool) -> None:
    schema = Schema("{}", "AVRO", [], check_metadata({"properties": {"a": "b"}}), check_rule_set(cel()))
    rules = {"ruleSet": cel(), "metadata": {"properties": {"a": "b"}}}
    kept = register(_Registry(rules, ids_endpoint=ids_endpoint), "http://r", "orders-value", schema)
    assert (kept.schema_id, kept.version) == (5, 3)

    dropped = _Registry({"metadata": {"properties": {"a": "b"}}}, ids_endpoint=ids_endpoint)
    with pytest.raises(CommandError) as raised:
        register(dropped, "http://r", "orders-value", schema)
    assert (
        "registered the schema under orders-value (id 5) but did not keep ruleSet.domainRules[0] 'c'"
        in str(raised.value)
    )
