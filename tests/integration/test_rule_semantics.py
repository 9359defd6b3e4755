"""Rule kinds, modes, actions and executors as Confluent's serdes run them, on Pulsar."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
import rule_plugins
from confluent_kafka.schema_registry import SchemaRegistryClient
from conftest import Services, require_confluent_registry
from contracts import PERSON, contract, drain, rule, subscribe
from schemas import order_message_class

from pulsar_external_schema import RuleViolationError, create_producer
from pulsar_external_schema.protobuf_text import file_descriptor_proto, render_proto

ANN = {"name": "Ann", "ssn": "123456789", "occupation": ""}


def person_with(*rules: dict[str, Any], schema: dict[str, Any] = PERSON) -> Any:
    return contract(schema, ruleSet={"domainRules": list(rules)})


def wire_value(message: Any, schema: dict[str, Any] = PERSON) -> Any:
    """Decode the payload as it is on the topic, without any rule."""
    return fastavro.schemaless_reader(io.BytesIO(message.data()), fastavro.parse_schema(schema))


# -- CEL_FIELD transforms (Confluent's populateDefault) -----------------------------------------


@pytest.mark.parametrize(
    ("guard", "expected"),
    [
        ("name == 'occupation'", {"name": "", "ssn": "123456789", "occupation": "unspecified"}),
        ("typeName == 'STRING'", {"name": "unspecified", "ssn": "123456789", "occupation": "unspecified"}),
    ],
    ids=["by-name", "by-type-name"],
)
def test_populate_default(
    make_factory: Any, pulsar_client: Any, topic: str, guard: str, expected: Any
) -> None:
    populate = rule(
        "populateDefault", "TRANSFORM", "CEL_FIELD", "WRITE", f"{guard} ; value == '' ? 'unspecified' : value"
    )
    schema = make_factory().avro(person_with(populate))
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send({"name": "", "ssn": "123456789", "occupation": ""})
    [message] = drain(consumer)
    assert message.value() == expected
    assert wire_value(message) == expected  # transformed before it was written


# -- modes, order, comma actions, disabled ---------------------------------------------------


def test_read_rules_run_in_reverse_order_of_write_rules(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    first = rule("first", "TRANSFORM", "CEL_FIELD", "WRITEREAD", "name == 'name' ; value + '1'")
    second = rule("second", "TRANSFORM", "CEL_FIELD", "WRITEREAD", "name == 'name' ; value + '2'")
    schema = make_factory().avro(person_with(first, second))
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send({**ANN, "name": "x"})
    [message] = drain(consumer)
    assert wire_value(message)["name"] == "x12"  # WRITE: first, second
    assert message.value()["name"] == "x1221"  # READ: second, first


def test_comma_actions_apply_none_on_write_and_error_on_read(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    check = rule("nameSet", "CONDITION", "CEL", "WRITEREAD", "message.name != ''", onFailure="NONE,ERROR")
    schema = make_factory().avro(person_with(check))
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send({**ANN, "name": ""})  # NONE on write: sent
    [message] = drain(consumer)
    with pytest.raises(RuleViolationError) as failure:
        message.value()
    assert (failure.value.rule, failure.value.mode) == ("nameSet", "READ")


def test_on_success_action_and_a_disabled_rule(make_factory: Any, pulsar_client: Any, topic: str) -> None:
    schema = make_factory().avro(
        person_with(
            rule("neverTrue", "CONDITION", "CEL", "WRITE", "false", disabled=True),
            rule("alwaysTrue", "CONDITION", "CEL", "WRITE", "true", onSuccess="ERROR"),
        )
    )
    with pytest.raises(RuleViolationError, match=r"alwaysTrue.*passed and its action is ERROR"):
        create_producer(pulsar_client, topic, schema).send(ANN)


def test_a_rule_of_an_unknown_type_fails_with_its_name(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    schema = make_factory().avro(person_with(rule("mystery", "CONDITION", "NOPE", "WRITE", "x")))
    with pytest.raises(RuleViolationError, match=r"mystery.*executor of type NOPE"):
        create_producer(pulsar_client, topic, schema).send(ANN)


# -- CEL built-ins ---------------------------------------------------------------------------

CONTACT = {
    "type": "record",
    "name": "Contact",
    "fields": [
        {"name": field, "type": "string"} for field in ("email", "host", "ip4", "ip6", "uri", "ref", "uuid")
    ],
}
GOOD_CONTACT = {
    "email": "ann@example.com",
    "host": "broker-1.example.com",
    "ip4": "10.0.0.1",
    "ip6": "2001:db8::1",
    "uri": "https://example.com/a?b=c",
    "ref": "../relative/path",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
}
BUILT_INS = {
    "email": "isEmail",
    "host": "isHostname",
    "ip4": "isIpv4",
    "ip6": "isIpv6",
    "uri": "isUri",
    "ref": "isUriRef",
    "uuid": "isUuid",
}
BAD_VALUES = {
    "email": "not an email",
    "host": "-bad-.host_",
    "ip4": "300.1.1.1",
    "ip6": "2001:::zz",
    "uri": "no-scheme",
    "ref": "http://[bad",
    "uuid": "1234",
}


@pytest.mark.parametrize("field", list(BUILT_INS))
def test_cel_built_in_string_checks(make_factory: Any, pulsar_client: Any, topic: str, field: str) -> None:
    check = rule(f"check_{field}", "CONDITION", "CEL", "WRITE", f"message.{field}.{BUILT_INS[field]}()")
    schema = make_factory().avro(contract(CONTACT, ruleSet={"domainRules": [check]}))
    producer = create_producer(pulsar_client, topic, schema)
    producer.send(GOOD_CONTACT)
    with pytest.raises(RuleViolationError, match=f"check_{field}"):
        producer.send({**GOOD_CONTACT, field: BAD_VALUES[field]})


# -- JSON Schema and Protobuf ----------------------------------------------------------------


def test_json_schema_condition(make_factory: Any, pulsar_client: Any, topic: str) -> None:
    amount = json.dumps(
        {
            "type": "object",
            "properties": {"amount": {"type": "number"}},
            "required": ["amount"],
            "additionalProperties": False,
        }
    )
    positive = rule("positive", "CONDITION", "CEL", "WRITE", "message.amount > 0.0")
    schema = make_factory().json(contract(amount, "JSON", ruleSet={"domainRules": [positive]}))
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    producer.send({"amount": 5.5})
    with pytest.raises(RuleViolationError, match="positive"):
        producer.send({"amount": -1.0})
    assert [m.value() for m in drain(consumer)] == [{"amount": 5.5}]


def test_protobuf_condition_and_transform(
    make_factory: Any, registry_client: SchemaRegistryClient, pulsar_client: Any, topic: str
) -> None:
    order = order_message_class()
    schema = make_factory().protobuf(order)
    text = render_proto(file_descriptor_proto(order))
    registry_client.register_schema(
        schema.subject(topic),
        contract(
            text,
            "PROTOBUF",
            ruleSet={
                "domainRules": [
                    rule("idPositive", "CONDITION", "CEL", "WRITE", "message.id > 0"),
                    rule(
                        "tagItem", "TRANSFORM", "CEL_FIELD", "WRITE", "name == 'item' ; value + ' (checked)'"
                    ),
                ]
            },
        ),
    )
    consumer = subscribe(pulsar_client, topic, schema)
    producer = create_producer(pulsar_client, topic, schema)
    producer.send(order(id=1, item="tea"))
    with pytest.raises(RuleViolationError, match="idPositive"):
        producer.send(order(id=0, item="none"))
    [message] = drain(consumer)
    assert (message.value().id, message.value().item) == (1, "tea (checked)")


# -- custom executors and actions: by config (Java style) and by code ------------------------


def test_custom_executor_and_action_from_config(make_factory: Any, pulsar_client: Any, topic: str) -> None:
    # Java-style config. The action is a DLQ of one's own for the rule named `checkName` (rules with
    # other names keep Pulsar's DLQ): AxonOps v0.2.1 stores only NONE / ERROR / DLQ as rule actions,
    # so an action of a new type is covered on Confluent Schema Registry (test_custom_action_type).
    rule_plugins.RECORDED.clear()
    factory = make_factory(
        **{
            "rule.executors": "exclaim",
            "rule.executors.exclaim.class": "rule_plugins.Suffix",
            "rule.executors.exclaim.param.suffix": "!",
            "rule.actions": "checkName",
            "rule.actions.checkName.class": "rule_plugins.RecordingDlq",
            "rule.actions.checkName.param.channel": "ops",
        }
    )
    schema = factory.avro(
        person_with(
            rule("exclaim", "TRANSFORM", "SUFFIX", "WRITE", ""),
            rule("checkName", "CONDITION", "CEL", "WRITE", "message.name != 'Ann!'", onFailure="DLQ"),
        )
    )
    consumer = subscribe(pulsar_client, topic, schema)
    create_producer(pulsar_client, topic, schema).send(ANN)  # the action does not raise: sent
    assert [m.value()["name"] for m in drain(consumer)] == ["Ann!"]
    [(channel, name, mode, error)] = rule_plugins.RECORDED
    assert (channel, name, mode) == ("ops", "checkName", "WRITE")
    assert error is not None and "message.name != 'Ann!'" in error


def test_custom_executor_by_code_serves_rules_of_its_name(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    loud, quiet = rule_plugins.Suffix(), rule_plugins.Suffix()
    loud.suffix, quiet.suffix = "!!", "."
    factory = make_factory()
    factory_with_code = type(factory)(factory.config, rule_executors={"loud": loud, "quiet": quiet})
    try:
        schema = factory_with_code.avro(
            person_with(
                rule("quiet", "TRANSFORM", "SUFFIX", "WRITE", ""),
                rule("loud", "TRANSFORM", "SUFFIX", "WRITE", ""),
            )
        )
        consumer = subscribe(pulsar_client, topic, schema)
        create_producer(pulsar_client, topic, schema).send(ANN)
        assert [m.value()["name"] for m in drain(consumer)] == ["Ann.!!"]
        schema.close()
    finally:
        factory_with_code.close()


def test_custom_action_type(services: Services, make_factory: Any, pulsar_client: Any, topic: str) -> None:
    require_confluent_registry(
        services, "AxonOps v0.2.1 stores only NONE, ERROR and DLQ as onSuccess/onFailure actions"
    )
    rule_plugins.RECORDED.clear()
    factory = make_factory(
        **{
            "rule.actions": "notify",
            "rule.actions.notify.class": "rule_plugins.RecordingAction",
            "rule.actions.notify.param.channel": "ops",
        }
    )
    schema = factory.avro(
        person_with(rule("notify", "CONDITION", "CEL", "WRITE", "true", onSuccess="RECORD"))
    )
    create_producer(pulsar_client, topic, schema).send(ANN)
    assert rule_plugins.RECORDED == [("ops", "notify", "WRITE", None)]


def test_protobuf_consumer_pinned_to_the_latest_version_reads(
    make_factory: Any, pulsar_client: Any, topic: str
) -> None:
    # confluent-kafka looks the writer schema up in its serialized form to find migrations, which
    # AxonOps cannot compile; the lookup must use the registry's .proto text.
    order = order_message_class()
    producer = create_producer(pulsar_client, topic, make_factory().protobuf(order))
    reader = make_factory(**{"use.latest.version": True}).protobuf(order)
    consumer = subscribe(pulsar_client, topic, reader)
    producer.send(order(id=7, item="tea"))
    [message] = drain(consumer)
    assert (message.value().id, message.value().item) == (7, "tea")
