"""`pulsar-external-schema export`, run as installed, on the real services: a topic written by the
console's own `produce` to each file format, the rows `read_table` gives; a window of publish
time; and its mistakes, one line each and no file left behind."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest
from cli_support import cli
from conftest import Services

from pulsar_external_schema.arrow import read_table

SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Reading",
        "fields": [
            {"name": "sensor", "type": "string"},
            {"name": "celsius", "type": "double"},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
        ],
    }
)
RULES = json.dumps(
    {
        "domainRules": [
            {
                "name": "plausible",
                "kind": "CONDITION",
                "type": "CEL",
                "mode": "READ",
                "expr": "message.celsius < 100.0",
                "onFailure": "ERROR",
            }
        ]
    }
)


def produce(services: Services, topic: str, readings: list[dict[str, object]]) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in readings)
    done = cli(
        services,
        "produce",
        "--topic",
        topic,
        "--value-schema",
        SCHEMA,
        "--value-rule-set",
        RULES,
        stdin=lines,
    )
    assert done.returncode == 0, done.stderr


READINGS = [
    {"sensor": "a", "celsius": 21.5, "tags": ["roof"]},
    {"sensor": "b", "celsius": 150.0, "tags": []},  # the READ rule refuses it
    {"sensor": "c", "celsius": -3.25, "tags": ["cellar", "north"]},
]


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".csv", ".jsonl"])
def test_a_topic_exported_to_each_format_holds_what_read_table_reads(
    services: Services, topic: str, tmp_path: Path, suffix: str
) -> None:
    produce(services, topic, READINGS)
    target = tmp_path / f"readings{suffix}"

    done = cli(services, "export", topic, "--to", str(target))

    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"exported 3 rows (1 not valid) of {topic} to {target}")
    expected = read_table(
        topic,
        service_url=services.pulsar_url,
        admin_url=services.admin_url,
        config={"schema.registry.url": services.registry_url},
    )
    if suffix == ".parquet":
        assert pq.read_table(target).equals(expected)
    elif suffix == ".arrow":
        assert pa.ipc.open_file(target).read_all().equals(expected)
    elif suffix == ".csv":
        nulls = pyarrow.csv.ConvertOptions(strings_can_be_null=True)  # an empty field: a null
        rows = pyarrow.csv.read_csv(target, convert_options=nulls).to_pylist()
        assert [r["value.sensor"] for r in rows] == ["a", None, "c"]
        assert [r["value.tags"] for r in rows] == ['["roof"]', None, '["cellar", "north"]']
        assert [r["_rule"] for r in rows] == [None, "plausible", None]
        assert all(isinstance(r["messageId.ledgerId"], int) for r in rows)
    else:
        rows = [json.loads(line) for line in target.read_text().splitlines()]
        assert [r["value"] for r in rows] == [READINGS[0], None, READINGS[2]]
        assert rows[1]["_valid"] is False and rows[1]["_failure"]["__rule.name"] == "plausible"
        assert rows[0]["publishTime"].endswith("+00:00") and "__schema_id" in rows[0]["properties"]
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_an_export_between_two_times(services: Services, topic: str, tmp_path: Path) -> None:
    produce(services, topic, READINGS[:1])
    time.sleep(1.2)
    between = int(time.time() * 1000)
    time.sleep(1.2)
    produce(services, topic, READINGS[2:])
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"

    assert cli(services, "export", topic, "--to", str(before), "--end-time", str(between)).returncode == 0
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(between / 1000)) + f".{between % 1000:03d}+00:00"
    assert cli(services, "export", topic, "--to", str(after), "--start-time", iso).returncode == 0

    assert [json.loads(line)["value"]["sensor"] for line in before.read_text().splitlines()] == ["a"]
    assert [json.loads(line)["value"]["sensor"] for line in after.read_text().splitlines()] == ["c"]


def test_a_long_export_shows_its_rows_and_about_how_many_are_left(
    services: Services, topic: str, tmp_path: Path
) -> None:
    produce(services, topic, [{"sensor": f"s{i}", "celsius": float(i), "tags": []} for i in range(30)])
    target = tmp_path / "readings.parquet"

    done = cli(services, "export", topic, "--to", str(target), "--batch-size", "5", "--progress", "0.000001")

    assert done.returncode == 0, done.stderr
    shown = [line for line in done.stderr.splitlines() if line.startswith("... exported")]
    assert len(shown) == 6, done.stderr
    left = [int(re.search(r"about ([\d,]+) left", line)[1].replace(",", "")) for line in shown]  # type: ignore[index]
    assert left == sorted(left, reverse=True) and left[-1] == 0, shown
    assert shown[0].startswith("... exported 5 rows (0 failed), ")


def test_mistakes_are_one_line_and_leave_no_file(services: Services, topic: str, tmp_path: Path) -> None:
    produce(services, topic, READINGS)
    cases = [
        (["--to", str(tmp_path / "x.xlsx")], 2, "the extension says the format"),
        (["--to", str(tmp_path / "x.csv"), "--start-time", "yesterday"], 2, "'yesterday' is not a time"),
        (["--to", str(tmp_path / "x.csv"), "--reader", "fast"], 2, "invalid choice: 'fast'"),
        (["--to", str(tmp_path / "no" / "such" / "x.csv")], 1, "cannot write"),
        (["--to", str(tmp_path / "x.csv"), "-p", "use.latest.versio=true"], 1, "use.latest.version"),
    ]
    for arguments, code, said in cases:
        done = cli(services, "export", topic, *arguments)
        assert done.returncode == code, (arguments, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 or code == 2, done.stderr
    missing = cli(services, "export", f"{topic}-nothing", "--to", str(tmp_path / "x.parquet"))
    assert missing.returncode == 1 and "has no registered schema" in missing.stderr
    assert list(tmp_path.iterdir()) == []


# -- import ------------------------------------------------------------------------------------


def sensors(services: Services, topic: str) -> list[dict[str, object]]:
    table = read_table(
        topic,
        service_url=services.pulsar_url,
        admin_url=services.admin_url,
        config={"schema.registry.url": services.registry_url},
    )
    return [row["value"] for row in table.to_pylist() if row["_valid"]]


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".csv", ".jsonl"])
def test_an_exported_file_imports_into_another_topic_as_it_was(
    services: Services, topic: str, tmp_path: Path, suffix: str
) -> None:
    produce(services, topic, READINGS)
    copy = f"{topic}-copy"
    produce(services, copy, [])  # the copy's subject: the same schema and rules
    saved = tmp_path / f"readings{suffix}"
    assert cli(services, "export", topic, "--to", str(saved)).returncode == 0

    done = cli(services, "import", "--topic", copy, "--from", str(saved))

    # the row the READ rule refused was exported without a value: it cannot be sent, and says so
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[0].startswith("row 1: ")
    assert f"imported 2 rows of {saved} to {copy} (1 refused, 0 dead-lettered)" in done.stderr
    assert sensors(services, copy) == [READINGS[0], READINGS[2]]


def test_an_export_with_its_data_imports_untouched(services: Services, topic: str, tmp_path: Path) -> None:
    produce(services, topic, READINGS)
    saved = tmp_path / "raw.parquet"
    assert cli(services, "export", topic, "--to", str(saved), "--include-data").returncode == 0
    copy = f"{topic}-raw"

    done = cli(services, "import", copy, "--from", str(saved), "--untouched")

    assert done.returncode == 0, done.stderr
    original = pq.read_table(saved).column("data").to_pylist()
    again = read_table(
        copy,
        service_url=services.pulsar_url,
        admin_url=services.admin_url,
        config={"schema.registry.url": services.registry_url},
        include_data=True,
    )
    assert again.column("data").to_pylist() == original  # every message, the refused one too, as it was
    assert again.column("_valid").to_pylist() == [True, False, True]  # the copy's readers judge alike


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_file_of_records_imports_each_row_as_a_value(
    services: Services, topic: str, tmp_path: Path, suffix: str
) -> None:
    """A file whose columns are the record's fields (what pandas, polars or any tool writes, not an
    export) is a file of values: each row sent as the value, --key-column's field its key too; the
    row the topic's rules refuse on read is sent and read back as refused, as `produce` would."""
    produce(services, topic, [])  # the subject: the schema and its READ rule
    saved = tmp_path / f"records{suffix}"
    if suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(READINGS), saved)
    else:
        saved.write_text("".join(json.dumps(r) + "\n" for r in READINGS))

    done = cli(services, "import", topic, "--from", str(saved), "--key-column", "sensor")

    assert done.returncode == 0, done.stderr
    assert f"imported 3 rows of {saved} to {topic} (0 refused, 0 dead-lettered)" in done.stderr
    table = read_table(
        topic,
        service_url=services.pulsar_url,
        admin_url=services.admin_url,
        config={"schema.registry.url": services.registry_url},
    )
    assert [row["key"] for row in table.to_pylist()] == ["a", "b", "c"]
    assert sensors(services, topic) == [READINGS[0], READINGS[2]]  # b: the READ rule's refusal


def test_import_mistakes_are_one_line(services: Services, topic: str, tmp_path: Path) -> None:
    produce(services, topic, READINGS)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet at all")
    flat = tmp_path / "flat.jsonl"
    flat.write_text('{"sensor": "a"}\n')
    cases = [
        (["--from", str(tmp_path / "x.xlsx")], 2, "the extension says the format"),
        (["--from", str(tmp_path / "missing.parquet")], 1, "no such file"),
        (["--from", str(broken)], 1, f"cannot read {broken} as parquet"),
        (["--from", str(flat), "--rows", "messages"], 1, "give --rows values to send each row as a value"),
        (["--from", str(flat), "--key-column", "id"], 2, "--key-column 'id': the table has no such column"),
        (["--from", str(flat), "--untouched"], 1, "--untouched sends each row's 'data' column"),
        (["--from", str(flat), "--untouched", "--key-column", "sensor"], 2, "--untouched sends an export's"),
    ]
    for arguments, code, said in cases:
        done = cli(services, "import", topic, *arguments)
        assert done.returncode == code, (arguments, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 or code == 2, done.stderr
