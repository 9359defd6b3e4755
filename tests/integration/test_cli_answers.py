"""Fast, precise answers of the console tools to everyday mistakes, on the real broker and
registry: the broker's reason instead of a timeout, no wait beyond the one asked for, nothing
registered for a topic the broker cannot serve."""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cli_support import cli
from conftest import Services

pytestmark = pytest.mark.integration

SCHEMA = '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'


def test_a_topic_of_a_tenant_that_does_not_exist_is_named_and_registers_nothing(services: Services) -> None:
    tenant = f"nosuchtenant{uuid.uuid4().hex[:6]}"
    topic = f"persistent://{tenant}/default/orders"

    result = cli(services, "produce", "--topic", topic, "--value-schema", SCHEMA, "-m", '{"a": 1}')

    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert f"tenant {tenant!r} or namespace {tenant}/default does not exist" in line
    assert "cannot connect" not in line
    assert line.endswith("; nothing was registered")
    subjects = httpx.get(f"{services.registry_url}/subjects").json() or []  # AxonOps: null for none
    assert not [subject for subject in subjects if tenant in subject]


def test_consume_of_an_empty_topic_without_a_subject_waits_no_longer_than_asked(
    services: Services, topic: str
) -> None:
    path = topic.removeprefix("persistent://")
    httpx.put(f"{services.admin_url}/admin/v2/persistent/{path}").raise_for_status()

    started = time.monotonic()
    result = cli(services, "consume", "--topic", topic, "--from-beginning", "--timeout-ms", "1000")
    took = time.monotonic() - started

    assert result.returncode == 1, result.stderr
    assert "has no registered schema" in result.stderr
    assert took < 6, took  # it waited --connect-timeout (10 s) for a first message that never came


