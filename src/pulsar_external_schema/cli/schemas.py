"""The external schema a console command produces or consumes with, from its arguments.

`produce` with `--value-schema` registers that schema, with `--value-rule-set` and
`--value-metadata`, as Confluent's console producer does (`auto.register.schemas`, default true),
and its rules then run on every record. Without it, and for `consume`, the schema is the
registered one the config selects: `use.schema.id`, `use.latest.with.metadata`, else the latest
version of the topic's subject. Protobuf needs a message class; the console tools build it from
the registry's parse of the `.proto` text, so no generated code is needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.serialization import MessageField

from .. import _confluent
from ..config import pins_a_version
from ..errors import ConfigError, RuleSetError, SchemaParseError
from ..factory import SchemaRegistrySchemaFactory, looks_like
from ..registered_schema import RegisteredSchema
from ..registry import failure_kind
from ..rules.checks import check_metadata, check_rule_set
from ..rules.field_names import check_rule_fields
from ..schema import ExternalSchema
from ..topic_schemas import (
    registered_schema,
    registry_message_class,
    schema_for,
    topic_subject,
)
from .common import SCHEMA_TYPES, CommandError, UsageError, registry_failure
from .records import AvroCodec, PlainCodec, ProtobufCodec, RecordFormat


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


def for_produce(
    config: dict[str, Any],
    client: Any,
    topic: str,
    given: SchemaArguments,
    check_topic: Callable[[], None] = lambda: None,
) -> Resolved:
    """The producer's schema; `check_topic` runs once the command line's schemas are known good,
    before the registry is asked anything (so a topic the broker cannot serve registers nothing)."""
    if given.value_schema is None:
        if given.key_schema is not None:
            raise UsageError("--key-schema needs --value-schema too")
        if given.rule_set is not None or given.metadata is not None:
            raise UsageError(
                "--value-rule-set and --value-metadata are registered with --value-schema; "
                "give the schema too (or set them with the `config` command's default/override)"
            )
        check_topic()
        return _registered(config, client, topic, given, key_value=False)
    fmt = given.format or guess_format(given.value_schema, "--value-schema")
    schema = contract_schema(given.value_schema, fmt, given.rule_set, given.metadata)
    if fmt == "protobuf" and given.key_schema is not None:
        raise UsageError("--key-schema with --format protobuf is not supported by the console tools")
    key_schema = None if given.key_schema is None else contract_schema(given.key_schema, fmt)
    factory = new_factory(config, client)
    try:
        if fmt == "protobuf":
            check_topic()
            registration = _register(factory, topic, schema)
            return _protobuf_by_text(factory, registration, schema, given.protobuf_message)
        make = factory.avro if fmt == "avro" else factory.json
        try:  # parsed here, before anything is registered
            value = make(schema)
            key = None if key_schema is None else make(key_schema)
        except SchemaParseError as error:
            raise UsageError(str(error)) from None
        check_topic()
        _register(factory, topic, schema)
        value_codec = _plain_codec(fmt, schema.schema_str or "")
        if key is None or key_schema is None:
            return Resolved(value, RecordFormat(value_codec), [factory])
        _register(factory, topic, key_schema, MessageField.KEY)
        key_codec = _plain_codec(fmt, key_schema.schema_str or "")
        return Resolved(factory.key_value(key, value), RecordFormat(value_codec, key_codec), [factory])
    except BaseException:
        factory.close()
        raise


def new_factory(config: dict[str, Any], client: Any = None) -> SchemaRegistrySchemaFactory:
    """The factory of a command's config; a config key given wrongly (`-p`) is a usage error."""
    try:
        return SchemaRegistrySchemaFactory(config, client=client)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def _register(
    factory: SchemaRegistrySchemaFactory, topic: str, schema: Schema, field: MessageField = MessageField.VALUE
) -> Registration:
    """`register` with the factory's client, which then answers the producer's own registration of
    the same schema from its cache: one request per schema, whatever the number of records."""
    config = factory.config
    return register(
        factory.registry_client,
        config.registry_url,
        topic_subject(factory, topic, field),
        schema,
        normalize=config.normalize_schemas,
        auto_register=config.auto_register_schemas,
    )


