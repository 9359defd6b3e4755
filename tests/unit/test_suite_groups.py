"""The suite's worker groups take effect: `pytest -n 2 --dist loadgroup` (scripts/test) runs the
tests of one `xdist_group` on one worker (tests/conftest.py puts a named instance's tests in one,
so that no other worker starts or stops it). Run on a small project of its own: a pytest and
pytest-xdist pair that ignored the groups would pass every other test, and fail now and then."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = """
import os, pytest

@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("n", range(6))
def test_grouped(n, request):
    with open(os.environ["WHERE"], "a") as out:
        out.write(f"{os.environ['PYTEST_XDIST_WORKER']} {request.node.nodeid}\\n")

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass
"""


def test_the_tests_of_a_group_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(PROJECT)
    where = tmp_path / "where.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         str(tmp_path / "test_grouped.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={"WHERE": str(where), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    ran = [line.split() for line in where.read_text().splitlines()]
    assert len(ran) == 6
    assert all(nodeid.endswith("@together") for _, nodeid in ran), ran  # the id says its group
    assert len({worker for worker, _ in ran}) == 1, ran
