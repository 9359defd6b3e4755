"""Rule actions: ERROR with a message that says what failed, and DLQ to a Pulsar topic.

confluent-kafka's rule engine calls `action.run(ctx, message, error)` after a rule ran; only a
`SerializationError` escapes it, so both actions raise `RuleViolationError` (one of those).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Collection
from typing import Any

from confluent_kafka.schema_registry.rules.dlq.dlq_action import DlqAction, FieldRedactionExecutor
from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleKind, RuleMode
from confluent_kafka.schema_registry.serde import RuleAction, RuleContext

from .. import _confluent
from .. import schema_id as ids
from .._pulsar_client import raw_client
from ..deadletter import DeadLetterPublisher, copy_properties, failure_properties, resolve_dlq_topic
from ..errors import DeadLetteredError, RuleViolationError
from ..redaction import encrypted_tags, redact, scrub, sensitive_fields, sensitive_values
from .context import MessageContext
from .referenced import PATH, ROOT, Scope, sensitive_fields_down

log = logging.getLogger(__name__)

#: Modes a consumer runs: its DLQ copies are the original bytes, not re-encoded values.
_CONSUMER_MODES = (RuleMode.READ, RuleMode.UPGRADE, RuleMode.DOWNGRADE)


def message_context(ctx: RuleContext) -> MessageContext | None:
    headers = ctx.ser_ctx.headers if ctx.ser_ctx is not None else None
    return headers if isinstance(headers, MessageContext) else None


def describe_rule(ctx: RuleContext) -> str:
    rule = ctx.rule
    kind = rule.kind.value if rule.kind is not None else "?"
    path = PATH.get()
    where = f" on {path}" if path is not None else ""
    return f"rule {rule.name!r} ({kind} {rule.type}, {ctx.rule_mode.value}){where}"


def failure_cause(ctx: RuleContext, message: Any, error: Exception | None) -> str:
    """Why the action runs: the executor's error, or what the rule engine decided without one.
    Values of sensitive fields are redacted (`redaction.py`), in the text and in the error."""
    if error is not None:
        fields = sorted({*sensitive_fields(ctx.target, ctx.inline_tags), *_referenced_sensitive_fields()})
        values = sensitive_values([message, ctx.original_value], fields) if fields else []
        scrub(error, values)
        text = _short(str(error)) or type(error).__name__
        cause = _short(str(error.__cause__)) if error.__cause__ is not None else ""
        if cause and cause not in text:
            text = f"{text}: {cause}"
        return redact(text, values)
    if message is None:
        return "the transform returned no value"
    return "the rule passed and its action is ERROR"


def _referenced_sensitive_fields() -> list[str]:
    """The sensitive fields of the message being serialized, its root schema's and those of every
    schema it references, besides the failing rule's own schema's."""
    scope = ROOT.get()
    return sensitive_fields_down(scope.serde, scope.schema, scope.inline_tags) if scope is not None else []


def redacted_for_dead_letters(rule_types: Collection[str], message: Any) -> Any:
    """A copy of `message` (the whole value being written) with the fields that an encrypting rule
    (`rule_types`) of any of its schemas tags replaced by `<REDACTED>`: the root's and, where they
    run, each referenced schema's, on the parts of its type. confluent-kafka's DLQ action redacts
    with the failing rule's schema alone, so a part's failure left the message's encrypted fields
    in clear (the part's schema walked the whole message and found none), and a root's failure
    left the parts' fields as ciphertext. `message` itself where the message's schema references
    none whose rules run: confluent-kafka's redaction (`_convert_to_bytes`) then does the same."""
    scope = ROOT.get()
    if scope is None or message is None or isinstance(message, bytes | bytearray | str):
        return message
    referenced = getattr(scope.serde, "referenced", None)
    parts = referenced.reachable(scope.serde, scope.schema) if referenced is not None else []
    if referenced is None or not parts:
        return message
    tags = set().union(
        *(encrypted_tags(schema, rule_types) for schema in (scope.schema, *(p.schema for p in parts)))
    )
    if not tags:
        return message
    copied = copy.deepcopy(message)
    copied = _redact(scope, scope.schema, scope.inline_tags, scope.transformer, tags, copied)
    for part, value, put in referenced.parts(scope.serde, scope.schema, copied):
        inline_tags, transformer = referenced.rule_inputs(scope.serde, part, value)
        put(_redact(scope, part.schema, inline_tags, transformer, tags, value))
    return copied


def _redact(scope: Scope, schema: Any, inline_tags: Any, transformer: Any, tags: set[str], value: Any) -> Any:
    """`value` (a value of `schema`) with its fields tagged `tags` redacted, in place, by
    confluent-kafka's redaction executor (the one its DLQ action uses)."""
    if value is None or transformer is None:
        return value
    rule = Rule(
        "redact",
        None,
        RuleKind.TRANSFORM,
        scope.mode,
        FieldRedactionExecutor.TYPE,
        sorted(tags),
        None,
        None,
        None,
        None,
        False,
    )
    ctx = RuleContext(
        None,
        scope.ser_ctx,
        None,
        schema,
        scope.subject,
        scope.mode,
        rule,
        0,
        [rule],
        inline_tags,
        transformer,
    )
    executor = FieldRedactionExecutor()
    try:
        return executor.transform(ctx, value)
    finally:
        executor.close()  # type: ignore[no-untyped-call]


def rule_violation(
    ctx: RuleContext,
    message: Any,
    error: Exception | None,
    outcome: str = "failed",
    *,
    after: str = "",
    kind: type[RuleViolationError] = RuleViolationError,
    **extra: Any,
) -> RuleViolationError:
    """A `RuleViolationError` (or `kind`) naming the rule, mode, topic, subject, schema id and cause."""
    context = message_context(ctx)
    cause = failure_cause(ctx, message, error)
    return kind(
        f"{describe_rule(ctx)} {outcome}: {cause}{after}",
        **extra,
        rule=ctx.rule.name,
        mode=ctx.rule_mode.value,
        topic=_topic(ctx, context),
        subject=ctx.subject,
        schema_id=ids.describe(context.schema_id) if context is not None and context.schema_id else None,
        cause=cause,
        path=PATH.get(),
    )


class ErrorAction(RuleAction):
    """The ERROR action: fail the produce or the consume with a message that can be acted on."""

    def type(self) -> str:
        return "ERROR"

    def run(self, ctx: RuleContext, message: Any, ex: Exception | None) -> None:
        raise rule_violation(ctx, message, ex) from ex


class PulsarDlqAction(DlqAction):
    """The DLQ action with a Pulsar topic as the dead-letter queue.

    The copy carries the original message properties (less any earlier `__rule.*`:
    `deadletter.copy_properties`) plus `__rule.name`, `__rule.mode`, `__rule.subject`,
    `__rule.topic` and `__rule.exception`, and the original key. On produce it
    is the value as JSON with fields of encryption rules redacted (as Confluent's DLQ action), on
    consume the original bytes, so a fixed consumer can read it back. The send is synchronous:
    when `run` raises `DeadLetteredError` the copy is persisted, and a consumer may acknowledge.

    The topic is the `dlq.topic` config key if set (Confluent's precedence), else the rule's
    `dlq.topic` parameter. A bare name (`bad-data`) lives in the namespace of the failing topic.
    """

    def __init__(self, conf: dict[str, Any] | None = None) -> None:
        super().__init__(conf)
        self._pulsar_client: Any = None
        self._publishers: dict[int, DeadLetterPublisher] = {}
        self._publishers_lock = threading.Lock()

    def attach_client(self, client: Any) -> None:
        """The client used when a message does not bring its own (the factory's `client=`)."""
        self._pulsar_client = raw_client(client)

    def run(self, ctx: RuleContext, message: Any, ex: Exception | None) -> None:
        context = message_context(ctx)
        topic = self._topic or ctx.get_parameter(self.DLQ_TOPIC)
        if not topic:
            raise rule_violation(
                ctx, message, ex, "failed, and its DLQ action has no topic (set the rule's dlq.topic param)"
            ) from ex
        client = (context.pulsar_client if context is not None else None) or self._pulsar_client
        source = _topic(ctx, context)
        dlq_topic = resolve_dlq_topic(topic, source)
        if client is None:
            raise rule_violation(
                ctx,
                message,
                ex,
                f"failed, and its DLQ action has no Pulsar client to write to {dlq_topic}; create the "
                "producer with create_producer(client, ...), subscribe with the schema, or make the "
                "factory with SchemaRegistrySchemaFactory(config, client=pulsar_client)",
            ) from ex
        cause = failure_cause(ctx, message, ex)
        try:
            message_id = self._publish(client, dlq_topic, ctx, context, cause)
        except Exception as error:
            raise rule_violation(
                ctx, message, ex, f"failed, and writing it to the DLQ topic {dlq_topic} failed too ({error})"
            ) from ex
        log.info(
            "%s failed; message written to DLQ topic %s as %s", describe_rule(ctx), dlq_topic, message_id
        )
        raise rule_violation(
            ctx,
            message,
            ex,
            after=f"; the message was written to the DLQ topic {dlq_topic} (message id {message_id})",
            kind=DeadLetteredError,
            dlq_topic=dlq_topic,
            dlq_message_id=message_id,
        ) from ex

    def _publish(
        self, client: Any, topic: str, ctx: RuleContext, context: MessageContext | None, cause: str
    ) -> Any:
        if ctx.rule_mode in _CONSUMER_MODES and context is not None and context.original_data is not None:
            data = context.original_data
        else:
            value = redacted_for_dead_letters(_confluent.dlq_redact_rule_types(self), ctx.original_value)
            data = self._convert_to_bytes(ctx, value) or b""
        properties = dict(context) if context is not None else {}
        if ctx.rule_mode not in _CONSUMER_MODES:
            for name in ids.ID_PROPERTIES:  # the copy is JSON, not the encoded value
                properties.pop(name, None)
        properties = copy_properties(
            properties,
            failure_properties(
                _topic(ctx, context),
                cause,
                rule=ctx.rule.name,
                mode=ctx.rule_mode.value,
                subject=ctx.subject,
                path=PATH.get(),
            ),
        )
        key = context.partition_key if context is not None else None
        if key is None and ctx.original_key is not None:
            key = _key_text(self._convert_to_bytes(ctx, ctx.original_key))
        with self._publishers_lock:
            publisher = self._publishers.get(id(client))
            if publisher is None:
                publisher = self._publishers[id(client)] = DeadLetterPublisher(client)
        return publisher.publish(
            topic,
            data,
            properties,
            partition_key=key,
            ordering_key=context.ordering_key if context is not None else None,
            event_timestamp=context.event_timestamp if context is not None else None,
        )

    def close(self) -> None:
        with self._publishers_lock:
            publishers, self._publishers = list(self._publishers.values()), {}
        for publisher in publishers:
            publisher.close()


class InvalidMessageAction(RuleAction):
    """A DLQ action that publishes nothing: the failure is raised as a `RuleViolationError`, for
    callers that dead-letter invalid messages themselves, once (Spark's validation job, the
    validation function), where publishing from inside the decode could repeat the copy."""

    def type(self) -> str:
        return "DLQ"

    def run(self, ctx: RuleContext, message: Any, ex: Exception | None) -> None:
        raise rule_violation(ctx, message, ex) from ex


def _short(text: str, limit: int = 400) -> str:
    """An executor's error, readable in one log line: cel-python appends its whole activation."""
    text = text.split(" (in activation", 1)[0].strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _topic(ctx: RuleContext, context: MessageContext | None) -> str | None:
    if context is not None:
        return context.topic
    return ctx.ser_ctx.topic if ctx.ser_ctx is not None else None


def _key_text(key: bytes | None) -> str | None:
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return key.hex()
