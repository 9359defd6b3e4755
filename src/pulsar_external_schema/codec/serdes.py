"""confluent-kafka's serializers and deserializers, with data contracts that always take effect.

Three changes to confluent-kafka's serdes, through methods its serdes define for this:

* **Rules on write whenever the registered schema carries them.** confluent-kafka's serializers
  run rules only when a version is pinned (`use.schema.id`, `use.latest.with.metadata`,
  `use.latest.version`); with `auto.register.schemas` they write with the local schema and skip
  the rule set the registry holds for it. Ours resolve the writer schema in this order:

  1. `use.schema.id`, 2. `use.latest.with.metadata`, 3. `use.latest.version` (as confluent-kafka);
  4. otherwise the local schema as registered under the subject (registered when
     `auto.register.schemas` is true, else looked up), fetched back from the registry by id and
     subject: if it carries domain or encoding rules, including ones the registry added from
     `defaultRuleSet` / `overrideRuleSet` or inherited from the previous version, they run on
     every message. Resolved once per subject for the serializer's life (restart, or pin with
     `use.latest.*` and `cache.latest.ttl.sec`, to pick up a new rule set).

* **The caller's value is never changed.** confluent-kafka's field transforms (CEL_FIELD,
  ENCRYPT) rewrite the value in place, so a retried send would encrypt a field twice. Ours work on
  a copy whenever the writer schema has WRITE transforms (and on a subject's first message).

* **ERROR says what failed.** The ERROR action raises `RuleViolationError` naming the rule, its
  mode, the topic, subject, schema id and the cause, instead of an empty `SerializationError`.

And two additions beyond Confluent, through `_confluent.SerdeHooks`: with rule metrics on
(`metrics/`), each rule the engine runs is counted with its outcome, action and evaluation time;
and the rules of referenced schemas run on the parts of a message of their type where a root
schema opts in (`referenced.py`).
"""

from __future__ import annotations

import contextlib
import copy
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.schema_registry.serde import NoneAction, RuleAction, RuleConditionError, RuleContext
from confluent_kafka.serialization import SerializationContext

from .. import _confluent, metrics
from .. import schema_id as ids
from ..errors import ExternalSchemaError
from ..rules.actions import ErrorAction, describe_rule, failure_cause
from ..rules.context import MessageContext
from ..rules.referenced import PATH, ROOT, ReferencedRules, Scope
from .json_validation import JsonValidator, fast_validator
from .plans import PLAN_CACHE_SIZE
from .value_checks import (
    Problem,
    avro_check,
    explain_avro,
    explain_json,
    json_dumps,
    json_loads,
    refusal,
)

_ERROR = ErrorAction()
_NONE = NoneAction()


@contextlib.contextmanager
def _scoped(scope: Scope) -> Iterator[None]:
    """The root schema's scope (`referenced.ROOT`) while its domain rules, and its parts', run."""
    token = ROOT.set(scope)
    try:
        yield
    finally:
        ROOT.reset(token)


#: When the rule being run started, per thread: the engine's phase start, then each action's end.
_rule_clock = threading.local()


def transforms_on_write(schema: Schema | None) -> bool:
    """True when WRITE rules may rewrite the value: domain TRANSFORM rules for WRITE or WRITEREAD."""
    rule_set = schema.rule_set if schema is not None else None
    return bool(
        rule_set is not None
        and any(
            rule.kind is not None
            and rule.kind.value == "TRANSFORM"
            and rule.mode is not None
            and rule.mode.value in ("WRITE", "WRITEREAD")
            for rule in rule_set.domain_rules or []
        )
    )


def has_rules(schema: Schema | None) -> bool:
    """True when a write would run something: domain or encoding rules."""
    rule_set = schema.rule_set if schema is not None else None
    return bool(rule_set is not None and (rule_set.domain_rules or rule_set.encoding_rules))


def _is_encoding_rule(ctx: RuleContext) -> bool:
    rule_set = ctx.target.rule_set if ctx.target is not None else None
    return rule_set is not None and any(rule is ctx.rule for rule in rule_set.encoding_rules or [])


