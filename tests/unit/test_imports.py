"""What a process imports and builds before it does its work: each fresh Spark worker (a Python
process per task slot, and one planning) pays it again, as does every console command.

Asserted by module, not by time (timings here are noise on 2 cores); the figures are in
docs/spark.md ("what a query costs").
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_the_package_root_imports_its_public_names_on_first_use() -> None:
    modules = imported_after("import pulsar_external_schema")
    assert not {"pulsar_external_schema.schema", "pulsar_external_schema.consumer", "celpy"} & modules
    modules = imported_after("from pulsar_external_schema import ExternalSchema")
    assert "pulsar_external_schema.schema" in modules
    assert "pulsar_external_schema.consumer" not in modules


def test_a_spark_read_task_imports_neither_the_writer_nor_the_pipeline() -> None:
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    # what unpickling the reader of a query imports on an executor
    modules = imported_after("import pulsar_external_schema.spark.reader")
    unneeded = {
        "pulsar_external_schema.spark.writer",
        "pulsar_external_schema.spark.pipeline",
        "pulsar_external_schema.producer",
        "pulsar_external_schema.consumer",
    }
    assert not unneeded & modules


def test_a_factory_builds_cel_pythons_parser_only_when_a_rule_needs_it() -> None:
    # confluent-kafka's CEL executor builds a lark LALR parser (~0.5 s a process) in __init__
    code = """
import lark
built = []
init = lark.Lark.__init__
def counting(self, *args, **kwargs):
    built.append(1)
    init(self, *args, **kwargs)
lark.Lark.__init__ = counting
from pulsar_external_schema import SchemaRegistrySchemaFactory
factory = SchemaRegistrySchemaFactory({"schema.registry.url": "http://127.0.0.1:9"})
assert not built, "a factory built cel-python's parser"
factory.rules.executor("CEL")._interpreted_compiles("1 + 1 == 2")
assert built, "cel-python's parser is built when an expression needs it"
"""
    imported_after(code)
