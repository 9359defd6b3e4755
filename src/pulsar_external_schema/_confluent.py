"""Every use of confluent-kafka's private API, in one module.

The package builds on confluent-kafka's schema registry client and serdes, and some of what it
needs is not public there: the codec (`codec/`) builds each plan from the reference serde it
replaces on the per-message path, so that both agree by construction (the same subject name
function, registry calls and caches, parsed schemas, decisions on disabled rules and actions);
the registry client's REST calls reach what its methods do not (a Protobuf schema's serialized
descriptor past a cache that keys by id only); the CEL executors reuse confluent-kafka's value
conversions and validators; the serde subclasses of `codec/serdes.py` change three decisions
of confluent-kafka's serdes, and see each rule its engine runs (rule metrics) and each schema whose
domain rules it runs (the rules of referenced schemas, run through the same engine). Each touch
is a function or a hook class here (the private methods those subclasses need overridden are
overridden here, and handed to hooks with public names), and
tests/unit/test_codec_touch_points.py holds each one to the installed confluent-kafka, whose
version pyproject.toml bounds.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
from confluent_kafka.schema_registry._sync.protobuf import _resolve_named_schema
from confluent_kafka.schema_registry.common.avro import get_inline_tags, parse_schema_with_repo
from confluent_kafka.schema_registry.common.protobuf import (
    _init_pool,
    _is_repeated,
    _str_to_proto,
    is_cel_leaf_message,
    is_map_field,
)
from confluent_kafka.schema_registry.common.protobuf import (
    get_inline_tags as protobuf_field_tags,
)
from confluent_kafka.schema_registry.common.protobuf import (
    get_type as protobuf_field_type,
)
from confluent_kafka.schema_registry.common.serde import ParsedSchemaCache
from confluent_kafka.schema_registry.rules.cel import extra_func
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor as _ConfluentCelExecutor
from confluent_kafka.schema_registry.rules.cel.cel_executor import _CelCache, _to_plain_containers
from confluent_kafka.schema_registry.rules.cel.cel_field_presence import InterpretedRunner
from confluent_kafka.schema_registry.rules.cel.extra_func import EXTRA_FUNCS
from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleMode
from confluent_kafka.schema_registry.serde import Migration, RuleContext, SchemaId
from confluent_kafka.serialization import SerializationContext
from fastavro.schema import expand_schema

_NO_SCOPE = contextlib.nullcontext()

#: confluent-kafka's in-memory registry client (`mock://`), which only a private module exports.
MockRegistryClient = MockSchemaRegistryClient

#: The registry format each schema type's serdes ask for (Protobuf: the serialized descriptor).
REGISTRY_FORMAT = {"AVRO": None, "JSON": None, "PROTOBUF": "serialized"}


def subject(serde: Any, ctx: SerializationContext, record_name: str | None) -> str | None:
    """The subject the serde's subject name strategy gives (`record_name` for record strategies)."""
    strategy = serde._subject_name_func
    if serde._strategy_accepts_client:
        name: str | None = strategy(ctx, record_name, serde._registry, serde._subject_name_conf)
    else:
        name = strategy(ctx, record_name)
    return name


def subjects_of(serde: Any, schema_id: int) -> list[str]:
    """The subjects a schema id is registered under (`GET /schemas/ids/{id}/subjects`; the mock
    registry, which has no such call, answers from its subjects' versions)."""
    client = serde._registry
    store = getattr(client, "_client", client)  # codec/serdes.py's Protobuf wrapper holds it
    if isinstance(store, MockSchemaRegistryClient):
        return list(dict.fromkeys(subject for subject, _ in schema_versions(store, schema_id)))
    found: list[str] = client.get_subjects_by_schema_id(schema_id)
    return found


def schema_versions(client: Any, schema_id: int) -> list[tuple[str, int]]:
    """(subject, version) of each version with this schema id (`GET /schemas/ids/{id}/versions`;
    the mock registry answers from its subjects' versions)."""
    if isinstance(client, MockSchemaRegistryClient):
        return [
            (name, version)
            for name in client.get_subjects()
            for version in client.get_versions(name)
            if client.get_version(name, version).schema_id == schema_id
        ]
    return [(found.subject, found.version) for found in client.get_schema_versions(schema_id)]


