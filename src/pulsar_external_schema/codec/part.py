"""The per-message path of one part (a value, or a key) of an external schema.

    codec.encode(topic, value, context)       -> (payload, schema id), or FALLBACK: the reference path
    codec.learn(topic, context)               after the reference path encoded a message
    codec.decode(topic, payload, id, context) -> value, or FALLBACK: the reference path
    codec.direct(topic, id)                   one plan's `decode` as one call, kept by the caller
                                              (the extension's reader, or `_read` in a closure)
    codec.direct_writer(topic)                with the native extension: one plan's `encode` in
                                              one native call, kept by the caller

This module is the per-message path in Python, and the one place it is decided; the extension's
`DirectWriter` and `DirectReader` (native/src/direct.rs) run a plan this module compiled, with
the same answers (tests/unit/test_native_direct.py), and FALLBACK is the one answer, of every
one of them, for "not here: the reference path decides".

`context` (the message's properties, for a replayed DLQ copy's `__rule.name`) may be None: the
caller then knows the message has none, and the path builds no per-message object at all.

Per message it runs the plan's compiled rule steps and the format library's call, and nothing
else. Whatever it does not do itself (a rule that fails, a rule set that does not compile, a
malformed value or payload) it hands back to the reference path, which runs the message again
and decides its outcome: so the errors, rule actions and DLQ copies are confluent-kafka's serdes'
(with this package's actions), and the two paths cannot disagree on a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any

from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.schema_registry.serde import clear_original_key, set_original_key
from confluent_kafka.serialization import MessageField, SerializationContext

from .. import _confluent, _native, metrics
from .. import schema_id as ids
from .._signal import InternalSignal
from ..deadletter import RULE_NAME
from ..registry import failure_kind
from ..rules.cel import CompiledCondition, ConditionNotMet
from ..rules.context import MessageContext
from . import avro, json, protobuf
from .limits import DEFAULT_LIMITS, DecodeLimits, Guard, protobuf_guard
from .plans import (
    PLAN_CACHE_SIZE,
    REFUSAL_TTL,
    Columnar,
    ColumnarWrite,
    PlanCache,
    ReadPlan,
    Reference,
    Refused,
    Stamp,
    WritePlan,
    expiry,
    remaining,
)
from .recheck import SchemaIdRecheck
from .steps import Steps, compile_migrations, compile_rules, encoding_rule

log = logging.getLogger(__name__)

#: The answer of `encode`, `decode` and a kept reader where the message takes the reference path
#: (a decoded value may be None).
FALLBACK: Any = object()


class ForeignSchema(InternalSignal):
    """The message's schema id names a schema this part cannot read: of another format, or not
    registered under the topic's subject (the reason says which)."""


