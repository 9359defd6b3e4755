"""JSONata rules: parsed once, with the Java client's runaway limits set afresh per evaluation."""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from contracts import contract, mock_factory, rule

from pulsar_external_schema import ConfigError, RuleViolationError
from pulsar_external_schema.errors import JsonataError
from pulsar_external_schema.rules import jsonata
from pulsar_external_schema.rules.jsonata import JsonataExecutor

LOOP = "($f := function($x){ $f($x) }; $f(1))"  # tail call: never deeper, never done
DEEP = "($f := function($x){ 1 + $f($x) }; $f(1))"  # grows the stack without end

RECORD = json.dumps({"type": "record", "name": "R", "fields": [{"name": "f1", "type": "string"}]})


def with_rules(*rules: dict[str, Any]) -> Schema:
    return contract(RECORD, ruleSet={"domainRules": list(rules)})


def test_a_runaway_loop_stops_at_the_timeout_with_a_clear_error() -> None:
    executor = JsonataExecutor()
    with pytest.raises(JsonataError, match=r"ran longer than jsonata.timeout.ms=200"):
        executor.evaluate(LOOP, {}, timeout_ms=200, max_depth=1000)


def test_runaway_recursion_stops_at_the_depth_limit() -> None:
    executor = JsonataExecutor()
    with pytest.raises(JsonataError, match=r"recursed deeper than jsonata.max.depth=50"):
        executor.evaluate(DEEP, {}, timeout_ms=60_000, max_depth=50)


def test_a_cached_expression_gets_a_fresh_clock_and_depth_each_time() -> None:
    # jsonata-python's own limits start the clock at parse time and share the depth counter:
    # a cached expression would time out for good, and failures would leave the depth raised.
    executor = JsonataExecutor()
    migrate = "$merge([$, {'total': price * quantity}])"
    executor.evaluate(migrate, {"price": 2, "quantity": 3}, timeout_ms=100, max_depth=20)
    time.sleep(0.15)
    for _ in range(30):
        with pytest.raises(JsonataError):
            executor.evaluate(DEEP, {}, timeout_ms=100, max_depth=20)
    result = executor.evaluate(migrate, {"price": 2, "quantity": 3}, timeout_ms=100, max_depth=20)
    assert result == {"price": 2, "quantity": 3, "total": 6}
    assert executor.parse(migrate) is executor.parse(migrate)


def test_limits_are_per_evaluation_across_threads() -> None:
    executor = JsonataExecutor()
    nested = "($f := function($n){ $n = 0 ? 0 : 1 + $f($n - 1) }; $f(depth))"
    results: list[Any] = []

    def run() -> None:
        for _ in range(20):
            results.append(executor.evaluate(nested, {"depth": 30}, timeout_ms=10_000, max_depth=400))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [30] * 80


def test_limits_come_from_config_keys_and_rule_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluation's clock moves 100 ms a read here: `jsonata.timeout.ms=150` stops the loop at
    the second read, and the default (a minute) would have let it run 600 reads."""
    reads = itertools.count()
    monkeypatch.setattr(jsonata, "clock", lambda: next(reads) / 10)
    loop = rule("runaway", "TRANSFORM", "JSONATA", "WRITE", LOOP)
    factory = mock_factory(**{"jsonata.timeout.ms": 150})
    with pytest.raises(RuleViolationError) as failure:
        factory.avro(with_rules(loop)).encode("orders", {"f1": "x"})
    assert "rule 'runaway' (TRANSFORM JSONATA, WRITE) failed" in str(failure.value)
    assert "ran longer than jsonata.timeout.ms=150" in str(failure.value)
    assert "topic orders, subject public.default.orders-value" in str(failure.value)
    assert next(reads) <= 4  # the deadline's read, then a read every 64 steps until past it

    deep = rule("deep", "TRANSFORM", "JSONATA", "WRITE", DEEP, params={"jsonata.max.depth": "40"})
    with pytest.raises(RuleViolationError, match=r"recursed deeper than jsonata.max.depth=40"):
        mock_factory().avro(with_rules(deep)).encode("orders", {"f1": "x"})


@pytest.mark.parametrize(("key", "value"), [("jsonata.timeout.ms", 0), ("jsonata.max.depth", "x")])
def test_bad_limits_are_config_errors(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        mock_factory(**{key: value})


def test_a_bad_limit_in_a_rule_parameter_names_the_rule() -> None:
    migrate = rule("migrate", "TRANSFORM", "JSONATA", "WRITE", "$", params={"jsonata.timeout.ms": "soon"})
    with pytest.raises(
        RuleViolationError, match=r"rule 'migrate' param 'jsonata.timeout.ms' takes a positive"
    ):
        mock_factory().avro(with_rules(migrate)).encode("orders", {"f1": "x"})


def test_conditions_read_the_result_as_the_java_client() -> None:
    executor = JsonataExecutor()
    for expression, expected in [("f1 = 'x'", True), ("f1 = 'y'", False), ("nothing", True), ("0", False)]:
        check = rule("check", "CONDITION", "JSONATA", "WRITE", expression)
        schema = mock_factory().avro(with_rules(check))
        if expected:
            schema.encode("orders", {"f1": "x"})
        else:
            with pytest.raises(RuleViolationError, match="rule 'check'"):
                schema.encode("orders", {"f1": "x"})
    assert executor.type() == "JSONATA"


def test_a_parse_error_names_the_expression() -> None:
    broken = rule("broken", "TRANSFORM", "JSONATA", "WRITE", "$merge([$, {")
    with pytest.raises(RuleViolationError, match=r"JSONata expression '\$merge\(\[\$, \{' does not parse"):
        mock_factory().avro(with_rules(broken)).encode("orders", {"f1": "x"})