def registered_id(serializer: Any, subject: str, version: int | None, schema: Schema | None) -> int:
    """The id the registry holds *now* for `subject`'s `version`, or else for `schema` under it,
    past every cache (a producer's re-check: `codec/part.py`). Raises the registry's error (404
    when it does not know the subject, version or schema)."""
    client = serializer._registry
    client = getattr(client, "_client", client)  # codec/serdes.py's Protobuf wrapper holds it
    if isinstance(client, MockSchemaRegistryClient):  # no cache in front of its store
        if version is not None:
            found = client.get_version(subject, version)
        else:
            assert schema is not None
            found = client.lookup_schema(subject, schema, serializer._normalize_schemas)
        return -1 if found.schema_id is None else found.schema_id
    quoted = urllib.parse.quote(subject, safe="")
    if version is not None:
        answer = rest_get(client, f"subjects/{quoted}/versions/{version}")
    else:
        assert schema is not None
        normalize = "true" if serializer._normalize_schemas else "false"
        answer = rest_post(client, f"subjects/{quoted}?normalize={normalize}", schema.to_dict())
    return int(answer["id"])


def forget_subject(serializer: Any, subject: str) -> None:
    """Drop what a serializer and its registry client remember of `subject` (its registered id,
    the latest versions), so that its next message registers or looks the schema up again."""
    with serializer._known_subjects_lock:
        serializer._known_subjects.discard(subject)
    forget_cached(serializer._registry, subject)


def forget_cached(client: Any, subject: str) -> None:
    """Drop a registry client's cached schemas, ids and latest versions of `subject`."""
    client = getattr(client, "_client", client)
    client._cache.remove_by_subject(subject)
    client.clear_latest_caches()


def encryption_transform(executor: Any, ctx: RuleContext) -> Any:
    """The per-rule half of a `FieldEncryptionExecutor`: its cryptor, KEK name and DEK expiry
    (confluent-kafka builds one per message)."""
    return executor.executor.new_transform(ctx)


def dek_expiry_days(transform: Any) -> int:
    """`encrypt.dek.expiry.days` of a rule (0: DEKs never rotate, and ciphertexts carry no version)."""
    return int(transform._dek_expiry_days)


def dek_key(transform: Any, ctx: RuleContext, version: int | None) -> tuple[bytes, int, int]:
    """(raw key, version, creation time in ms) of the DEK a rule encrypts or decrypts with, got or
    created as confluent-kafka's executor does (`version` -1: the latest, None: version 1). Raises
    its RuleError when the registry or KMS has none."""
    dek = transform._get_or_create_dek(ctx, version)
    key = dek.get_key_material_bytes()
    if key is None:
        raise ValueError("the DEK has no key material")
    return key, int(dek.version or 1), int(dek.ts or 0)


def encryption_now(transform: Any) -> int:
    """The executor's clock, in ms (tests give it another one): what DEK expiry is measured by."""
    return int(transform._executor.clock.now())


def dek_cipher(transform: Any, key: bytes) -> tuple[Any, Any]:
    """(encrypt, decrypt) of one DEK, `bytes -> bytes` with the rule's algorithm and no associated
    data: the Tink primitive confluent-kafka's `Cryptor` builds for every field, built once."""
    from tink import aead, daead
    from tink.proto import tink_pb2

    cryptor = transform._cryptor
    key_data = tink_pb2.KeyData(
        type_url=cryptor.key_template.type_url, value=key, key_material_type=tink_pb2.KeyData.SYMMETRIC
    )
    aad = cryptor.EMPTY_AAD
    if cryptor.is_deterministic:
        siv = cryptor.registry.primitive(key_data, daead.DeterministicAead)
        return (
            lambda plaintext: siv.encrypt_deterministically(plaintext, aad),
            lambda ciphertext: siv.decrypt_deterministically(ciphertext, aad),
        )
    gcm = cryptor.registry.primitive(key_data, aead.Aead)
    return (lambda plaintext: gcm.encrypt(plaintext, aad), lambda ciphertext: gcm.decrypt(ciphertext, aad))


_kms_clients: dict[tuple[str, str], Any] = {}
_kms_clients_lock = threading.Lock()


