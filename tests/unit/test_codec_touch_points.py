"""Each use of confluent-kafka's private API (the functions of `_confluent.py`), held to
the installed confluent-kafka: a release that renames or reshapes one fails here, by name, before
any message is decoded wrongly. pyproject.toml bounds confluent-kafka to the tested minor line."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.schema_registry.serde import RuleContext
from confluent_kafka.serialization import MessageField, SerializationContext
from contracts import contract, mock_factory, rule
from schemas import order_message_class

from pulsar_external_schema import _confluent
from pulsar_external_schema.protobuf_text import file_descriptor_proto

TOPIC = "persistent://acme/orders/touch"
SUBJECT = "acme.orders.touch-value"
RECORD = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}
CTX = SerializationContext(TOPIC, MessageField.VALUE)


def _avro(**conf: Any) -> Any:
    rules = {"domainRules": [rule("r", "CONDITION", "CEL", "WRITEREAD", "true", onSuccess="NONE")]}
    factory = mock_factory(**conf)
    if conf.get("use.latest.version"):  # a pinned producer registers nothing: register beforehand
        factory.registry_client.register_schema(SUBJECT, contract(RECORD, ruleSet=rules))
    schema = factory.avro(contract(RECORD, ruleSet=rules))
    encoded = schema.encode(TOPIC, {"a": "x"})
    return schema, encoded


def test_subject() -> None:
    schema, _ = _avro()
    assert _confluent.subject(schema._part.serializer, CTX, None) == SUBJECT
    assert _confluent.subject(schema._part.deserializer, CTX, None) == SUBJECT


def test_pinned_schema() -> None:
    schema, _ = _avro()
    assert _confluent.pinned_schema(schema._part.deserializer, SUBJECT, None) is None
    pinned, encoded = _avro(**{"use.latest.version": True})
    found = _confluent.pinned_schema(pinned._part.deserializer, SUBJECT, None)
    assert isinstance(found, RegisteredSchema) and found.schema_id is not None
    assert encoded.schema_id == b"\x00" + found.schema_id.to_bytes(4, "big")


def test_writer_schema_and_parsed() -> None:
    schema, encoded = _avro()
    deserializer = schema._part.deserializer
    writer = _confluent.writer_schema(deserializer, "AVRO", encoded.schema_id, SUBJECT, None)
    assert isinstance(writer, Schema) and json.loads(writer.schema_str or "")["name"] == "R"
    assert _confluent.parsed(deserializer, writer)["type"] == "record"


def test_migrations() -> None:
    schema, encoded = _avro(**{"use.latest.version": True})
    deserializer = schema._part.deserializer
    registry = deserializer._registry
    registry.register_schema(SUBJECT, Schema(json.dumps(RECORD), "AVRO"))
    writer = _confluent.writer_schema(deserializer, "AVRO", encoded.schema_id, SUBJECT, None)
    latest = _confluent.pinned_schema(deserializer, SUBJECT, None)
    assert latest is not None
    assert _confluent.migrations(deserializer, SUBJECT, writer, latest) == []


def test_local_schema() -> None:
    schema, _ = _avro()
    local, parsed = _confluent.local_schema(schema._part.serializer)
    assert isinstance(local, Schema) and parsed["type"] == "record"
    json_schema = mock_factory().json(json.dumps({"type": "object"}))
    local, (parsed_json, refs) = _confluent.local_schema(json_schema._part.serializer)
    assert isinstance(local, Schema) and parsed_json == {"type": "object"} and refs is not None
    assert _confluent.local_schema(mock_factory().avro(json.dumps(RECORD))._part.deserializer)[0] is None


def test_rule_registry_disabled_and_actions() -> None:
    schema, _ = _avro()
    serializer = schema._part.serializer
    assert _confluent.rule_registry(serializer).get_executor("CEL") is not None
    assert _confluent.validation_enabled(serializer) is False
    for extra, mode, disabled, action in (
        ({}, RuleMode.WRITE, False, "NONE"),
        ({"onSuccess": "NONE,ERROR"}, RuleMode.READ, False, "ERROR"),
        ({"onSuccess": "DLQ"}, RuleMode.WRITE, False, "DLQ"),
        ({"disabled": True}, RuleMode.WRITE, True, "NONE"),
    ):
        the_rule = rule("r", "CONDITION", "CEL", "WRITEREAD", "true", **extra)
        target = contract(RECORD, ruleSet={"domainRules": [the_rule]})
        assert target.rule_set is not None and target.rule_set.domain_rules
        parsed = target.rule_set.domain_rules[0]
        ctx = RuleContext(None, CTX, None, target, SUBJECT, mode, parsed, 0, [parsed], None, None)
        assert _confluent.rule_is_disabled(serializer, ctx) is disabled
        assert _confluent.on_success_action(serializer, ctx, mode) == action


def test_avro_options_and_dict_hooks() -> None:
    schema, _ = _avro()
    assert _confluent.avro_options(schema._part.serializer) == {
        "strict": False,
        "strict_allow_default": False,
        "return_record_name": False,
    }
    assert _confluent.to_dict(schema._part.serializer) is None
    assert _confluent.from_dict(schema._part.deserializer) is None


def test_json_functions_and_validator() -> None:
    text = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}})
    serializer = mock_factory().json(text)._part.serializer
    encode, _, validate = _confluent.json_functions(serializer)
    assert json.loads(encode({"a": "x"})) == {"a": "x"} and validate is True
    local, parsed = _confluent.local_schema(serializer)
    assert local is not None
    validator = _confluent.json_validator(serializer, local, *parsed)
    with pytest.raises(Exception, match="is not of type"):
        validator.validate({"a": 1})
    assert _confluent.json_validator(serializer, local, *parsed) is validator  # made once
    serde: Any = serializer
    assert serde._validators[local] is validator  # kept in the serde's cache (JsonValidatorHooks)
    assert serde._validators_lock is not None
    deserializer = mock_factory().json(text)._part.deserializer
    assert _confluent.json_functions(deserializer)[1](b'{"a": "y"}') == {"a": "y"}


def test_protobuf_message_class() -> None:
    order = order_message_class()
    serialized = base64.b64encode(file_descriptor_proto(order).SerializeToString()).decode()
    schema = mock_factory().protobuf(order, schema=contract(serialized, "PROTOBUF"))
    assert _confluent.protobuf_message_class(schema._part.serializer) is order
    assert _confluent.protobuf_message_class(schema._part.deserializer).DESCRIPTOR.full_name == "acme.Order"


def test_set_local_schema_and_pin_schema_id() -> None:
    schema, _ = _avro()
    replacement = Schema(json.dumps({**RECORD, "doc": "registered instead"}), "AVRO")
    _confluent.set_local_schema(schema._part.serializer, replacement)
    assert _confluent.local_schema(schema._part.serializer)[0] is replacement
    pinned, _ = _avro(**{"use.latest.version": True})
    _confluent.pin_schema_id(pinned._part.deserializer, 1)
    found = _confluent.pinned_schema(pinned._part.deserializer, SUBJECT, None)
    assert found is not None and found.schema_id == 1


def test_pin_schema_id_with_a_version_reads_into_that_version_rules_included() -> None:
    from confluent_kafka.schema_registry import RegisteredSchema

    pinned, _ = _avro(**{"use.latest.version": True})
    deserializer = pinned._part.deserializer
    registry = deserializer._registry
    ruled = registry.get_version(SUBJECT, 1)
    # A registry that gives one id to versions that differ only in their rules (AxonOps): the
    # id alone finds another version of it, here one without rules.
    other = RegisteredSchema(
        schema_id=ruled.schema_id, guid=None, schema=contract(RECORD), subject=SUBJECT, version=7
    )
    registry._cache.rs_id_index[SUBJECT][ruled.schema_id] = other
    _confluent.pin_schema_id(deserializer, ruled.schema_id)
    assert _confluent.pinned_schema(deserializer, SUBJECT, None) is other
    _confluent.pin_schema_id(deserializer, ruled.schema_id, SUBJECT, 1)
    found = _confluent.pinned_schema(deserializer, SUBJECT, None)
    assert found is not None and found.version == 1
    assert found.schema.rule_set is not None
    assert [rule.name for rule in found.schema.rule_set.domain_rules or []] == ["r"]
    # a later lookup of a version with that id (a writer's, for migrations) leaves the pin alone
    registry._cache.rs_id_index[SUBJECT][ruled.schema_id] = other
    again = _confluent.pinned_schema(deserializer, SUBJECT, None)
    assert again is not None and again.version == 1


def test_rest_calls_go_through_the_clients_own_rest_client() -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from pulsar_external_schema.registry import failure_kind

    client = SchemaRegistryClient({"url": "http://127.0.0.1:9", "max.retries": 0})
    calls: tuple[Callable[[], Any], ...] = (
        lambda: _confluent.rest_get(client, "schemas/ids/1", {"format": "serialized"}),
        lambda: _confluent.rest_post(client, "subjects/x/versions", {"schema": "{}"}),
    )
    for call in calls:
        with pytest.raises(Exception) as raised:  # nothing listens on port 9: a transport error
            call()
        assert failure_kind(raised.value) == "unavailable"


def test_protobuf_pool_loads_a_serialized_descriptor() -> None:
    order = order_message_class()
    serialized = base64.b64encode(file_descriptor_proto(order).SerializeToString()).decode()
    pool, file_proto = _confluent.protobuf_pool(
        Schema(serialized, "PROTOBUF"), mock_factory().registry_client, "o.proto"
    )
    assert pool.FindMessageTypeByName("acme.Order").name == "Order"
    assert [message.name for message in file_proto.message_type] == ["Order"]


def test_cel_helpers() -> None:
    assert _confluent.to_plain_containers({"a": [1, 2]}) == {"a": [1, 2]}
    assert _confluent.validate_hostname("example.com") is True
    assert _confluent.validate_hostname("-bad-") is False


def test_bound_parsed_schemas() -> None:
    schema, _ = _avro()
    deserializer = schema._part.deserializer
    _confluent.bound_parsed_schemas(deserializer, 2)
    for number in range(5):
        _confluent.parsed(deserializer, Schema(json.dumps({**RECORD, "name": f"R{number}"}), "AVRO"))
    assert len(deserializer._parsed_schemas.parsed_schemas) == 2


def test_the_serde_methods_the_hooks_override_exist_with_their_parameters() -> None:
    import inspect

    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    def parameters(method: Any) -> list[str]:
        return list(inspect.signature(method).parameters)[1:]

    assert parameters(AvroSerializer._get_rule_action) == ["ctx", "action_name"]
    assert parameters(AvroSerializer._get_reader_schema) == ["subject", "fmt"]
    assert parameters(ProtobufDeserializer._get_writer_schema) == ["schema_id", "subject", "fmt"]
    assert parameters(AvroDeserializer._get_rule_action) == ["ctx", "action_name"]
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    for json_serde in (JSONSerializer, JSONDeserializer):  # JsonValidatorHooks
        assert parameters(json_serde._get_validator) == ["schema", "parsed_schema", "registry"]


def test_each_hook_is_reached() -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry
    from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor

    seen: list[tuple[str, Any]] = []

    class Writer(_confluent.SerializerHooks, AvroSerializer):
        def writer_for(self, subject: str, pinned: Any) -> Any:
            seen.append(("writer_for", subject))
            return pinned

        def rule_action(self, ctx: RuleContext, action_name: str) -> Any:
            seen.append(("rule_action", action_name))
            return super().rule_action(ctx, action_name)

        def domain_rules_of(self, ser_ctx: Any, subject: str, mode: Any, target: Any, *rest: Any) -> Any:
            seen.append(
                ("domain_rules_of", (subject, mode, target is not None, *(x is not None for x in rest)))
            )
            return super().domain_rules_of(ser_ctx, subject, mode, target, *rest)

        def domain_rules_done(self, target: Any, message: Any) -> None:
            seen.append(("domain_rules_done", message))

    class Reader(_confluent.DeserializerHooks, AvroDeserializer):
        def writer_found(self, schema_id: int | None, schema: Schema) -> None:
            seen.append(("writer_found", schema_id))

    rules = {"domainRules": [rule("r", "CONDITION", "CEL", "WRITEREAD", "true", onSuccess="NONE")]}
    factory = mock_factory()  # kept: the in-memory store lives as long as its factory
    client = factory.registry_client
    client.register_schema(SUBJECT, contract(RECORD, ruleSet=rules))
    naming = {"subject.name.strategy": lambda ctx, record_name: SUBJECT}
    conf = {"auto.register.schemas": False, "use.latest.version": True, **naming}
    engines = RuleRegistry()  # type: ignore[no-untyped-call]
    engines.register_executor(CelExecutor())  # type: ignore[no-untyped-call]
    writer = Writer(client, json.dumps(RECORD), conf=conf, rule_registry=engines)
    payload = writer({"a": "x"}, CTX)
    assert Reader(client, conf=naming, rule_registry=engines)(payload, CTX) == {"a": "x"}
    assert ("writer_for", SUBJECT) in seen and ("rule_action", "NONE") in seen
    # the root's domain rules: their schema, inline tags and field transformer, then the value written
    assert ("domain_rules_of", (SUBJECT, RuleMode.WRITE, True, True, True)) in seen
    assert ("domain_rules_done", {"a": "x"}) in seen
    assert any(name == "writer_found" and isinstance(found, int) for name, found in seen)


def test_dlq_redact_rule_types() -> None:
    from confluent_kafka.schema_registry.rules.dlq.dlq_action import DlqAction

    assert _confluent.dlq_redact_rule_types(DlqAction()) == ["ENCRYPT", "ENCRYPT_PAYLOAD"]
    action = DlqAction({"dlq.redact.rule.types": "ENCRYPT"})
    assert _confluent.dlq_redact_rule_types(action) == ["ENCRYPT"]


def test_serializer_settings_and_replace_registry() -> None:
    schema, _ = _avro()
    registry, auto_register, normalize = _confluent.serializer_settings(schema._part.serializer)
    assert registry is not None and auto_register is True and normalize is False
    deserializer = schema._part.deserializer
    wrapped = _confluent.replace_registry(deserializer, lambda client: ("wrapped", client))
    assert wrapped[0] == "wrapped" and deserializer._registry is wrapped


def test_registered_id_and_forget_subject() -> None:
    schema = mock_factory().avro(json.dumps(RECORD))  # no rules: the serializer's own registration
    encoded = schema.encode(TOPIC, {"a": "x"})
    assert encoded.schema_id is not None
    serializer: Any = schema._part.serializer
    held = int.from_bytes(encoded.schema_id[1:], "big")
    local = _confluent.local_schema(serializer)[0]
    assert _confluent.registered_id(serializer, SUBJECT, None, local) == held
    assert _confluent.registered_id(serializer, SUBJECT, 1, None) == held
    client = serializer._registry
    client._cache.set_schema(SUBJECT, held, None, local)  # as a real client caches a registration
    assert client._cache.get_id_by_schema(SUBJECT, local) == held
    assert SUBJECT in serializer._known_subjects
    _confluent.forget_subject(serializer, SUBJECT)
    assert SUBJECT not in serializer._known_subjects
    assert client._cache.get_id_by_schema(SUBJECT, local) is None


def test_registered_id_asks_the_registry_past_its_caches() -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from pulsar_external_schema.registry import failure_kind

    schema, _ = _avro()
    serializer = schema._part.serializer
    serializer._registry = SchemaRegistryClient({"url": "http://127.0.0.1:9", "max.retries": 0})
    local = _confluent.local_schema(serializer)[0]
    for version in (1, None):
        with pytest.raises(Exception) as raised:  # nothing listens on port 9: a transport error
            _confluent.registered_id(serializer, SUBJECT, version, local)
        assert failure_kind(raised.value) == "unavailable"


def test_the_encryption_executors_parts() -> None:
    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor

    from pulsar_external_schema.rules.rule_registry import rule_executor

    params = {"encrypt.kek.name": "k", "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "mykey"}
    enc = rule("e", "TRANSFORM", "ENCRYPT", "WRITE", "", tags=["P"], params=params)
    record = {**RECORD, "fields": [{"name": "a", "type": "string", "confluent:tags": ["P"]}]}
    written = contract(record, ruleSet={"domainRules": [enc]})
    factory = mock_factory(**{"rule.executors._default_.param.secret": "s"})
    serializer = factory.avro(written)._part.serializer
    assert written.rule_set is not None and written.rule_set.domain_rules
    encrypting = written.rule_set.domain_rules[0]
    ctx = RuleContext(None, CTX, None, written, SUBJECT, RuleMode.WRITE, encrypting, 0, [], None, None)
    executor = rule_executor(_confluent.rule_registry(serializer), ctx)
    assert type(executor) is FieldEncryptionExecutor
    transform = _confluent.encryption_transform(executor, ctx)
    assert _confluent.dek_expiry_days(transform) == 0
    key, version, created = _confluent.dek_key(transform, ctx, None)
    assert version == 1 and created > 0 and key  # key material: a serialized Tink key
    assert abs(_confluent.encryption_now(transform) - created) < 60_000
    encrypt, decrypt = _confluent.dek_cipher(transform, key)
    cryptor = transform._cryptor  # confluent-kafka's own: each side reads the other's ciphertext
    assert cryptor.decrypt(key, encrypt(b"plain"), b"") == b"plain"
    assert decrypt(cryptor.encrypt(key, b"text", b"")) == b"text"


def test_rule_engine_hooks_see_every_rule_and_phase() -> None:
    """`SerdeHooks` overrides `_execute_rules_with_phase` and `_run_action`: the engine must call
    them with the arguments they name, once per phase and once per rule."""
    rules = {"domainRules": [rule("r", "CONDITION", "CEL", "WRITEREAD", "true", onSuccess="NONE")]}
    schema = mock_factory().avro(contract(RECORD, ruleSet=rules))
    serializer: Any = schema._part.serializer
    seen: list[Any] = []
    serializer.rules_starting = lambda: seen.append("phase")
    serializer.rule_ran = lambda ctx, action, message, ex: seen.append((ctx.rule.name, action(), ex))
    schema.encode(TOPIC, {"a": "y"})  # a topic's first message takes the reference path
    assert ("r", "NONE", None) in seen and seen.count("phase") >= 1
    pair = _rule("WRITEREAD")
    assert _confluent.action_name(serializer, pair, RuleMode.WRITE, "DLQ,NONE", "ERROR") == "DLQ"
    assert _confluent.action_name(serializer, pair, RuleMode.READ, "DLQ,NONE", "ERROR") == "NONE"
    assert _confluent.action_name(serializer, pair, RuleMode.READ, None, "ERROR") == "ERROR"


def _rule(mode: str) -> Any:
    from confluent_kafka.schema_registry.schema_registry_client import Rule

    return Rule.from_dict(rule("r", "CONDITION", "CEL", mode, "true"))


def test_registry_client_parsed_rule_inputs_and_run_domain_rules() -> None:
    schema, _ = _avro()
    serializer = schema._part.serializer
    assert _confluent.registry_client(serializer) is schema._part.serializer._registry
    rewrite = rule("f", "TRANSFORM", "CEL_FIELD", "WRITE", "true ; 'z'")
    registered = contract(RECORD, ruleSet={"domainRules": [rewrite]})
    assert _confluent.parsed(serializer, registered)["name"] == "R"
    tags, transformer = _confluent.rule_inputs(serializer, registered, {"a": "x"})
    assert isinstance(tags, dict) and callable(transformer)
    out = _confluent.run_domain_rules(
        serializer, CTX, SUBJECT, RuleMode.WRITE, registered, {"a": "x"}, tags, transformer, {"a": "x"}
    )
    assert out == {"a": "z"}


def test_parse_avro_writes_referenced_named_types_out_at_their_first_use() -> None:
    """The driver's parse of a registered schema with references is the serdes' own: named types
    of the references (and of theirs) inlined once, under their full names."""
    kind = {"type": "enum", "name": "Kind", "namespace": "shared", "symbols": ["A"]}
    address = {
        "type": "record",
        "name": "Address",
        "namespace": "shared",
        "fields": [{"name": "k", "type": "shared.Kind"}],
    }
    root = {
        "type": "record",
        "name": "Order",
        "namespace": "app",
        "fields": [
            {"name": "home", "type": "shared.Address"},
            {"name": "work", "type": ["null", "shared.Address"]},
        ],
    }
    parsed = _confluent.parse_avro(json.dumps(root), {"shared.Kind": kind, "shared.Address": address})
    assert parsed["name"] == "app.Order"
    home, work = parsed["fields"][0]["type"], parsed["fields"][1]["type"]
    assert home["name"] == "shared.Address" and home["fields"][0]["type"]["name"] == "shared.Kind"
    assert work == ["null", "shared.Address"]


def test_lazy_cel_executor_sets_what_confluent_kafkas_init_sets_and_evaluates() -> None:
    from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor, msg_to_cel

    lazy = _confluent.LazyCelExecutor()
    assert "_env" not in vars(lazy)  # not built until used
    confluents = CelExecutor()  # type: ignore[no-untyped-call]
    assert set(vars(confluents)) == {*vars(lazy), "_env"}  # the attributes its __init__ sets
    target = Schema(json.dumps(RECORD), "AVRO")
    ctx = RuleContext(None, CTX, None, target, SUBJECT, RuleMode.READ, _rule("READ"), 0, [], None, None)
    assert lazy.execute_rule(ctx, "message.a == 'x'", {"message": msg_to_cel({"a": "x"})}) is True
    assert "_env" in vars(lazy)


def test_each_executor_gets_a_kms_client_made_from_its_own_config() -> None:
    """Not Tink's process-global registry, where the first config to register a client for a KMS
    type served every executor after it (`_confluent.bind_kms_clients_to_their_config`)."""
    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import AeadWrapper
    from tink import TinkError

    mock_factory()  # a rule engine binds them
    assert getattr(AeadWrapper._get_kms_client, "bound_to_config", False)
    url = "local-kms://mykey"
    one = _confluent.kms_client({"secret": "one"}, url)
    assert _confluent.kms_client({"secret": "one"}, url) is one
    two = _confluent.kms_client({"secret": "two"}, url)
    assert two is not one
    wrapped = one.get_aead(url).encrypt(b"a DEK", b"")
    assert one.get_aead(url).decrypt(wrapped, b"") == b"a DEK"
    with pytest.raises(TinkError):
        two.get_aead(url).decrypt(wrapped, b"")
