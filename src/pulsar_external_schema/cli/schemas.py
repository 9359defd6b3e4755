"""The external schema a console command produces or consumes with, from its arguments.

`produce` with `--value-schema` registers that schema, with `--value-rule-set` and
`--value-metadata`, as Confluent's console producer does (`auto.register.schemas`, default true),
and its rules then run on every record. Without it, and for `consume`, the schema is the
registered one the config selects: `use.schema.id`, `use.latest.with.metadata`, else the latest
version of the topic's subject. Protobuf needs a message class; the console tools build it from
the registry's parse of the `.proto` text, so no generated code is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from confluent_kafka.schema_registry import Metadata, RuleSet, Schema, SchemaReference
from confluent_kafka.serialization import MessageField

from ..config import pins_a_version
from ..factory import SchemaRegistrySchemaFactory
from ..registered import (
    RegisteredSchema,
    registered_schema,
    registry_message_class,
    schema_for,
    value_subject,
)
from ..schema import ExternalSchema
from .common import CommandError, registry_failure
from .records import PlainCodec, ProtobufCodec, RecordFormat

SCHEMA_TYPES = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}


@dataclass
class Resolved:
    """An external schema, how records of it look as JSON, and the factories to close after."""

    schema: ExternalSchema
    records: RecordFormat
    factories: list[SchemaRegistrySchemaFactory]

    def close(self) -> None:
        self.schema.close()
        for factory in self.factories:
            factory.close()


@dataclass(frozen=True)
class SchemaArguments:
    """What the command line says about the schemas (texts already read from their files)."""

    format: str | None
    value_schema: str | None
    key_schema: str | None = None
    rule_set: Any = None
    metadata: Any = None
    protobuf_message: str | None = None


def for_produce(config: dict[str, Any], client: Any, topic: str, given: SchemaArguments) -> Resolved:
    if given.value_schema is None:
        if given.key_schema is not None:
            raise CommandError("--key-schema needs --value-schema too")
        if given.rule_set is not None or given.metadata is not None:
            raise CommandError(
                "--value-rule-set and --value-metadata are registered with --value-schema; "
                "give the schema too (or set them with the `config` command's default/override)"
            )
        return _registered(config, client, topic, given, key_value=False)
    fmt = given.format or "avro"
    schema = contract_schema(given.value_schema, fmt, given.rule_set, given.metadata)
    factory = SchemaRegistrySchemaFactory(config, client=client)
    if fmt == "protobuf":
        if given.key_schema is not None:
            factory.close()
            raise CommandError("--key-schema with --format protobuf is not supported by the console tools")
        return _protobuf_by_text(factory, topic, schema, given.protobuf_message)
    make = factory.avro if fmt == "avro" else factory.json
    value = make(schema)
    if given.key_schema is None:
        return Resolved(value, RecordFormat(PlainCodec()), [factory])
    key = make(contract_schema(given.key_schema, fmt))
    return Resolved(factory.key_value(key, value), RecordFormat(PlainCodec(), PlainCodec()), [factory])


def for_consume(
    config: dict[str, Any], client: Any, topic: str, given: SchemaArguments, *, key_value: bool
) -> Resolved:
    return _registered(config, client, topic, given, key_value=key_value)


def _registered(
    config: dict[str, Any], client: Any, topic: str, given: SchemaArguments, *, key_value: bool
) -> Resolved:
    """The registered versions the config selects, for the value (and the key)."""
    if not pins_a_version(config):
        config = {**config, "use.latest.version": True}
    factory = SchemaRegistrySchemaFactory(config, client=client)
    try:
        value, value_codec = _registered_part(factory, topic, given, MessageField.VALUE)
        if not key_value:
            return Resolved(value, RecordFormat(value_codec), [factory])
        key, key_codec = _registered_part(factory, topic, given, MessageField.KEY)
        return Resolved(factory.key_value(key, value), RecordFormat(value_codec, key_codec), [factory])
    except BaseException:
        factory.close()
        raise


def _registered_part(
    factory: SchemaRegistrySchemaFactory, topic: str, given: SchemaArguments, field: MessageField
) -> tuple[ExternalSchema, PlainCodec | ProtobufCodec]:
    registered = registered_schema(factory, topic, field)
    if given.format is not None and SCHEMA_TYPES[given.format] != registered.schema_type:
        raise CommandError(
            f"subject {registered.subject} holds {registered.schema_type} schemas, "
            f"not --format {given.format}"
        )
    if registered.schema_type == "PROTOBUF":
        message_class = registry_message_class(factory, registered, given.protobuf_message)
        # The lookup above cached the `.proto` text under the id; the Protobuf serializer asks the
        # same client for the serialized form, which that cache would answer with the text.
        factory.registry_client.clear_caches()
        return schema_for(factory, registered, message_class), ProtobufCodec(message_class)
    return schema_for(factory, registered), PlainCodec()


def _protobuf_by_text(
    factory: SchemaRegistrySchemaFactory, topic: str, schema: Schema, message_name: str | None
) -> Resolved:
    """Register (or look up) the `.proto` text, build its class from the registry's descriptor, and
    have the producer register that same text (not one rendered from the class, which would be a
    new version whenever it is spelled differently)."""
    try:
        subject = value_subject(factory, topic)
        client = factory.registry_client
        try:
            if factory.config.serde.get("auto.register.schemas", True):
                normalize = bool(factory.config.serde.get("normalize.schemas"))
                schema_id = client.register_schema_full_response(
                    subject, schema, normalize_schemas=normalize
                ).schema_id
            else:
                schema_id = client.lookup_schema(subject, schema).schema_id
        except Exception as error:
            doing = f"registering the schema of {subject}"
            raise registry_failure(error, factory.config.registry_url, doing) from None
        registered = RegisteredSchema(subject, "PROTOBUF", schema.schema_str or "", schema_id, None)
        message_class = registry_message_class(factory, registered, message_name)
        return Resolved(
            factory.protobuf(message_class, schema=schema),
            RecordFormat(ProtobufCodec(message_class)),
            [factory],
        )
    except BaseException:
        factory.close()
        raise


def contract_schema(
    text: str,
    fmt: str,
    rule_set: Any = None,
    metadata: Any = None,
    references: list[SchemaReference] | None = None,
    *,
    flags: tuple[str, str] = ("--value-rule-set", "--value-metadata"),
) -> Schema:
    """A schema to register: its text, format, references, and the rule set and metadata given as
    JSON objects (checked here, each error naming its flag in `flags`)."""
    return Schema(
        text,
        SCHEMA_TYPES[fmt],
        references or [],
        _from_dict(Metadata, metadata, flags[1], '{"properties": {"owner": "team"}}'),
        _from_dict(RuleSet, rule_set, flags[0], '{"domainRules": [...]}'),
    )


def _from_dict(kind: Any, document: Any, flag: str, example: str) -> Any:
    if document is None:
        return None
    if not isinstance(document, dict):
        raise CommandError(f"{flag} takes a JSON object such as {example}, not {type(document).__name__}")
    try:
        return kind.from_dict(document)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise CommandError(f"{flag} is not a {kind.__name__} ({example}): {error}") from None