class ContractSerde(_confluent.SerdeHooks):
    """ERROR and NONE for every serde; other actions come from the factory's rule registry; the
    rules of referenced schemas run where `referenced` says (`referenced.py`)."""

    referenced: ReferencedRules | None = None

    def referenced_rules(
        self, ser_ctx: SerializationContext, mode: RuleMode, root: Schema | None, message: Any, original: Any
    ) -> Any:
        if self.referenced is None:
            return message
        return self.referenced.run(self, ser_ctx, mode, root, message, original)

    def domain_rules_of(
        self,
        ser_ctx: SerializationContext,
        subject: str,
        mode: RuleMode,
        target: Schema | None,
        inline_tags: Any,
        field_transformer: Any,
    ) -> contextlib.AbstractContextManager[None]:
        if self.referenced is None or target is None or not target.references:
            # nothing referenced: the failing rule's own schema is the message's (what
            # confluent-kafka's DLQ action and `failure_cause` use)
            return super().domain_rules_of(ser_ctx, subject, mode, target, inline_tags, field_transformer)
        if PATH.get() is not None or ROOT.get() is not None:  # a part's rules: the root's scope holds
            return super().domain_rules_of(ser_ctx, subject, mode, target, inline_tags, field_transformer)
        return _scoped(Scope(self, ser_ctx, subject, mode, target, inline_tags, field_transformer))

    def rule_action(self, ctx: RuleContext, action_name: str) -> RuleAction | None:
        if action_name == "ERROR":
            return _ERROR
        if action_name == "NONE":
            return _NONE
        action: RuleAction | None = _confluent.rule_registry(self).get_action(action_name)
        return action

    def rules_starting(self) -> None:
        store = metrics.recording()
        if store is not None:
            _rule_clock.start = store.clock()

    def rule_ran(
        self, ctx: RuleContext, action: Callable[[], str], message: Any, ex: Exception | None
    ) -> None:
        if ex is not None and ctx.rule_mode == RuleMode.READ and _is_encoding_rule(ctx):
            context = ctx.ser_ctx.headers if ctx.ser_ctx is not None else None
            name = action()
            if isinstance(context, MessageContext) and name == "NONE":
                # the payload goes on as it was: what fails to decode it next should say why
                context.encoding_failure = (
                    f"{describe_rule(ctx)} failed before it ({failure_cause(ctx, message, ex)}), and its "
                    "action NONE passed the payload on as it was"
                )
        store = metrics.recording()
        if store is None:
            return
        now = store.clock()
        seconds = now - getattr(_rule_clock, "start", now)
        if ex is None:
            outcome = metrics.FAILED if message is None else metrics.PASSED
        else:
            outcome = metrics.FAILED if isinstance(ex, RuleConditionError) else metrics.ERROR
        mode = ctx.rule_mode
        topic = ctx.ser_ctx.topic if ctx.ser_ctx is not None else ""
        key = (
            ctx.rule.name or "",
            ctx.subject or "",
            getattr(mode, "value", str(mode)),
            topic or "",
            outcome,
            action(),
        )
        store.record(key, seconds)

    def action_done(self) -> None:
        store = metrics.recording()
        if store is not None:
            _rule_clock.start = store.clock()


