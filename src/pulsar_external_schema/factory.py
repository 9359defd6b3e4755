"""`SchemaRegistrySchemaFactory`: makes `ExternalSchema`s that share one registry client.

    factory = SchemaRegistrySchemaFactory({"schema.registry.url": url})
    orders = factory.avro(ORDER_SCHEMA)                 # also .json(...), .protobuf(MessageClass)
    keyed = factory.key_value(factory.avro(KEY), orders)

Each format is confluent-kafka's serializer and deserializer for it, configured with our subject
naming and our schema-id hooks (metadata or prefix). Reader schemas: by default a message is
decoded with its writer schema; `use.latest.version` / `use.latest.with.metadata` decode into
that registered version instead (Avro schema resolution, JSON/Protobuf as the serdes do).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import fastavro
from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField
from fastavro.schema import UnknownType

from . import _confluent
from .codec import DecodeLimits, PartCodec
from .codec.bridge import FieldSerde, capture_schema_id, prefix_and_capture_schema_id
from .codec.serdes import (
    ContractAvroDeserializer,
    ContractAvroSerializer,
    ContractJSONDeserializer,
    ContractJSONSerializer,
    ContractProtobufDeserializer,
    ContractProtobufSerializer,
    ContractSerde,
)
from .config import ConfigLike, ExternalSchemaConfig, as_config
from .errors import ConfigError, ExternalSchemaError, SchemaParseError
from .protobuf_text import file_descriptor_proto, render_proto
from .registry import registry_error
from .rules.referenced import ReferencedRules, walker_for
from .rules.rule_registry import RuleActions, RuleEngine, RuleExecutors
from .schema import ExternalSchema, KeyValueExternalSchema, SharedRegistryClient

if TYPE_CHECKING:
    from .json_evolution import JsonSchemaEvolution

#: Serde keys each side of confluent-kafka understands.
_SERIALIZER_KEYS = (
    "auto.register.schemas",
    "normalize.schemas",
    "use.schema.id",
    "use.latest.version",
    "use.latest.with.metadata",
)
_DESERIALIZER_KEYS = ("use.latest.version", "use.latest.with.metadata")


class SchemaRegistrySchemaFactory:
    """Builds external schemas from one validated config and one shared registry client.

    Data contracts: the schemas run the rule set their registered schema carries, on produce and
    consume, with the executors and actions of this factory (see `rules/rule_registry.py`).
    `client` is the Pulsar client the DLQ action publishes through when a schema has none of its
    own (schemas get one from `create_producer(client, ...)` and `client.subscribe(...)`);
    `rule_executors` / `rule_actions` add custom ones in code, by rule name (a dict) or for their
    type (a list).
    """

    def __init__(
        self,
        config: ConfigLike,
        *,
        client: Any = None,
        rule_executors: RuleExecutors | None = None,
        rule_actions: RuleActions | None = None,
    ) -> None:
        self._config = as_config(config)
        self._rules = RuleEngine(
            self._config.rules, executors=rule_executors, actions=rule_actions, pulsar_client=client
        )
        self._registry = SharedRegistryClient(self._config, on_close=self._rules.close)
        self._registry.acquire()  # the factory's own hold, released by close()
        self._closed = False
        self._json_evolution: JsonSchemaEvolution | None = None

    @property
    def config(self) -> ExternalSchemaConfig:
        return self._config

    @property
    def rules(self) -> RuleEngine:
        """The rule executors and actions this factory's schemas run."""
        return self._rules

    @property
    def registry_client(self) -> Any:
        """The confluent-kafka `SchemaRegistryClient` every schema of this factory uses."""
        return self._registry.client

    def avro(
        self,
        schema: str | Schema | dict[str, Any],
        *,
        to_dict: Callable[[Any, Any], dict[str, Any]] | None = None,
        from_dict: Callable[[dict[str, Any], Any], Any] | None = None,
    ) -> ExternalSchema:
        """An Avro schema (JSON text, a parsed dict or a confluent-kafka `Schema`): values are dicts
        (or objects through `to_dict` / `from_dict`)."""
        schema = _parse_avro(_schema_text(schema, "avro"))

        def make(field: MessageField) -> FieldSerde:
            client = self._registry.client
            serializer = ContractAvroSerializer(
                client,
                schema_str=schema,
                to_dict=to_dict,
                conf=self._serializer_conf(),
                **self._writer_args(),
            )
            deserializer = ContractAvroDeserializer(
                self._registry.reader,
                from_dict=from_dict,
                conf=self._deserializer_conf(),
                **self._rule_args(),
            )
            return self._part(serializer, deserializer, field, "AVRO")

        return self._schema(make)

    def json(
        self,
        schema: str | Schema | dict[str, Any],
        *,
        to_dict: Callable[[Any, Any], dict[str, Any]] | None = None,
        from_dict: Callable[[dict[str, Any], Any], Any] | None = None,
        view: str | dict[str, Any] | None = None,
    ) -> ExternalSchema:
        """A JSON Schema schema: values are validated against it when produced and consumed.

        With `json.evolution=producer-consumer`, `schema` is the producer's closed schema: it is
        checked and registered before the first value is sent, and consumers read with its open
        form, or with `view` (a subset of its properties) which decodes only what it declares.
        """
        schema = _schema_text(schema, "json")
        text = schema.schema_str if isinstance(schema, Schema) else schema
        other = looks_like(text or "")
        if other in ("avro", "protobuf"):
            method = "avro()" if other == "avro" else "protobuf()"
            raise SchemaParseError(
                f"this looks like an {other.capitalize()} schema, not a JSON Schema: use factory.{method}"
            )
        if self._config.json_evolution != "producer-consumer":
            if view is not None:
                raise ConfigError("json(view=...) needs config key 'json.evolution' = 'producer-consumer'")
            return self._schema(lambda field: self._json_part(schema, to_dict, from_dict, field))
        text = schema.schema_str if isinstance(schema, Schema) else schema
        if not isinstance(text, str):
            raise ConfigError("json() takes the producer schema as JSON text or a confluent-kafka Schema")
        from .evolution.creek import parse_schema

        parse_schema(text, "producer schema")
        return self._schema(lambda field: self._evolving_json_part(text, to_dict, from_dict, view, field))

    def _json_part(
        self,
        schema: str | Schema,
        to_dict: Callable[[Any, Any], dict[str, Any]] | None,
        from_dict: Callable[[dict[str, Any], Any], Any] | None,
        field: MessageField,
        *,
        serializer_conf: dict[str, Any] | None = None,
        deserializer_conf: dict[str, Any] | None = None,
    ) -> FieldSerde:
        serializer = ContractJSONSerializer(
            schema,
            self._registry.client,
            to_dict=to_dict,
            conf=serializer_conf or self._serializer_conf(),
            **self._writer_args(),
        )
        deserializer = ContractJSONDeserializer(
            None,
            from_dict=from_dict,
            schema_registry_client=self._registry.reader,
            conf=deserializer_conf or self._deserializer_conf(),
            **self._rule_args(),
        )
        return self._part(serializer, deserializer, field, "JSON")

    def _evolving_json_part(
        self,
        schema: str,
        to_dict: Callable[[Any, Any], dict[str, Any]] | None,
        from_dict: Callable[[dict[str, Any], Any], Any] | None,
        view: str | dict[str, Any] | None,
        field: MessageField,
    ) -> FieldSerde:
        """A JSON part under the producer/consumer model (json_evolution.py, loaded here: a
        process that decodes nothing of it does not load its checkers)."""
        from .json_evolution import ConsumerSchemaDeserializer, ProducerSchemaSerializer

        part = self._json_part(
            schema,
            to_dict,
            None,
            field,
            serializer_conf={**self._serializer_conf(), "auto.register.schemas": False},
            deserializer_conf={**self._deserializer_conf(), "validate": False},
        )
        checks = self._config.json_evolution_checks
        strategy = self._config.subject_name_strategy
        part.serializer = ProducerSchemaSerializer(
            part.serializer,
            self._evolution(),
            schema,
            strategy=strategy,
            backward=checks in ("full", "backward"),
            forward=checks in ("full", "forward"),
        )
        part.deserializer = ConsumerSchemaDeserializer(
            part.deserializer, self._evolution(), schema, strategy=strategy, view=view, from_dict=from_dict
        )
        part.codec = None  # the evolution serdes check and widen schemas: no compiled path (yet)
        return part

    def _evolution(self) -> JsonSchemaEvolution:
        from .json_evolution import JsonSchemaEvolution

        if self._json_evolution is None:
            self._json_evolution = JsonSchemaEvolution(self._config, client=self._registry.client)
        return self._json_evolution

    def protobuf(self, message_type: type[Any], *, schema: Schema | None = None) -> ExternalSchema:
        """A Protobuf schema from a generated message class; values are instances of it.

        The producer registers the class's `.proto` text, rendered from its descriptor; `schema`
        registers this text instead (with its rule set and metadata), when the class was built
        from it (the console tools do, from the registry's parse of the user's `.proto`)."""
        if not (isinstance(message_type, type) and hasattr(message_type, "DESCRIPTOR")):
            raise ConfigError(
                "protobuf() takes a generated message class (pkg.module_pb2.Message), not "
                f"{type(message_type).__name__}; for .proto text, the console tools build the class "
                "from the registry's parse of it"
            )

        def make(field: MessageField) -> FieldSerde:
            client = self._registry.client
            conf = {**self._serializer_conf(), "use.deprecated.format": False}
            serializer = ContractProtobufSerializer(message_type, client, conf=conf, **self._writer_args())
            # Register `.proto` text, as the Java serializer does, instead of confluent-kafka's base64
            # descriptor that only Confluent Schema Registry parses (see protobuf_text.py).
            _confluent.set_local_schema(
                serializer, schema or Schema(render_proto(file_descriptor_proto(message_type)), "PROTOBUF")
            )
            deconf = {**self._deserializer_conf(), "use.deprecated.format": False}
            deserializer = ContractProtobufDeserializer(
                message_type,
                conf=deconf,
                schema_registry_client=self._registry.reader,
                **self._rule_args(),
            )
            return self._part(serializer, deserializer, field, "PROTOBUF")

        return self._schema(make)

    def key_value(self, key: ExternalSchema, value: ExternalSchema) -> KeyValueExternalSchema:
        """Key and value with their own schemas (subjects `...-key` and `...-value`), INLINE layout."""
        if not isinstance(key, ExternalSchema) or not isinstance(value, ExternalSchema):
            raise ConfigError(
                "key_value() takes two schemas made by a factory's avro(), json() or protobuf(), not "
                f"{type(key).__name__} and {type(value).__name__}"
            )
        make_key, make_value = key._make_part, value._make_part
        if key.is_key_value or value.is_key_value or make_key is None or make_value is None:
            raise ConfigError(
                "key_value() takes two schemas made by a factory's avro(), json() or protobuf()"
            )
        # Fresh serdes per side: confluent-kafka caches the subject and the id per serializer.
        return KeyValueExternalSchema(
            make_key(MessageField.KEY), make_value(MessageField.VALUE), self._config, self._registry
        )

    def close(self) -> None:
        """Release the factory's hold on the registry client (closed once its schemas are closed too)."""
        if not self._closed:
            self._closed = True
            self._registry.release()

    def __enter__(self) -> SchemaRegistrySchemaFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------

    def _schema(self, make: Callable[[MessageField], FieldSerde]) -> ExternalSchema:
        """A value schema; `make` is kept so key_value() can build fresh serdes for a key."""
        made = _made(make, MessageField.VALUE, self._config.registry_url)
        return ExternalSchema(made, self._config, self._registry, make_part=make)

    def _rule_args(self) -> dict[str, Any]:
        return {"rule_conf": self._rules.rule_conf, "rule_registry": self._rules.registry}

    def _writer_args(self) -> dict[str, Any]:
        return {**self._rule_args(), "rule_set_client": self._registry.reader}

    def _serializer_conf(self) -> dict[str, Any]:
        conf = {k: v for k, v in self._config.serde.items() if k in _SERIALIZER_KEYS}
        if self._config.pins_a_version:
            # A pinned version (use.schema.id, use.latest.*) decides the writer schema; registering the
            # local schema as well is what confluent-kafka refuses, so pinning takes precedence.
            conf["auto.register.schemas"] = False
        conf["subject.name.strategy"] = self._config.subject_name_strategy
        conf["schema.id.serializer"] = (
            prefix_and_capture_schema_id if self._config.schema_id_location == "prefix" else capture_schema_id
        )
        return conf

    def _deserializer_conf(self) -> dict[str, Any]:
        conf = {k: v for k, v in self._config.serde.items() if k in _DESERIALIZER_KEYS}
        conf["subject.name.strategy"] = self._config.subject_name_strategy
        return conf

    def _part(self, serializer: Any, deserializer: Any, field: MessageField, schema_type: str) -> FieldSerde:
        walker = walker_for(schema_type)
        default = self._config.rules.referenced
        for serde in (serializer, deserializer):
            if isinstance(serde, ContractSerde):
                serde.referenced = ReferencedRules(default, walker)
        codec = PartCodec(
            schema_type,
            serializer,
            deserializer,
            field,
            prefix=self._config.schema_id_location == "prefix",
            latest_ttl=self._config.cache_latest_ttl_sec,
            limits=DecodeLimits(self._config.decode_max_bytes, self._config.decode_max_depth),
            check_subject=self._config.schema_id_subject_check,
            recheck=self._config.schema_id_recheck_sec,
        )
        return FieldSerde(
            serializer,
            deserializer,
            field,
            self._config.subject_name_strategy,
            schema_type,
            self._config.registry_url,
            codec,
        )


