"""The schemas a task reads or writes with: the registered version a subject is read into
(resolved once, on the driver) and the external schema an executor decodes or encodes with."""

from __future__ import annotations

import json
from typing import Any

from .. import _confluent
from ..config import pins_a_version
from ..factory import SchemaRegistrySchemaFactory
from ..registered_schema import RegisteredSchema
from ..rules.actions import InvalidMessageAction
from ..schema import ExternalSchema
from ..topic_schemas import (
    import_message_class,
    registered_schema,
    registry_message_class,
    schema_for,
    topic_subject,
)
from .kept import Kept
from .options import SourceOptions

__all__ = ["ReaderSchema", "make_schema", "protobuf_class", "resolve_reader_schema"]

#: The registered schema values are read into: the subject's latest version by default, or the
#: one `use.schema.id` / `use.latest.with.metadata` names.
ReaderSchema = RegisteredSchema


#: Factories the driver's planning keeps per worker, one per registry config (`kept.py`).
_factories: Kept[SchemaRegistrySchemaFactory] = Kept(4, lambda factory: factory.close())
#: Message classes built from the registry's text, per registry, subject and id: one a process
#: (each read of a partition asks for its version's), not a descriptor pool a task.
_classes: Kept[Any] = Kept(64, lambda _: None)


def resolve_reader_schema(options: SourceOptions, topic: str) -> ReaderSchema:
    """The version values of `topic` are read into, asked of the registry now (not of a cache: a
    query plans with the subject's versions as they are when it starts)."""
    factory = _factory(options)
    _confluent.forget_cached(factory.registry_client, topic_subject(factory, topic))
    return registered_schema(factory, topic)


def _factory(options: SourceOptions) -> SchemaRegistrySchemaFactory:
    """The factory kept in this process for the options' config."""
    key = json.dumps(options.config, sort_keys=True, default=str)
    return _factories.get(key, lambda: SchemaRegistrySchemaFactory(options.config))


def protobuf_class(options: SourceOptions, reader: ReaderSchema) -> Any:
    """The message class of a Protobuf version: the generated class the options name, else one
    built from the registry's `.proto` text (compiled in this process: protobuf_text.py), its
    file's first message, as Confluent's console tools pick it."""
    path, named = options.protobuf_message_class, options.protobuf_class_named
    if path:
        return import_message_class(path, named)
    factory = _factory(options)
    key = (factory.config.registry_url, reader.subject, reader.schema_id)
    return _classes.get(key, lambda: registry_message_class(factory, reader))


def make_schema(
    options: SourceOptions, reader: ReaderSchema, *, client: Any = None, latest: bool = False
) -> tuple[SchemaRegistrySchemaFactory, ExternalSchema]:
    """The external schema an executor decodes with (no `client`: DLQ rules mark rows invalid),
    or encodes with (`latest`: the subject's latest version, never registering one)."""
    conf = dict(options.config)
    pinned = pins_a_version(conf)
    if (latest or reader.schema_type == "AVRO") and not pinned:
        conf["use.latest.version"] = "true"  # Avro resolves every writer version into the reader's
    # No client: the DLQ action marks the row invalid (publishing from `read()` would repeat the
    # copy on every task retry); the validation job writes the DLQ topic once, with its batch.
    actions = None if client is not None else [InvalidMessageAction()]
    factory = SchemaRegistrySchemaFactory(conf, client=client, rule_actions=actions)
    if reader.schema_type == "AVRO":
        schema = factory.avro(reader.for_factory())
        if client is None and not latest and not pinned:
            # Read into the version the driver resolved, not whatever is latest when this task
            # runs: the column type was fixed from it, and so are the rules that run.
            schema.read_into(reader.schema_id, reader.subject, reader.version)
        return factory, schema
    message_class = protobuf_class(options, reader) if reader.schema_type == "PROTOBUF" else None
    return factory, schema_for(factory, reader, message_class)
