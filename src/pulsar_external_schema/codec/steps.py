"""Rule steps: a schema's rule set for one mode, compiled once into what runs per message.

The rule engine of confluent-kafka decides, for every message and every rule, whether the rule is
disabled, whether its mode applies, which executor and which actions it has; and it builds a
`RuleContext` to ask. None of that depends on the message. `compile_rules` asks those questions
once, with the serde's own answers (`_confluent.py`), and keeps only what depends on the message: the
compiled CEL conditions that apply, in the order the engine runs them (reversed on READ).

A step is `value -> value`: a CEL condition returns the value it passed, a CEL_FIELD
transform the value with its fields rewritten (`field_transforms.py`). What compiles: CEL conditions and
CEL_FIELD transforms on the compiled engine, and ENCRYPT field rules (`rules/encryption.py`),
whose passing action is NONE. A step that
does not pass, or fails to evaluate, raises, and the message goes back to the reference path,
which evaluates it again and runs the actions (ERROR, DLQ, a custom one): so every failure's
outcome, error text and DLQ copy is the reference's own. Anything else in a rule set that
applies (CEL message transforms, JSONata domain rules, custom executors, encoding rules such as
ENCRYPT_PAYLOAD) keeps
the schema's messages on the reference path, and `compile_rules` says why.

`compile_migrations` does the same for the JSONATA migration rules between a writer's and a
reader's major versions: the chain `_execute_migrations` would run, each expression parsed once.

With rule metrics on when a plan is built (`metrics/`), a schema's compiled rules are one
`metrics.Chain` that keeps each rule's counter; `part.py` makes the plan's metered stage of it
(`RuleMetrics.metered`), which counts them once the plan's last stage is through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka.schema_registry import RuleKind, Schema
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor
from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleMode
from confluent_kafka.schema_registry.serde import FieldRuleExecutor, Migration, RuleContext, RuleError
from confluent_kafka.serialization import SerializationContext

from .. import _confluent, metrics
from ..errors import CelEvaluationError, JsonataError
from ..rules.cel import (
    COMPILED,
    CelExecutor,
    CelFieldExecutor,
    CompiledCondition,
    CompiledFieldTransform,
    rule_engine,
)
from ..rules.encryption import CompiledEncryption
from ..rules.jsonata import JsonataExecutor
from ..rules.rule_registry import rule_executor
from .field_transforms import FieldTransform, FieldWalk, NotCompiled

Step = Callable[[Any], Any]
Steps = tuple[Step, ...]


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
    field_walk: FieldWalk | None = None,
) -> Steps | str:
    """The steps of `schema`'s domain rules that run in `mode`, compiled; or, as a string, why
    this schema's messages take the reference path. `pool`: the Protobuf descriptor pool;
    `field_walk`: how a CEL_FIELD rule walks the values' schema (None: not compiled for it)."""
    referenced = getattr(serde, "referenced", None)
    if referenced is not None and referenced.apply_to(schema, mode, serde):
        return "rules of referenced schemas run on the reference path"
    rule_set = schema.rule_set if schema is not None else None
    if rule_set is None:
        return ()
    rules = list(rule_set.domain_rules or [])
    if mode == RuleMode.READ:
        rules.reverse()  # as confluent-kafka: READ runs the rules in reverse order
    compiled: list[tuple[metrics.Key, Step | None]] = []
    for index, rule, ctx in _enabled(serde, ser_ctx, subject, mode, rules, rule_set.enable_at, None, schema):
        what = f"rule {rule.name!r} ({rule.kind.value if rule.kind else '?'} {rule.type})"
        rule_type = (rule.type or "").upper()
        condition = rule.kind == RuleKind.CONDITION and rule_type == "CEL"
        kind = rule_type if rule.kind == RuleKind.TRANSFORM else ""
        if not condition and kind not in _FIELD_RULES:
            return f"{what} runs on the reference path"
        executor, why = _builtin(serde, ctx, mode, what, CelExecutor if condition else _FIELD_RULES[kind])
        if why is not None:
            return why
        cel: CelExecutor | None = None
        if kind != "ENCRYPT":
            cel = executor if isinstance(executor, CelExecutor) else executor.executor
            if rule_engine(ctx, cel.engine) != COMPILED:
                return f"{what} runs on cel-python"
        key = _key(rule, ser_ctx, subject, mode)
        try:
            if condition:
                assert cel is not None
                compiled.append((key, CompiledCondition(cel.compiled, ctx, pool)))
            elif shadowed(rule, rules, index, mode):
                compiled.append((key, None))  # confluent-kafka runs one field transform per tag set
            elif field_walk is None:
                return f"{what}: field transforms of this format run on the reference path"
            else:
                transform: FieldTransform = (
                    CompiledEncryption(executor, ctx)
                    if cel is None
                    else CompiledFieldTransform(cel.compiled, ctx, pool)
                )
                compiled.append((key, field_walk(transform, ctx, mode) or None))  # None: no field to do
        except CelEvaluationError as error:
            return f"{what} does not compile on the compiled engine ({error})"
        except NotCompiled as reason:
            return f"{what}: {reason}"
        except RuleError as error:
            return f"{what} does not compile ({error})"
    return _steps(compiled)