class PayloadError(InternalSignal):
    """The format library refused a payload, with the error the reference path would raise."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


FORMATS: dict[str, ModuleType] = {"AVRO": avro, "JSON": json, "PROTOBUF": protobuf}

#: A kept writer (the extension's `DirectWriter`; None: nothing kept) and its plan's expiry (0: never).
KeptWriter = tuple[Callable[[Any], tuple[bytes, bytes] | None] | None, float]

#: Non-empty once any key part exists in this process. confluent-kafka's serdes hand a message's
#: key to the value's DLQ action through a context variable, which the value serde clears when
#: done; with no key part anywhere it is never set, and the per-message clearing is skipped. A
#: list, so that the extension's kept writers see it change (`DirectWriter`'s `key_parts`).
_key_parts: list[bool] = []


def _note_key_part() -> None:
    if not _key_parts:
        _key_parts.append(True)


class PartCodec:
    """Plans and the per-message path for one serializer/deserializer pair (`None`: that side
    always takes the reference path, e.g. the JSON evolution wrappers)."""

    def __init__(
        self,
        schema_type: str,
        serializer: Any,
        deserializer: Any,
        field: MessageField,
        *,
        prefix: bool,
        latest_ttl: float | None = None,
        limits: DecodeLimits = DEFAULT_LIMITS,
        check_subject: bool = True,
        recheck: float | None = None,
    ) -> None:
        self._format = FORMATS[schema_type]
        self._type = schema_type
        self._serializer = serializer
        self._deserializer = deserializer
        self._field = field
        self._key = field == MessageField.KEY
        if self._key:
            _note_key_part()
        self._prefix = prefix
        self._ttl = latest_ttl
        self._recheck = recheck
        self._write_ttl = min((t for t in (latest_ttl, recheck) if t), default=None)
        self._stamps: dict[str, Stamp] = {}
        self.recheck = SchemaIdRecheck(serializer, schema_type, self._stale)
        self.writers: dict[str, KeptWriter] = {}
        """topic -> the writer `keep_writer` kept and its plan's expiry, for the caller's everyday
        message (`ExternalSchema`'s `Encoder`). A topic's goes when the re-check drops its plan,
        so a writer needs no check of its own for that."""
        self._native = _native.extension()
        """The extension, whose `DirectWriter` and `DirectReader` the caller keeps; None: no
        writer is kept (every message is `encode` here) and a kept reader is `_read` itself."""
        self._limits = limits
        self._check_subject = check_subject
        self._prefixed_protobuf_guard = protobuf_guard(limits)
        for serde in (serializer, deserializer):
            _confluent.bound_parsed_schemas(serde, PLAN_CACHE_SIZE)
        self._to_dict = _confluent.to_dict(serializer) if serializer is not None else None
        self._from_dict = _confluent.from_dict(deserializer) if deserializer is not None else None
        self.writes: PlanCache[str, WritePlan | Reference] = PlanCache()
        self.reads: PlanCache[tuple[str, bytes], ReadPlan | Reference | Refused] = PlanCache()
        self._said: set[tuple[str, str]] = set()

    @property
    def keeps_writers(self) -> bool:
        """Whether `direct_writer` gives writers to keep (the extension's). `direct` gives a reader
        on both paths: the extension's, or `_read` itself behind a closure."""
        return self._native is not None

    # -- encode ---------------------------------------------------------------------------------

    def encode(self, topic: str, value: Any, context: MessageContext | None) -> Any:
        """(payload, Confluent id); the payload is id-prefixed in prefix mode. FALLBACK: the caller
        takes the reference path (and then calls `learn`)."""
        plan = self.writes.get(topic)
        if type(plan) is not WritePlan:
            return FALLBACK
        if plan.rules and context is not None and RULE_NAME in context:
            return FALLBACK  # a replayed DLQ copy skips the rule it names: the reference decides
        try:
            if self._to_dict is not None:
                value = self._to_dict(value, SerializationContext(topic, self._field, context))  # type: ignore[arg-type]
            for step in plan.steps:
                value = step(value)
            payload = plan.write(value)
        except Exception:
            return FALLBACK
        if self._key:
            set_original_key(value)  # as the reference serializer: a value's DLQ copy keeps its key
        elif _key_parts:
            clear_original_key()  # type: ignore[no-untyped-call]
        if context is not None:
            context.schema_id = plan.schema_id
        return (plan.prefix + payload if plan.prefix else payload), plan.schema_id

    def keep_writer(self, topic: str) -> None:
        """Keep `direct_writer(topic)` in `writers` (bounded as plans are); not where the plan
        changed meanwhile (the re-check's thread dropped it: `_stale`), nor without the extension."""
        if self._native is None:
            return
        if len(self.writers) >= PLAN_CACHE_SIZE:
            self.writers.clear()
        plan = self.writes.get(topic)
        self.writers[topic] = self.direct_writer(topic)
        if self.writes.get(topic) is not plan:
            self.writers.pop(topic, None)

    def direct_writer(self, topic: str) -> KeptWriter:
        """(`value -> (payload, id)`, or None where the long way must decide; the plan's expiry)
        for messages of `topic` with no properties the rules read: what `encode` does, in one
        native call (the extension's `DirectWriter`), for the caller to keep until the expiry (0:
        never). None without the extension, where the topic has no compiled plan, and for a key
        part (a key/value schema encodes its two parts through `encode`)."""
        plan = self.writes.get(topic)
        if type(plan) is not WritePlan or self._key or self._native is None:
            return None, 0.0
        functions = (*plan.steps, plan.write)
        if self._to_dict is not None:  # a message without properties: one context for them all
            functions = (_bound(self._to_dict, SerializationContext(topic, self._field)), *functions)
        writer = self._native.DirectWriter(
            _pipeline(functions),
            prefix=plan.prefix,
            schema_id=plan.schema_id,
            expires_in=remaining(plan.expires),
            key_parts=_key_parts,
            clear_original_key=clear_original_key,
        )
        return writer, plan.expires

    def columnar_writer(self, topic: str) -> ColumnarWrite | None:
        """How a columnar encoder writes values of `topic` as `encode` does (`plans.ColumnarWrite`);
        None before the topic's plan is learnt (its first message), and where none can."""
        plan = self.writes.get(topic)
        return plan.columnar if type(plan) is WritePlan else None

    def learn(self, topic: str, context: MessageContext) -> None:
        """After the reference path encoded a message of `topic`: its writer (subject, schema,
        id) make the topic's plan, unless it has a valid one."""
        if self._serializer is None or context.writer is None or context.schema_id is None:
            return
        if self.writes.get(topic) is not None:
            return
        subject, registered = context.writer
        schema = registered.schema if registered is not None else None
        stamp = Stamp(subject, context.schema_id, registered.version if registered is not None else None)
        with self.writes.building:
            if self.writes.get(topic) is not None:
                return  # another thread learnt it meanwhile
            # The plan expired, and the serializer still stamps this id: ask the registry again.
            due = self._recheck is not None and self._stamps.get(topic) == stamp
            if len(self._stamps) >= PLAN_CACHE_SIZE:
                self._stamps.clear()
            self._stamps[topic] = stamp
            plan: WritePlan | Reference
            reason = encoding_rule(schema, RuleMode.WRITE)
            if reason is None and _confluent.validation_enabled(self._serializer):
                reason = "confluent-kafka's inline validation rules are on"
            steps = reason or compile_rules(
                self._serializer,
                SerializationContext(topic, self._field),
                subject,
                RuleMode.WRITE,
                schema,
                self._format.pool(self._serializer),
                self._format.field_walk(self._serializer, schema),
            )
            if isinstance(steps, str):
                plan = self._reference(subject, steps, expiry(self._write_ttl))
            else:
                rules = bool(steps)
                compiled = steps
                steps, write = _metered_write(steps, self._format.writer(self._serializer, schema))
                prefix = context.schema_id if self._prefix else b""
                columnar = None
                conditions = _conditions(steps) if steps is compiled else None  # (metered: None)
                if conditions is not None and self._to_dict is None and not self._key:
                    found = self._format.columnar_writer(self._serializer, schema)
                    if found is not None:
                        text, message = found
                        columnar = ColumnarWrite(
                            text, context.schema_id, prefix, conditions, self._format.SCHEMA_TYPE, message
                        )
                plan = WritePlan(
                    subject, context.schema_id, prefix, steps, write, expiry(self._write_ttl), rules, columnar
                )
            self.writes.put(topic, plan)
        if due:
            self.recheck.later(stamp)  # after the plan is in place: a stale id drops it

    def _stale(self, subject: str) -> None:
        """The re-check found `subject`'s id taken (`recheck.py`): its plans go, and the writers
        kept for them."""
        for topic, stamped in list(self._stamps.items()):
            if stamped.subject == subject:
                self.writes.drop(topic)
                self.writers.pop(topic, None)

    def join_checks(self, timeout: float) -> bool:
        """Wait for the re-checks under way (tests, and a producer that closes); True if none is left."""
        return self.recheck.join(timeout)

    # -- decode ---------------------------------------------------------------------------------

    def decode(
        self,
        topic: str,
        payload: bytes,
        id_bytes: bytes,
        context: MessageContext | None,
        *,
        prefixed: bool = False,
        build: bool = True,
    ) -> Any:
        """The decoded value of `payload` (the bytes after any id prefix); FALLBACK: the caller
        takes the reference path. `build=False`: only with a plan built before (so the id was
        checked then). Raises registry errors (building a plan), LimitExceeded for a payload over
        the decoding limits (on either path), and PayloadError where the format library's refusal
        is final."""
        if prefixed and self._format is protobuf:
            self._prefixed_protobuf_guard(payload)
            return FALLBACK  # a prefixed Protobuf payload starts with message indexes
        plan = self.reads.get((topic, id_bytes))
        if plan is None:
            if not build or self._deserializer is None:
                return FALLBACK
            plan = self._read_plan(topic, id_bytes)
        if type(plan) is not ReadPlan:
            if isinstance(plan, Refused):
                raise ForeignSchema(plan.reason)
            if isinstance(plan, Reference) and plan.guard is not None:
                plan.guard(payload)  # the reference path reads with the same library
            return FALLBACK
        if plan.steps and context is not None and RULE_NAME in context:
            return FALLBACK
        return self._read(plan, topic, payload, id_bytes, context)

    def direct(self, topic: str, id_bytes: bytes) -> tuple[Callable[[bytes], Any] | None, float]:
        """(`payload -> value`, the plan's expiry) for messages of (topic, id) with no properties
        the rules read, to be kept by the caller (`FieldSerde.direct_value`), so that a message is
        one dict lookup and this call away from the format library: `_read`'s work in one native
        call (the extension's `DirectReader`), or without the extension `_read` itself. None where
        the plan is not compiled, and for a key part (a key/value schema decodes its two parts
        through `decode`).

        The reader never raises. It answers FALLBACK where it does not take the payload (a
        condition it does not pass, bytes it cannot read: `decode` here decides, and says why)
        and once the plan has expired (`decode` builds it again)."""
        plan = self.reads.get((topic, id_bytes))
        if type(plan) is not ReadPlan or self._key:
            return None, 0.0
        if self._native is None:
            return self._python_reader(plan, topic, id_bytes), plan.expires
        functions = (plan.read, *plan.steps)
        if self._from_dict is not None:  # a message without properties: one context for them all
            functions = (*functions, _bound(self._from_dict, SerializationContext(topic, self._field)))
        guard = plan.guard
        reader = self._native.DirectReader(
            _pipeline(functions),
            longest=guard.longest if guard is not None else -1,
            check=guard.check if guard is not None else None,
            expires_in=remaining(plan.expires),
            key_parts=_key_parts,
            clear_original_key=clear_original_key,
            fallback=FALLBACK,
        )
        return reader, plan.expires

    def _python_reader(self, plan: ReadPlan, topic: str, id_bytes: bytes) -> Callable[[bytes], Any]:
        """`_read` of (topic, id) as `direct` promises a reader: it never raises (an error of
        `_read`'s is worded by `decode` when the caller takes that way) and answers FALLBACK once
        the plan has expired."""
        read, expires = self._read, plan.expires

        def reader(payload: bytes) -> Any:
            if expires and remaining(expires) <= 0:  # type: ignore[operator]
                return FALLBACK
            try:
                return read(plan, topic, payload, id_bytes, None)
            except Exception:
                return FALLBACK

        return reader

    def _read(
        self, plan: ReadPlan, topic: str, payload: bytes, id_bytes: bytes, context: MessageContext | None
    ) -> Any:
        if not payload:
            return FALLBACK  # the reference refuses a frame without a payload before decoding
        guard = plan.guard
        if guard is not None and len(payload) > guard.longest:
            guard.check(payload)
        try:
            value = plan.read(payload)
        except Exception as error:
            if plan.final_errors:
                raise PayloadError(error) from error
            return FALLBACK
        try:
            for step in plan.steps:
                value = step(value)
        except ConditionNotMet:
            if plan.rules is None or context is None:
                return FALLBACK
            # The engine decides: the value passes after all (an action NONE), or its action
            # raises (the error, the dead letter) as on the reference path.
            value = plan.rules(SerializationContext(topic, self._field, context), value, id_bytes + payload)  # type: ignore[arg-type]
        except Exception:
            return FALLBACK
        try:
            if self._from_dict is not None:
                value = self._from_dict(value, SerializationContext(topic, self._field, context))  # type: ignore[arg-type]
        except Exception:
            return FALLBACK
        if self._key:
            set_original_key(id_bytes + payload)
        elif _key_parts:
            clear_original_key()  # type: ignore[no-untyped-call]
        return value

    def _read_plan(self, topic: str, id_bytes: bytes) -> ReadPlan | Reference | Refused | None:
        """Build, cache and return the plan of (topic, id); None when building failed for a reason
        the reference path will report itself. Registry failures raise."""
        with self.reads.building:
            key = (topic, id_bytes)
            found = self.reads.get(key)
            if found is not None:
                return found
            try:
                plan = self._build_read(topic, id_bytes)
            except Exception as error:
                if failure_kind(error) is not None:  # the registry's: raised as it is
                    raise
                log.debug("no plan for %s, schema id %s: %s", topic, id_bytes.hex(), error)
                return None
            self.reads.put(key, plan)
            return plan

    def _build_read(self, topic: str, id_bytes: bytes) -> ReadPlan | Reference | Refused:
        """The writer schema and its decoding limits, then the compiled plan. Raises when the
        writer cannot be resolved; a plan that then fails to compile is a Reference that keeps
        the limits, so that every path checks them."""
        deserializer = self._deserializer
        ser_ctx = SerializationContext(topic, self._field)
        subject = _confluent.subject(deserializer, ser_ctx, None)
        expires = expiry(self._ttl)
        fmt = _confluent.REGISTRY_FORMAT[self._type]
        pinned = None if subject is None else _confluent.pinned_schema(deserializer, subject, fmt)
        writer = _confluent.writer_schema(deserializer, self._type, id_bytes, subject, fmt)
        kind = writer.schema_type or "AVRO"
        if kind != self._type:
            article = "an" if kind == "AVRO" else "a"
            return Refused(
                f"schema id {ids.describe(id_bytes)} names {article} {kind} schema, and this schema "
                f"reads {self._type}",
                expires,
            )
        schema_id = ids.confluent_int_id(id_bytes)  # None for a GUID
        if (
            self._check_subject
            and subject is not None
            and schema_id is not None
            and not self._wrote(subject, id_bytes)
        ):
            # A numeric id is global: after a registry lost its store, or with a producer on
            # another subject, it may name another subject's schema, which would decode into the
            # wrong record without an error. (GUIDs are unique by construction.)
            subjects = _confluent.subjects_of(deserializer, schema_id)
            if subject not in subjects:
                under = ", ".join(sorted(subjects)) or "no subject"
                return Refused(
                    f"schema id {schema_id} is registered under {under}, not under {subject}, the "
                    "subject of this topic; set 'schema.id.subject.check' to false if its writers "
                    "use other subjects",
                    expiry(min(self._ttl or REFUSAL_TTL, REFUSAL_TTL)),
                )
        # A payload an encoding rule made (ENCRYPT_PAYLOAD: ciphertext) is not data of the writer
        # schema: the guard would read noise as counts. The reference path decodes what the
        # rule gives back, which is authenticated: only the key's holder can make it.
        encoded = encoding_rule(writer, RuleMode.READ)
        guard = None if encoded else self._format.guard(deserializer, writer, self._limits)
        if subject is None:
            return Reference("the subject name strategy needs the writer's record name", expires, guard)
        try:
            return self._compile_read(ser_ctx, subject, writer, pinned, guard, expires)
        except Exception as error:
            if failure_kind(error) is not None:  # the registry's: raised as it is
                raise
            return self._reference(subject, f"the plan did not compile: {error}", expires, guard)

    def _compile_read(
        self,
        ser_ctx: SerializationContext,
        subject: str,
        writer: Any,
        pinned: Any,
        guard: Guard | None,
        expires: float,
    ) -> ReadPlan | Reference:
        deserializer = self._deserializer
        if _confluent.local_schema(deserializer)[0] is not None:
            return Reference("the deserializer has a reader schema of its own", expires, guard)
        reader = writer
        migrating: Steps = ()
        if pinned is not None:
            migrations = _confluent.migrations(deserializer, subject, writer, pinned)
            if migrations:
                if self._format is protobuf:
                    why = "Protobuf migrations run on the reference path"
                    return self._reference(subject, why, expires, guard)
                compiled = compile_migrations(deserializer, ser_ctx, subject, migrations)
                if isinstance(compiled, str):
                    return self._reference(subject, compiled, expires, guard)
                migrating = compiled
            reader = pinned.schema
        reason = encoding_rule(writer, RuleMode.READ)
        if reason is not None:
            return self._reference(subject, reason, expires, guard)  # `guard` is None (above)
        steps = compile_rules(
            deserializer,
            ser_ctx,
            subject,
            RuleMode.READ,
            reader,
            self._format.pool(deserializer),
            self._format.field_walk(deserializer, reader),
        )
        if isinstance(steps, str):
            return self._reference(subject, steps, expires, guard)
        check = self._format.read_check(deserializer, reader)
        columnar = None
        if not migrating and (check is None or self._format.COLUMNAR_CHECKS):
            columnar = _columnar(self._format, deserializer, writer, reader, steps, guard)
        # With migrations, the reference reads with the writer's schema alone: the migration
        # rules turn the value into the reader's shape, and its READ rules run on that.
        read = self._format.reader(deserializer, writer, writer if migrating else reader)
        if check is not None and not steps and not migrating:
            checked = self._format.checked_reader(deserializer, reader, read, check)
            if checked is not None:  # the read and the check in one call
                read, check = checked, None
        if check is not None:
            steps = (*steps, check)  # as the reference: the READ rules, then the validation
        steps = _metered_read((*migrating, *steps))
        rules = None
        if steps and not all(isinstance(step, CompiledCondition) or step is check for step in steps):
            columnar = None  # metered, or steps that change the value
        elif steps and not migrating and self._format is avro and not self._key:
            rules = _rules_alone(deserializer, subject, reader)
        return ReadPlan(subject, steps, read, expires, self._format.FINAL_ERRORS, guard, columnar, rules)

    def columnar(self, topic: str, id_bytes: bytes) -> Columnar | None:
        """How a columnar decoder reads messages of (topic, id) into the values `decode` gives
        (`plans.Columnar`), building the plan if need be; None where it cannot, or the plan is
        not compiled (a registry that cannot be reached raises, as for `decode`)."""
        plan = self.reads.get((topic, id_bytes))
        if plan is None and self._deserializer is not None:
            plan = self._read_plan(topic, id_bytes)
        return plan.columnar if type(plan) is ReadPlan else None

    def _wrote(self, subject: str, id_bytes: bytes) -> bool:
        """Whether this part's own serializer wrote `subject` with this id (so it is registered
        there: the registry said so when the serializer registered or looked it up)."""
        return any(
            type(plan) is WritePlan and plan.subject == subject and plan.schema_id == id_bytes
            for plan in list(self.writes.plans.values())
        )

    def _reference(self, subject: str, reason: str, expires: float, guard: Guard | None = None) -> Reference:
        self._say(subject, reason)
        return Reference(reason, expires, guard)

    def _say(self, subject: str, reason: str) -> None:
        if (subject, reason) not in self._said:
            self._said.add((subject, reason))
            log.info("subject %s: %s (messages of this schema are not compiled)", subject, reason)


def _pipeline(functions: tuple[Callable[[Any], Any], ...]) -> Callable[[Any], Any]:
    """One callable applying `functions` in turn, for a direct reader (the format's read, then the
    plan's steps) or writer (the steps, then the write). A plan without steps keeps the format's
    function itself: a loop set up per message was a measurable share of a JSON read."""
    if len(functions) == 1:
        return functions[0]

    def pipeline(value: Any) -> Any:
        for function in functions:
            value = function(value)
        return value

    return pipeline


def _bound(
    function: Callable[[Any, SerializationContext], Any], ctx: SerializationContext
) -> Callable[[Any], Any]:
    """`function(value, ctx)` as a function of the value alone: a `to_dict` or `from_dict` in a
    direct writer's or reader's pipeline."""

    def bound(value: Any) -> Any:
        return function(value, ctx)

    return bound


def _conditions(steps: Steps) -> tuple[str, ...] | None:
    """The steps' texts where every one is a condition in the everyday CEL subset (`subset`), in
    the order they run; None where any is not."""
    texts = tuple(step.subset if isinstance(step, CompiledCondition) else None for step in steps)
    return None if None in texts else texts  # type: ignore[return-value]


def _columnar(
    fmt: ModuleType, deserializer: Any, writer: Any, reader: Any, steps: Steps, guard: Guard | None
) -> Columnar | None:
    """The plan's `Columnar`, where its format has a columnar form and every step is a condition
    in the everyday CEL subset."""
    conditions = _conditions(steps)
    if conditions is None or guard is None:
        return None
    schemas = fmt.columnar_schemas(deserializer, writer, reader)
    if schemas is None:
        return None
    return Columnar(
        schemas[0], schemas[1], guard.longest, conditions, fmt.SCHEMA_TYPE, schemas[2], schemas[3]
    )


def _rules_alone(
    deserializer: Any, subject: str, reader: Any
) -> Callable[[SerializationContext, Any, bytes], Any]:
    """`ReadPlan.rules`: the READ domain rules of `reader` (the registered version the reference
    path reads into) on a decoded Avro value, with the inline tags and field transformer the Avro
    deserializer builds for it (made once here, where the reference makes them per message), and
    the framed message as the original, as the deserializer passes it."""
    tags, transformer = _confluent.rule_inputs(deserializer, reader, None)

    def run(ser_ctx: SerializationContext, value: Any, original: bytes) -> Any:
        return _confluent.run_domain_rules(
            deserializer, ser_ctx, subject, RuleMode.READ, reader, value, tags, transformer, original
        )

    return run


def _metered_write(steps: Steps, write: Callable[[Any], bytes]) -> tuple[Steps, Callable[[Any], bytes]]:
    """A write plan's steps and writer, with rule metrics on: no steps, and a writer that runs
    them, writes, and then counts the rules (`metrics.RuleMetrics.metered`). Unchanged with
    metrics off, or with no metered rules."""
    store = metrics.recording()
    if store is None or not any(isinstance(step, metrics.Chain) for step in steps):
        return steps, write
    return (), store.metered(steps, write)


def _metered_read(steps: Steps) -> Steps:
    """A read plan's steps, with rule metrics on: one step that runs them all and counts the rules
    once the last is through."""
    store = metrics.recording()
    if store is None or not any(isinstance(step, metrics.Chain) for step in steps):
        return steps
    return (store.metered(steps),)
