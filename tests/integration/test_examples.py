"""Every example runs against the real services, so none rots."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, Services
from example_runner import run_example


def run_shell(services: Services, *args: str) -> subprocess.CompletedProcess[str]:
    """`bash ARGS` with the installed console script on the PATH and the services' URLs set."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PULSAR_SERVICE_URL": services.pulsar_url,
        "SCHEMA_REGISTRY_URL": services.registry_url,
    }
    return subprocess.run(["bash", *args], capture_output=True, text=True, env=env, timeout=300, check=False)


def test_quickstart(services: Services) -> None:
    result = run_example("quickstart.py", services)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    consumed = [line for line in lines if line.startswith("partition ")]
    assert len(consumed) == 6
    # Two writer versions on one topic, each message decoded with its own schema.
    assert sum("'quantity'" in line for line in consumed) == 3
    assert len({line.split()[2] for line in consumed}) == 2  # two distinct __schema_id values
    assert len({line.split()[1] for line in consumed}) > 1  # spread over partitions
    summary = lines[-1]
    assert summary.startswith("summary: 6 produced, 6 consumed and decoded (3 with ff00")
    assert summary.endswith("has versions [1, 2]")


def test_arrow_tables(services: Services) -> None:
    result = run_example("arrow_tables.py", services)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "table: 100 rows, columns key, value, topic, partition, messageId, publishTime, eventTime, "
        "properties, schemaId, _valid, _error, _rule, _failure",
        "polars: 90 valid orders worth 11250.0",
        "polars: 10 refused, by rule ['hasItem']",
        "pandas: 100 rows",
        "duckdb: the second wave has 45 valid orders worth 8437.5",
        "parquet: the first wave, 50 rows",
        "write_table: 54 large orders written, 54 read back",
    ]


def run_first_snippet(
    page: str, services: Services, page_topic: str, topic: str
) -> subprocess.CompletedProcess[str]:
    """Run a page's first Python block as written, on our services and a topic of the test's own."""
    code = (REPO / page).read_text().split("```python\n", 1)[1].split("```", 1)[0]
    code = (
        code.replace("http://127.0.0.1:8081", services.registry_url)
        .replace("pulsar://127.0.0.1:6650", services.pulsar_url)
        .replace(page_topic, topic)
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_readme_quick_start_runs(services: Services, topic: str) -> None:
    result = run_first_snippet("README.md", services, "persistent://public/default/orders", topic)

    assert result.returncode == 0, result.stderr
    assert "{'id': 1, 'item': 'tea'} {'__schema_id': 'ff00" in result.stdout


def test_data_contracts_example(services: Services) -> None:
    result = run_example("data_contracts.py", services)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "sent Ann",
        lines[1],
        "sent Cid",
    ]
    assert lines[1].startswith(
        "rejected Bob: rule checkSsnLen failed; copy in persistent://public/default/bad-data-"
    )
    assert lines[3:6] == [
        "consumed {'name': 'Ann', 'ssn': '123456789'}",
        "consumed {'name': 'Cid', 'ssn': '987654321'}",
        "consume: 2 processed, 0 dead-lettered",
    ]
    dead = lines[6]
    assert dead.startswith('dead letter Bob {"name": "Bob", "ssn": "12-34"} {"__rule.exception": ')
    assert '"__rule.mode": "WRITE", "__rule.name": "checkSsnLen"' in dead


def test_data_contracts_doc_first_example_rejects_this_will_fail(services: Services, topic: str) -> None:
    result = run_first_snippet("docs/data-contracts.md", services, "persistent://public/default/test", topic)

    assert result.returncode == 1  # the second send raises, as the page shows
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "pulsar_external_schema.errors.RuleViolationError: rule 'checkLen' (CONDITION CEL, WRITE)"
    )
    assert f"(topic {topic}, subject " in last


def test_rule_metrics_example(services: Services) -> None:
    result = run_example("rule_metrics.py", services)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "consumed 7"
    assert sorted(lines[1:]) == [
        'rule="positiveQty" mode="WRITE" outcome="failed" action="DLQ" 3',
        'rule="positiveQty" mode="WRITE" outcome="passed" action="NONE" 7',
        'rule="sane" mode="READ" outcome="passed" action="NONE" 7',
    ]


