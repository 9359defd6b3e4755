"""The console tools and the admin declaration on a Pulsar that lets in only clients with a token
(`secured`): the token given is sent, a missing or wrong one is an error that says where to give
it, and no output shows the token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_support import cli, errors, records
from conftest import Services
from contracts import unique
from secured_support import SecuredPulsar

SCHEMA = '{"type":"record","name":"Note","fields":[{"name":"text","type":"string"}]}'


def secured_services(secured: SecuredPulsar) -> Services:
    return Services(secured.pulsar_url, secured.admin_url, secured.registry_url, "script")


def secured_topic() -> str:
    return f"persistent://public/default/{unique('tokens-cli')}"


def test_produce_and_consume_send_the_token_given_inline_from_a_file_or_the_environment(
    secured: SecuredPulsar, tmp_path: Path
) -> None:
    topic, services = secured_topic(), secured_services(secured)
    token_file = tmp_path / "token"
    token_file.write_text(secured.token + "\n")  # as a secret store writes it
    lines = "".join(json.dumps({"text": f"note {i}"}) + "\n" for i in range(3))

    produced = cli(
        services, "produce", "--topic", topic, "--value-schema", SCHEMA,
        "--auth-token", f"@{token_file}", stdin=lines,
    )  # fmt: skip
    consumed = cli(
        services, "consume", "--topic", topic, "--from-beginning", "--max-messages", "3",
        "--timeout-ms", "10000", token=secured.token,
    )  # fmt: skip
    inline = cli(
        services, "produce", "--topic", topic, "--value-schema", SCHEMA,
        "--auth-token", secured.token, stdin=lines,
    )  # fmt: skip

    assert produced.returncode == 0, produced.stderr
    assert consumed.returncode == 0, consumed.stderr
    assert records(consumed) == [{"text": f"note {i}"} for i in range(3)]
    assert inline.returncode == 0, inline.stderr
    for run in (produced, consumed, inline):
        assert secured.token not in run.stdout + run.stderr


@pytest.mark.parametrize("token", [None, "wrong"])
def test_a_missing_or_wrong_token_is_one_line_that_names_the_flag(
    secured: SecuredPulsar, token: str | None
) -> None:
    given = () if token is None else ("--auth-token", secured.wrong_token)

    result = cli(
        secured_services(secured), "produce", "--topic", secured_topic(), "--value-schema", SCHEMA,
        "--connect-timeout", "3", *given, stdin='{"text": "a"}\n',
    )  # fmt: skip

    assert result.returncode == 1
    [line] = errors(result)
    assert f"cannot connect to the broker at {secured.pulsar_url}" in line and "--auth-token" in line
    assert secured.wrong_token not in result.stderr and "Traceback" not in result.stderr


def test_an_unreadable_token_file_is_a_usage_error(secured: SecuredPulsar, tmp_path: Path) -> None:
    result = cli(
        secured_services(secured), "produce", "--topic", secured_topic(), "--value-schema", SCHEMA,
        "--auth-token", f"@{tmp_path / 'absent'}", stdin='{"text": "a"}\n',
    )  # fmt: skip

    assert result.returncode == 2, result.stderr
    assert f"--auth-token: cannot read {tmp_path / 'absent'}" in result.stderr


@pytest.mark.usefixtures("external_type")  # PIP-420's EXTERNAL type: Pulsar 4.1+
def test_the_admin_declaration_sends_pulsar_admin_token(secured: SecuredPulsar, pulsar_client: Any) -> None:
    """`pulsar.admin.url` declares a topic EXTERNAL through the admin API with
    `pulsar.admin.token`; without it the API's refusal says which key to set."""
    import pulsar

    from pulsar_external_schema import SchemaRegistrySchemaFactory, create_producer
    from pulsar_external_schema.errors import PulsarAdminError

    topic = secured_topic()
    client = pulsar.Client(secured.pulsar_url, authentication=pulsar.AuthenticationToken(secured.token))
    conf = {"schema.registry.url": secured.registry_url, "pulsar.admin.url": secured.admin_url}
    try:
        refused = pytest.raises(PulsarAdminError, match=r"HTTP 401 .*set 'pulsar\.admin\.token'")
        with SchemaRegistrySchemaFactory(conf) as factory, refused:
            create_producer(client, topic, factory.avro(SCHEMA))
        with SchemaRegistrySchemaFactory({**conf, "pulsar.admin.token": secured.token}) as factory:
            producer = create_producer(client, topic, factory.avro(SCHEMA))
            producer.send({"text": "declared"})
            producer.close()
    finally:
        client.close()

    name = topic.removeprefix("persistent://")
    stored = httpx.get(
        f"{secured.admin_url}/admin/v2/schemas/{name}/schema",
        headers={"Authorization": f"Bearer {secured.token}"},
    )
    assert stored.status_code == 200 and stored.json()["type"] == "EXTERNAL"


@pytest.mark.usefixtures("external_type")  # PIP-420's EXTERNAL type: Pulsar 4.1+
def test_produce_declares_the_topic_external_with_its_auth_token(secured: SecuredPulsar) -> None:
    """`--auth-token` is the admin API's token too, for `-p pulsar.admin.url`."""
    topic = secured_topic()

    produced = cli(
        secured_services(secured), "produce", "--topic", topic, "--value-schema", SCHEMA,
        "-p", f"pulsar.admin.url={secured.admin_url}", "--auth-token", secured.token,
        stdin='{"text": "declared"}\n',
    )  # fmt: skip

    assert produced.returncode == 0, produced.stderr
    stored = httpx.get(
        f"{secured.admin_url}/admin/v2/schemas/{topic.removeprefix('persistent://')}/schema",
        headers={"Authorization": f"Bearer {secured.token}"},
    )
    assert stored.status_code == 200 and stored.json()["type"] == "EXTERNAL"
