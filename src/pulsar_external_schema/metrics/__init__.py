"""Rule metrics: how often each data-contract rule passed, failed or broke, what action followed,
and how long it took. Confluent's Java client has them; its Python one does not.

    from pulsar_external_schema.metrics import prometheus
    prometheus.register_rule_metrics()      # counts from now on, exported by prometheus_client
    prometheus.serve_metrics(9464)          # optional: /metrics on its own port

Or OpenTelemetry (`metrics.opentelemetry.register_rule_metrics(meter_provider)`), or no exporter:
`enable_rule_metrics()` returns the `RuleMetrics` store to read `snapshot()` from yourself.

Every rule execution is counted once, keyed by rule name, subject, mode (WRITE, READ, UPGRADE,
DOWNGRADE), topic, outcome and action:

* outcome `passed` (a condition held, a transform gave a value), `failed` (a condition did not
  hold, or a transform gave nothing), `error` (the rule could not run: an evaluation error, a
  missing executor);
* action: what its `onSuccess` / `onFailure` named, as the rule engine resolved it: `NONE`,
  `ERROR`, `DLQ`, or a custom action's name.

Both paths count: the compiled one (`codec/`) for rules that pass there, and the reference one
(confluent-kafka's rule engine, `codec/serdes.py`) for everything it runs, failures included. A
message the compiled path gives up on (a rule failed, or the format library refused the value)
goes to the reference path, which runs its rules again: the compiled path counts a message only
once its plan's last stage is through, so each message is counted once (`RuleMetrics.metered`). The seconds
are the rule's own evaluation, without its action (a DLQ copy's send is not a rule's cost).

Recording is off until something turns it on, and then costs two clock reads and a locked
addition per rule and message (`benchmarks/run.py` has the row). A plan is metered
when it is built, so turn metrics on before the first message: a producer or consumer that
already has its plans counts only what takes the reference path until its plans are rebuilt.

The Spark validation job also counts its verdicts (`count_validated`), on the driver: the rules
themselves run on the executors, in other processes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ERROR",
    "FAILED",
    "PASSED",
    "Chain",
    "Key",
    "RuleMetrics",
    "RuleStat",
    "ValidationStat",
    "disable_rule_metrics",
    "enable_rule_metrics",
    "recording",
]

PASSED = "passed"
FAILED = "failed"
ERROR = "error"

#: (rule, subject, mode, topic, outcome, action)
Key = tuple[str, str, str, str, str, str]


@dataclass(frozen=True)
class RuleStat:
    """The executions of one rule, on one topic and subject, in one mode, with one outcome and action."""

    rule: str
    subject: str
    mode: str
    topic: str
    outcome: str
    """`passed`, `failed` or `error`."""
    action: str
    """`NONE`, `ERROR`, `DLQ` or a custom action's name."""
    count: int
    seconds: float
    """The rule's evaluation time, summed over `count` executions."""


@dataclass(frozen=True)
class ValidationStat:
    """Messages of `topic` the Spark validation job passed on (`verdict` `valid`) or dead-lettered
    (`dead_lettered`, with the failing `rule`, or "" when the message could not be decoded)."""

    topic: str
    verdict: str
    rule: str
    count: int


class Chain:
    """A compiled plan's rule steps and their cells (`RuleMetrics.chain`). Called as a step, it
    runs them without counting; `RuleMetrics.metered` runs and counts."""

    __slots__ = ("calls", "cells")

    def __init__(
        self, cells: tuple[list[float], ...], calls: tuple[Callable[[Any], Any] | None, ...]
    ) -> None:
        self.cells, self.calls = cells, calls

    def __call__(self, value: Any) -> Any:
        for call in self.calls:
            if call is not None:
                value = call(value)
        return value


