"""Creek-style JSON Schema evolution against the registry: `JsonSchemaEvolution` and its serdes.

The checks themselves are pure and live in `evolution/creek.py` (closed producer schemas, open
consumer schemas, a producer against every registered one); this module is the registry glue the
factory uses:

* `JsonSchemaEvolution` looks up and registers producer schemas (setting the subject's own
  compatibility to NONE, since its checks replace the registry's) and admits consumer schemas.
  Two producers registering at the same moment could each pass the checks without seeing the
  other's schema. After registering, the versions registered meanwhile are checked too, and so
  are the versions after an already-registered schema when a producer starts: a conflicting pair
  makes both producers fail, on every start, until one version is deleted.
* With `json.evolution=producer-consumer` a factory's JSON schemas wrap confluent-kafka's
  serializer and deserializer in `ProducerSchemaSerializer` / `ConsumerSchemaDeserializer`. A
  producer's schema is checked and registered (`ensure_producer_schema`) before the first value
  of a subject is encoded; a consumer's schema is admitted (`ensure_consumer_schema`, or
  `ensure_consumer_view_schema` with a view) before the first value is decoded, and every value is
  then validated with the consumer's open schema (or the view) instead of the writer's, and, with
  a view, reduced to the properties the view declares. The writer schema's data-contract rules run
  as usual.

See docs/evolution.md.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import SerializationContext
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.validators import validator_for

from .config import ConfigLike, as_config
from .errors import IncompatibleSchemaError, JsonSchemaError
from .evolution.creek import (
    RegisteredVersion,
    closed_differences,
    parse_schema,
    producer_differences,
    project,
    to_consumer_schema,
    unreadable,
    view_differences,
)
from .evolution.differences import Difference
from .registry import failure_kind, new_client, registry_error
from .subjects import SubjectNameStrategy

__all__ = ["ConsumerSchemaDeserializer", "JsonSchemaEvolution", "ProducerSchemaSerializer"]

Serde = Callable[[Any, SerializationContext], Any]


def _text(given: str | Mapping[str, Any], parsed: Mapping[str, Any]) -> str:
    """The text registered and looked up: the caller's own, as serializers register it."""
    return given if isinstance(given, str) else json.dumps(parsed, separators=(",", ":"))