def guess_format(text: str, flag: str) -> str:
    """avro, the default, unless the text is plainly another format: then a usage error that says
    which flag to add (confluent-kafka's Avro parser answers a JSON Schema with a TypeError)."""
    other = looks_like(text)
    if other == "json":
        raise UsageError(f"{flag} looks like a JSON Schema: add --format json")
    if other == "protobuf":
        raise UsageError(f"{flag} looks like a .proto file: add --format protobuf")
    return "avro"


def for_consume(
    config: dict[str, Any], client: Any, topic: str, given: SchemaArguments, *, key_value: bool
) -> Resolved:
    """The schema to decode with: each message's writer schema (the one its id names), as a Python
    consumer decodes, unless the config pins a reader version (`use.latest.version`,
    `use.latest.with.metadata`, `use.schema.id`). The subject's latest version tells the format
    (and, for Protobuf, the message class the values are read into)."""
    return _registered(config, client, topic, given, key_value=key_value, pin_latest=False)


def _registered(
    config: dict[str, Any],
    client: Any,
    topic: str,
    given: SchemaArguments,
    *,
    key_value: bool,
    pin_latest: bool = True,
) -> Resolved:
    """The registered versions the config selects, for the value (and the key); `pin_latest`:
    the latest one when the config pins none (to write with)."""
    if pin_latest and not pins_a_version(config):
        config = {**config, "use.latest.version": True}
    factory = new_factory(config, client)
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
    return schema_for(factory, registered), _plain_codec(registered.schema_type, registered.schema_str)


def _plain_codec(fmt: str, text: str) -> PlainCodec:
    """Avro records are checked for fields their schema lacks; JSON Schema says itself whether it
    allows them (`additionalProperties`), and the serializer's validation applies it."""
    return AvroCodec(text) if fmt.upper() == "AVRO" else PlainCodec()


def _protobuf_by_text(
    factory: SchemaRegistrySchemaFactory, registration: Registration, schema: Schema, message_name: str | None
) -> Resolved:
    """Build the `.proto` text's class from the registry's descriptor, and have the producer
    register that same text (not one rendered from the class, which would be a new version whenever
    it is spelled differently)."""
    registered = RegisteredSchema(
        registration.subject, "PROTOBUF", schema.schema_str or "", registration.schema_id, None
    )
    message_class = registry_message_class(factory, registered, message_name)
    return Resolved(
        factory.protobuf(message_class, schema=schema),
        RecordFormat(ProtobufCodec(message_class)),
        [factory],
    )


@dataclass(frozen=True)
class Registration:
    """Where a schema given on the command line is in the registry."""

    subject: str
    schema_id: int
    version: int | None


def register(
    client: Any,
    url: str,
    subject: str,
    schema: Schema,
    *,
    normalize: bool = False,
    auto_register: bool = True,
) -> Registration:
    """Register `schema` under `subject` (or, without `auto_register`, look it up), once, before any
    record: a refusal stops the command with the registry's reason instead of failing every line.

    Then the registry's own copy is read back, and a rule set or metadata it did not keep is an
    error: some Confluent-compatible registries drop them silently (AxonOps drops custom actions),
    and a contract that will not run must not look registered."""
    doing = (
        f"registering the schema under {subject}" if auto_register else f"looking up the schema in {subject}"
    )
    try:
        if auto_register:
            found = client.register_schema_full_response(subject, schema, normalize_schemas=normalize)
        else:
            found = client.lookup_schema(subject, schema, normalize_schemas=normalize)
        stored = _stored_versions(client, subject, found.schema_id)
    except Exception as error:
        raise registry_failure(error, url, doing) from None
    version = found.version or (max(stored) if stored else None)
    if auto_register and (schema.rule_set is not None or schema.metadata is not None):
        _check_kept(schema, stored, subject, found.schema_id, url)
    return Registration(subject, found.schema_id, version)