def bind_kms_clients_to_their_config() -> None:
    """Makes every ENCRYPT executor in the process use a KMS client built from its own config.

    confluent-kafka's executors (as Confluent's Java and .NET ones) take a KEK's KMS client from
    Tink's process-global registry first, and register there the client they build from a rule
    executor's config: the first config to reach a KMS type served every executor after it. So a
    factory given no secret or credentials decrypted with another's (the queries of several Spark
    Connect sessions share the Python workers; two tenants may share a process), and a factory
    given its own secret wrapped its DEKs with the first one's key, where its own secret could never
    unwrap them. Patched once, for every executor of the process: a client per KEK URL and config,
    made by the KMS driver as confluent-kafka makes it, never from or into Tink's registry."""
    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import AeadWrapper

    if getattr(AeadWrapper._get_kms_client, "bound_to_config", False):
        return

    def _get_kms_client(self: Any, config: dict[str, Any], kek_url: str) -> Any:
        return kms_client(config, kek_url)

    _get_kms_client.bound_to_config = True  # type: ignore[attr-defined]
    AeadWrapper._get_kms_client = _get_kms_client  # type: ignore[method-assign]


def kms_client(config: dict[str, Any], kek_url: str) -> Any:
    """The KMS client for `kek_url` made from `config` (the executor's params and the KEK's KMS
    properties), once per distinct config; keyed by a digest, so no secret is kept twice."""
    from confluent_kafka.schema_registry.rules.encryption.kms_driver_registry import get_kms_driver

    digest = hashlib.sha256(repr(sorted((str(k), repr(v)) for k, v in config.items())).encode()).hexdigest()
    with _kms_clients_lock:
        client = _kms_clients.get((kek_url, digest))
        if client is None:
            client = _kms_clients[(kek_url, digest)] = get_kms_driver(kek_url).new_kms_client(config, kek_url)
        return client


def pinned_schema(serde: Any, subject: str, fmt: str | None) -> RegisteredSchema | None:
    """The version `use.schema.id` / `use.latest.*` selects (through the client's caches), or None."""
    found: RegisteredSchema | None = serde._get_reader_schema(subject, fmt)
    return found


def writer_schema(
    serde: Any, schema_type: str, id_bytes: bytes, subject: str | None, fmt: str | None
) -> Schema:
    """The schema a Confluent id (0x00 + id, or 0x01 + GUID, + Protobuf indexes) names."""
    schema_id = SchemaId(schema_type)
    schema_id.from_bytes(io.BytesIO(id_bytes))
    found: Schema = serde._get_writer_schema(schema_id, subject, fmt)
    return found


def message_indexes(path: list[int]) -> bytes:
    """Protobuf message indexes as a Confluent id carries them after the id (`[0]`: one zero byte)."""
    schema_id = SchemaId("PROTOBUF", 0, message_indexes=path)
    encoded: bytes = schema_id.id_to_bytes()
    return encoded[5:]


def migrations(serde: Any, subject: str, writer: Schema, reader: RegisteredSchema) -> list[Migration]:
    """The migration steps between the writer's and the reader's versions (empty: none run)."""
    steps: list[Migration] = serde._get_migrations(subject, writer, reader, None)
    return steps


def parsed(serde: Any, schema: Schema) -> Any:
    """The serde's parsed form of a registered schema (fastavro dict, (JSON, refs), (fd, pool))."""
    return serde._get_parsed_schema(schema)


def parse_avro(schema_str: str, named_schemas: dict[str, Any]) -> Any:
    """An Avro schema parsed as confluent-kafka's serdes parse a registered one (`parsed`): its
    referenced named types (`named_schemas`, by reference name, the references' own included) are
    written out at their first use, as fastavro's `load_schema` does, so the driver of a Spark
    query and its executors' deserializers see one parsed form."""
    return parse_schema_with_repo(schema_str, named_schemas)


def local_schema(serializer: Any) -> tuple[Schema | None, Any]:
    """A serializer's own (local) schema and its parsed form, as `parsed` gives it."""
    parsed_schema = getattr(serializer, "_parsed_schema", None)
    if hasattr(serializer, "_ref_registry"):  # JSON: the schema and its references' registry
        parsed_schema = (parsed_schema, serializer._ref_registry)
    return getattr(serializer, "_schema", None), parsed_schema


def expand_avro_schema(parsed_schema: Any) -> Any:
    """The parsed schema with named types written out, as confluent-kafka's field walk sees it."""
    return expand_schema(parsed_schema)