class _ContractSerializer(ContractSerde, _confluent.SerializerHooks):
    """Serializer side: the writer schema resolution above, and the schema id for rule errors."""

    _format: str | None = None  # the format confluent-kafka asks the registry for (Protobuf: serialized)

    def _init_contract(self, rule_set_client: Any) -> None:
        self._rule_set_client = rule_set_client  # a client whose cache holds registry answers only
        self._registered: dict[str, RegisteredSchema | None] = {}
        self._registered_lock = threading.Lock()
        self._call = threading.local()
        # subject -> (its writer schema, whether that rewrites values, its Confluent id bytes);
        # re-checked when the writer changes
        self._transforming: dict[str, tuple[RegisteredSchema | None, bool, bytes | None]] = {}
        self._plain_topics: set[str] = set()  # topics whose writer schema has no WRITE transform
        self._value_checks: dict[int, tuple[Any, Callable[[Any], None] | None]] = {}

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        headers = ctx.headers if ctx is not None else None
        call = self._call
        call.context = headers if isinstance(headers, MessageContext) else None
        call.written = None
        if obj is not None and (ctx is None or ctx.topic not in self._plain_topics):
            obj = copy.deepcopy(obj)
        try:
            result: bytes | None = super().__call__(obj, ctx)  # type: ignore[misc]
            if result is not None and obj is not None:
                self._check_written(obj, ctx)
            return result
        except ExternalSchemaError:
            raise
        except Exception:
            problem = self._written_problem(obj, ctx) if obj is not None else None
            if problem is None:
                raise
        finally:
            call.context = None
            call.written = None
        # Raised outside the handler, so that no chained error carries the library's text, which
        # may show the value: the field's path says where.
        raise refusal(problem)

    def domain_rules_done(self, target: Schema | None, message: Any) -> None:
        self._call.written = (target, message)

    def _written(self, obj: Any, ctx: SerializationContext | None) -> tuple[Schema | None, Any]:
        """(the schema, the value) the serializer wrote or tried to write: what the domain rules
        gave (and their schema), or, where none ran, the value itself with the local schema."""
        written: tuple[Schema | None, Any] | None = getattr(self._call, "written", None)
        if written is not None:
            return written
        to_dict = _confluent.to_dict(self)
        return None, (obj if to_dict is None else to_dict(obj, ctx))

    def _check_written(self, obj: Any, ctx: SerializationContext | None) -> None:
        """Refuse the bytes just written if their value is outside the schema's types (a value
        fastavro would have changed): confluent-kafka's serializer writes without checking. The
        compiled path checks the same before it writes (`codec/value_checks.py`)."""
        if self._checks_values:
            schema, value = self._written(obj, ctx)
            check = self._value_check(schema)
            if check is not None:
                check(value)

    def _written_problem(self, obj: Any, ctx: SerializationContext | None) -> Problem | None:
        """Why the value failed to serialize, if it is outside the schema's types."""
        try:
            schema, value = self._written(obj, ctx)
            return self.value_problem(schema, value)
        except Exception:  # the value cannot even be walked: the serializer's own error stands
            return None

    #: Whether `value_check` may find something the format library wrote without complaint.
    _checks_values = False

    def _value_check(self, schema: Schema | None) -> Callable[[Any], None] | None:
        parsed = self._parsed(schema)
        key = id(parsed)
        found = self._value_checks.get(key)
        if found is None or found[0] is not parsed:
            if len(self._value_checks) >= PLAN_CACHE_SIZE:
                self._value_checks.clear()
            found = self._value_checks[key] = (parsed, self.value_check(parsed))
        return found[1]

    def _parsed(self, schema: Schema | None) -> Any:
        return _confluent.local_schema(self)[1] if schema is None else _confluent.parsed(self, schema)

    def value_check(self, parsed: Any) -> Callable[[Any], None] | None:
        """A check of values against `parsed` (this format's parsed schema), or None."""
        return None

    def value_problem(self, schema: Schema | None, value: Any) -> Problem | None:
        """Where `value` leaves the types of `schema` (None: the local schema), if it does."""
        return None

    def writer_for(self, subject: str, pinned: RegisteredSchema | None) -> RegisteredSchema | None:
        writer = pinned if pinned is not None else self._registered_with_rules(subject)
        known = self._transforming.get(subject)
        if known is None or known[0] is not writer:
            id_bytes = ids.confluent_id(writer.schema_id) if writer and writer.schema_id is not None else None
            schema = writer.schema if writer else None
            parts = self.referenced is not None and self.referenced.apply_to(
                schema, RuleMode.WRITE, self, True
            )
            known = (writer, transforms_on_write(schema) or parts, id_bytes)
            self._transforming[subject] = known
        context: MessageContext | None = getattr(self._call, "context", None)
        if context is not None and context.topic:
            if known[1]:
                self._plain_topics.discard(context.topic)
            else:
                self._plain_topics.add(context.topic)
        if context is not None:
            context.writer = (subject, writer)
            if known[2] is not None:
                context.schema_id = known[2]
        return writer

    def forget(self, subject: str) -> None:
        """Forget `subject`'s writer and id: its next message resolves them from the registry
        again (a producer's re-check found that the registry no longer holds its id)."""
        with self._registered_lock:
            self._registered.pop(subject, None)
        self._transforming.pop(subject, None)
        _confluent.forget_subject(self, subject)
        _confluent.forget_cached(self._rule_set_client, subject)

    def _registered_with_rules(self, subject: str) -> RegisteredSchema | None:
        """The registered version of the local schema if it carries rules, else None (cached)."""
        try:
            return self._registered[subject]
        except KeyError:
            pass
        with self._registered_lock:
            if subject not in self._registered:
                self._registered[subject] = self._look_up_registered(subject)
            return self._registered[subject]

    def _look_up_registered(self, subject: str) -> RegisteredSchema | None:
        schema = _confluent.local_schema(self)[0]
        if schema is None:
            return None
        registry, auto_register, normalize = _confluent.serializer_settings(self)
        if auto_register:
            found = registry.register_schema_full_response(subject, schema, normalize_schemas=normalize)
        else:
            found = registry.lookup_schema(subject, schema, normalize_schemas=normalize)
        # The registry's own copy, by id *and subject*: rule sets belong to a subject's versions.
        stored: Schema = self._rule_set_client.get_schema(found.schema_id, subject, self._format)
        parts = self.referenced is not None and self.referenced.apply_to(stored, RuleMode.WRITE, self)
        if not has_rules(stored) and not parts:
            return None
        return RegisteredSchema(
            schema_id=found.schema_id, guid=found.guid, subject=subject, version=found.version, schema=stored
        )


