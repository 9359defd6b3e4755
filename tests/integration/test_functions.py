"""Pulsar Functions on external schemas, against the real broker and registry.

The Python function runtime is not installable here (it ships in Pulsar's binary distribution), so
`LocalRunner` plays its part through the public `pulsar.functions` interfaces: it builds the custom
input schema from its class path as the runtime does, subscribes with it, calls `msg.value()` and
then `process(value, context)` with a `LocalContext` whose `publish` uses real producers. The same
functions run in the real runtime in test_functions_runtime_docker.py (Docker path).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
from typing import Any

import pulsar
import pytest
from conftest import REPO, Services
from contracts import (
    LOCAL_KMS_SECRET,
    contract,
    drain,
    encrypt_rule,
    rule,
    subject_of,
    subscribe,
    tagged_person,
    unique,
)
from function_support import SCHEMA_CLASS, properties_of, run_function, run_validate_function
from schemas import ORDER_JSON, ORDER_V1, ORDER_V2, order_message_class

from pulsar_external_schema import (
    SCHEMA_ID_PROPERTY,
    ConfigError,
    RegistryUnavailableError,
    RuleViolationError,
    create_producer,
)
from pulsar_external_schema import schema_id as ids
from pulsar_external_schema.functions import (
    ExternalFunction,
    FunctionSchema,
    LocalRunner,
    Rejected,
    make_input_schema,
)

RECEIPT = {
    "type": "record",
    "name": "Receipt",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "label", "type": "string"}],
}
ITEM_NOT_EMPTY = rule("itemNotEmpty", "CONDITION", "CEL", "READ", "size(message.item) > 0")


class Receipts(ExternalFunction):
    """Orders (Avro, JSON Schema or Protobuf) in, receipts (the output subject's schema) out."""

    def handle(self, order: Any, context: Any) -> Any:
        fields = order if isinstance(order, dict) else {"id": order.id, "item": order.item}
        return {"id": fields["id"], "label": fields["item"].upper()}


class DeclaredReceipts(Receipts):
    output_schema = RECEIPT  # registered on first publish (auto.register.schemas defaults to true)


def topic_named(prefix: str) -> str:
    return f"persistent://public/default/{unique(prefix)}"


def test_the_runtime_builds_function_schema_from_its_class_path(services: Services) -> None:
    # The runtime counts __init__'s parameters (self included) and passes both for three.
    assert list(inspect.signature(FunctionSchema.__init__).parameters) == [
        "self",
        "record_cls",
        "schema_properties",
    ]
    schema = make_input_schema(
        SCHEMA_CLASS, None, {"schema.registry.url": services.registry_url, "max.retries": "1"}
    )
    assert isinstance(schema, FunctionSchema) and isinstance(schema, pulsar.schema.Schema)
    assert schema.factory.config.registry_url == services.registry_url
    schema.close()
    with pytest.raises(ConfigError, match=r"unknown config key 'schema\.registry\.ulr'"):
        make_input_schema(SCHEMA_CLASS, None, {"schema.registry.ulr": services.registry_url})
    with pytest.raises(ConfigError, match=r"'protobuf\.message\.class': cannot import 'no\.such\.Class'"):
        make_input_schema(
            SCHEMA_CLASS, None, {**properties_of(services), "protobuf.message.class": "no.such.Class"}
        )


def test_an_external_function_decodes_every_format_and_publishes_with_schema_ids(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    avro_in, json_in, proto_in = (
        topic_named("orders-avro"),
        topic_named("orders-json"),
        topic_named("orders-pb"),
    )
    output = topic_named("receipts")
    order_cls = order_message_class()
    registered = registry_client.register_schema(subject_of(output), contract(RECEIPT))
    factory = make_factory()
    with create_producer(pulsar_client, avro_in, factory.avro(ORDER_V1)) as producer:
        producer.send({"id": 1, "item": "tea"})
    with create_producer(pulsar_client, avro_in, factory.avro(ORDER_V2)) as producer:
        producer.send({"id": 2, "item": "jam", "quantity": 3})
    with create_producer(pulsar_client, json_in, factory.json(ORDER_JSON)) as producer:
        producer.send({"id": 3, "item": "scone"})
    with create_producer(pulsar_client, proto_in, factory.protobuf(order_cls)) as producer:
        producer.send(order_cls(id=4, item="cake"))
    receipts = subscribe(pulsar_client, output, make_factory().avro(RECEIPT))

    with LocalRunner(
        pulsar_client,
        Receipts,
        inputs=[avro_in, json_in, proto_in],
        output=output,
        custom_schema=SCHEMA_CLASS,
        record_class=order_cls,
        schema_properties=properties_of(services),
        user_config=properties_of(services, greeting="the function's own key"),
    ) as runner:
        result = runner.run(timeout_millis=3_000)

    assert (result.processed, result.user_errors, result.system_errors) == (4, [], [])
    published = drain(receipts, timeout_millis=3_000)
    assert sorted((msg.value()["id"], msg.value()["label"]) for msg in published) == [
        (1, "TEA"),
        (2, "JAM"),
        (3, "SCONE"),
        (4, "CAKE"),
    ]
    expected_id = ids.to_property(ids.confluent_id(registered))
    assert {msg.properties()[SCHEMA_ID_PROPERTY] for msg in published} == {expected_id}


def test_a_protobuf_input_needs_no_generated_class(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    # a topic written by a service whose generated Python code does not exist: the message class
    # is built from the registry's .proto text
    source, output = topic_named("orders-pb"), topic_named("receipts")
    order_cls = order_message_class()
    registry_client.register_schema(subject_of(output), contract(RECEIPT))
    with create_producer(pulsar_client, source, make_factory().protobuf(order_cls)) as producer:
        producer.send(order_cls(id=5, item="bun"))
    receipts = subscribe(pulsar_client, output, make_factory().avro(RECEIPT))

    with LocalRunner(
        pulsar_client,
        Receipts,
        inputs=[source],
        output=output,
        custom_schema=SCHEMA_CLASS,
        schema_properties=properties_of(services),
        user_config=properties_of(services),
    ) as runner:
        result = runner.run(timeout_millis=3_000)

    assert (result.processed, result.user_errors, result.system_errors) == (1, [], [])
    [msg] = drain(receipts, timeout_millis=3_000)
    assert msg.value() == {"id": 5, "label": "BUN"}


def test_declared_output_schema_is_registered_and_its_id_travels(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    source, output = topic_named("orders"), topic_named("receipts")
    with create_producer(pulsar_client, source, make_factory().avro(ORDER_V1)) as producer:
        producer.send({"id": 7, "item": "tea"})
    assert run_function(pulsar_client, DeclaredReceipts, services, [source], output=output).processed == 1
    [msg] = drain(subscribe(pulsar_client, output))
    latest = registry_client.get_latest_version(subject_of(output))
    assert msg.properties()[SCHEMA_ID_PROPERTY] == ids.to_property(ids.confluent_id(latest.schema_id))
    assert make_factory().avro(RECEIPT).decode_message(msg) == {"id": 7, "label": "TEA"}


def test_messages_that_cannot_be_decoded_reach_the_dead_letter_topic_with_reasons(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    source, output, dlq = topic_named("orders"), topic_named("receipts"), unique("bad-orders")
    registry_client.register_schema(
        subject_of(source), contract(ORDER_V1, ruleSet={"domainRules": [ITEM_NOT_EMPTY]})
    )
    registry_client.register_schema(subject_of(output), contract(RECEIPT))
    writer = make_factory(**{"use.latest.version": True, "auto.register.schemas": False}).avro(ORDER_V1)
    with create_producer(pulsar_client, source, writer) as producer:
        producer.send({"id": 1, "item": "tea"})
        producer.send({"id": 2, "item": ""})  # breaks the READ rule
    raw = pulsar_client.create_producer(source)
    raw.send(b"no schema id")
    raw.close()

    result = run_function(
        pulsar_client,
        Receipts,
        services,
        [source],
        output=output,
        user_config=properties_of(services, **{"dlq.topic": dlq}),
    )

    assert (result.processed, result.user_errors, result.system_errors) == (3, [], [])
    assert [m.value() for m in drain(subscribe(pulsar_client, output, make_factory().avro(RECEIPT)))] == [
        {"id": 1, "label": "TEA"}
    ]
    copies = drain(subscribe(pulsar_client, f"persistent://public/default/{dlq}"))
    assert len(copies) == 2
    by_rule = {copy.properties().get("__rule.name", ""): copy for copy in copies}
    assert by_rule["itemNotEmpty"].properties()["__rule.topic"] == source
    assert SCHEMA_ID_PROPERTY in by_rule["itemNotEmpty"].properties()  # replayable: its id is kept
    assert by_rule[""].data() == b"no schema id"
    assert "__schema_id" in by_rule[""].properties()["__rule.exception"]


def test_without_a_dead_letter_topic_bad_messages_are_redelivered_not_dropped(
    services: Services, pulsar_client: Any, registry_client: Any
) -> None:
    source = topic_named("orders")
    registry_client.register_schema(subject_of(source), contract(ORDER_V1))
    raw = pulsar_client.create_producer(source)
    raw.send(b"garbage")
    raw.close()
    result = run_function(
        pulsar_client, Receipts, services, [source], max_messages=2, negative_ack_redelivery_delay_ms=100
    )
    assert result.processed == 0
    assert len(result.user_errors) == 2  # the same message, twice: negatively acknowledged each time
    assert "__schema_id" in str(result.user_errors[0]) and source in str(result.user_errors[0])


def test_an_output_breaking_a_write_rule_redelivers_its_input(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    source, output = topic_named("orders"), topic_named("receipts")
    label_short = rule("labelShort", "CONDITION", "CEL", "WRITE", "size(message.label) < 5")
    registry_client.register_schema(
        subject_of(output), contract(RECEIPT, ruleSet={"domainRules": [label_short]})
    )
    with create_producer(pulsar_client, source, make_factory().avro(ORDER_V1)) as producer:
        producer.send({"id": 1, "item": "tea"})
        producer.send({"id": 2, "item": "gingerbread"})
    result = run_function(
        pulsar_client,
        Receipts,
        services,
        [source],
        output=output,
        max_messages=3,
        negative_ack_redelivery_delay_ms=100,
    )
    assert result.processed == 1
    assert len(result.user_errors) == 2 and all(isinstance(e, RuleViolationError) for e in result.user_errors)
    error = result.user_errors[0]
    assert isinstance(error, RuleViolationError) and error.rule == "labelShort" and output in str(error)
    assert [m.value() for m in drain(subscribe(pulsar_client, output, make_factory().avro(RECEIPT)))] == [
        {"id": 1, "label": "TEA"}
    ]


def test_a_registry_outage_raises_in_value_so_the_runtime_redelivers(
    services: Services, pulsar_client: Any, make_factory: Any
) -> None:
    source = topic_named("orders")
    with create_producer(pulsar_client, source, make_factory().avro(ORDER_V1)) as producer:
        producer.send({"id": 1, "item": "tea"})
    unreachable = {"schema.registry.url": "http://127.0.0.1:9", "max.retries": "0"}
    result = run_function(
        pulsar_client,
        Receipts,
        services,
        [source],
        max_messages=1,
        schema_properties=unreachable,
        user_config=unreachable,
    )
    [error] = result.system_errors
    assert isinstance(error, RegistryUnavailableError) and "http://127.0.0.1:9" in str(error)


def test_rejected_values_say_what_failed(
    services: Services, pulsar_client: Any, registry_client: Any
) -> None:
    source = topic_named("orders")
    registry_client.register_schema(subject_of(source), contract(ORDER_V1))
    raw = pulsar_client.create_producer(source)
    raw.send(b"\x00\x00\x00\x00\x01", properties={SCHEMA_ID_PROPERTY: "ff00ffffffff"})
    raw.close()
    schema = FunctionSchema(None, properties_of(services))
    consumer = subscribe(pulsar_client, source, schema)
    msg = consumer.receive(timeout_millis=5_000)
    value = msg.value()
    assert isinstance(value, Rejected)
    assert value.topic == source and value.data == b"\x00\x00\x00\x00\x01"
    assert "4294967295" in str(value.error)
    consumer.close()
    schema.close()


def test_validate_function_passes_valid_messages_untouched_and_dead_letters_the_rest(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    source, valid, dlq = topic_named("orders"), topic_named("orders-valid"), topic_named("orders-dlq")
    elsewhere = topic_named("rule-dlq")  # the rule's own DLQ topic: the function writes its own instead
    to_dlq = {
        **ITEM_NOT_EMPTY,
        "name": "itemNotEmptyDlq",
        "onFailure": "DLQ",
        "params": {"dlq.topic": elsewhere},
    }
    registry_client.register_schema(subject_of(source), contract(ORDER_V1, ruleSet={"domainRules": [to_dlq]}))
    writer = make_factory(**{"use.latest.version": True, "auto.register.schemas": False}).avro(ORDER_V1)
    with create_producer(pulsar_client, source, writer) as producer:
        producer.send({"id": 1, "item": "tea"}, properties={"trace": "a"}, partition_key="k1")
        producer.send({"id": 2, "item": ""})
        # A producer cannot skip the rule by naming it: __rule.* properties are not trusted.
        producer.send({"id": 3, "item": ""}, properties={"__rule.name": "itemNotEmptyDlq"})
        producer.send({"id": 4, "item": "jam"}, event_timestamp=1_700_000_000_000)
    raw = pulsar_client.create_producer(source)
    raw.send(b"not avro at all", properties={SCHEMA_ID_PROPERTY: "ff0000000000"})
    raw.close()
    originals = {m.message_id().serialize(): m for m in drain(subscribe(pulsar_client, source, name="audit"))}

    result = run_validate_function(pulsar_client, services, source, valid, dlq)

    assert (result.processed, result.user_errors, result.system_errors) == (5, [], [])
    passed = drain(subscribe(pulsar_client, valid))
    by_data = {m.data(): m for m in originals.values()}
    assert len(passed) == 2
    for msg in passed:
        original = by_data[msg.data()]
        assert msg.properties() == original.properties()
        assert msg.partition_key() == original.partition_key()
        assert msg.event_timestamp() == original.event_timestamp()
    # The validated topic keeps the source's schema ids, now registered under its own subject too:
    # a reader with the default config reads it.
    reader = make_factory().avro(ORDER_V1)
    assert {json.dumps(reader.decode_message(m), sort_keys=True) for m in passed} == {
        json.dumps({"id": 1, "item": "tea"}, sort_keys=True),
        json.dumps({"id": 4, "item": "jam"}, sort_keys=True),
    }
    copies = drain(subscribe(pulsar_client, dlq))
    assert len(copies) == 3
    assert {copy.data() for copy in copies} <= set(by_data)
    assert sorted(copy.properties().get("__rule.name", "-") for copy in copies) == [
        "-",
        "itemNotEmptyDlq",
        "itemNotEmptyDlq",
    ]
    assert all(copy.properties()["__rule.topic"] == source for copy in copies)
    assert drain(subscribe(pulsar_client, elsewhere), 300) == []


def test_a_validate_function_without_the_secret_forwards_what_the_output_topics_readers_decrypt(
    services: Services, pulsar_client: Any, make_factory: Any
) -> None:
    """The function holds no KMS secret: it judges the fields in clear and forwards the rest
    untouched; the output topic's readers, who hold it, find the DEK under their own subject."""
    source, valid = topic_named("people"), topic_named("people-valid")
    person = tagged_person()
    written = contract(person, ruleSet={"domainRules": [encrypt_rule(unique("kek"))]})
    ann = {"name": "Ann", "ssn": "123-45-6789"}
    with create_producer(pulsar_client, source, make_factory(**LOCAL_KMS_SECRET).avro(written)) as producer:
        producer.send(dict(ann))

    result = run_validate_function(pulsar_client, services, source, valid, topic_named("people-dlq"))

    assert (result.processed, result.user_errors, result.system_errors) == (1, [], [])
    [forwarded] = drain(subscribe(pulsar_client, valid))
    assert b"123-45-6789" not in forwarded.data()
    assert make_factory(**LOCAL_KMS_SECRET).avro(person).decode_message(forwarded) == ann


def test_validate_function_stops_where_the_output_subject_refuses_the_version(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    source, valid, dlq = topic_named("orders"), topic_named("orders-valid"), topic_named("orders-dlq")
    registry_client.register_schema(subject_of(source), contract(ORDER_V1))
    registry_client.set_compatibility(subject_of(valid), "FULL")
    registry_client.register_schema(
        subject_of(valid), contract({**json.loads(ORDER_V1), "fields": [{"name": "id", "type": "string"}]})
    )
    with create_producer(pulsar_client, source, make_factory().avro(ORDER_V1)) as producer:
        producer.send({"id": 1, "item": "tea"})

    result = run_validate_function(pulsar_client, services, source, valid, dlq, max_messages=1)

    [error] = result.user_errors
    assert type(error).__name__ == "IncompatibleSchemaError"
    assert f"{subject_of(valid)} refuses version 1 of {subject_of(source)}" in str(error)
    assert drain(subscribe(pulsar_client, valid), 500) == []  # nothing forwarded
    assert drain(subscribe(pulsar_client, dlq), 500) == []  # and nothing judged invalid


def load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", REPO / "examples" / "functions" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_functions_run_as_deployed(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    """examples/functions/ with the schemas and config docs/functions.md deploys them with."""
    source, receipts, valid, dlq = (topic_named(n) for n in ("orders", "receipts", "valid", "dlq"))
    registry_client.register_schema(subject_of(receipts), contract(RECEIPT))
    registry_client.register_schema(
        subject_of(source), contract(ORDER_V1, ruleSet={"domainRules": [ITEM_NOT_EMPTY]})
    )
    writer = make_factory(**{"use.latest.version": True, "auto.register.schemas": False}).avro(ORDER_V1)
    with create_producer(pulsar_client, source, writer) as producer:
        producer.send({"id": 1, "item": "tea"})
        producer.send({"id": 2, "item": ""})
    registry = {"schema.registry.url": services.registry_url}
    deployments = [
        (load_example("receipts").Receipts, receipts, SCHEMA_CLASS, {**registry, "dlq.topic": dlq}),
        (
            load_example("validate").ValidateFunction,
            valid,
            "pulsar_external_schema.functions.ValidatingSchema",
            {"dlq.topic": dlq},
        ),
    ]
    for function, output, schema_class, user_config in deployments:
        with LocalRunner(
            pulsar_client,
            function,
            inputs=[source],
            output=output,
            custom_schema=schema_class,
            schema_properties=registry,
            user_config=user_config,
            subscription=unique("sub"),
        ) as runner:
            assert runner.run(timeout_millis=2_000).processed == 2

    assert [m.value() for m in drain(subscribe(pulsar_client, receipts, make_factory().avro(RECEIPT)))] == [
        {"id": 1, "label": "TEA"}
    ]
    assert [
        make_factory(**{"schema.id.subject.check": False}).avro(ORDER_V1).decode_message(m)
        for m in drain(subscribe(pulsar_client, valid))
    ] == [{"id": 1, "item": "tea"}]
    copies = drain(subscribe(pulsar_client, dlq))
    assert [copy.properties()["__rule.name"] for copy in copies] == ["itemNotEmpty", "itemNotEmpty"]


def test_a_read_rule_with_the_dlq_action_writes_through_the_runtime_client(
    services: Services, pulsar_client: Any, make_factory: Any, registry_client: Any
) -> None:
    """The rule's own DLQ topic gets the copy (through the client the runtime subscribed with);
    the function acknowledges the message and publishes nothing for it."""
    source, output, rule_dlq = topic_named("orders"), topic_named("receipts"), topic_named("rule-dlq")
    to_dlq = {**ITEM_NOT_EMPTY, "onFailure": "DLQ", "params": {"dlq.topic": rule_dlq}}
    registry_client.register_schema(subject_of(source), contract(ORDER_V1, ruleSet={"domainRules": [to_dlq]}))
    registry_client.register_schema(subject_of(output), contract(RECEIPT))
    writer = make_factory(**{"use.latest.version": True, "auto.register.schemas": False}).avro(ORDER_V1)
    with create_producer(pulsar_client, source, writer) as producer:
        producer.send({"id": 1, "item": ""})
        producer.send({"id": 2, "item": "jam"})

    result = run_function(pulsar_client, Receipts, services, [source], output=output)

    assert (result.processed, result.user_errors, result.system_errors) == (2, [], [])
    [copy] = drain(subscribe(pulsar_client, rule_dlq))
    assert copy.properties()["__rule.name"] == "itemNotEmpty"
    # Replayed through FunctionSchema, the copy is read with its source topic's schema, minus the rule.
    replay_schema = FunctionSchema(None, properties_of(services))
    [replayed] = drain(subscribe(pulsar_client, rule_dlq, replay_schema, name="replay"))
    assert replayed.value() == {"id": 1, "item": ""}
    replay_schema.close()
    assert [m.value() for m in drain(subscribe(pulsar_client, output, make_factory().avro(RECEIPT)))] == [
        {"id": 2, "label": "JAM"}
    ]