def avro_inline_tags(parsed_schema: Any) -> dict[str, set[str]]:
    """Tags declared in the Avro schema (`confluent:tags`), by field full name."""
    tags: dict[str, set[str]] = get_inline_tags(parsed_schema)
    return tags


def protobuf_schema_descriptor(serde: Any, schema: Schema, message_name: str) -> Any:
    """The descriptor of `message_name` in a registered Protobuf schema, as the serde parsed it
    (None if the schema has no such message)."""
    file_proto, pool = serde._get_parsed_schema(schema)
    return pool.FindFileByName(file_proto.name).message_types_by_name.get(message_name)


def protobuf_field(fd: Any) -> tuple[str, bool, bool, bool, set[str]]:
    """How confluent-kafka's field walk sees a Protobuf field: (type name, repeated, map, a message
    bound to CEL as one value (Decimal, Timestamp), its inline tags)."""
    leaf = fd.message_type is not None and is_cel_leaf_message(fd.message_type)
    return (
        protobuf_field_type(fd).name,
        bool(_is_repeated(fd)),
        bool(is_map_field(fd)),
        leaf,
        set(protobuf_field_tags(fd)),
    )


class _BoundedParsedSchemas(ParsedSchemaCache):
    """confluent-kafka's cache of parsed schemas, which keeps every schema a serde ever saw, with
    a bound: full, it drops the oldest (a later use parses it again)."""

    def __init__(self, size: int) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._size = size

    def set(self, schema: Schema, parsed_schema: Any) -> None:
        with self.lock:
            parsed = self.parsed_schemas
            if schema not in parsed:
                while len(parsed) >= self._size:
                    del parsed[next(iter(parsed))]
            parsed[schema] = parsed_schema


def bound_parsed_schemas(serde: Any, size: int) -> None:
    """Keep at most `size` parsed schemas in a serde (a consumer of many schema ids would
    otherwise hold all of them)."""
    if isinstance(getattr(serde, "_parsed_schemas", None), ParsedSchemaCache):
        serde._parsed_schemas = _BoundedParsedSchemas(size)


def rule_registry(serde: Any) -> Any:
    return serde._rule_registry


def validation_enabled(serde: Any) -> bool:
    """True when confluent-kafka's inline validation rules are switched on for this serde."""
    enabled: bool = serde._validation_enabled()
    return enabled


def rule_is_disabled(serde: Any, ctx: RuleContext) -> bool:
    """Disabled by the rule, a registry override, or a rule set enabled elsewhere (`enableAt`)."""
    return bool(serde._is_disabled(ctx, ctx.rule))


def on_success_action(serde: Any, ctx: RuleContext, mode: RuleMode) -> str:
    """The action a passing rule runs in `mode` (override, then the rule, WRITEREAD comma pairs)."""
    return action_name(serde, ctx.rule, mode, serde._get_on_success(ctx.rule), "NONE")


def avro_options(serde: Any) -> dict[str, Any]:
    """How an Avro serde calls fastavro: strictness on write, record names on read."""
    return {
        "strict": getattr(serde, "_strict", False),
        "strict_allow_default": getattr(serde, "_strict_allow_default", False),
        "return_record_name": getattr(serde, "_return_record_name", False),
    }


def to_dict(serde: Any) -> Any:
    return getattr(serde, "_to_dict", None)


def from_dict(serde: Any) -> Any:
    return getattr(serde, "_from_dict", None)


def json_functions(serde: Any) -> tuple[Any, Any, bool]:
    """A JSON serde's (encode, decode, validate): its `json.dumps`/`json.loads` and whether it
    validates values against the schema."""
    return getattr(serde, "_json_encode", None), getattr(serde, "_json_decode", None), bool(serde._validate)


def json_validator(serde: Any, schema: Schema, parsed_schema: Any, refs: Any) -> Any:
    """The serde's validator for a schema (built once, cached by the serde)."""
    return serde._get_validator(schema, parsed_schema, refs)


def protobuf_message_class(serde: Any) -> Any:
    return serde._msg_class


# -- outside the codec ---------------------------------------------------------------------------


def set_local_schema(serializer: Any, schema: Schema) -> None:
    """Make a serializer register `schema` instead of the one it derived (Protobuf: `.proto` text
    instead of confluent-kafka's base64 descriptor, see protobuf_text.py)."""
    serializer._schema = schema