class JsonSchemaEvolution:
    """Registers producer schemas and admits consumer schemas by Creek's rules (see module doc).

        evolution = JsonSchemaEvolution({"schema.registry.url": url})
        evolution.ensure_producer_schema("orders-value", ORDER_V2)       # checks, then registers
        evolution.ensure_consumer_schema("orders-value", ORDER_V2)       # must be registered
        evolution.ensure_consumer_view_schema("orders-value", ORDER_V2, ORDER_VIEW)

    `config` takes the factory's keys (`schema.registry.url`, auth, `normalize.schemas`, ...).
    Each call returns the registered id of the producer schema and raises
    `IncompatibleSchemaError` with every difference found.
    """

    def __init__(self, config: ConfigLike, *, client: SchemaRegistryClient | None = None) -> None:
        self._config = as_config(config)
        self._own_client = client is None
        self._client = client or new_client(self._config.registry)
        self._normalize = self._config.normalize_schemas
        self._lock = threading.Lock()

    @property
    def client(self) -> SchemaRegistryClient:
        return self._client

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> JsonSchemaEvolution:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- producers ---------------------------------------------------------------------------

    def ensure_producer_schema(
        self,
        subject: str,
        schema_str: str | Mapping[str, Any],
        backward: bool = True,
        forward: bool = True,
    ) -> int:
        """The id of `schema_str` under `subject`, registered if it is not yet.

        A new schema must be closed, and is checked against every registered version: backward
        (its consumer schema reads data each of them wrote) and forward (each one's consumer
        schema reads data it writes). Then the subject's compatibility is set to NONE and the
        schema registered. An already registered schema is checked against the versions
        registered after it (which fails only after a registration race, or when a later version
        was registered with fewer checks).
        """
        producer = parse_schema(schema_str, "producer schema")
        self._check_closed(subject, producer)
        text = _text(schema_str, producer)
        with self._lock:
            registered = self._lookup(subject, text)
            if registered is not None:
                later = [v for v in self._versions(subject) if v > (registered.version or 0)]
                self._check_producer(subject, producer, later, backward, forward, race=True)
                return int(registered.schema_id)
            checked = self._versions(subject)
            self._check_producer(subject, producer, checked, backward, forward)
            self._client.set_compatibility(subject_name=subject, level="NONE")
            schema_id = int(
                self._client.register_schema(subject, Schema(text, "JSON"), normalize_schemas=self._normalize)
            )
            mine = self._lookup(subject, text)
            meanwhile = [
                v for v in self._versions(subject) if v not in checked and (mine is None or v != mine.version)
            ]
            self._check_producer(subject, producer, meanwhile, backward, forward, race=True)
            return schema_id

    def _check_producer(
        self,
        subject: str,
        producer: dict[str, Any],
        versions: list[int],
        backward: bool,
        forward: bool,
        race: bool = False,
    ) -> None:
        registered = (self._version_schema(subject, version) for version in versions)
        found = producer_differences(producer, registered, backward=backward, forward=forward)
        if found:
            what = (
                "the producer schema conflicts with versions registered after it (a registration race, or "
                "a later version registered with fewer checks): delete one of the versions, or move this "
                "producer to a newer schema"
                if race
                else "the producer schema is not compatible with the registered producer schemas"
            )
            raise IncompatibleSchemaError(what, found, subject=subject)

    @staticmethod
    def _check_closed(subject: str, producer: Mapping[str, Any]) -> None:
        found = closed_differences(producer)
        if found:
            raise IncompatibleSchemaError(
                'a producer schema must use a closed content model ("additionalProperties": false)',
                found,
                subject=subject,
            )

    # -- consumers ---------------------------------------------------------------------------

    def ensure_consumer_schema(self, subject: str, producer_schema_str: str | Mapping[str, Any]) -> int:
        """The id of the registered producer schema a consumer derives its open schema from.

        Every registered producer schema has been checked against every other, so a consumer of
        a registered one reads them all. An unregistered one is refused: consumers do not get to
        decide what producers write.
        """
        producer = parse_schema(producer_schema_str, "producer schema")
        registered = self._lookup(subject, _text(producer_schema_str, producer))
        if registered is not None:
            return int(registered.schema_id)
        versions = self._versions(subject)
        found = self._unreadable(subject, to_consumer_schema(producer), versions)  # what it could not read
        registered_what = (
            f"{len(versions)} version(s) are registered" if versions else "the subject has no versions"
        )
        raise IncompatibleSchemaError(
            "the producer schema this consumer is derived from is not registered "
            f"({registered_what}); consume with a registered producer schema or a view of one",
            found,
            subject=subject,
        )

    def check_consumer_schema(
        self, subject: str, consumer_schema_str: str | Mapping[str, Any]
    ) -> list[Difference]:
        """What stops a consumer schema from reading data of every registered producer schema.

        For a consumer built ahead of its producer (say, expecting a property a coming producer
        version adds): nothing is registered, so the expectation binds no one. The producing team
        may still register another type for that property; the consumer then finds out here
        (and its `ensure_consumer_schema` fails), while producers carry on.
        """
        consumer = parse_schema(consumer_schema_str, "consumer schema")
        return self._unreadable(subject, consumer, self._versions(subject))

    def _unreadable(self, subject: str, consumer: dict[str, Any], versions: list[int]) -> list[Difference]:
        return unreadable(consumer, (self._version_schema(subject, version) for version in versions))

    def ensure_consumer_view_schema(
        self,
        subject: str,
        producer_schema_str: str | Mapping[str, Any],
        view_schema_str: str | Mapping[str, Any],
    ) -> int:
        """Admit a view (a subset of the properties) of a registered producer schema.

        The view must read everything the consumer schema derived from the producer schema
        accepts; then the producer schema must be registered. Returns its id.
        """
        found = view_differences(parse_schema(view_schema_str, "view schema"), producer_schema_str)
        if found:
            raise IncompatibleSchemaError(
                "the view schema cannot read what the consumer schema of the producer schema accepts",
                found,
                subject=subject,
            )
        return self.ensure_consumer_schema(subject, producer_schema_str)

    # -- registry ----------------------------------------------------------------------------

    def _lookup(self, subject: str, text: str) -> Any:
        try:
            return self._client.lookup_schema(
                subject, Schema(text, "JSON"), normalize_schemas=self._normalize
            )
        except SchemaRegistryError as error:
            if failure_kind(error) == "not found":
                return None
            raise self._failure(error, f"could not look up a schema under {subject}", subject) from None

    def _versions(self, subject: str) -> list[int]:
        try:
            return sorted(self._client.get_versions(subject))
        except SchemaRegistryError as error:
            if failure_kind(error) == "not found":
                return []
            raise self._failure(error, f"could not list the versions of {subject}", subject) from None

    def _failure(self, error: SchemaRegistryError, doing: str, subject: str) -> Exception:
        """A registry failure as the package's error (`registry.registry_error`)."""
        return registry_error(error, doing, self._config.registry_url, subject=subject) or error

    def _version_schema(self, subject: str, version: int) -> RegisteredVersion:
        registered = self._client.get_version(subject, version)
        schema = registered.schema
        if schema.references:
            raise IncompatibleSchemaError(
                f"version {version} of the subject uses schema references, which JSON Schema evolution "
                "does not follow yet: inline the referenced schemas in producer schemas",
                [],
                subject=subject,
            )
        if schema.schema_type != "JSON":
            raise IncompatibleSchemaError(
                f"version {version} of the subject is a {schema.schema_type} schema; JSON Schema evolution "
                "only compares JSON schemas",
                [],
                subject=subject,
            )
        return RegisteredVersion(
            parse_schema(schema.schema_str or "", f"schema of version {version}"),
            version,
            int(registered.schema_id or 0),
        )