class ContractAvroSerializer(_ContractSerializer, AvroSerializer):
    """fastavro writes 2.5 into an int as 2: every value written is checked against the schema."""

    _checks_values = True

    def __init__(self, *args: Any, rule_set_client: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_contract(rule_set_client)

    def value_check(self, parsed: Any) -> Callable[[Any], None] | None:
        return avro_check(parsed)

    def value_problem(self, schema: Schema | None, value: Any) -> Problem | None:
        return explain_avro(self._parsed(schema), value)


class _JsonValidation(_confluent.JsonValidatorHooks):
    """Values validated by jsonschema-rs, explained by jsonschema (`codec/json_validation.py`)."""

    made = JsonValidator

    def validator_for(self, parsed_schema: Any, references: Any, reference: Any) -> Any:
        return fast_validator(parsed_schema, references, reference)


class ContractJSONSerializer(_JsonValidation, _ContractSerializer, JSONSerializer):
    """Written with `json_dumps` (`codec/value_checks.py`), which refuses NaN and Infinity."""

    def __init__(self, *args: Any, rule_set_client: Any, **kwargs: Any) -> None:
        kwargs.setdefault("json_encode", json_dumps)
        super().__init__(*args, **kwargs)
        self._init_contract(rule_set_client)

    def value_problem(self, schema: Schema | None, value: Any) -> Problem | None:
        return explain_json(value)


class ContractProtobufSerializer(_ContractSerializer, ProtobufSerializer):
    _format = "serialized"

    def __init__(self, *args: Any, rule_set_client: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_contract(rule_set_client)


class ContractAvroDeserializer(ContractSerde, AvroDeserializer):
    pass


class ContractJSONDeserializer(_JsonValidation, ContractSerde, JSONDeserializer):
    """Read with `json_loads` (`codec/value_checks.py`), which keeps integers beyond 64 bits exact."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("json_decode", json_loads)
        super().__init__(*args, **kwargs)


class ContractProtobufDeserializer(ContractSerde, _confluent.DeserializerHooks, ProtobufDeserializer):
    """Reads the serialized descriptor of the writer schema, but looks it up by its `.proto` text.

    confluent-kafka's Protobuf deserializer fetches schemas in the serialized (base64 descriptor)
    form, and, for a consumer pinned to a version (`use.latest.*`), looks the writer schema up in
    the subject in that form to find the migrations between the two versions. A registry compiles
    what it is asked to look up, and AxonOps' compiles `.proto` text only, so no pinned Protobuf
    consumer could read. The lookup goes by the registry's own text instead (see `_TextLookups`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lookups: _TextLookups = _confluent.replace_registry(self, _TextLookups)

    def writer_found(self, schema_id: int | None, schema: Schema) -> None:
        if schema_id is not None and schema.schema_str is not None:
            self._lookups.remember(schema.schema_str, schema_id)


class _TextLookups:
    """A registry client whose lookups of serialized Protobuf writer schemas go by `.proto` text.

    Past the client's cache, on purpose: it keys schemas by id whatever their format, and a lookup
    stores the schema it was given under the id found, so a text copy there would be handed to the
    next message's parser as the serialized form.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._ids: dict[str, int] = {}  # serialized writer schema -> its id
        self._found: dict[tuple[str, str, bool], RegisteredSchema] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def remember(self, serialized: str, schema_id: int) -> None:
        self._ids[serialized] = schema_id

    def lookup_schema(
        self,
        subject_name: str,
        schema: Schema,
        normalize_schemas: bool = False,
        deleted: bool = False,
        **kw: Any,
    ) -> RegisteredSchema:
        schema_id = self._ids.get(schema.schema_str or "")
        if schema_id is None:
            found: RegisteredSchema = self._client.lookup_schema(
                subject_name, schema, normalize_schemas=normalize_schemas, deleted=deleted, **kw
            )
            return found
        key = (subject_name, schema.schema_str or "", deleted)
        with self._lock:
            cached = self._found.get(key)
        if cached is not None:
            return cached
        path = f"schemas/ids/{schema_id}"
        text = Schema.from_dict(_confluent.rest_get(self._client, path, {"subject": subject_name}))
        query = f"normalize={normalize_schemas}&deleted={deleted}"
        response = _confluent.rest_post(
            self._client, f"subjects/{urllib.parse.quote(subject_name, safe='')}?{query}", text.to_dict()
        )
        found = RegisteredSchema.from_dict(response)
        with self._lock:
            self._found[key] = found
        return found