def pin_schema_id(
    deserializer: Any, schema_id: int, subject: str | None = None, version: int | None = None
) -> None:
    """Read into this registered schema id, as `use.schema.id` does for serializers (confluent-kafka's
    deserializers take no such key, but read the attribute).

    With `subject` and `version`: into that version, rules included. A registry may give one id to
    versions that differ only in their rules (AxonOps does: a rule set added as a new version keeps
    the id), and the id alone then finds the first of them; so the version is looked up (one
    request) and is what the deserializer's `_get_reader_schema` answers for the subject, on the
    compiled and the reference path alike. (Keeping it in the client's cache was not enough: the
    lookup of a writer version with the same id, for migrations, put the other version back.)"""
    deserializer._use_schema_id = schema_id
    if subject is not None and version is not None:
        registry = deserializer._registry
        registered = registry.get_version(subject, version)
        if registered.schema_id == schema_id:
            registry._cache.set_registered_schema(registered.schema, registered)
            resolve = deserializer._get_reader_schema

            def reader_schema(name: str, fmt: str | None = None) -> Any:
                return registered if name == subject else resolve(name, fmt)

            deserializer._get_reader_schema = reader_schema


def rest_get(client: Any, path: str, query: dict[str, Any] | None = None) -> Any:
    """A GET on the registry past the client's caches (they key schemas by id, whatever the format)."""
    return client._rest_client.get(path, query)


def rest_post(client: Any, path: str, body: Any) -> Any:
    """A POST on the registry past the client's methods (for query parameters they do not send)."""
    return client._rest_client.post(path, body=body)


def protobuf_pool(serialized: Schema, client: Any, file_name: str) -> tuple[Any, Any]:
    """(descriptor pool, FileDescriptorProto) of a Protobuf schema in the registry's serialized form,
    with the well-known and Confluent types and its references loaded, as confluent-kafka does."""
    from google.protobuf.descriptor_pool import DescriptorPool

    pool = DescriptorPool()
    _init_pool(pool)
    _resolve_named_schema(serialized, client, pool)
    file_proto = _str_to_proto(file_name, serialized.schema_str or "")
    pool.Add(file_proto)
    return pool, file_proto


def to_plain_containers(value: Any) -> Any:
    """A CEL result's containers as plain lists and dicts, as confluent-kafka's executor returns them."""
    return _to_plain_containers(value)


class LazyCelExecutor(_ConfluentCelExecutor):
    """confluent-kafka's CEL executor, its cel-python environment built on first use.

    Its `__init__` builds `celpy.Environment` (`_env`), whose lark LALR parser takes about half a
    second the first time in a process: that was most of a Spark task's first read, and of every console
    command's, though the compiled engine needs cel-python only for what cel-cpp cannot run. This
    sets what that `__init__` sets but `_env`, and makes `_env` on first use."""

    def __init__(self) -> None:  # not super().__init__(): that is what builds the environment
        self._funcs = EXTRA_FUNCS
        self._cache = _CelCache()  # type: ignore[no-untyped-call]

    @functools.cached_property
    def _env(self) -> Any:  # type: ignore[override]  # an attribute there, made on first use here
        import celpy

        return celpy.Environment(runner_class=InterpretedRunner)


def validate_hostname(text: str) -> bool:
    """Confluent's `isHostname` CEL built-in, as confluent-kafka's executor implements it."""
    return bool(extra_func._validate_hostname(text))  # type: ignore[no-untyped-call]


# -- the serde methods codec/serdes.py changes -----------------------------------------------------