def _key(rule: Rule, ser_ctx: SerializationContext, subject: str, mode: RuleMode) -> metrics.Key:
    """What a passing compiled rule is counted under (its action on success is always NONE)."""
    return (rule.name or "", subject, mode.value, ser_ctx.topic or "", metrics.PASSED, "NONE")


def _steps(compiled: list[tuple[metrics.Key, Step | None]]) -> Steps:
    """The plan's steps: each rule's (a rule with nothing to do on this schema has none), or,
    with rule metrics on, one chain that counts every rule."""
    store = metrics.recording()
    if store is None or not compiled:
        return tuple(step for _, step in compiled if step is not None)
    return (store.chain(compiled),)


#: Field transforms that compile, by rule type, with the executor each must have.
_FIELD_RULES: dict[str, type] = {"CEL_FIELD": CelFieldExecutor, "ENCRYPT": FieldEncryptionExecutor}


def compile_migrations(
    serde: Any, ser_ctx: SerializationContext, subject: str, migrations: list[Migration]
) -> Steps | str:
    """The migration rules between a writer's and a reader's major versions, compiled: each
    UPGRADE (the target version's rules) or DOWNGRADE (the source's, reversed) JSONATA transform
    in the order confluent-kafka's `_execute_migrations` runs them, parsed once. Or, as a string,
    why the messages take the reference path (another rule type, a custom executor, an
    expression that does not parse: the reference says what is wrong with it)."""
    compiled: list[tuple[metrics.Key, Step | None]] = []
    for migration in migrations:
        if migration.source is None or migration.target is None:
            continue
        mode, source, target = migration.rule_mode, migration.source.schema, migration.target.schema
        owner = target if mode == RuleMode.UPGRADE else source
        rule_set = owner.rule_set if owner is not None else None
        if rule_set is None or mode not in (RuleMode.UPGRADE, RuleMode.DOWNGRADE):
            continue
        rules = list(rule_set.migration_rules or [])
        if mode == RuleMode.DOWNGRADE:
            rules.reverse()
        for _, rule, ctx in _enabled(
            serde, ser_ctx, subject, mode, rules, rule_set.enable_at, source, target
        ):
            what = f"migration rule {rule.name!r} ({rule.kind.value if rule.kind else '?'} {rule.type})"
            if rule.kind != RuleKind.TRANSFORM or (rule.type or "").upper() != "JSONATA" or not rule.expr:
                return f"{what} runs on the reference path"
            executor, why = _builtin(serde, ctx, mode, what, JsonataExecutor)
            if why is not None:
                return why
            try:
                executor.parse(rule.expr)
            except JsonataError as error:
                return f"{what}: {error}"
            step = _migration(executor, rule.expr, *executor.limits(ctx))
            compiled.append((_key(rule, ser_ctx, subject, mode), step))
    return _steps(compiled)


def _migration(executor: JsonataExecutor, text: str, timeout_ms: int, max_depth: int) -> Step:
    """One JSONATA transform: the expression's result, or the value when it gives none."""
    evaluate = executor.evaluate

    def migrate(value: Any) -> Any:
        result = evaluate(text, value, timeout_ms=timeout_ms, max_depth=max_depth)
        return value if result is None else result

    return migrate


def _enabled(
    serde: Any,
    ser_ctx: SerializationContext,
    subject: str,
    mode: RuleMode,
    rules: list[Rule],
    enable_at: Any,
    source: Schema | None,
    target: Schema | None,
) -> Iterator[tuple[int, Rule, RuleContext]]:
    """(index, rule, its context) of each rule that runs in `mode` and is not disabled, as
    confluent-kafka's `_execute_rules_with_phase` decides for every message."""
    for index, rule in enumerate(rules):
        if not applies(rule, mode):
            continue
        ctx = RuleContext(enable_at, ser_ctx, source, target, subject, mode, rule, index, rules, None, None)
        if not _confluent.rule_is_disabled(serde, ctx):
            yield index, rule, ctx


def _builtin(
    serde: Any, ctx: RuleContext, mode: RuleMode, what: str, expected: type
) -> tuple[Any, str | None]:
    """The rule's executor, and why the rule does not compile (None: it does): an executor other
    than the built-in `expected`, or an action on success other than NONE."""
    executor = rule_executor(_confluent.rule_registry(serde), ctx)
    if type(executor) is not expected:
        return executor, f"{what} has a custom executor ({type(executor).__name__})"
    action = _confluent.on_success_action(serde, ctx, mode)
    if action != "NONE":
        return executor, f"{what} runs the action {action!r} when it passes"
    return executor, None


def shadowed(rule: Rule, rules: list[Rule], index: int, mode: RuleMode) -> bool:
    """Whether another field transform with the same tags wins over this one, as confluent-kafka's
    `FieldRuleExecutor.transform` decides: the earlier one on WRITE/UPGRADE, the later on READ."""
    if mode in (RuleMode.WRITE, RuleMode.UPGRADE):
        others = rules[:index]
    elif mode in (RuleMode.READ, RuleMode.DOWNGRADE):
        others = rules[index + 1 :]
    else:
        return False
    return any(FieldRuleExecutor.are_transforms_with_same_tag(rule, other) for other in others)
