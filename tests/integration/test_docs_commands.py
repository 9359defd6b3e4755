"""Every console command the documentation shows runs, as written, against the real services: the
docs and the tool cannot disagree on a flag, a `-p` key or a file, and no command in them prints a
traceback or is refused as a usage error (exit code 2).

Each block runs with its topic names made unique (`--topic test` becomes `--topic test-<id>`), from
the clone's root (the files under examples/ resolve), with the console script on the PATH.
Outputs a page shows are checked where the page promises them. Skipped, with the reason: the
`validate` block of docs/spark.md (a Spark job on topics of other namespaces: tests/spark/
test_validate.py runs the command)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import REPO, Services

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: A function in front of the console script: a usage error (exit 2) is reported, never hidden.
GUARD = """
pulsar-external-schema() {
  command pulsar-external-schema "$@"; local code=$?
  if [ "$code" -eq 2 ]; then echo "DOCS-USAGE-ERROR: pulsar-external-schema $*" >&2; fi
  return "$code"
}
"""


def command_blocks() -> list[tuple[str, int, str]]:
    blocks = []
    for page in PAGES:
        text = page.read_text()
        for index, block in enumerate(re.findall(r"```bash\n(.*?)```", text, re.S)):
            if "pulsar-external-schema " in block and " validate" not in block:
                blocks.append((str(page.relative_to(REPO)), index, block))
    return blocks


def run_block(services: Services, block: str, suffix: str) -> subprocess.CompletedProcess[str]:
    block = re.sub(r"(--topic\s+)([A-Za-z][\w-]*)", rf"\g<1>\g<2>-{suffix}", block)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "PULSAR_ADMIN_URL": services.admin_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    command = ["bash", "-c", GUARD + block]
    return subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, env=env, timeout=300, check=False
    )


def shown_outputs(block: str, suffix: str) -> list[str]:
    """The output lines a block shows as comments (`# {"subject": ...}`), as this run prints them:
    its topic names carry the suffix, ids are left out, `...` ends what is compared. A block that
    writes nothing (it reads a topic other steps fill) shows outputs of data it does not make:
    only its commands are checked."""
    if not re.search(r"pulsar-external-schema (produce|register)", block):
        return []
    topics = set(re.findall(r"--topic\s+([A-Za-z][\w-]*)", block))
    expected = []
    for shown in re.findall(r"^# ((?:line \d+|incompatible|\{|o-\d).*)$", block, re.M):
        line = shown.split("...")[0].strip()
        for topic in topics:
            line = re.sub(rf"\b(topic |default\.){re.escape(topic)}\b", rf"\g<1>{topic}-{suffix}", line)
        expected.append(_without_ids(line))
    return expected


def _without_ids(text: str) -> str:
    return re.sub(r'"id": \d+', '"id": ', text)


def test_the_pages_show_console_commands() -> None:
    pages = {page for page, _, _ in command_blocks()}
    assert {"README.md", "docs/cli.md", "docs/getting-started.md", "docs/operations.md"} <= pages


@pytest.mark.parametrize(
    ("page", "index", "block"),
    command_blocks(),
    ids=[f"{page}#{index}" for page, index, _ in command_blocks()],
)
def test_a_documented_command_block_runs_as_written(
    services: Services, page: str, index: int, block: str
) -> None:
    suffix = uuid.uuid4().hex[:8]
    result = run_block(services, block, suffix)

    assert "DOCS-USAGE-ERROR" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    printed = _without_ids(result.stdout + result.stderr)
    flat = "".join(printed.split())  # JSON is printed indented, shown on one line
    for expected in shown_outputs(block, suffix):
        assert "".join(expected.split()) in flat, (expected, printed)
