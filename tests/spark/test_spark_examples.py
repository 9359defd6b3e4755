"""examples/spark_pipeline.py, run as a user would."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from conftest import Services
from example_runner import run_example


def test_spark_pipeline_example(services: Services) -> None:
    result = run_example("spark_pipeline.py", services)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    reads = [line for line in lines if line.startswith("read ")]
    assert len(reads) == 7
    # v1 orders were decoded into v2, with its default quantity
    assert "read 1: valid=True value={'id': 1, 'item': 'tea', 'quantity': 1} rule=None" in lines
    assert "read 5: valid=False value=None rule=hasItem" in lines
    assert "read rogue: valid=False value=None rule=None" in lines
    assert "parquet: [1, 2, 3, 4, 6]" in lines
    assert any(line.startswith("dlq 5: rule=hasItem because rule 'hasItem'") for line in lines)
    assert any(line.startswith("dlq rogue: rule=None because the message has no") for line in lines)
