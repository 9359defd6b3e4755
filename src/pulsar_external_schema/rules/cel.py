"""CEL and CEL_FIELD rules on a compiled engine, with cel-python as the fallback and reference.

confluent-kafka evaluates CEL with `cel-python`, a tree-walking interpreter that also converts
the whole message into its own value types on every evaluation: a one-line condition costs
tens of times a message's encode, which caps a producer with one rule at a few thousand messages
per second (docs/benchmarks.md: the `cel.engine=cel-python` column). These executors keep
confluent-kafka's vocabulary (rule types, `message` / `value` / `name` / `fullName` / `typeName` /
`tags` variables, the `guard ; body` form, the write-back of transforms) and evaluate with
`cel-expr-python`, Google's cel-cpp:

* each expression is compiled once (per rule expression and Protobuf descriptor pool), never per
  message;
* Avro and JSON records are passed as plain Python values, and only the fields the expression
  names (`message.f1` converts `f1` alone); Protobuf messages are passed as they are, so CEL sees
  real proto semantics (`has()`, unsigned integers, well-known types), as in the Java client;
* the standard library plus the strings and encoders extensions (`trim()`, `split()`,
  `base64.encode()`, ...), which Confluent's Java executor also loads, and Confluent's built-ins
  `isEmail`, `isHostname`, `isIpv4`, `isIpv6`, `isUri`, `isUriRef`, `isUuid`.

An expression the compiled engine cannot run (Confluent's `decimals.*`, `variants.*` and
`timestamp.of` extensions), or a value it cannot represent (a `Decimal`, a `time`), is evaluated
with cel-python instead, with a warning naming the rule once. `cel.engine=cel-python` (config key,
or rule parameter for one rule) selects cel-python for everything. Both engines share everything
but the evaluation, so their results can be compared (tests/unit/test_cel_conformance.py).

The everyday condition (fields compared with literals, `size()`, `&&`, `||`, `!`) is also
compiled to Python (rules/cel_subset.py): a record it passes skips cel-cpp, about half a decode;
any other record still goes to cel-cpp, which decides every failure.

A guard (`typeName == 'STRING' ; value + '!'`) that fails to evaluate counts as false and skips
the rule, as in the Java client; `cel.ignore.guard.separator=true` (rule parameter) makes `;`
part of the expression.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib import parse as urlparse

from cachetools import LRUCache
from cel_expr_python import cel as cel_cpp
from cel_expr_python.ext.ext_encoders import ExtEncoders
from cel_expr_python.ext.ext_strings import ExtStrings
from celpy import celtypes
from confluent_kafka.schema_registry import RuleKind
from confluent_kafka.schema_registry.rules.cel import extra_func, protobuf_result_writer
from confluent_kafka.schema_registry.rules.cel.cel_executor import field_value_to_cel, msg_to_cel
from confluent_kafka.schema_registry.serde import FieldContext, FieldRuleExecutor, FieldTransform, RuleContext
from google.protobuf import duration_pb2, message, timestamp_pb2, wrappers_pb2

from .._confluent import LazyCelExecutor, to_plain_containers, validate_hostname
from .._signal import InternalSignal
from ..errors import CelCompileError, CelEvaluationError, ConfigError
from ..redaction import quiet_cel_python_debug
from .cel_subset import Unsupported, compile_condition
from .settings import CEL_ENGINES

log = logging.getLogger(__name__)
quiet_cel_python_debug()  # its DEBUG traces carry the values of the fields a rule reads

#: Config key and rule parameter choosing the engine.
ENGINE_KEY = "cel.engine"
#: Google's cel-cpp through `cel-expr-python` (the default), and confluent-kafka's own engine,
#: `cel-python` (the fallback and the reference).
COMPILED, INTERPRETED = ENGINES = CEL_ENGINES
#: Rule parameter: `true` makes `;` part of the expression instead of ending a guard (Java's).
IGNORE_GUARD_SEPARATOR = "cel.ignore.guard.separator"

#: Records in a row the Python form of a condition could not judge before the condition stops
#: asking it (rules/cel_subset.py).
GIVE_UP_AFTER = 1000

#: Compiled programs kept per executor, as the Java executor's cache.
CACHE_SIZE = 1000


class _NotRepresentable(InternalSignal):
    """A value the compiled engine has no type for (Decimal, time, ...): cel-python takes over."""


# -- what an expression reads of `message` ----------------------------------------------------------

_STRING_LITERAL = re.compile(
    r"""[rRbB]{0,2}(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*")""",
    re.DOTALL,
)
_MESSAGE_WORD = re.compile(r"(?<![\w.])message\b")
_FIELD_SELECT = re.compile(r"\s*\.\s*([A-Za-z_]\w*)")