#: Commands that ask the registry first: a listing, a lookup, a registration.
REGISTRY_COMMANDS = pytest.mark.parametrize(
    "args",
    [
        ("subjects",),
        ("describe", "--topic", "orders"),
        ("produce", "orders", "--value-schema", SCHEMA, "-m", "{}"),
    ],
    ids=["subjects", "describe", "produce"],
)


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[str]:
    """An HTTP file server: it answers every request, with HTML pages, and is not a registry."""
    (tmp_path / "index.html").write_text("<html><body>a web site</body></html>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@REGISTRY_COMMANDS
def test_a_server_that_is_not_a_registry_is_called_so(
    services: Services, web_server: str, args: tuple[str, ...]
) -> None:
    result = cli(services, *args, registry_url=web_server)

    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert f"{web_server}: the server answered HTTP " in line
    assert "is this the URL of a Confluent-compatible schema registry" in line
    assert "<" not in line  # not the page itself


class _PageForEveryPath(http.server.BaseHTTPRequestHandler):
    """A single-page app's server (or nginx's welcome page): 200 and HTML for any request."""

    def _page(self) -> None:
        body = b"<!doctype html><html><body>Welcome</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _page

    def log_message(self, *args: object) -> None:
        pass


@REGISTRY_COMMANDS
def test_a_server_that_answers_every_request_with_a_page_is_not_a_registry(
    services: Services, args: tuple[str, ...]
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PageForEveryPath)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        result = cli(services, *args, registry_url=url)
    finally:
        server.shutdown()
        server.server_close()

    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert "the server answered a success status and a body that is not JSON" in line, line
    assert "is this the URL of a Confluent-compatible schema registry" in line
    assert "cannot reach" not in line and "Expecting value" not in line


def test_a_pinned_schema_id_the_registry_lacks_is_named_as_such(services: Services, topic: str) -> None:
    produced = cli(services, "produce", "--topic", topic, "--value-schema", SCHEMA, "-m", '{"a": 1}')
    assert produced.returncode == 0, produced.stderr

    for command, extra in (("produce", ("-m", '{"a": 1}')), ("consume", ("--timeout-ms", "1000"))):
        result = cli(services, command, topic, "-p", "use.schema.id=987654", *extra)

        assert result.returncode == 1, result.stderr
        [line] = result.stderr.splitlines()
        assert "config key 'use.schema.id' = 987654: the registry at " in line
        assert "has no schema with id 987654 under subject " in line
        assert "has no registered schema" not in line  # it has one: not the one pinned


def test_describe_shows_where_a_rule_dead_letters_and_masks_secret_params(
    services: Services, topic: str
) -> None:
    dlq = f"{topic}-dlq"
    rules = (
        '{"domainRules": [{"name": "positive", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", '
        '"expr": "message.a > 0", "onFailure": "DLQ", '
        f'"params": {{"dlq.topic": "{dlq}", "api.key.secret": "s3cr3t"}}}}]}}'
    )
    registered = cli(services, "register", "--topic", topic, "--schema", SCHEMA, "--rule-set", rules)
    assert registered.returncode == 0, registered.stderr

    view = cli(services, "describe", "--topic", topic)

    assert view.returncode == 0, view.stderr
    assert f"    positive params: api.key.secret=****, dlq.topic={dlq}" in view.stdout.splitlines()
    assert "s3cr3t" not in view.stdout


def test_consume_of_a_write_rule_copy_says_what_it_is(services: Services, topic: str) -> None:
    dlq = f"{topic}-dlq"
    rules = (
        '{"domainRules": [{"name": "positive", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", '
        f'"expr": "message.a > 0", "onFailure": "DLQ", "params": {{"dlq.topic": "{dlq}"}}}}]}}'
    )
    produced = cli(
        services, "produce", topic, "--value-schema", SCHEMA, "--value-rule-set", rules, "-m", '{"a": -1}'
    )
    assert produced.returncode == 1 and "dead-lettered" in produced.stderr, produced.stderr

    decoded = cli(services, "consume", dlq, "--from-beginning", "--timeout-ms", "2000")

    assert decoded.returncode == 1
    assert (
        f"a copy that WRITE rule 'positive' dead-lettered from {topic}: the record as its producer gave "
        "it (JSON), never encoded, so it carries no schema id; print it with --raw"
    ) in decoded.stderr
    assert "field 32" not in decoded.stderr
    raw = cli(services, "consume", dlq, "--from-beginning", "--timeout-ms", "2000", "--raw")
    assert raw.returncode == 0, raw.stderr
    assert '"data": "{\\"a\\": -1}"' in raw.stdout


def test_a_json_record_outside_its_schema_gets_the_schemas_words_before_a_rules(
    services: Services, topic: str
) -> None:
    """confluent-kafka's JSON serializer runs the rules before it validates: a rule reading a
    missing field failed with CEL's `Key not found in map`."""
    schema = json.dumps(
        {
            "type": "object",
            "properties": {"id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["id", "amount"],
        }
    )
    rules = (
        '{"domainRules": [{"name": "positive", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", '
        '"expr": "message.amount > 0.0", "onFailure": "ERROR"}]}'
    )
    records = [
        '{"id": "a"}',
        '{"id": "b", "amount": "lots"}',
        '{"id": "c", "amount": -1}',
        '{"id": "d", "amount": 5}',
    ]

    result = cli(
        services,
        "produce",
        topic,
        "--format",
        "json",
        "--value-schema",
        schema,
        "--value-rule-set",
        rules,
        *[arg for record in records for arg in ("-m", record)],
    )

    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(
        "line 1: could not serialize the value as JSON: 'amount' is a required property"
    )
    assert lines[1].startswith(
        "line 2: could not serialize the value as JSON: 'lots' is not of type 'number'"
    )
    assert lines[2].startswith("line 3: rule 'positive' (CONDITION CEL, WRITE) failed")  # valid, and refused
    assert "Key not found" not in result.stderr and "No matching overloads" not in result.stderr
    assert lines[-1].startswith(f"produced 1 record to {topic}, 3 failed")
    assert ", schema id " in lines[0]

    # a producer of the registered version (no schema of its own) gets the same words
    latest = cli(
        services,
        "produce",
        topic,
        "--format",
        "json",
        "-p",
        "use.latest.version=true",
        "-p",
        "auto.register.schemas=false",
        "-m",
        records[0],
    )
    assert latest.returncode == 1
    assert "'amount' is a required property" in latest.stderr and "Key not found" not in latest.stderr