class SerdeHooks:
    """Mixed in before a confluent-kafka serde: its rule actions come from `rule_action`, and
    `rules_starting` / `rule_ran` / `action_done` see each rule the engine runs (rule metrics)."""

    def _get_rule_action(self, ctx: RuleContext, action_name: str) -> Any:  # BaseSerde's
        return self.rule_action(ctx, action_name)

    def rule_action(self, ctx: RuleContext, action_name: str) -> Any:
        """The action named by a rule's onSuccess / onFailure (default: confluent-kafka's)."""
        return super()._get_rule_action(ctx, action_name)  # type: ignore[misc]

    def _execute_rules_with_phase(  # BaseSerde's
        self,
        ser_ctx: SerializationContext,
        subject: str,
        rule_phase: Any,
        rule_mode: RuleMode,
        source: Schema | None,
        target: Schema | None,
        message: Any,
        inline_tags: Any,
        field_transformer: Any,
        original_message: Any = None,
    ) -> Any:
        domain = getattr(rule_phase, "value", rule_phase) == "DOMAIN"
        original = message if original_message is None else original_message
        with (
            self.domain_rules_of(ser_ctx, subject, rule_mode, target, inline_tags, field_transformer)
            if domain
            else _NO_SCOPE
        ):
            if domain and rule_mode == RuleMode.WRITE:
                message = self.referenced_rules(ser_ctx, rule_mode, target, message, original)
            self.rules_starting()
            result = super()._execute_rules_with_phase(  # type: ignore[misc]
                ser_ctx,
                subject,
                rule_phase,
                rule_mode,
                source,
                target,
                message,
                inline_tags,
                field_transformer,
                original_message,
            )
            if domain and rule_mode == RuleMode.READ:
                result = self.referenced_rules(ser_ctx, rule_mode, target, result, original)
            elif domain and rule_mode == RuleMode.WRITE:
                self.domain_rules_done(target, result)
        return result

    def domain_rules_of(
        self,
        ser_ctx: SerializationContext,
        subject: str,
        mode: RuleMode,
        target: Schema | None,
        inline_tags: Any,
        field_transformer: Any,
    ) -> contextlib.AbstractContextManager[None]:
        """Entered while the domain rules of `target` (the root, or a referenced part) run in
        `mode`, with what the engine needs to walk its values (tags, field transformer)."""
        return _NO_SCOPE

    def referenced_rules(
        self, ser_ctx: SerializationContext, mode: RuleMode, root: Schema | None, message: Any, original: Any
    ) -> Any:
        """`message` after the rules of the schemas `root` references ran on its parts (none here)."""
        return message

    def domain_rules_done(self, target: Schema | None, message: Any) -> None:
        """The WRITE domain rules of `target` gave `message`: for the root schema (the last call
        of a message), the value the serializer writes next."""

    def _run_action(  # BaseSerde's: called once for every rule the engine ran, passed or not
        self,
        ctx: RuleContext,
        rule_mode: RuleMode,
        rule: Rule,
        action: str | None,
        message: Any,
        ex: Exception | None,
        default_action: str,
    ) -> Any:
        self.rule_ran(ctx, lambda: action_name(self, rule, rule_mode, action, default_action), message, ex)
        try:
            return super()._run_action(  # type: ignore[misc]
                ctx, rule_mode, rule, action, message, ex, default_action
            )
        finally:
            self.action_done()

    def rules_starting(self) -> None:
        """The engine starts a phase of rules (domain, encoding, a migration)."""

    def rule_ran(
        self, ctx: RuleContext, action: Callable[[], str], message: Any, ex: Exception | None
    ) -> None:
        """The engine ran `ctx.rule`: `ex` is None when it passed (or a transform gave `message`
        None), a `RuleConditionError` when a condition did not hold, else what broke it;
        `action()` names the action that follows."""

    def action_done(self) -> None:
        """The action after a rule has run (or raised)."""


def dlq_redact_rule_types(action: Any) -> list[str]:
    """The rule types whose tagged fields a DLQ action redacts (`dlq.redact.rule.types`)."""
    return list(action._redact_rule_types)


def registry_client(serde: Any) -> Any:
    """The registry client a serde looks schemas up with."""
    return serde._registry


def rule_inputs(serde: Any, schema: Schema, value: Any) -> tuple[Any, Any]:
    """(inline tags, field transformer) the rule engine needs to run `schema`'s rules on `value`,
    a value of it, as the serde builds them for its own schema."""
    from confluent_kafka.schema_registry.common import avro as avro_common
    from confluent_kafka.schema_registry.common import json_schema as json_common
    from referencing import Resource

    if schema.schema_type in (None, "AVRO"):
        parsed = serde._get_parsed_schema(schema)
        expanded = expand_schema(parsed)

        def avro_transformer(ctx: RuleContext, field_transform: Any, message: Any) -> Any:
            return avro_common.transform(ctx, expanded, message, field_transform)

        return get_inline_tags(parsed), avro_transformer
    if schema.schema_type == "JSON":
        parsed, references = serde._get_parsed_schema(schema)
        resolver = references.resolver_with_root(
            Resource.from_contents(parsed, default_specification=json_common.DEFAULT_SPEC)
        )

        def json_transformer(ctx: RuleContext, field_transform: Any, message: Any) -> Any:
            return json_common.transform(ctx, parsed, references, resolver, "$", message, field_transform)

        return None, json_transformer
    from confluent_kafka.schema_registry.common import protobuf as protobuf_common

    descriptor = value.DESCRIPTOR  # Protobuf: the part's own message type

    def protobuf_transformer(ctx: RuleContext, field_transform: Any, message: Any) -> Any:
        return protobuf_common.transform(ctx, descriptor, message, field_transform)

    return None, protobuf_transformer


