"""Creek-style JSON Schema evolution: closed producer schemas, open consumer schemas, client checks.

Confluent's checks compare the registered versions of a subject with each other, and with JSON
Schema's content models that makes adding or removing an optional property a breaking change one
way or the other. What matters is only that every schema *reading* a subject can read what every
schema *writing* it wrote. So, as Creek's JSON serde does:

* producers register **closed** schemas (`additionalProperties: false`): they know exactly what
  they write. Only producer schemas are registered, so the producing team owns the subject;
* a consumer reads with the **open** schema derived from a registered producer schema
  (`to_consumer_schema`), or a smaller *view* of it;
* a new producer schema is checked, before it is registered, against every registered one:
  backward (its consumer schema reads what each wrote) and forward (each one's consumer schema
  reads what it writes). The subject's own compatibility is set to NONE, since the registry's
  check is the one this replaces.

Two producers registering at the same moment could each pass the checks without seeing the
other's schema. After registering, the versions registered meanwhile are checked too, and so are
the versions after an already-registered schema when a producer starts: a conflicting pair makes
both producers fail, on every start, until one version is deleted. See docs/evolution.md.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from ..config import ConfigLike, as_config
from ..errors import IncompatibleSchemaError
from ..registry import failure_kind
from .differences import Difference, Direction
from .json_diff import incompatibilities
from .json_model import JsonSchemaError

#: The kind reported for an object of a producer schema that is not closed.
OPEN_PRODUCER_SCHEMA = "OPEN_CONTENT_MODEL_IN_PRODUCER_SCHEMA"

_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = (
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
)


def _subschemas(schema: Mapping[str, Any], path: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Every schema object under `schema` (itself included), with its JSON-pointer path."""
    yield schema, path
    for keyword in _SCHEMA_MAPS:
        for name, sub in (schema.get(keyword) or {}).items():
            if isinstance(sub, Mapping):
                yield from _subschemas(sub, f"{path}/{keyword}/{name}")
    for keyword in _SCHEMA_LISTS:
        for index, sub in enumerate(schema.get(keyword) or []):
            if isinstance(sub, Mapping):
                yield from _subschemas(sub, f"{path}/{keyword}/{index}")
    for keyword in _SCHEMA_VALUES:
        sub = schema.get(keyword)
        if isinstance(sub, Mapping):
            yield from _subschemas(sub, f"{path}/{keyword}")
        elif isinstance(sub, list):  # draft 7 tuple `items`
            for index, item in enumerate(sub):
                if isinstance(item, Mapping):
                    yield from _subschemas(item, f"{path}/{keyword}/{index}")
    dependencies = schema.get("dependencies")
    if isinstance(dependencies, Mapping):
        for name, sub in dependencies.items():
            if isinstance(sub, Mapping):
                yield from _subschemas(sub, f"{path}/dependencies/{name}")


def _parse(schema: str | Mapping[str, Any], what: str) -> dict[str, Any]:
    if isinstance(schema, Mapping):
        return copy.deepcopy(dict(schema))
    try:
        parsed = json.loads(schema)
    except (TypeError, json.JSONDecodeError) as error:
        raise JsonSchemaError(f"the {what} is not JSON: {error}") from None
    if not isinstance(parsed, dict):
        raise JsonSchemaError(f"the {what} must be a JSON object")
    return parsed


def to_consumer_schema(producer_schema: str | Mapping[str, Any]) -> dict[str, Any]:
    """The open consumer schema derived from a closed producer schema.

    Every `additionalProperties: false` (and `unevaluatedProperties: false`) becomes `true`; all
    else is kept, so the consumer reads what the producer writes plus whatever later producers add.
    """
    schema = _parse(producer_schema, "producer schema")
    for sub, _ in _subschemas(schema, "#"):
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if sub.get(keyword) is False:
                sub[keyword] = True  # type: ignore[index]
    return schema


def open_objects(producer_schema: str | Mapping[str, Any]) -> list[str]:
    """Paths of the objects with declared properties that a producer schema leaves open.

    A producer must say exactly what it writes; an open object would let any later property be
    read as anything. Objects without `properties` (maps, free-form objects) are not flagged.
    """
    schema = _parse(producer_schema, "producer schema")
    found = []
    for sub, path in _subschemas(schema, "#"):
        if "properties" not in sub:
            continue
        additional = sub.get("additionalProperties", True)
        if (
            additional is True
            and sub.get("unevaluatedProperties", True) is True
            and not sub.get("patternProperties")
        ):
            found.append(path)
    return found


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
        self._client = client or SchemaRegistryClient.new_client(dict(self._config.registry))
        self._normalize = bool(self._config.serde.get("normalize.schemas", False))
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
        producer = _parse(schema_str, "producer schema")
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
        consumer = to_consumer_schema(producer)
        found: list[Difference] = []
        for version in versions:
            old, schema_id = self._version_schema(subject, version)
            where = {"version": version, "schema_id": schema_id}
            if backward:  # the new consumer schema reads what the old producer wrote
                found += [
                    d.against(direction=Direction.BACKWARD, **where) for d in incompatibilities(consumer, old)
                ]
            if forward:  # the old consumer schema reads what the new producer writes
                found += [
                    d.against(direction=Direction.FORWARD, **where)
                    for d in incompatibilities(to_consumer_schema(old), producer)
                ]
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
        paths = open_objects(producer)
        if paths:
            raise IncompatibleSchemaError(
                'a producer schema must use a closed content model ("additionalProperties": false)',
                [
                    Difference(
                        OPEN_PRODUCER_SCHEMA,
                        path,
                        "this object declares properties but accepts any other: close it with "
                        '"additionalProperties": false',
                    )
                    for path in paths
                ],
                subject=subject,
            )

    # -- consumers ---------------------------------------------------------------------------

    def ensure_consumer_schema(self, subject: str, producer_schema_str: str | Mapping[str, Any]) -> int:
        """The id of the registered producer schema a consumer derives its open schema from.

        Every registered producer schema has been checked against every other, so a consumer of
        a registered one reads them all. An unregistered one is refused: consumers do not get to
        decide what producers write.
        """
        producer = _parse(producer_schema_str, "producer schema")
        registered = self._lookup(subject, _text(producer_schema_str, producer))
        if registered is not None:
            return int(registered.schema_id)
        versions = self._versions(subject)
        found = self._unreadable(
            subject, to_consumer_schema(producer), versions
        )  # say what it could not read
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
        consumer = _parse(consumer_schema_str, "consumer schema")
        return self._unreadable(subject, consumer, self._versions(subject))

    def _unreadable(self, subject: str, consumer: dict[str, Any], versions: list[int]) -> list[Difference]:
        """What stops `consumer` from reading data of each of these registered versions."""
        found: list[Difference] = []
        for version in versions:
            old, schema_id = self._version_schema(subject, version)
            found += [
                d.against(direction=Direction.BACKWARD, version=version, schema_id=schema_id)
                for d in incompatibilities(consumer, old)
            ]
        return found

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
        view = _parse(view_schema_str, "view schema")
        consumer = to_consumer_schema(producer_schema_str)
        found = [
            d.against(direction=Direction.VIEW, version=None, schema_id=None)
            for d in incompatibilities(view, consumer)
        ]
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
            raise

    def _versions(self, subject: str) -> list[int]:
        try:
            return sorted(self._client.get_versions(subject))
        except SchemaRegistryError as error:
            if failure_kind(error) == "not found":
                return []
            raise

    def _version_schema(self, subject: str, version: int) -> tuple[dict[str, Any], int]:
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
        return _parse(schema.schema_str or "", f"schema of version {version}"), int(registered.schema_id or 0)