def _stored_versions(client: Any, subject: str, schema_id: int) -> dict[int, dict[str, Any]]:
    """The registry's own copies (past the client's caches) of `subject`'s versions with the id:
    more than one when versions differ only in rules or metadata (AxonOps keeps one id for them)."""
    path = f"subjects/{quote(subject, safe='')}/versions"
    try:
        entries = _confluent.rest_get(client, f"schemas/ids/{schema_id}/versions") or []
    except Exception as error:
        if failure_kind(error) != "rejected":
            raise
        # A registry without this endpoint: the latest version is the one just registered, or
        # the one the registry kept instead of it.
        latest = _confluent.rest_get(client, f"{path}/latest")
        return {int(latest["version"]): latest} if latest.get("id") == schema_id else {}
    versions = [int(entry["version"]) for entry in entries if entry.get("subject") == subject]
    return {version: _confluent.rest_get(client, f"{path}/{version}") for version in versions}


def _check_kept(
    schema: Schema, stored: dict[int, dict[str, Any]], subject: str, schema_id: int, url: str
) -> None:
    given = {
        "ruleSet": schema.rule_set.to_dict() if schema.rule_set is not None else {},
        "metadata": schema.metadata.to_dict() if schema.metadata is not None else {},
    }
    if not stored:
        raise CommandError(
            f"the registry at {url} registered the schema under {subject} (id {schema_id}) but lists "
            "no version of it there: its rule set and metadata cannot be checked"
        )
    missing = [_missing(copy, given, "") for copy in stored.values()]
    if any(path is None for path in missing):
        return
    path = missing[-1]
    raise CommandError(
        f"the registry at {url} registered the schema under {subject} (id {schema_id}) but did not keep "
        f"{path} as given: the contract would not run as registered (this registry may not store it)"
    )


def _missing(stored: Any, given: Any, path: str) -> str | None:
    """The first part of `given` that the registry's copy does not hold, as a path with its value
    (`ruleSet.enableAt "CLIENT"`), or None when it holds it all. The copy may hold more: defaults,
    and the rules of a default or override rule set."""
    if isinstance(given, dict):
        for key, value in given.items():
            if value not in (None, [], {}):
                where = _missing(
                    stored.get(key) if isinstance(stored, dict) else None, value, f"{path}.{key}"
                )
                if where is not None:
                    return where
        return None
    if isinstance(given, list):
        for index, item in enumerate(given):
            items = stored if isinstance(stored, list) else []
            if all(_missing(candidate, item, "") is not None for candidate in items):
                name = f" {item['name']!r}" if isinstance(item, dict) and "name" in item else ""
                return f"{path.lstrip('.')}[{index}]{name}"
        return None
    return None if stored == given else f"{path.lstrip('.')} ({json.dumps(given)})"


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
    JSON objects, checked before anything is registered (`rules.checks`: unknown keys, modes,
    expressions that do not compile; `rules.field_names`: field names the schema does not have), each
    error naming its flag in `flags`."""
    rules = checked(check_rule_set, rule_set, flags[0])
    if rule_set is not None:  # names a rule uses that the schema does not have (rules.field_names)
        checked(lambda document: check_rule_fields(document, SCHEMA_TYPES[fmt], text), rule_set, flags[0])
    metadata_checked = checked(check_metadata, metadata, flags[1])
    return Schema(text, SCHEMA_TYPES[fmt], references or [], metadata_checked, rules)


def checked(check: Callable[[Any], Any], document: Any, flag: str) -> Any:
    """`check(document)` (a rule set or metadata check), its error prefixed with the flag."""
    if document is None:
        return None
    try:
        return check(document)
    except RuleSetError as error:
        raise UsageError(f"{flag}: {error}") from None