def run_domain_rules(
    serde: Any,
    ser_ctx: SerializationContext,
    subject: str,
    mode: RuleMode,
    schema: Schema,
    message: Any,
    inline_tags: Any,
    field_transformer: Any,
    original: Any,
) -> Any:
    """`schema`'s domain rules on `message`, as the serde runs its own (through `SerdeHooks`);
    `original`: the whole message a DLQ copy carries."""
    from confluent_kafka.schema_registry.common.schema_registry_client import RulePhase

    return serde._execute_rules_with_phase(
        ser_ctx,
        subject,
        RulePhase.DOMAIN,
        mode,
        None,
        schema,
        message,
        inline_tags,
        field_transformer,
        original,
    )


def action_name(serde: Any, rule: Rule, mode: RuleMode, action: str | None, default: str) -> str:
    """The action the rule engine runs for `rule` in `mode` after `action` (its onSuccess or
    onFailure, override applied): a WRITEREAD comma pair split, `default` when none is named."""
    name: str | None = serde._get_rule_action_name(rule, mode, action)
    return name or default


class SerializerHooks(SerdeHooks):
    """Mixed in before a confluent-kafka serializer: its writer schema comes from `writer_for`."""

    def _get_reader_schema(self, subject: str, fmt: str | None = None) -> RegisteredSchema | None:
        pinned: RegisteredSchema | None = super()._get_reader_schema(subject, fmt)  # type: ignore[misc]
        return self.writer_for(subject, pinned)

    def writer_for(self, subject: str, pinned: RegisteredSchema | None) -> RegisteredSchema | None:
        """The registered version a message of `subject` is written with; `pinned`: the version
        `use.schema.id` / `use.latest.*` select (None: the local schema, as confluent-kafka)."""
        return pinned


class JsonValidatorHooks:
    """Mixed in before a confluent-kafka JSON serde: the validator it builds for a schema is
    replaced, in the serde's own cache, by what `validator_for` makes of it (an instance of
    `made`), so that each schema's is made once and bounded as the serde bounds its cache."""

    made: type | None = None

    def _get_validator(self, schema: Schema, parsed_schema: Any, registry: Any) -> Any:
        validator = super()._get_validator(schema, parsed_schema, registry)  # type: ignore[misc]
        if self.made is None or isinstance(validator, self.made):
            return validator
        made = self.validator_for(parsed_schema, registry, validator)
        with self._validators_lock:  # type: ignore[attr-defined]
            self._validators[schema] = made  # type: ignore[attr-defined]
        return made

    def validator_for(self, parsed_schema: Any, references: Any, reference: Any) -> Any:
        return reference


class DeserializerHooks(SerdeHooks):
    """Mixed in before a confluent-kafka deserializer: `writer_found` sees each writer schema."""

    def _get_writer_schema(
        self, schema_id: Any, subject: str | None = None, fmt: str | None = None
    ) -> Schema:
        schema: Schema = super()._get_writer_schema(schema_id, subject, fmt)  # type: ignore[misc]
        self.writer_found(schema_id.id, schema)
        return schema

    def writer_found(self, schema_id: int | None, schema: Schema) -> None:
        """A writer schema the deserializer resolved (by numeric id, or None for a GUID)."""


def serializer_settings(serializer: Any) -> tuple[Any, bool, bool]:
    """(registry client, `auto.register.schemas`, `normalize.schemas`) of a serializer."""
    return serializer._registry, serializer._auto_register, serializer._normalize_schemas


def replace_registry(serde: Any, wrap: Any) -> Any:
    """Give a serde `wrap(its registry client)` as its registry client; returns it."""
    serde._registry = wrapped = wrap(serde._registry)
    return wrapped
