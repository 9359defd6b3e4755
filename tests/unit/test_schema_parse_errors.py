"""A schema that does not parse is a `SchemaParseError` (a `ConfigError`) that says what is wrong,
when the schema is made, before anything is registered or sent; the console tools print it as
one line. confluent-kafka's serdes answer the same schemas with a TypeError from their parser
("argument of type 'NoneType' is not iterable" for a misspelled Avro type)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from contracts import mock_factory

from pulsar_external_schema import (
    ConfigError,
    DecodeError,
    ExternalSchemaError,
    SchemaIdError,
    SchemaParseError,
    SchemaRegistrySchemaFactory,
    create_producer,
)
from pulsar_external_schema.cli import main

RECORD = {"type": "record", "name": "R", "fields": [{"name": "f1", "type": "string"}]}


def test_a_misspelled_avro_type_is_named() -> None:
    typo = {**RECORD, "fields": [{"name": "f1", "type": "strng"}]}
    with pytest.raises(SchemaParseError) as raised:
        mock_factory().avro(json.dumps(typo))
    assert "'strng'" in str(raised.value) and "primitive types" in str(raised.value)
    assert isinstance(raised.value, ConfigError)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda factory: factory.avro('{"type": "record", "name": "R", "fields": [}'), "not JSON"),
        (
            lambda factory: factory.avro({"type": "object", "properties": {"a": {"type": "string"}}}),
            "looks like a JSON Schema, not an Avro schema: use factory.json",
        ),
        (
            lambda factory: factory.avro('syntax = "proto3";\nmessage M { string a = 1; }'),
            "looks like a .proto file",
        ),
        (
            lambda factory: factory.avro({"type": "record", "name": "R", "fields": [{"type": "string"}]}),
            "missing 'name'",
        ),
        (lambda factory: factory.json("{not json"), "does not parse"),
    ],
    ids=[
        "not JSON",
        "a JSON Schema given as Avro",
        "a .proto given as Avro",
        "a field without a name",
        "JSON Schema not JSON",
    ],
)
def test_a_schema_that_does_not_parse_says_so(make: object, expected: str) -> None:
    with pytest.raises(SchemaParseError, match=expected):
        make(mock_factory())  # type: ignore[operator]


def test_a_primitive_avro_schema_works_as_a_confluent_schema_too() -> None:
    """confluent-kafka rewrites `"string"` text to `{"type": "string"}` before parsing it, but not
    the text of a `Schema`, and then fails with "'str' object has no attribute 'get'"."""
    factory = mock_factory()
    for given in ('"string"', Schema('"string"', "AVRO")):
        schema = factory.avro(given)
        data, schema_id = schema.encode("persistent://public/default/keys", "k1")
        assert schema.decode("persistent://public/default/keys", data, schema_id) == "k1"


def test_a_schema_with_references_is_left_to_the_serializer() -> None:
    factory = mock_factory()
    factory.registry_client.register_schema(
        "acme.Item", Schema(json.dumps({**RECORD, "name": "Item"}), "AVRO")
    )
    order = {"type": "record", "name": "Order", "fields": [{"name": "item", "type": "Item"}]}
    schema = factory.avro(Schema(json.dumps(order), "AVRO", [SchemaReference("Item", "acme.Item", 1)]))
    assert schema.schema_type == "AVRO"  # 'Item' is known from the reference, not locally


def test_the_console_tools_check_the_service_url_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "produce",
            "--topic",
            "t",
            "--service-url",
            "127.0.0.1:6650",
            "--registry-url",
            "http://127.0.0.1:9",
            "--value-schema",
            json.dumps(RECORD),
        ]
    )
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "is not a Pulsar service URL" in line and "pulsar://127.0.0.1:6650" in line
    assert issubclass(SchemaParseError, ExternalSchemaError)


@pytest.mark.parametrize(
    ("call", "error", "expected"),
    [
        (
            lambda f: f.json('{"type": "record", "name": "R", "fields": []}'),
            SchemaParseError,
            "looks like an Avro schema, not a JSON Schema: use factory.avro()",
        ),
        (lambda f: f.protobuf("message M {}"), ConfigError, "takes a generated message class"),
        (lambda f: f.key_value("a", "b"), ConfigError, "key_value() takes two schemas"),
        (lambda f: create_producer(None, "t", "schema"), ConfigError, "needs an ExternalSchema"),  # type: ignore[arg-type]
        (
            lambda f: SchemaRegistrySchemaFactory(
                {"schema.registry.url": "mock://x", "use.latest.with.metadata": '{"major": 2}'}
            ),
            ConfigError,
            "takes string keys and values",
        ),
        (
            lambda f: f.avro(json.dumps(RECORD)).decode("t", "text", None),
            DecodeError,
            "payload as bytes, not str",
        ),
        (
            lambda f: f.avro(json.dumps(RECORD)).decode("t", b"\x02a", "ff0000000001"),
            SchemaIdError,
            "schema id as bytes",
        ),
    ],
    ids=[
        "Avro given to json()",
        "text to protobuf()",
        "key_value of strings",
        "producer of a str",
        "metadata JSON of a number",
        "str payload",
        "hex schema id",
    ],
)
def test_an_api_mistake_is_a_typed_error_that_says_what_to_do(call: Any, error: type, expected: str) -> None:
    with pytest.raises(error) as raised:
        call(mock_factory())
    assert expected in str(raised.value) and isinstance(raised.value, ExternalSchemaError)


def test_use_latest_with_metadata_takes_a_json_object_as_on_a_command_line() -> None:
    factory = SchemaRegistrySchemaFactory(
        {"schema.registry.url": "mock://x", "use.latest.with.metadata": '{"major": "2"}'}
    )
    assert factory.config.serde["use.latest.with.metadata"] == {"major": "2"}
