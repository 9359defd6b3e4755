"""The benchmarks import what the package still has: every `from pulsar_external_schema... import
name` in benchmarks/ (those inside functions too, which run only in a benchmark run) resolves. A
name moved or renamed in the package fails here, not in the next benchmark run."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _package_imports() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pulsar_external_schema"):
                found += [(path.name, node.module or "", alias.name) for alias in node.names]
    return found


def test_the_benchmarks_have_package_imports_to_check() -> None:
    assert ("run.py", "pulsar_external_schema._pulsar_client", "raw_client") in _package_imports()


@pytest.mark.parametrize(("script", "module", "name"), _package_imports())
def test_each_name_a_benchmark_imports_exists(script: str, module: str, name: str) -> None:
    if ".spark" in module:
        pytest.importorskip("pyspark", reason="the Spark benchmark's imports need the spark extra")
    imported = importlib.import_module(module)
    assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}") is not None, (
        f"benchmarks/{script} imports {name} from {module}, which has no such name"
    )
