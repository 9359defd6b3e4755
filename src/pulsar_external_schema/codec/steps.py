"""Rule steps: a schema's rule set for one mode, compiled once into what runs per message.

The rule engine of confluent-kafka decides, for every message and every rule, whether the rule is
disabled, whether its mode applies, which executor and which actions it has; and it builds a
`RuleContext` to ask. None of that depends on the message. `compile_rules` asks those questions
once, with the serde's own answers (`_serde.py`), and keeps only what depends on the message: the
compiled CEL conditions that apply, in the order the engine runs them (reversed on READ).

What compiles: CEL conditions on the compiled engine whose passing action is NONE. A condition
that does not pass, or fails to evaluate, hands the message back to the reference path, which
evaluates it again and runs its actions (ERROR, DLQ, a custom one): so every failure's outcome,
error text and DLQ copy is the reference's own. Anything else in a rule set that applies
(transforms, CEL_FIELD, JSONata, encryption, custom executors, encoding rules) keeps the whole
message on the reference path, and `compile_rules` says why.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka.schema_registry import RuleKind, Schema
from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleMode
from confluent_kafka.schema_registry.serde import RuleContext
from confluent_kafka.serialization import SerializationContext

from ..rules.cel import COMPILED, CelEvaluationError, CelExecutor, CompiledCondition, rule_engine
from ..rules.registry import rule_executor
from . import _serde

Conditions = tuple[CompiledCondition, ...]


def applies(rule: Rule, mode: RuleMode) -> bool:
    """Whether a rule of `rule.mode` runs in `mode` (WRITEREAD on both, UPDOWN on migrations)."""
    if rule.mode == RuleMode.WRITEREAD:
        return mode in (RuleMode.WRITE, RuleMode.READ)
    if rule.mode == RuleMode.UPDOWN:
        return mode in (RuleMode.UPGRADE, RuleMode.DOWNGRADE)
    return rule.mode == mode


def encoding_rule(schema: Schema | None, mode: RuleMode) -> str | None:
    """Why `schema`'s encoding rules (ENCRYPT_PAYLOAD, ...) keep its messages on the reference
    path in `mode`, or None when none applies."""
    rule_set = schema.rule_set if schema is not None else None
    for rule in (rule_set.encoding_rules if rule_set is not None else None) or []:
        if applies(rule, mode):
            return f"encoding rule {rule.name!r} ({rule.type}) runs on the reference path"
    return None


def compile_rules(
    serde: Any,
    ser_ctx: SerializationContext,
    subject: str,
    mode: RuleMode,
    schema: Schema | None,
    pool: Any = None,
) -> Conditions | str:
    """The conditions of `schema`'s domain rules that run in `mode`, compiled; or, as a string,
    why this schema's messages take the reference path. `pool`: the Protobuf descriptor pool."""
    rule_set = schema.rule_set if schema is not None else None
    if rule_set is None:
        return ()
    rules = list(rule_set.domain_rules or [])
    if mode == RuleMode.READ:
        rules.reverse()  # as confluent-kafka: READ runs the rules in reverse order
    compiled: list[CompiledCondition] = []
    for index, rule in enumerate(rules):
        if not applies(rule, mode):
            continue
        ctx = RuleContext(
            rule_set.enable_at, ser_ctx, None, schema, subject, mode, rule, index, rules, None, None
        )
        if _serde.rule_is_disabled(serde, ctx):
            continue
        what = f"rule {rule.name!r} ({rule.kind.value if rule.kind else '?'} {rule.type})"
        if rule.kind != RuleKind.CONDITION or (rule.type or "").upper() != "CEL":
            return f"{what} runs on the reference path"
        executor = rule_executor(_serde.rule_registry(serde), ctx)
        if type(executor) is not CelExecutor:
            return f"{what} has a custom executor ({type(executor).__name__})"
        if rule_engine(ctx, executor.engine) != COMPILED:
            return f"{what} runs on cel-python"
        action = _serde.on_success_action(serde, ctx, mode)
        if action != "NONE":
            return f"{what} runs the action {action!r} when it passes"
        try:
            compiled.append(CompiledCondition(executor.compiled, ctx, pool))
        except CelEvaluationError as error:
            return f"{what} does not compile on the compiled engine ({error})"
    return tuple(compiled)
