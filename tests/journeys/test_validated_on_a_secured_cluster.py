"""Journey: a production cluster (TLS only, clients let in by an OAuth2 issuer's tokens), reached
with nothing but the `client.conf` its operators hand out, through every entry point in turn:
the console produces a day of orders (declaring the topic EXTERNAL over https), `ValidateFunction`
runs in `LocalRunner` on a client from `connect()`, a Spark query reads the trusted topic on the
native reader, and the console reads the dead letters. No flag names a URL or a credential.

Fails on the code before issue 56: no entry point took a trust file or OAuth2 credentials."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from cli_support import cli, errors, records
from contracts import unique
from function_support import run_validate_function
from journey_support import NAMED, ORDER, ORDERS, POSITIVE, REFUSED
from secured_support import TlsPulsar
from spark_support import register_contract

from pulsar_external_schema.connections import ClientConf, connect

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def client(oauth2_pulsar: TlsPulsar) -> Iterator[Any]:
    made = connect(oauth2_pulsar.client_conf, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield made
    made.close()


@pytest.mark.usefixtures("external_type")  # the console declares the topic: Pulsar 4.1+
def test_produce_validate_in_a_function_read_on_spark_and_the_dead_letters_with_one_client_conf(
    spark: Any, oauth2_pulsar: TlsPulsar, client: Any
) -> None:
    cluster = oauth2_pulsar
    nowhere = cluster.services.__class__("", "", cluster.registry_url, "script")  # only the file
    source = f"persistent://public/default/{unique('secured-orders')}"
    valid, dlq = f"{source}-valid", f"{source}-dlq"
    register_contract(cluster.services, source, ORDER, [POSITIVE, NAMED])
    schema_text = json.dumps(ORDER)

    lines = "".join(f"{o['id']}\t{json.dumps(o)}\n" for o in ORDERS)
    produced = cli(
        nowhere, "produce", "--topic", source, "--value-schema", schema_text, "--parse-key",
        "-p", f"pulsar.admin.url={cluster.admin_url}", client_conf=cluster.client_conf, stdin=lines,
    )  # fmt: skip
    assert produced.returncode == 1, produced.stderr  # two orders refused by the producer's checks
    refused = [line for line in errors(produced) if line.startswith("line ")]
    assert len(refused) == len(REFUSED)

    ran = run_validate_function(client, cluster.services, source, valid, dlq)
    assert (ran.processed, ran.user_errors, ran.system_errors) == (3, [], [])

    rows = (
        spark.read.format("pulsar-external")
        .options(
            **{
                "schema.registry.url": cluster.registry_url,
                "pulsar.client.conf": cluster.client_conf,
                "topic": valid,
            }
        )
        .load()
        .collect()
    )
    assert sorted((r.key, r.value.asDict()) for r in rows) == [("1", ORDERS[0]), ("5", ORDERS[4])]

    dead = cli(
        nowhere, "consume", "--topic", dlq, "--schema-topic", source, "--from-beginning",
        "--timeout-ms", "3000", client_conf=cluster.client_conf,
    )  # fmt: skip
    assert records(dead) == [ORDERS[1]], dead.stderr
    stored = ClientConf.read(cluster.client_conf)
    assert stored.oauth2().client_secret not in produced.stderr + dead.stderr + dead.stdout
