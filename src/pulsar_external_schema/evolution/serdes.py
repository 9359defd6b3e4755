"""The producer/consumer model in the serdes: checks on first use of a subject, reads by view.

With `json.evolution=producer-consumer` a factory's JSON schemas wrap confluent-kafka's serializer
and deserializer in these. A producer's schema is checked and registered
(`ensure_producer_schema`) before the first value of a subject is encoded; a consumer's schema is
admitted (`ensure_consumer_schema`, or `ensure_consumer_view_schema` with a view) before the
first value is decoded, and every value is then validated with the consumer's open schema (or
the view) instead of the writer's, and, with a view, reduced to the properties the view declares.
The writer schema's data-contract rules run as usual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka.serialization import SerializationContext
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.validators import validator_for

from ..errors import IncompatibleSchemaError
from ..subjects import SubjectNameStrategy
from .json_evolution import JsonSchemaEvolution, to_consumer_schema
from .json_model import JsonSchemaError, load_text

Serde = Callable[[Any, SerializationContext], Any]


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


def parse_schema(schema: str | Mapping[str, Any], what: str = "schema") -> dict[str, Any]:
    """A schema given in code, parsed (`json_model.load_text`); bad input is a `JsonSchemaError`,
    a `ConfigError`, naming which schema."""
    parsed = load_text(schema, f"the {what}")
    if not isinstance(parsed, Mapping):
        raise JsonSchemaError(f"the {what} must be a JSON object, not {type(parsed).__name__}")
    return dict(parsed)


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


def project(value: Any, schema: Any) -> Any:
    """`value` with only the properties `schema` declares (in objects, nested objects and arrays)."""
    if not isinstance(schema, Mapping):
        return value
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        return {name: project(item, properties[name]) for name, item in value.items() if name in properties}
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        return [project(item, items) for item in value]
    return value