def _made(make: Callable[[MessageField], FieldSerde], field: MessageField, url: str) -> FieldSerde:
    """`make(field)`, where a schema confluent-kafka's serdes cannot parse is a `SchemaParseError`
    (they raise what their parser raised: a TypeError, a KeyError, ...)."""
    try:
        return make(field)
    except ExternalSchemaError:
        raise
    except Exception as error:
        doing = "the schema's references could not be read"  # resolving them asks the registry
        failed = registry_error(error, doing, url, not_found=ConfigError)
        if failed is not None:
            raise failed from error
        raise SchemaParseError(f"the schema does not parse: {error or type(error).__name__}") from error


def _parse_avro(schema: str | Schema) -> str | Schema:
    """Parse an Avro schema here, for an error that says what is wrong with it: confluent-kafka's
    serializer answers a misspelled type (`strng`) with "argument of type 'NoneType' is not
    iterable", and a JSON Schema with "unhashable type: 'dict'". A schema with references is left
    to the serializer, which resolves them.

    Returns the schema to build the serializer with: a `Schema` of a bare primitive (`"string"`,
    a key schema's usual shape) as `{"type": "string"}`, which is how confluent-kafka rewrites
    schema *text* before it parses it (it does not for a `Schema`, and then fails on it)."""
    if isinstance(schema, Schema):
        if schema.references:
            return schema
        text = schema.schema_str or ""
    else:
        text = schema
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        if looks_like(text) == "protobuf":
            raise SchemaParseError(
                "this looks like a .proto file, not an Avro schema: use factory.protobuf()"
            ) from None
        if text.strip() and text.strip()[0] not in '{["':
            return schema  # a bare primitive name (`string`): confluent-kafka takes it as is
        raise SchemaParseError(f"the Avro schema is not JSON: {error}") from None
    if looks_like(text) == "json":
        raise SchemaParseError("this looks like a JSON Schema, not an Avro schema: use factory.json()")
    try:
        fastavro.parse_schema(parsed)
    except UnknownType as error:
        raise SchemaParseError(
            f"the Avro schema names a type that does not exist: {error.name!r} (the primitive types "
            "are null, boolean, int, long, float, double, bytes and string)"
        ) from None
    except Exception as error:
        raise SchemaParseError(f"the Avro schema does not parse: {error or type(error).__name__}") from None
    if isinstance(schema, Schema) and isinstance(parsed, str):
        return Schema(
            json.dumps({"type": parsed}),
            schema.schema_type,
            schema.references,
            schema.metadata,
            schema.rule_set,
        )
    return schema


def looks_like(text: str) -> str | None:
    """ "avro", "json" or "protobuf" when schema text is plainly of that format, else None: a
    `.proto` file's first keyword; a JSON Schema's marks that no Avro schema has (`$schema`,
    `properties`, type `object`); an Avro named type's (type `record`, `enum`, `fixed`, `fields`).
    Used to say "use factory.json()" where a parser would answer with a TypeError."""
    if re.match(r"\s*(syntax|package|import|message|option)\b", text):
        return "protobuf"
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    if "$schema" in parsed or "properties" in parsed or parsed.get("type") == "object":
        return "json"
    if parsed.get("type") in ("record", "enum", "fixed") or isinstance(parsed.get("fields"), list):
        return "avro"
    return None


def _schema_text(schema: Any, method: str) -> str | Schema:
    """Schema text or a `Schema` as given; a parsed schema (dict) as JSON text."""
    if isinstance(schema, dict):
        return json.dumps(schema)
    if not isinstance(schema, str | Schema):
        raise ConfigError(
            f"{method}() takes the schema as JSON text, a dict or a confluent-kafka Schema, "
            f"not {type(schema).__name__}"
        )
    return schema
