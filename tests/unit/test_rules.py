"""The rule engine's wiring, on confluent-kafka's in-memory registry (`mock://`).

The proof that rules work on Pulsar is in tests/integration; these pin down the parts that need
no broker: config parsing, error messages, DLQ topic names, custom action types.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import rule_plugins
from confluent_kafka.schema_registry import Schema
from contracts import contract, mock_factory, rule

from pulsar_external_schema import ConfigError, RuleViolationError, SchemaRegistrySchemaFactory
from pulsar_external_schema.deadletter import resolve_dlq_topic

RECORD = json.dumps({"type": "record", "name": "R", "fields": [{"name": "f1", "type": "string"}]})


def with_rules(*rules: dict[str, Any]) -> Schema:
    return contract(RECORD, ruleSet={"domainRules": list(rules)})


def test_error_names_rule_mode_topic_subject_schema_id_and_cause() -> None:
    check = rule("checkLen", "CONDITION", "CEL", "WRITE", "size(message.f1) < 10")
    schema = mock_factory().avro(with_rules(check))
    assert schema.encode("orders", {"f1": "success"}).data
    with pytest.raises(RuleViolationError) as failure:
        schema.encode("orders", {"f1": "this will fail"})
    assert str(failure.value) == (
        "rule 'checkLen' (CONDITION CEL, WRITE) failed: Rule expr failed: size(message.f1) < 10 "
        "(topic orders, subject public.default.orders-value, schema id 1)"
    )
    assert failure.value.path is None  # the root's own rule: no part


def test_dlq_without_a_pulsar_client_fails_clearly_instead_of_dropping() -> None:
    dlq = rule(
        "toDlq", "CONDITION", "CEL", "WRITE", "false", params={"dlq.topic": "bad-data"}, onFailure="DLQ"
    )
    schema = mock_factory().avro(with_rules(dlq))
    with pytest.raises(
        RuleViolationError, match="no Pulsar client to write to persistent://public/default/bad-data"
    ):
        schema.encode("orders", {"f1": "x"})


def test_custom_action_type_from_config_runs() -> None:
    # On the real registry this needs Confluent Schema Registry (AxonOps stores only NONE/ERROR/DLQ).
    rule_plugins.RECORDED.clear()
    factory = mock_factory(
        **{
            "rule.actions": "notify",
            "rule.actions.notify.class": "rule_plugins.RecordingAction",
            "rule.actions.notify.param.channel": "ops",
        }
    )
    notify = rule("notify", "CONDITION", "CEL", "WRITE", "true", onSuccess="RECORD")
    factory.avro(with_rules(notify)).encode("orders", {"f1": "x"})
    assert rule_plugins.RECORDED == [("ops", "notify", "WRITE", None)]


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"rule.executors": "a"}, "'rule.executors.a.class' is missing"),
        ({"rule.actions.a.class": "x.Y"}, "not listed in 'rule.actions'"),
        (
            {"rule.executors": "a", "rule.executors.a.class": "nowhere.Missing"},
            "cannot import 'nowhere.Missing'",
        ),
        ({"rule.executors": "a", "rule.executors.a.class": "Bare"}, "not an import path"),
        ({"rule.executors._default_.class": "x.Y"}, "_default_ only takes params"),
        ({"dlq.topc": "x"}, "did you mean 'dlq.topic'"),
    ],
)
def test_rule_config_errors_name_the_key(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mock_factory(**conf)


def test_default_params_and_dlq_keys_reach_every_rule() -> None:
    factory = mock_factory(**{"rule.executors._default_.param.secret": "s3cret", "dlq.topic": "bad"})
    assert factory.rules.rule_conf == {"secret": "s3cret", "dlq.topic": "bad"}


@pytest.mark.parametrize(
    ("dlq", "source", "resolved"),
    [
        ("bad-data", "persistent://acme/orders/in", "persistent://acme/orders/bad-data"),
        ("bad-data", "in", "persistent://public/default/bad-data"),
        ("bad-data", "non-persistent://a/b/c", "non-persistent://a/b/bad-data"),
        ("other/ns/bad", "persistent://acme/orders/in", "other/ns/bad"),
        ("persistent://x/y/z", "persistent://acme/orders/in", "persistent://x/y/z"),
    ],
)
def test_a_bare_dlq_topic_lives_in_the_namespace_of_the_failing_topic(
    dlq: str, source: str, resolved: str
) -> None:
    assert resolve_dlq_topic(dlq, source) == resolved


def test_kms_drivers_local_always_cloud_ones_with_their_extra() -> None:
    from pulsar_external_schema.rules.rule_registry import register_kms_drivers

    drivers = register_kms_drivers()
    assert drivers["LocalKmsDriver"] is None  # registered
    extras = {
        "AwsKmsDriver": "aws",
        "AzureKmsDriver": "azure",
        "GcpKmsDriver": "gcp",
        "HcVaultKmsDriver": "hcvault",
    }
    for driver, extra in extras.items():
        # Registered when its libraries are installed; else the reason names the extra to install.
        why = drivers[driver]
        assert why is None or why.endswith(f"install pulsar-external-schema[{extra}]"), (driver, why)


def test_custom_action_by_code_and_built_ins_cannot_be_replaced() -> None:
    rule_plugins.RECORDED.clear()
    action = rule_plugins.RecordingAction()
    action.channel = "in-code"
    factory = mock_factory({"rule_actions": [action]})
    notify = rule("n", "CONDITION", "CEL", "WRITE", "true", onSuccess="RECORD")
    factory.avro(with_rules(notify)).encode("orders", {"f1": "x"})
    assert rule_plugins.RECORDED == [("in-code", "n", "WRITE", None)]

    class Error(rule_plugins.RecordingAction):
        def type(self) -> str:
            return "ERROR"

    with pytest.raises(ConfigError, match="ERROR action is built in"):
        SchemaRegistrySchemaFactory({"schema.registry.url": "mock://x"}, rule_actions=[Error()])
