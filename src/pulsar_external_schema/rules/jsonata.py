"""JSONATA rules (migrations) with the Java client's runaway limits.

confluent-kafka's Python executor caches parsed expressions but evaluates without limits, so an
expression that never ends hangs the consumer that runs it. jsonata-python has limits, but they
live on the parsed expression: its clock starts when the expression is parsed (a cached
expression times out for good once that much time has passed) and its depth counter is shared by
every evaluation (and left raised by one that fails). Here the parsed expression is cached and the
limits are set up afresh for each evaluation, in a frame of its own, through the same hooks:

* `jsonata.timeout.ms` (default 60000, as Java): evaluation time;
* `jsonata.max.depth` (default 1000, as Java): nesting of evaluations (recursion).

Both are config keys and rule parameters (a rule's own value wins). A rule over either limit
fails with an error naming the limit, and the rule's onFailure action runs, as for any failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import jsonata
from cachetools import LRUCache
from confluent_kafka.schema_registry import RuleKind
from confluent_kafka.schema_registry.serde import RuleContext, RuleExecutor

from .._settings import integer
from .._signal import InternalSignal
from ..errors import ConfigError, JsonataError

TIMEOUT_KEY = "jsonata.timeout.ms"
MAX_DEPTH_KEY = "jsonata.max.depth"
DEFAULT_TIMEOUT_MS = 60_000
DEFAULT_MAX_DEPTH = 1000
#: Parsed expressions kept per executor (Java keeps 100).
CACHE_SIZE = 100

#: What an evaluation's time is read from (seconds; tests give a fake one).
clock: Callable[[], float] = time.monotonic
#: The clock is read once per this many evaluation steps (a step is a few microseconds).
_CLOCK_EVERY = 64


class _Runaway(InternalSignal):
    """An evaluation went over a limit (caught and reworded by `JsonataExecutor.evaluate`)."""


class _Limits:
    """One evaluation's clock and depth, checked as jsonata-python enters and leaves each step.

    jsonata-python's own `Timebox` does this too, but reads the clock at every step, and starts
    it when the expression is parsed rather than when it is evaluated."""

    __slots__ = ("deadline", "depth", "max_depth", "steps", "timeout_ms")

    def __init__(self, timeout_ms: int, max_depth: int) -> None:
        self.timeout_ms = timeout_ms
        self.max_depth = max_depth
        self.deadline = clock() + timeout_ms / 1000
        self.depth = 0
        self.steps = 0

    def watch(self, frame: Any) -> None:
        frame.set_evaluate_entry_callback(self.enter)
        frame.set_evaluate_exit_callback(self.leave)

    def enter(self, expr: Any, input: Any, environment: Any) -> None:
        if environment.is_parallel_call:
            return
        self.depth += 1
        if self.depth > self.max_depth:
            raise _Runaway(f"recursed deeper than {MAX_DEPTH_KEY}={self.max_depth}")
        self.steps += 1
        if self.steps % _CLOCK_EVERY == 0 and clock() > self.deadline:
            raise _Runaway(f"ran longer than {TIMEOUT_KEY}={self.timeout_ms}")

    def leave(self, expr: Any, input: Any, environment: Any, result: Any) -> None:
        if not environment.is_parallel_call:
            self.depth -= 1


def _limit(value: Any, key: str, where: str) -> int:
    number = integer(value)
    if number is None or number <= 0:
        raise ConfigError(f"{where} {key!r} takes a positive integer, not {value!r}")
    return number


class JsonataExecutor(RuleExecutor):
    """The JSONATA rule type: transforms (usually UPGRADE/DOWNGRADE migrations) and conditions."""

    def __init__(self, timeout_ms: int = DEFAULT_TIMEOUT_MS, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.timeout_ms = timeout_ms
        self.max_depth = max_depth
        self._lock = threading.Lock()
        self._parsed: LRUCache[str, jsonata.Jsonata] = LRUCache(CACHE_SIZE)

    def type(self) -> str:
        return "JSONATA"

    def configure(self, client_conf: dict[str, Any], rule_conf: dict[str, Any]) -> None:
        if TIMEOUT_KEY in rule_conf:
            self.timeout_ms = _limit(rule_conf[TIMEOUT_KEY], TIMEOUT_KEY, "config key")
        if MAX_DEPTH_KEY in rule_conf:
            self.max_depth = _limit(rule_conf[MAX_DEPTH_KEY], MAX_DEPTH_KEY, "config key")

    def parse(self, text: str) -> jsonata.Jsonata:
        """The parsed expression, once per expression text."""
        with self._lock:
            parsed = self._parsed.get(text)
            if parsed is None:
                try:
                    parsed = jsonata.Jsonata(text)
                except Exception as error:
                    raise JsonataError(
                        f"JSONata expression {_shorten(text)!r} does not parse: {error}"
                    ) from None
                self._parsed[text] = parsed
            return parsed

    def transform(self, ctx: RuleContext, message: Any) -> Any:
        text = ctx.rule.expr
        if not text:
            raise JsonataError(f"rule {ctx.rule.name!r} has no expression")
        timeout_ms, max_depth = self.limits(ctx)
        result = self.evaluate(text, message, timeout_ms=timeout_ms, max_depth=max_depth)
        if ctx.rule.kind == RuleKind.CONDITION:
            return _as_boolean(result)
        return message if result is None else result

    def evaluate(self, text: str, message: Any, *, timeout_ms: int, max_depth: int) -> Any:
        """Evaluate with fresh limits: a frame of this evaluation's own carries the clock and depth."""
        parsed = self.parse(text)
        frame = jsonata.Jsonata.Frame(None)
        _Limits(timeout_ms, max_depth).watch(frame)
        jsonata.Jsonata.CURRENT.jsonata = parsed  # what $now() and higher-order functions read
        try:
            return parsed.evaluate(message, frame)
        except _Runaway as runaway:
            raise JsonataError(f"JSONata expression {_shorten(text)!r} {runaway}") from None
        except RecursionError:
            raise JsonataError(
                f"JSONata expression {_shorten(text)!r} recursed deeper than Python allows; "
                f"lower {MAX_DEPTH_KEY} (now {max_depth}) to stop it earlier"
            ) from None
        except Exception as error:
            raise JsonataError(f"JSONata expression {_shorten(text)!r} failed: {error}") from None

    def limits(self, ctx: RuleContext) -> tuple[int, int]:
        """(`jsonata.timeout.ms`, `jsonata.max.depth`) for a rule: its params, else the config."""
        timeout, depth = ctx.get_parameter(TIMEOUT_KEY), ctx.get_parameter(MAX_DEPTH_KEY)
        where = f"rule {ctx.rule.name!r} param"
        return (
            self.timeout_ms if timeout is None else _limit(timeout, TIMEOUT_KEY, where),
            self.max_depth if depth is None else _limit(depth, MAX_DEPTH_KEY, where),
        )

    def close(self) -> None:
        return None


def _as_boolean(result: Any) -> bool:
    """A condition's verdict as the Java client reads it (JsonNode.asBoolean(true))."""
    if isinstance(result, bool):
        return result
    if isinstance(result, int | float):
        return result != 0
    if isinstance(result, str):
        return result.strip().lower() != "false"
    return True


def _shorten(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
