"""Journey: a team on Pulsar's 4.0 LTS line, which predates PIP-420, follows the docs: the console
produces a day of orders with `-p pulsar.admin.url` (to declare the topic EXTERNAL) and is told in
one line that its broker cannot, and which release it runs; without the option the orders go in
under their data contract, the validation job (asked to declare too, refused before it starts, then
run without) splits them into the trusted topic and the dead letters, and the console reads both.

Fails on the code before issue 59: the declaration was skipped with a log line and the user was
not told; the validation job failed inside a Spark task, in pages of Spark's log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_support import cli, errors, read_all, records
from conftest import Services
from contracts import unique
from journey_support import NAMED, ORDER, ORDERS, POSITIVE, REFUSED
from spark_support import register_contract

pytestmark = pytest.mark.spark


def test_told_the_broker_cannot_declare_then_produce_validate_and_read_without_it(
    spark: Any, lts_pulsar: Services, lts_release: str, tmp_path: Path
) -> None:
    cluster, release = lts_pulsar, lts_release
    source = f"persistent://public/default/{unique('lts-orders')}"
    valid, dlq = f"{source}-valid", f"{source}-dlq"
    register_contract(cluster, source, ORDER, [POSITIVE, NAMED])
    lines = "".join(f"{o['id']}\t{json.dumps(o)}\n" for o in ORDERS)
    declare = ("-p", f"pulsar.admin.url={cluster.admin_url}")
    too_old = (
        f"the broker at {cluster.admin_url} runs Pulsar {release}, and the EXTERNAL schema type "
        "(PIP-420) needs Pulsar 4.1 or newer; leave out 'pulsar.admin.url' to go on without the declaration"
    )

    asked = cli(cluster, "produce", "--topic", source, "--parse-key", *declare, stdin=lines)
    assert asked.returncode == 1
    assert errors(asked) == [f"pulsar-external-schema: produce: cannot declare {source} EXTERNAL: {too_old}"]
    schema = httpx.get(f"{cluster.admin_url}/admin/v2/schemas/{source.split('://', 1)[1]}/schema")
    assert schema.status_code == 404  # nothing declared, and nothing sent
    assert records(read_all(cluster, source)) == []

    produced = cli(cluster, "produce", "--topic", source, "--parse-key", stdin=lines)
    assert produced.returncode == 1, produced.stderr  # two orders refused by the producer's checks
    assert len([line for line in errors(produced) if line.startswith("line ")]) == len(REFUSED)

    job = ("validate", "--master", "local[1]", "--input", source, "--valid", valid, "--dlq", dlq)
    checkpoint = ("--checkpoint", str(tmp_path / "checkpoint"))
    refused = cli(cluster, *job, *checkpoint, *declare)
    assert refused.returncode == 1
    said = [line for line in errors(refused) if line.startswith("pulsar-external-schema")]
    assert said == [f"pulsar-external-schema: validate: cannot declare topics EXTERNAL: {too_old}"]
    assert "Traceback" not in refused.stderr and "Lost task" not in refused.stderr

    ran = cli(cluster, *job, *checkpoint)
    assert ran.returncode == 0, ran.stderr
    assert "done: 2 valid, 1 dead-lettered" in ran.stderr

    assert records(read_all(cluster, valid)) == [ORDERS[0], ORDERS[4]]
    dead = read_all(cluster, dlq, "--schema-topic", source)
    assert records(dead) == [ORDERS[1]], dead.stderr