def message_fields(expression: str) -> frozenset[str] | None:
    """The top-level fields an expression selects from `message`, or None if it uses more.

    `size(message.f1) < 10` reads `f1` only, so only `f1` needs converting; any other use of
    `message` (passing it whole, indexing it, returning it) means all of it.
    """
    code = _STRING_LITERAL.sub('""', expression)
    fields = set()
    for word in _MESSAGE_WORD.finditer(code):
        selected = _FIELD_SELECT.match(code, word.end())
        if selected is None:
            return None
        fields.add(selected.group(1))
    return frozenset(fields)


# -- Python values -> values the compiled engine takes ----------------------------------------------

_EPOCH_DAYS = datetime.date(1970, 1, 1).toordinal()
_PLAIN = frozenset({int, float, bool, type(None)})


def _timestamp(value: datetime.datetime) -> timestamp_pb2.Timestamp:
    if value.tzinfo is None:  # Avro local-timestamp-*: wall-clock time, read as UTC like cel-python
        value = value.replace(tzinfo=datetime.UTC)
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    return stamp


def _duration(value: datetime.timedelta) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromTimedelta(value)
    return duration


def to_cel(value: Any) -> Any:
    """A decoded Avro or JSON value as cel-expr-python takes it (plain values, proto timestamps)."""
    kind = type(value)
    if kind is str:
        # cel-expr-python 0.1.3 cuts strings and bytes at the first NUL; its wrapper types do not
        return value if "\x00" not in value else wrappers_pb2.StringValue(value=value)
    if kind is bytes:
        return value if b"\x00" not in value else wrappers_pb2.BytesValue(value=value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        return {key: to_cel(item) for key, item in value.items()}
    if kind is list:
        return [to_cel(item) for item in value]
    if isinstance(value, message.Message):
        return value
    if isinstance(value, datetime.datetime):
        return _timestamp(value)
    if isinstance(value, datetime.date):  # Avro date: days since the epoch, as confluent-kafka
        return value.toordinal() - _EPOCH_DAYS
    if isinstance(value, datetime.timedelta):
        return _duration(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytearray | memoryview):
        return to_cel(bytes(value))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return to_cel(value[1])  # fastavro's (branch name, value) form of a union
    if isinstance(value, Mapping):
        return {key: to_cel(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_cel(item) for item in value]
    if isinstance(value, bool | int | float | str | bytes):  # subclasses: cel-python's values, enums
        return to_cel(_base_value(value))
    if isinstance(value, decimal.Decimal | datetime.time):
        raise _NotRepresentable(f"a {kind.__name__} value")
    raise _NotRepresentable(f"a value of type {kind.__name__}")


def _base_value(value: Any) -> Any:
    """A str/bytes/int/float/bool subclass instance as the plain type (celpy's BoolType is an int)."""
    if isinstance(value, bool | celtypes.BoolType):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    return value


def plain_interpreted(value: Any) -> Any:
    """A cel-python result as plain Python values, as the compiled engine returns them."""
    if isinstance(value, celtypes.TimestampType):
        return datetime.datetime.fromtimestamp(value.timestamp(), datetime.UTC)
    if isinstance(value, celtypes.DurationType):
        return datetime.timedelta(seconds=value.total_seconds())
    if isinstance(value, dict):
        return {plain_interpreted(key): plain_interpreted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_interpreted(item) for item in value]
    if type(value) in _PLAIN or type(value) in (str, bytes):
        return value
    return _base_value(value)


def from_cel(value: Any) -> Any:
    """A result back as Python values (cel-expr-python returns bytes as bytearray)."""
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dict):
        return {key: from_cel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_cel(item) for item in value]
    return value


# -- Confluent's built-ins, on the validators confluent-kafka ships ---------------------------------


def _is_uri(text: str) -> bool:
    url = urlparse.urlparse(text)
    return bool(url.scheme and url.netloc and url.path)


def _is_uri_ref(text: str) -> bool:
    url = urlparse.urlparse(text)
    return not (not (url.scheme and url.path) and url.fragment)


_BUILTINS: dict[str, Callable[[str], bool]] = {
    "isEmail": extra_func.validate_email,
    "isHostname": validate_hostname,
    "isIpv4": lambda text: extra_func.validate_ip(text, 4),
    "isIpv6": lambda text: extra_func.validate_ip(text, 6),
    "isUri": _is_uri,
    "isUriRef": _is_uri_ref,
    "isUuid": extra_func.validate_uuid,
}


def _builtin_declarations() -> list[Any]:
    """Each built-in as a member (`s.isEmail()`, as Java) and a global (`isEmail(s)`, as Python)."""
    declarations = []
    for name, check in _BUILTINS.items():
        overloads = [
            cel_cpp.Overload(
                f"{name}_string_member", cel_cpp.Type.BOOL, [cel_cpp.Type.STRING], is_member=True, impl=check
            ),
            cel_cpp.Overload(f"{name}_string", cel_cpp.Type.BOOL, [cel_cpp.Type.STRING], impl=check),
        ]
        declarations.append(cel_cpp.FunctionDecl(name, overloads))
    return declarations


def _declarations(field_rule: bool) -> dict[str, Any]:
    variables = {"message": cel_cpp.Type.DYN, "now": cel_cpp.Type.TIMESTAMP}
    if field_rule:
        variables.update(
            value=cel_cpp.Type.DYN,
            name=cel_cpp.Type.STRING,
            fullName=cel_cpp.Type.STRING,
            typeName=cel_cpp.Type.STRING,
            tags=cel_cpp.Type.List(cel_cpp.Type.STRING),
        )
    return variables


# -- the compiled engine ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Activation:
    """What one evaluation sees: the message, and for CEL_FIELD the field and its value."""

    message: Any
    field: FieldContext | None = None
    value: Any = None


@dataclass(frozen=True)
class _Program:
    expression: Any
    fields: frozenset[str] | None
    uses_now: bool


class CompiledCel:
    """cel-expr-python environments and programs, compiled once per expression."""

    def __init__(self, cache_size: int = CACHE_SIZE) -> None:
        self._lock = threading.Lock()
        self._envs: dict[tuple[bool, int], Any] = {}
        self._programs: LRUCache[tuple[str, bool, int], _Program] = LRUCache(cache_size)

    def __len__(self) -> int:
        """How many programs are compiled (one per expression, kind of rule and descriptor pool)."""
        return len(self._programs)

    def _env(self, field_rule: bool, pool: Any) -> Any:
        key = (field_rule, id(pool))
        env = self._envs.get(key)
        if env is None:
            env = cel_cpp.NewEnv(
                descriptor_pool=pool,
                variables=_declarations(field_rule),
                extensions=[ExtStrings(), ExtEncoders()],
                functions=_builtin_declarations(),
            )
            self._envs[key] = env
        return env

    def program(self, text: str, field_rule: bool, pool: Any) -> _Program:
        """The compiled program for `text`; raises CelEvaluationError if it does not compile."""
        key = (text, field_rule, id(pool))
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                try:
                    expression = self._env(field_rule, pool).compile(text)
                except Exception as error:
                    raise CelCompileError(
                        f"CEL expression {text!r} does not compile: {_status(error)}"
                    ) from None
                program = _Program(expression, message_fields(text), "now" in text)
                self._programs[key] = program
            return program

    @staticmethod
    def evaluate(program: _Program, text: str, activation: Activation) -> Any:
        """Run a compiled program; raises CelEvaluationError, or _NotRepresentable for cel-python."""
        data = {"message": _bind_message(activation.message, program.fields)}
        if activation.field is not None:
            field = activation.field
            data.update(
                value=to_cel(activation.value),
                name=field.name,
                fullName=field.full_name,
                typeName=field.type_name(),
                tags=list(field.tags),
            )
        if program.uses_now:
            data["now"] = _timestamp(datetime.datetime.now(datetime.UTC))
        result = program.expression.eval(data=data)
        if result.type() == cel_cpp.Type.ERROR:
            raise CelEvaluationError(f"CEL expression {text!r} failed: {_status(result.value())}")
        return from_cel(result.plain_value())


def _bind_message(value: Any, fields: frozenset[str] | None) -> Any:
    if isinstance(value, message.Message) or value is None:
        return value
    if fields is not None and type(value) is dict:
        return {name: to_cel(value[name]) for name in fields if name in value}
    return to_cel(value)


def _pool(value: Any) -> Any:
    """The descriptor pool a Protobuf message's type lives in (None for Avro and JSON)."""
    if isinstance(value, message.Message):
        return value.DESCRIPTOR.file.pool
    return None


def _status(error: Any) -> str:
    """cel-cpp's status text on one line, without the `<input>:` prefix and the caret drawing."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return first.replace("INVALID_ARGUMENT: ERROR: <input>:", "").strip()


# -- the executors ----------------------------------------------------------------------------------


def split_guard(text: str, ctx: RuleContext) -> tuple[str | None, str]:
    """(guard, body) of `guard ; body`; no guard without a `;`, with an empty one, or when the
    rule sets `cel.ignore.guard.separator=true`."""
    guard, sep, body = text.partition(";")
    if not sep or str(ctx.get_parameter(IGNORE_GUARD_SEPARATOR)).lower() == "true":
        return None, text
    return (guard if guard.strip() else None), body


def rule_engine(ctx: RuleContext, default: str) -> str:
    """The engine a rule runs on: its `cel.engine` parameter, else the executor's."""
    engine = ctx.get_parameter(ENGINE_KEY)
    return default if engine is None else _engine_setting(engine, f"rule {ctx.rule.name!r} param")


class CompiledCondition:
    """A CEL condition compiled for the per-message path (`codec/`): calling it returns the message
    when the guard is false or the body is true, as `CelExecutor.run` decides.

    Anything else (a false body, an error, a value the compiled engine cannot represent) raises,
    and the caller runs the message through the executor, whose actions and errors are the
    reference; so this class never has to decide a failure's outcome."""

    __slots__ = ("_body", "_eval", "_fields", "_guard", "_passes", "_unjudged", "_uses_now", "subset")

    def __init__(self, compiled: CompiledCel, ctx: RuleContext, pool: Any) -> None:
        text = ctx.rule.expr
        if text is None:
            raise CelEvaluationError(f"rule {ctx.rule.name!r} has no expression")
        guard, body = split_guard(text, ctx)
        self._guard = None if guard is None else compiled.program(guard, False, pool)
        self._body = compiled.program(body, False, pool)
        self._fields = self._body.fields
        self._uses_now = self._body.uses_now
        self._eval = self._body.expression.eval
        # The everyday condition in Python (rules/cel_subset.py), trusted only when it says True.
        self._passes = compile_condition(body) if guard is None else None
        self._unjudged = 0
        self.subset: str | None = body if self._passes is not None else None
        """The condition's text where it is in the everyday subset (`cel_subset.py`) and has no
        guard: what a columnar reader may evaluate over a batch (trusting only a true)."""

    def __call__(self, value: Any) -> Any:
        """A rule step (`codec/steps.py`): the message, if it passes; else ConditionNotMet."""
        passes = self._passes
        if passes is not None and type(value) is dict:
            try:
                if passes(value) is True:
                    if self._unjudged:
                        self._unjudged = 0
                    return value
            except Unsupported:  # cel-cpp judges this record
                # A condition whose records the Python form never judges (a double field
                # against an int literal) stops trying: an exception a message, for nothing.
                self._unjudged += 1
                if self._unjudged >= GIVE_UP_AFTER:
                    self._passes = None
        # A guard that is not true (false, not a bool, or an error) skips the rule: it passes.
        if self._guard is not None and _value(self._guard, value) is not True:
            return value
        if self._uses_now:
            passed = _value(self._body, value) is True
        else:
            # `_bind_message` inlined for the usual messages (a call less per message): a
            # record's named fields converted, a Protobuf message as it is.
            fields = self._fields
            bound: Any
            if fields is not None and type(value) is dict:
                bound = {name: to_cel(value[name]) for name in fields if name in value}
            elif isinstance(value, message.Message):
                bound = value
            else:
                bound = _bind_message(value, fields)
            passed = self._eval(data={"message": bound}).value() is True
        if passed:
            return value
        raise ConditionNotMet


class ConditionNotMet(CelEvaluationError):
    """A compiled condition did not pass: the reference path runs the rule and its actions."""

    def __init__(self, message: str = "the condition did not pass") -> None:
        super().__init__(message)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_FIELD_VARIABLES = ("value", "message", "name", "fullName", "typeName", "tags", "now")
_VARIABLE_WORD = re.compile(r"(?<![\w.])(" + "|".join(_FIELD_VARIABLES) + r")\b")


def variables(expression: str) -> frozenset[str]:
    """The activation variables an expression reads (`message.name` reads `message`, not `name`)."""
    return frozenset(_VARIABLE_WORD.findall(_STRING_LITERAL.sub('""', expression)))


#: What a field guard may read to be decided once per field, when a plan is built.
FIELD_CONSTANTS = frozenset({"name", "fullName", "typeName", "tags"})


class CompiledFieldTransform:
    """A CEL_FIELD transform compiled for the per-message path (`codec/field_transforms.py`).

    `guard_for(field)` decides the guard once per field when it reads only the field's name,
    full name, type name and tags (`typeName == 'STRING' ; ...`), and says None when it reads the
    value or the message. `apply` computes a field's new value as `CelExecutor.run` does; it
    raises where the reference would do anything but return a value (an error, a value the
    compiled engine cannot represent), and the caller hands the message to the reference path.
    """

    __slots__ = ("_body", "_body_reads", "_guard", "_guard_reads")

    def __init__(self, compiled: CompiledCel, ctx: RuleContext, pool: Any = None) -> None:
        text = ctx.rule.expr
        if text is None:
            raise CelEvaluationError(f"rule {ctx.rule.name!r} has no expression")
        guard, body = split_guard(text, ctx)
        self._guard = None if guard is None else compiled.program(guard, True, pool)
        self._guard_reads = variables(guard) if guard is not None else frozenset()
        self._body = compiled.program(body, True, pool)
        self._body_reads = variables(body)

    def guard_for(self, constants: dict[str, Any]) -> bool | None:
        """True: the body runs for this field; False: the rule skips it; None: decide per message.
        `constants`: the field's name, fullName, typeName and tags."""
        if self._guard is None:
            return True
        if not self._guard_reads <= FIELD_CONSTANTS:
            return None
        result = self._guard.expression.eval(data=constants)
        return result.value() is True  # an error or a non-bool is false: the rule skips the field

    def passes_guard(self, value: Any, message: Any, constants: dict[str, Any]) -> bool:
        assert self._guard is not None
        data = _field_data(self._guard, self._guard_reads, value, message, constants)
        return self._guard.expression.eval(data=data).value() is True

    def apply(self, value: Any, message: Any, constants: dict[str, Any]) -> Any:
        result = self._body.expression.eval(
            data=_field_data(self._body, self._body_reads, value, message, constants)
        )
        if result.type() == cel_cpp.Type.ERROR:
            raise CelEvaluationError("the field transform failed")  # the reference says why
        value = result.plain_value()
        if type(value) in _SCALARS:
            return value  # what from_cel and to_plain_containers return unchanged
        return to_plain_containers(from_cel(value))


def _field_data(
    program: _Program, reads: frozenset[str], value: Any, message: Any, constants: dict[str, Any]
) -> dict[str, Any]:
    data = {name: constants[name] for name in reads if name in constants}
    if "value" in reads:
        data["value"] = to_cel(value)
    if "message" in reads:
        data["message"] = _bind_message(message, program.fields)
    if "now" in reads:
        data["now"] = _timestamp(datetime.datetime.now(datetime.UTC))
    return data


def _value(program: _Program, message: Any) -> Any:
    """A condition's value: the fewest steps from a message to cel-cpp and back (an error comes
    back as a status, which is not True)."""
    data = {"message": _bind_message(message, program.fields)}
    if program.uses_now:
        data["now"] = _timestamp(datetime.datetime.now(datetime.UTC))
    return program.expression.eval(data=data).value()


def _engine_setting(value: Any, where: str) -> str:
    if value not in ENGINES:
        raise ConfigError(f"{where} {ENGINE_KEY!r} takes {' or '.join(map(repr, ENGINES))}, not {value!r}")
    return str(value)


class CelExecutor(LazyCelExecutor):
    """The CEL rule type: conditions and transforms of the whole message."""

    def __init__(self, engine: str = COMPILED) -> None:
        super().__init__()  # cel-python's environment is made when first needed
        self.engine = _engine_setting(engine, "argument")
        self.compiled = CompiledCel()
        self._warned: set[tuple[str, str]] = set()
        self._interpreted_only: set[str] = set()

    def configure(self, client_conf: dict[str, Any], rule_conf: dict[str, Any]) -> None:
        if ENGINE_KEY in rule_conf:
            self.engine = _engine_setting(rule_conf[ENGINE_KEY], "config key")

    def transform(self, ctx: RuleContext, msg: Any) -> Any:
        return self.run(ctx, msg, Activation(msg))

    def run(self, ctx: RuleContext, msg: Any, activation: Activation) -> Any:
        """Evaluate the rule's `guard ; body`, and shape the result as the serde expects it."""
        text = ctx.rule.expr
        if text is None:
            raise CelEvaluationError(f"rule {ctx.rule.name!r} has no expression")
        field_rule = activation.field is not None
        condition = ctx.rule.kind == RuleKind.CONDITION
        guard, text = split_guard(text, ctx)
        if guard is not None:
            try:
                passed = self.evaluate(ctx, guard, activation, field_rule) is True
            except CelEvaluationError:
                passed = False  # as the Java client: a guard that cannot be evaluated is false
            if not passed:
                return True if condition else msg
        result = self.evaluate(ctx, text, activation, field_rule)
        if condition:
            if not isinstance(result, bool):
                raise CelEvaluationError(
                    f"CEL condition {text.strip()!r} returned {type(result).__name__} {result!r}, not a bool"
                )
            return result
        return self._shape(msg, result)

    @staticmethod
    def _shape(msg: Any, result: Any) -> Any:
        if isinstance(msg, message.Message):
            if isinstance(result, message.Message) and type(result) is not type(msg):
                result = type(msg).FromString(result.SerializeToString())
            return protobuf_result_writer.convert(result, msg)
        return to_plain_containers(result)

    def evaluate(self, ctx: RuleContext, text: str, activation: Activation, field_rule: bool) -> Any:
        """The value of one expression, on the engine this rule uses."""
        engine = rule_engine(ctx, self.engine)
        if engine == COMPILED and text not in self._interpreted_only:
            try:
                program = self.compiled.program(text, field_rule, _pool(activation.message))
                return self.compiled.evaluate(program, text, activation)
            except CelCompileError as error:
                if not self._interpreted_compiles(text):
                    raise
                self._interpreted_only.add(text)
                self._fall_back(ctx, text, f"the compiled engine cannot run it ({error})")
            except _NotRepresentable as error:
                self._fall_back(ctx, text, f"the message holds {error}")
        return self._evaluate_interpreted(ctx, text, activation)

    def _interpreted_compiles(self, text: str) -> bool:
        """True if cel-python accepts what cel-cpp rejected (Confluent's decimal/variant extensions)."""
        try:
            self._env.compile(text)
        except Exception:
            return False
        return True

    def _fall_back(self, ctx: RuleContext, text: str, reason: str) -> None:
        key = (str(ctx.rule.name), text)
        if key not in self._warned:
            self._warned.add(key)
            log.warning(
                "CEL rule %r: evaluating %r with cel-python (slower): %s", ctx.rule.name, text, reason
            )

    def _evaluate_interpreted(self, ctx: RuleContext, text: str, activation: Activation) -> Any:
        """cel-python, as confluent-kafka runs it (its program cache, functions and conversions)."""
        if activation.field is None:
            args: dict[str, Any] = {"message": msg_to_cel(activation.message)}
        else:
            field = activation.field
            args = {
                "value": field_value_to_cel(field, activation.value),
                "fullName": field.full_name,
                "name": field.name,
                "typeName": field.type_name(),
                "tags": [msg_to_cel(tag) for tag in field.tags],
                "message": msg_to_cel(field.containing_message),
            }
        try:
            result = self.execute_rule(ctx, text, args)
        except Exception as error:
            raise CelEvaluationError(f"CEL expression {text!r} failed: {_interpreted_cause(error)}") from None
        if isinstance(result, Exception):  # cel-python returns some errors instead of raising them
            raise CelEvaluationError(f"CEL expression {text!r} failed: {_interpreted_cause(result)}")
        return plain_interpreted(result)

    def close(self) -> None:
        return None


def _interpreted_cause(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text


class CelFieldExecutor(FieldRuleExecutor):
    """The CEL_FIELD rule type: one expression per field (of the rule's tags, or every field)."""

    def __init__(self, engine: str = COMPILED) -> None:
        self.executor = CelExecutor(engine)

    def type(self) -> str:
        return "CEL_FIELD"

    def configure(self, client_conf: dict[str, Any], rule_conf: dict[str, Any]) -> None:
        self.executor.configure(client_conf, rule_conf)

    def new_transform(self, ctx: RuleContext) -> FieldTransform:
        return self._field_transform

    def _field_transform(self, ctx: RuleContext, field_ctx: FieldContext, field_value: Any) -> Any:
        if not field_ctx.is_primitive():
            return field_value
        activation = Activation(field_ctx.containing_message, field_ctx, field_value)
        return self.executor.run(ctx, field_value, activation)

    def close(self) -> None:
        return None