def test_referenced_rules_example(services: Services) -> None:
    result = run_example("referenced_rules.py", services)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "sent order 1",
        "refused order 2: rule 'pricePositive' (CONDITION CEL, WRITE) on Order.products[1] "
        "(subject shop.Product)",
        "consumed order 1",
    ]


def test_json_evolution_example(services: Services) -> None:
    result = run_example("json_evolution.py", services)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "producers v1 and v2 registered and sent"
    assert lines[1].startswith(
        "refused: the producer schema is not compatible with the registered producer schemas"
    )
    assert lines[2].startswith("  TYPE_CHANGED at #/properties/checked [backward, version 2, id ")
    assert lines[3].startswith("  TYPE_CHANGED at #/properties/checked [forward, version 2, id ")
    assert lines[4:] == [
        "consumer v1 read {'id': 1, 'name': 'first'}",
        "consumer v1 read {'id': 2, 'name': 'second', 'checked': True}",
        "view read {'id': 1}",
        "view read {'id': 2}",
    ]


def test_evolution_doc_first_example_runs(services: Services, topic: str) -> None:
    result = run_first_snippet("docs/evolution.md", services, "persistent://public/default/checks-", topic)

    assert result.returncode == 0, result.stderr
    assert "{'id': 1, 'name': 'first'}" in result.stdout.splitlines()  # pulsar-client logs there too


def test_console_example(services: Services) -> None:
    result = run_shell(services, str(REPO / "examples" / "console.sh"))

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "produce exit code: 1" in out and "check exit code: 1" in out
    assert out.split("== consume", 1)[1].splitlines()[1] == '{"f1": "success"}'
    assert '"expr": "size(message.f1) < 10"' in out
    assert "f1: type mismatch: reader has int, writer has string" in out
    assert "line 2: rule 'checkLen' (CONDITION CEL, WRITE) failed" in result.stderr


def test_migrations_example(services: Services) -> None:
    result = run_example("migrations.py", services)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "sent Ann with major version 1, Bob with major version 2",
        'v1 consumer: {"name": "Ann", "ssn": "123456789"}',
        'v1 consumer: {"name": "Bob", "ssn": "987654321"}',  # DOWNGRADE
        'v2 consumer: {"name": "Ann", "socialSecurityNumber": "123456789"}',  # UPGRADE
        'v2 consumer: {"name": "Bob", "socialSecurityNumber": "987654321"}',
    ]


def test_getting_started_steps_run_as_written(services: Services, topic: str) -> None:
    """Step 4 (the console tools) and step 5 (Python) of docs/getting-started.md, on one topic."""
    page = (REPO / "docs" / "getting-started.md").read_text()
    shell = page.split("## 4.", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    short = topic.rsplit("/", 1)[1]
    step4 = run_shell(services, "-c", shell.replace("--topic test", f"--topic {short}"))
    code = (
        code.replace("http://127.0.0.1:8081", services.registry_url)
        .replace("pulsar://127.0.0.1:6650", services.pulsar_url)
        .replace("persistent://public/default/test", topic)
    )
    step5 = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )

    assert step4.returncode == 0, step4.stderr  # the last command (get) succeeded
    assert "line 2: rule 'checkLen' (CONDITION CEL, WRITE) failed" in step4.stderr
    assert step4.stdout.startswith('{"f1": "success"}\n')
    assert step5.returncode == 0, step5.stderr
    printed = [line for line in step5.stdout.splitlines() if not line[:4].isdigit()]  # not the C++ log
    assert printed[0].startswith("rejected: rule 'checkLen' (CONDITION CEL, WRITE) failed")
    assert printed[1:] == ["{'f1': 'success'}"]


def test_readme_console_quick_start_runs(services: Services, topic: str) -> None:
    page = (REPO / "README.md").read_text()
    shell = page.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    result = run_shell(services, "-c", shell.replace("--topic test", f"--topic {topic}"))

    assert result.returncode == 0, result.stderr  # the last command, consume, found no failure
    assert "line 2: rule 'checkLen' (CONDITION CEL, WRITE) failed: Rule expr failed" in result.stderr
    assert result.stdout == '{"f1": "success"}\n'


def test_asyncio_app(services: Services) -> None:
    result = run_example("asyncio_app.py", services)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "refused: p1: rule positiveAmount",
        "received: p0 12.5",
        "received: p2 40.0",
        "summary: 2 received and acknowledged",
    ]
