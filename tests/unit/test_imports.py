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
    assert not HEAVY & modules
    modules = imported_after("from pulsar_external_schema import ExternalSchema")
    assert "pulsar_external_schema.schema" in modules
    assert "pulsar_external_schema.consumer" not in modules


#: What a console tool's help, version, usage errors and completion need none of (~0.9 s of imports
#: together: pulsar-client, confluent-kafka's registry client, the codec, cel-python...).
HEAVY = {"pulsar", "_pulsar", "confluent_kafka", "fastavro", "google.protobuf", "celpy", "httpx", "pyarrow"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["--help"],
        ["consume", "--help"],
        ["check", "--help"],
        ["completion", "bash"],
        ["consme"],
    ],
)
def test_the_console_tools_start_without_their_heavy_imports(argv: list[str]) -> None:
    code = f"""
import contextlib, io, sys
from pulsar_external_schema.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main({argv!r})
    except SystemExit:
        pass
"""
    assert not HEAVY & imported_after(code)


def test_a_console_tools_first_import_is_only_what_handles_its_signals() -> None:
    """What the console script imports before `main` handles SIGINT and SIGTERM: a Ctrl-C in
    that time is Python's (a traceback), so it holds the package root, `cli` and `cli.signals`,
    not the command lines, `typing` or `dataclasses` (~60 ms of the tool's start)."""
    modules = imported_after("from pulsar_external_schema.cli import main")
    assert "pulsar_external_schema.cli.signals" in modules
    assert not {"pulsar_external_schema.cli.parsers", "pulsar_external_schema.cli.common"} & modules
    assert not {"typing", "dataclasses", "inspect", "argparse"} & modules


def test_a_command_imports_what_it_runs_when_it_runs() -> None:
    code = """
import contextlib, io
from pulsar_external_schema.cli import main
with contextlib.redirect_stderr(io.StringIO()):
    main(["subjects", "--registry-url", "http://127.0.0.1:9", "-p", "http.connect.timeout.ms=1"])
"""
    modules = imported_after(code)
    assert "pulsar_external_schema.cli.registry_tools" in modules
    assert not {"pulsar_external_schema.cli.console", "pulsar_external_schema.cli.validate"} & modules


def test_a_spark_read_task_imports_neither_the_writer_nor_the_pipeline() -> None:
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    # what a read task imports on an executor: the reader Spark unpickles, and the paths it reads on
    modules = imported_after(
        "import pulsar_external_schema.spark.reader, pulsar_external_schema.reading.native, "
        "pulsar_external_schema.reading.rows"
    )
    unneeded = {
        "pulsar_external_schema.spark.writer",
        "pulsar_external_schema.spark.pipeline",
        "pulsar_external_schema.producer",
        "pulsar_external_schema.consumer",
    }
    assert not unneeded & modules
    assert not _EVOLUTION & modules


def test_reading_needs_no_pyspark() -> None:
    # what reads topics into Arrow outside Spark: `arrow`, and under it the column types, the
    # planning and both range readers
    modules = imported_after(
        "import pulsar_external_schema.arrow, pulsar_external_schema.reading.types, "
        "pulsar_external_schema.tasks.columns, pulsar_external_schema.reading.planning, "
        "pulsar_external_schema.reading.rows, pulsar_external_schema.reading.native"
    )
    assert "pulsar_external_schema.reading.decoders" in modules  # it did import the readers
    assert not {m for m in modules if m == "pyspark" or m.startswith("pyspark.")}


def test_a_writes_planner_and_committer_load_nothing_that_encodes_or_sends() -> None:
    """Spark plans a Python data source's write (`write_into_data_source`) and commits it
    (`commit_data_source_write`) in Python processes of their own: each makes and pickles the
    writer, or unpickles it and its tasks' results, and nothing more. The serdes, the codec and
    the registry's client cost each of them ~0.45 s of imports (the validation job's first batch
    pays it for both its writes); only the write tasks encode and send."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    modules = imported_after(
        """
import pickle
from pyspark.sql.types import StructType
from pulsar_external_schema.spark.source import PulsarExternalDataSource
from pulsar_external_schema.spark.writer import WriteResult
source = PulsarExternalDataSource({
    "service.url": "pulsar://x:6650", "schema.registry.url": "http://r", "topic": "t",
    "producerName": "p", "sequenceBase": "3",
})
columns = StructType.fromJson({"type": "struct", "fields": [
    {"name": "data", "type": "binary", "nullable": True, "metadata": {}}]})
for writer in (source.writer(columns, False), source.streamWriter(columns, False)):
    shipped = pickle.loads(pickle.dumps(writer))
shipped.commit([pickle.loads(pickle.dumps(WriteResult(2, 1)))], 0)
"""
    )
    assert "pulsar_external_schema.spark.writer" in modules
    unneeded = (
        "pulsar_external_schema.codec",
        "pulsar_external_schema.factory",
        "pulsar_external_schema.schema",
        "confluent_kafka.schema_registry",
        "fastavro",
        "pulsar",
        "_pulsar",
        "_pulsar_external_schema_native",
    )
    assert [m for m in modules if any(m == u or m.startswith(u + ".") for u in unneeded)] == []


#: The schema evolution checkers (~60 ms a process): for registering and checking schemas, and
#: for JSON under the producer/consumer model; a process that only decodes loads none of them.
_EVOLUTION = {
    "pulsar_external_schema.evolution.compatibility",
    "pulsar_external_schema.evolution.creek",
    "pulsar_external_schema.evolution.json_diff",
    "pulsar_external_schema.json_evolution",
}


def test_a_factory_loads_the_evolution_checkers_when_they_are_used() -> None:
    assert not _EVOLUTION & imported_after("from pulsar_external_schema import SchemaRegistrySchemaFactory")
    used = imported_after("from pulsar_external_schema.evolution import check_compatibility")
    assert "pulsar_external_schema.evolution.compatibility" in used


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


def test_the_version_constant_is_the_installed_distributions() -> None:
    """`_version.VERSION` is the one place the version is written (pyproject.toml reads it)."""
    from importlib.metadata import version

    import pulsar_external_schema

    assert pulsar_external_schema.__version__ == version("pulsar-external-schema")


@pytest.mark.parametrize(
    ("module", "beyond"),
    [("pulsar_external_schema", {"__version__"}), ("pulsar_external_schema.evolution", set())],
)
def test_the_roots_three_lists_of_public_names_agree(module: str, beyond: set[str]) -> None:
    """The root (and `evolution`, which loads its checkers lazily the same way) names each public
    name three times (for type checkers, for the lazy import, in `__all__`): a name added to one
    list and not the others would be missing for someone."""
    import ast
    import importlib
    from pathlib import Path

    root = importlib.import_module(module)
    assert root.__file__ is not None
    tree = ast.parse(Path(root.__file__).read_text())
    typed = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }
    lazy = set(root._LAZY)
    assert typed == lazy
    assert set(root.__all__) == lazy | beyond
    assert all(getattr(root, name) is not None for name in root.__all__)
