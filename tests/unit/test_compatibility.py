"""Compatibility levels over the three formats, and the producer/consumer schema helpers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from pulsar_external_schema import ConfigError, ExternalSchemaConfig
from pulsar_external_schema.evolution import (
    OPEN_PRODUCER_SCHEMA,
    CompatibilityLevel,
    Direction,
    Previous,
    avro_incompatibilities,
    check_compatibility,
    open_objects,
    protobuf_differences,
    protobuf_incompatibilities,
    to_consumer_schema,
)

STR = {"type": "string"}


def closed(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }


# -- levels -----------------------------------------------------------------------------------------

V1 = closed({"a": STR}, ["a"])
V2 = closed({"a": STR, "b": STR}, ["a"])


@pytest.mark.parametrize(
    ("level", "found"),
    [
        ("NONE", []),
        ("BACKWARD", []),  # the new closed schema reads V2's data: `c` is optional
        ("FORWARD", [("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "#/properties/c")]),  # V2 rejects `c`
    ],
)
def test_level_none_and_non_transitive_levels(level: str, found: list[tuple[str, str]]) -> None:
    new = closed({"a": STR, "b": STR, "c": STR}, ["a"])

    assert [(d.kind, d.path) for d in check_compatibility("JSON", new, [V1, V2], level)] == found


def test_transitive_levels_check_every_version_and_say_which() -> None:
    previous = [Previous(V1, version=1, schema_id=10), Previous(V2, version=2, schema_id=11)]
    new = closed({"b": STR})

    backward = check_compatibility("JSON", new, previous, CompatibilityLevel.BACKWARD_TRANSITIVE)
    latest_only = check_compatibility("JSON", new, previous, "backward")
    full = check_compatibility("JSON", new, previous, "FULL_TRANSITIVE")

    assert {(d.kind, d.version, d.direction) for d in backward} == {
        ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", 1, Direction.BACKWARD),
        ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", 2, Direction.BACKWARD),
    }
    assert {d.version for d in latest_only} == {2}
    assert {d.direction for d in full} == {Direction.BACKWARD, Direction.FORWARD}
    assert all(d.schema_id in (10, 11) for d in full)


def test_level_properties() -> None:
    assert CompatibilityLevel.FULL_TRANSITIVE.backward and CompatibilityLevel.FULL_TRANSITIVE.forward
    assert CompatibilityLevel.FORWARD.forward and not CompatibilityLevel.FORWARD.backward
    assert CompatibilityLevel.BACKWARD_TRANSITIVE.transitive and not CompatibilityLevel.BACKWARD.transitive


def test_unknown_schema_type_is_refused() -> None:
    with pytest.raises(ValueError, match="AVRO, JSON or PROTOBUF"):
        check_compatibility("XML", "{}", ["{}"])


# -- Avro (the avro package's checker) ----------------------------------------------------------------


def avro_record(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": "Person", "fields": list(fields)})


def test_avro_field_with_default_added_is_backward_compatible() -> None:
    old = avro_record({"name": "id", "type": "int"})
    new = avro_record({"name": "id", "type": "int"}, {"name": "email", "type": "string", "default": ""})

    assert avro_incompatibilities(new, old) == []
    assert check_compatibility("AVRO", new, [old], "FULL") == []


def test_avro_field_without_default_and_type_change_are_named() -> None:
    old = avro_record({"name": "id", "type": "int"})
    new = avro_record({"name": "id", "type": "string"}, {"name": "email", "type": "string"})

    found = avro_incompatibilities(new, old)

    assert [d.kind for d in found] == ["TYPE_MISMATCH", "READER_FIELD_MISSING_DEFAULT_VALUE"]
    assert "/fields/0/type" in found[0].path and "email" in found[0].message


def test_avro_int_promotes_to_long_but_not_back() -> None:
    old = avro_record({"name": "id", "type": "int"})
    new = avro_record({"name": "id", "type": "long"})

    assert avro_incompatibilities(new, old) == []
    assert [d.kind for d in avro_incompatibilities(old, new)] == ["TYPE_MISMATCH"]


def test_avro_schema_that_cannot_be_parsed_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not an Avro schema"):
        avro_incompatibilities('{"type": "record"}', '"int"')


# -- Protobuf (field numbers and wire types) ----------------------------------------------------------

F = descriptor_pb2.FieldDescriptorProto


def proto(*fields: tuple[str, int, int], label: int = F.LABEL_OPTIONAL, package: str = "shop") -> Any:
    file = descriptor_pb2.FileDescriptorProto(name="order.proto", package=package, syntax="proto3")
    message = file.message_type.add(name="Order")
    for name, number, kind in fields:
        message.field.add(name=name, number=number, type=kind, label=label)
    return file


def test_protobuf_rename_add_and_remove_are_compatible() -> None:
    old = proto(("id", 1, F.TYPE_INT64), ("note", 2, F.TYPE_STRING))
    new = proto(("order_id", 1, F.TYPE_INT64), ("total", 3, F.TYPE_DOUBLE))

    assert {d.kind for d in protobuf_differences(old, new)} == {
        "FIELD_NAME_CHANGED",
        "FIELD_REMOVED",
        "FIELD_ADDED",
    }
    assert protobuf_incompatibilities(new, old) == []


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        (F.TYPE_INT32, F.TYPE_INT64, None),  # same wire kind
        (F.TYPE_INT32, F.TYPE_SINT32, "FIELD_SCALAR_KIND_CHANGED"),
        (F.TYPE_STRING, F.TYPE_BYTES, None),
        (F.TYPE_FIXED32, F.TYPE_FIXED64, "FIELD_SCALAR_KIND_CHANGED"),
        (F.TYPE_DOUBLE, F.TYPE_FLOAT, "FIELD_SCALAR_KIND_CHANGED"),
    ],
)
def test_protobuf_scalar_types_by_wire_kind(before: int, after: int, kind: str | None) -> None:
    found = protobuf_incompatibilities(proto(("f", 1, after)), proto(("f", 1, before)))

    assert [(d.kind, d.path) for d in found] == ([(kind, "Order.f")] if kind else [])


def test_protobuf_repeated_number_and_package_change_are_incompatible() -> None:
    assert [
        d.kind
        for d in protobuf_incompatibilities(
            proto(("f", 1, F.TYPE_INT32), label=F.LABEL_REPEATED), proto(("f", 1, F.TYPE_INT32))
        )
    ] == ["FIELD_NUMERIC_LABEL_CHANGED"]
    assert [d.kind for d in protobuf_incompatibilities(proto(package="other"), proto())] == [
        "PACKAGE_CHANGED"
    ]


def test_protobuf_checks_generated_classes_and_refuses_text() -> None:
    from schemas import order_message_class

    order = order_message_class()

    assert protobuf_incompatibilities(order, order) == []
    with pytest.raises(ValueError, match="text form cannot be checked here"):
        protobuf_incompatibilities('syntax = "proto3";', order)


# -- producer and consumer schemas --------------------------------------------------------------------


def test_consumer_schema_opens_every_closed_object() -> None:
    producer = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **closed({"address": closed({"zip": STR}), "tags": {"type": "array", "items": closed({"k": STR})}}),
        "$defs": {"Money": {**closed({"amount": STR}), "additionalProperties": False}},
        "unevaluatedProperties": False,
    }

    consumer = to_consumer_schema(json.dumps(producer))

    assert consumer["additionalProperties"] is True
    assert consumer["unevaluatedProperties"] is True
    assert consumer["properties"]["address"]["additionalProperties"] is True
    assert consumer["properties"]["tags"]["items"]["additionalProperties"] is True
    assert consumer["$defs"]["Money"]["additionalProperties"] is True
    assert producer["additionalProperties"] is False  # the producer schema is not touched


def test_open_objects_in_a_producer_schema_are_found_by_path() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "address": {"type": "object", "properties": {"zip": STR}},  # open: flagged
            "labels": {"type": "object", "additionalProperties": STR},  # a map: fine
            "extra": {"type": "object"},  # free-form: fine
        },
    }

    assert open_objects(schema) == ["#/properties/address"]
    assert OPEN_PRODUCER_SCHEMA == "OPEN_CONTENT_MODEL_IN_PRODUCER_SCHEMA"


# -- config -------------------------------------------------------------------------------------------


def test_evolution_config_keys() -> None:
    config = ExternalSchemaConfig.from_dict(
        {
            "schema.registry.url": "mock://x",
            "json.evolution": "producer-consumer",
            "json.evolution.checks": "forward",
        }
    )

    assert (config.json_evolution, config.json_evolution_checks) == ("producer-consumer", "forward")
    assert ExternalSchemaConfig.from_dict({"schema.registry.url": "mock://x"}).json_evolution == "registry"


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"json.evolution": "creek"}, "takes 'registry' or 'producer-consumer'"),
        ({"json.evolution.checks": "both"}, "takes 'full' or 'backward' or 'forward'"),
        (
            {"json.evolution": "producer-consumer", "use.latest.version": True},
            "cannot be combined with 'use.latest.version'",
        ),
    ],
)
def test_evolution_config_errors(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ExternalSchemaConfig.from_dict({"schema.registry.url": "mock://x", **conf})


# -- the serdes of the producer/consumer model ------------------------------------------------------


def test_view_projection_keeps_declared_properties_in_nested_objects_and_arrays() -> None:
    from pulsar_external_schema.evolution import project

    view = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "address": {"type": "object", "properties": {"zip": STR}},
            "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": STR}}},
        },
    }
    value = {
        "id": 1,
        "name": "n",
        "address": {"zip": "1", "street": "s"},
        "lines": [{"sku": "a", "qty": 1}, {"qty": 2}],
    }

    assert project(value, view) == {"id": 1, "address": {"zip": "1"}, "lines": [{"sku": "a"}, {}]}


def test_a_view_needs_the_producer_consumer_mode() -> None:
    from contracts import mock_factory

    with pytest.raises(ConfigError, match=r"json\.evolution"):
        mock_factory().json(json.dumps(V1), view=json.dumps(V1))


def test_an_unreachable_registry_fails_the_first_send_clearly() -> None:
    from pulsar_external_schema import RegistryUnavailableError, SchemaRegistrySchemaFactory

    factory = SchemaRegistrySchemaFactory(
        {"schema.registry.url": "http://127.0.0.1:9", "json.evolution": "producer-consumer", "max.retries": 0}
    )
    topic = "persistent://public/default/orders"

    with pytest.raises(
        RegistryUnavailableError, match=r"cannot reach the registry at http://127\.0\.0\.1:9"
    ) as raised:
        factory.json(json.dumps(V1)).encode(topic, {"a": "x"})

    assert (raised.value.topic, raised.value.subject) == (topic, "public.default.orders-value")
    factory.close()


@pytest.mark.parametrize(
    ("producer", "view", "message"),
    [
        ("{not json", None, "the producer schema is not JSON"),
        (json.dumps(V1), '{"type": "strin"}', "the view schema is not a valid JSON Schema"),
        (json.dumps(V1), "[]", "the view schema must be a JSON object"),
    ],
)
def test_bad_schemas_in_the_producer_consumer_mode_are_config_errors(
    producer: str, view: str | None, message: str
) -> None:
    from contracts import mock_factory

    factory = mock_factory(**{"json.evolution": "producer-consumer"})
    with pytest.raises(ConfigError, match=message):
        factory.json(producer, view=view)
    factory.close()