class _OncePerSubject:
    """Runs a registry check the first time each subject is used, and remembers success."""

    def __init__(self, strategy: SubjectNameStrategy, record_name: str | None) -> None:
        self._strategy = strategy
        self._record_name = record_name
        self._ready: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, ctx: SerializationContext, check: Callable[[str], int]) -> None:
        subject = self._strategy(ctx, self._record_name)
        if subject is None or subject in self._ready:
            return
        with self._lock:
            if subject in self._ready:
                return
            try:
                check(subject)
            except IncompatibleSchemaError as error:
                raise error.on_topic(ctx.topic) from None
            self._ready.add(subject)


class ProducerSchemaSerializer:
    """Registers the producer schema through the checks, then serializes as the wrapped serializer."""

    def __init__(
        self,
        inner: Serde,
        evolution: JsonSchemaEvolution,
        schema: str,
        *,
        strategy: SubjectNameStrategy,
        backward: bool,
        forward: bool,
    ) -> None:
        self._inner = inner
        self._evolution = evolution
        self._schema = schema
        self._backward = backward
        self._forward = forward
        self._subjects = _OncePerSubject(strategy, parse_schema(schema, "producer schema").get("title"))

    def __call__(self, value: Any, ctx: SerializationContext) -> Any:
        self._subjects.ensure(
            ctx,
            lambda subject: self._evolution.ensure_producer_schema(
                subject, self._schema, backward=self._backward, forward=self._forward
            ),
        )
        return self._inner(value, ctx)


class ConsumerSchemaDeserializer:
    """Admits the consumer (or view) schema, then validates and shapes what the wrapped one decodes."""

    def __init__(
        self,
        inner: Serde,
        evolution: JsonSchemaEvolution,
        producer_schema: str,
        *,
        strategy: SubjectNameStrategy,
        view: str | Mapping[str, Any] | None = None,
        from_dict: Callable[[dict[str, Any], Any], Any] | None = None,
    ) -> None:
        self._inner = inner
        self._evolution = evolution
        self._producer_schema = producer_schema
        title = parse_schema(producer_schema, "producer schema").get("title")
        self._view = parse_schema(view, "view schema") if view is not None else None
        reader = self._view if self._view is not None else to_consumer_schema(producer_schema)
        validator = validator_for(reader)
        try:
            validator.check_schema(reader)
        except SchemaError as error:
            which = "view" if self._view is not None else "producer"
            raise JsonSchemaError(f"the {which} schema is not a valid JSON Schema: {error.message}") from None
        self._validator = validator(reader)
        self._from_dict = from_dict
        self._subjects = _OncePerSubject(strategy, title)

    @property
    def inner(self) -> Serde:
        """The deserializer it wraps: the one that looks writer schemas up in the registry."""
        return self._inner

    @property
    def producer_schema(self) -> Schema:
        """The producer schema it was given, whose tags its consumer schema keeps."""
        return Schema(self._producer_schema, "JSON")

    def _admit(self, subject: str) -> int:
        if self._view is None:
            return self._evolution.ensure_consumer_schema(subject, self._producer_schema)
        return self._evolution.ensure_consumer_view_schema(subject, self._producer_schema, self._view)

    def __call__(self, data: bytes | None, ctx: SerializationContext) -> Any:
        self._subjects.ensure(ctx, self._admit)
        value = self._inner(data, ctx)
        error = best_match(self._validator.iter_errors(value))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            which = "view" if self._view is not None else "consumer"
            raise ValueError(f"the value does not match the {which} schema at {where}: {error.message}")
        if self._view is not None:
            value = project(value, self._view)
        if self._from_dict is not None and value is not None:
            return self._from_dict(value, ctx)
        return value