class RuleMetrics:
    """The process's rule counts, written by the serdes and read by the exporters."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        """`clock`: what rule time is measured with (seconds; a test gives a fake one). Plans
        made after it is set measure with it."""
        self.clock = clock
        self._lock = threading.Lock()
        self._rules: dict[Key, list[float]] = {}
        self._validated: dict[tuple[str, str, str], int] = {}

    def slot(self, key: Key) -> list[float]:
        """The `[count, seconds]` cell of `key`, made once: a compiled plan keeps its cells and
        adds to them without looking them up per message."""
        cell = self._rules.get(key)
        if cell is None:
            with self._lock:
                cell = self._rules.setdefault(key, [0, 0.0])
        return cell

    def record(self, key: Key, seconds: float) -> None:
        """One execution of a rule."""
        cell = self.slot(key)
        with self._lock:
            cell[0] += 1
            cell[1] += seconds

    def chain(self, steps: Sequence[tuple[Key, Callable[[Any], Any] | None]]) -> Chain:
        """A plan's rule `steps` with the cells they are counted in (a step of None: a rule that
        has nothing to do on this schema, still counted). `metered` runs it."""
        return Chain(tuple(self.slot(key) for key, _ in steps), tuple(step for _, step in steps))

    def metered(
        self, stages: Sequence[Callable[[Any], Any]], last: Callable[[Any], Any] | None = None
    ) -> Callable[[Any], Any]:
        """One function for a plan's `stages` and its `last` stage (a writer): each chain's rules
        timed one by one, and counted as passed once `last` (or the last stage) is through. A
        message that fails on the way goes to the reference path, which counts what it runs
        itself: nothing here is counted for it."""
        lock, clock = self._lock, self.clock
        plan: list[tuple[tuple[list[float], ...] | None, tuple[Callable[[Any], Any] | None, ...]]] = [
            (stage.cells, stage.calls) if isinstance(stage, Chain) else (None, (stage,)) for stage in stages
        ]
        first = stages[0] if len(stages) == 1 else None
        only = first.calls[0] if isinstance(first, Chain) and len(first.calls) == 1 else None
        if isinstance(first, Chain) and only is not None:  # one rule, then perhaps the writer
            (cell,) = first.cells
            # The lock's own calls rather than `with`, and no identity writer on reads (a few
            # percent of a decode); nothing between the lock's calls can raise.
            take, give, then = lock.acquire, lock.release, last

            def one(value: Any) -> Any:
                start = clock()
                value = only(value)
                spent = clock() - start
                if then is not None:
                    value = then(value)
                take()
                cell[0] += 1
                cell[1] += spent
                give()
                return value

            return one
        if last is not None:
            plan.append((None, (last,)))
        cells = tuple(cell for counted, _ in plan if counted is not None for cell in counted)

        def metered(value: Any) -> Any:
            spent = []
            for counted, calls in plan:
                if counted is None:
                    value = calls[0](value)  # type: ignore[misc]
                    continue
                start = clock()
                for call in calls:
                    if call is not None:
                        value = call(value)
                    now = clock()
                    spent.append(now - start)
                    start = now
            with lock:
                for cell, seconds in zip(cells, spent, strict=True):
                    cell[0] += 1
                    cell[1] += seconds
            return value

        return metered

    def count_validated(self, topic: str, verdict: str, rule: str, count: int) -> None:
        """`count` messages of `topic` the validation job gave `verdict` (failing `rule`)."""
        with self._lock:
            key = (topic, verdict, rule)
            self._validated[key] = self._validated.get(key, 0) + count

    def snapshot(self) -> list[RuleStat]:
        """Every rule count so far (they only grow: exporters report them as counters)."""
        with self._lock:
            rows = [(key, int(cell[0]), cell[1]) for key, cell in self._rules.items() if cell[0]]
        return [RuleStat(*key, count=count, seconds=seconds) for key, count, seconds in rows]

    def counts(self) -> dict[Key, int]:
        """Executions so far per (rule, subject, mode, topic, outcome, action)."""
        with self._lock:
            return {key: int(cell[0]) for key, cell in self._rules.items() if cell[0]}

    def validated(self) -> list[ValidationStat]:
        with self._lock:
            rows = list(self._validated.items())
        return [ValidationStat(*key, count=count) for key, count in rows]

    def clear(self) -> None:
        with self._lock:
            for cell in self._rules.values():
                cell[0], cell[1] = 0, 0.0
            self._validated.clear()


_recording: RuleMetrics | None = None
_store = RuleMetrics()


def enable_rule_metrics() -> RuleMetrics:
    """Count rule executions from now on (idempotent); returns the process's store."""
    global _recording
    _recording = _store
    return _store


def disable_rule_metrics() -> None:
    """Stop counting (the counts so far stay readable)."""
    global _recording
    _recording = None


def recording() -> RuleMetrics | None:
    """The store while metrics are on, else None: what a serde asks before counting."""
    return _recording
