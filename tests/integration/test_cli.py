"""The installed `pulsar-external-schema` console script against the real broker and registry."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pulsar
import pytest
from cli_support import cli, errors, read_all, records
from conftest import Services

QUICK_START_SCHEMA = '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}]}'
QUICK_START_RULES = (
    '{"domainRules": [{"name": "checkLen", "kind": "CONDITION", "type": "CEL", '
    '"mode": "WRITE", "expr": "size(message.f1) < 10", "onFailure": "ERROR"}]}'
)
ORDER_PROTO = 'syntax = "proto3";\npackage acme;\nmessage Order { string id = 1; int64 qty = 2; }\n'


def produce(
    services: Services, topic: str, stdin: str, *args: str, registry_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`produce` with the quick start's schema (and `args`, e.g. a rule set) on `stdin`."""
    return cli(
        services,
        "produce",
        "--topic",
        topic,
        "--value-schema",
        QUICK_START_SCHEMA,
        *args,
        stdin=stdin,
        registry_url=registry_url,
    )


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there once the socket is closed


# -- produce / consume ---------------------------------------------------------------------------


def test_confluent_data_contract_quick_start(services: Services, topic: str) -> None:
    produced = produce(
        services,
        topic,
        '{"f1": "success"}\n{"f1": "this will fail"}\n',
        "--value-rule-set",
        QUICK_START_RULES,
    )

    assert produced.returncode == 1, produced.stderr
    [rejection] = errors(produced)
    assert rejection.startswith("line 2: rule 'checkLen' (CONDITION CEL, WRITE) failed")
    assert "size(message.f1) < 10" in rejection
    assert f"topic {topic}" in rejection and "-value" in rejection and "schema id" in rejection
    assert f"produced 1 record to {topic}, 1 failed" in produced.stderr

    consumed = read_all(services, topic)
    assert consumed.returncode == 0, consumed.stderr
    assert records(consumed) == [{"f1": "success"}]

    registered = json.loads(cli(services, "get", "--topic", topic).stdout)
    assert registered["ruleSet"]["domainRules"][0]["name"] == "checkLen"


def test_produce_reports_each_bad_line_and_sends_the_others(
    services: Services, topic: str, tmp_path: Path
) -> None:
    lines = [
        '{"f1": "one"}',
        '{"f1": ',  # cut short
        "",  # blank lines are skipped
        '{"f1": "two"}',
        '{"f1": 3}',  # not a string
        "[1, 2]",
    ]
    source = tmp_path / "records.jsonl"
    source.write_text("\n".join(lines) + "\n")
    result = cli(
        services, "produce", "--topic", topic, "--value-schema", QUICK_START_SCHEMA, "--input", str(source)
    )

    assert result.returncode == 1
    reported = errors(result)
    assert [line.split(":")[0] for line in reported] == ["line 2", "line 5", "line 6"]
    assert reported[0] == "line 2: not valid JSON: Expecting value at column 8"
    assert reported[1].startswith(
        "line 5: refused to write a value outside the schema's types: field f1: an int"
    )
    assert "subject public.default." in reported[1]
    assert records(read_all(services, topic)) == [{"f1": "one"}, {"f1": "two"}]


def test_any_single_bad_line_is_that_lines_error_and_the_lines_after_it_are_sent(
    services: Services, topic: str, tmp_path: Path
) -> None:
    source = tmp_path / "hostile.jsonl"
    source.write_bytes(
        b'{"f1": "one"}\n'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"\n"  # deeper than json's recursion limit
        + b'{"f1": "caf\xe9"}\n'  # latin-1, not UTF-8
        + b"\x00\x01\x02\xff binary\n"
        + b'{"f1": "two", "ssn": "987-65-4321"\n'  # cut short, with a personal value in it
        + b'{"f1": "three"}\n'
    )
    result = cli(
        services, "produce", "--topic", topic, "--value-schema", QUICK_START_SCHEMA, "--input", str(source)
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    reported = errors(result)
    assert [line.split(":")[0] for line in reported] == ["line 2", "line 3", "line 4", "line 5"]
    assert "nested deeper than Python's recursion limit" in reported[0]
    assert reported[1] == "line 3: not UTF-8 text: byte 0xe9 at byte 12 (invalid continuation byte)"
    assert reported[2].startswith("line 4: not UTF-8 text: byte 0xff")
    assert "987-65-4321" not in result.stderr
    assert records(read_all(services, topic)) == [{"f1": "one"}, {"f1": "three"}]


def test_values_outside_the_schema_are_their_lines_errors_and_never_sent_changed(
    services: Services, topic: str
) -> None:
    counts = '{"type":"record","name":"C","fields":[{"name":"n","type":"int"}]}'
    lines = '{"n": 1}\n{"n": 2.5}\n{"n": 99999999999}\n{"n": -2147483649}\n{"n": 2}\n'
    result = cli(services, "produce", "--topic", topic, "--value-schema", counts, stdin=lines)
    assert result.returncode == 1
    reported = errors(result)
    assert [line.split(":")[0] for line in reported] == ["line 2", "line 3", "line 4"]
    assert "field n: a float is not an Avro int (32-bit integer)" in reported[0]
    assert "field n: an int is not an Avro int (32-bit integer): out of range" in reported[1]
    assert f"produced 2 records to {topic}, 3 failed" in result.stderr
    assert records(read_all(services, topic)) == [{"n": 1}, {"n": 2}]
    numbers = '{"type":"object","properties":{"v":{"type":"number"}}}'
    json_lines = '{"v": 1.5}\n{"v": NaN}\n{"v": -Infinity}\n'
    result = cli(
        services,
        "produce",
        "--topic",
        f"{topic}-json",
        "--format",
        "json",
        "--value-schema",
        numbers,
        stdin=json_lines,
    )
    assert [line.split(":")[0] for line in errors(result)] == ["line 2", "line 3"]
    assert all("field v: a float is not a JSON number" in line for line in errors(result))
    assert records(read_all(services, f"{topic}-json")) == [{"v": 1.5}]


def test_stop_on_error_stops_at_the_first_bad_line_and_says_where_to_resume(
    services: Services, topic: str, tmp_path: Path
) -> None:
    source = tmp_path / "records.jsonl"
    source.write_text('{"f1": "one"}\n{"f1": "two"}\n{"f1": 3}\n{"f1": "four"}\n')
    result = produce(services, topic, "", "--input", str(source), "--stop-on-error")
    assert result.returncode == 1
    reported = errors(result)
    assert reported[0].startswith("line 3: refused to write a value outside the schema's types: field f1")
    assert "stopped at line 3 (--stop-on-error)" in result.stderr and "resume from line 3" in result.stderr
    assert records(read_all(services, topic)) == [{"f1": "one"}, {"f1": "two"}]


def test_produce_with_the_registered_schema_and_its_rules(services: Services, topic: str) -> None:
    first = produce(services, topic, '{"f1": "a"}\n', "--value-rule-set", QUICK_START_RULES)
    assert first.returncode == 0, first.stderr

    # No schema: the subject's latest version, with its rule set.
    again = cli(services, "produce", "--topic", topic, stdin='{"f1": "b"}\n{"f1": "far too long"}\n')

    assert again.returncode == 1
    assert errors(again)[0].startswith("line 2: rule 'checkLen'")
    assert records(read_all(services, topic)) == [{"f1": "a"}, {"f1": "b"}]


def test_unknown_subject_is_a_clear_error(services: Services, topic: str) -> None:
    produced = cli(services, "produce", "--topic", topic, stdin='{"f1": "x"}\n')
    consumed = read_all(services, topic)

    subject = f"public.default.{topic.rsplit('/', 1)[1]}-value"
    for result, command in ((produced, "produce"), (consumed, "consume")):
        assert result.returncode == 1
        [line] = result.stderr.splitlines()
        assert line.startswith(f"pulsar-external-schema: {command}: subject {subject}")
        assert "has no registered schema at " + services.registry_url in line
    assert records(consumed) == []


def test_unreachable_registry_is_a_clear_error(services: Services, topic: str, pulsar_client: Any) -> None:
    url = closed_port_url()
    produced = produce(services, topic, '{"f1": "x"}\n', registry_url=url)
    consumed = cli(services, "consume", "--topic", topic, "--timeout-ms", "1000", registry_url=url)
    listed = cli(services, "subjects", registry_url=url)

    for result in (produced, consumed, listed):
        assert result.returncode == 1
        assert url in result.stderr and "Connection refused" in result.stderr, result.stderr
    # The schema is registered before the first line is read: the tool stops there, once.
    assert produced.stderr.strip() == (
        f"pulsar-external-schema: produce: registering the schema under "
        f"public.default.{topic.rsplit('/', 1)[1]}-value: cannot reach the schema registry at {url}: "
        "[Errno 111] Connection refused"
    )
    assert listed.stderr.strip() == (
        f"pulsar-external-schema: subjects: listing subjects: cannot reach the schema registry at {url}: "
        "[Errno 111] Connection refused"
    )
    # Nothing was sent while the registry was away.
    reader = pulsar_client.create_reader(topic, pulsar.MessageId.earliest)
    with pytest.raises(pulsar.Timeout):
        reader.read_next(1000)
    reader.close()


# -- mistakes found before anything is registered or sent ------------------------------------------

RECORD_R = '{"type":"record","name":"r","fields":[{"name":"f1","type":"string"}]}'


def rule_set(**rule: Any) -> str:
    base = {"name": "c", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", "expr": "size(message.f1) < 10"}
    return json.dumps({"domainRules": [{**base, **rule}]})


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--value-schema", '{"type": "record", "name": "r"'), "the Avro schema is not JSON"),
        (
            ("--value-schema", '{"type":"record","name":"r","fields":[{"name":"f1","type":"strng"}]}'),
            "names a type that does not exist: 'strng'",
        ),
        (
            ("--value-schema", '{"type": "object", "properties": {"f1": {"type": "string"}}}'),
            "--value-schema looks like a JSON Schema: add --format json",
        ),
        (
            ("--value-schema", 'syntax = "proto3";\nmessage M { string f1 = 1; }'),
            "--value-schema looks like a .proto file: add --format protobuf",
        ),
        (
            ("--value-schema", RECORD_R, "--value-rule-set", rule_set(expr="size(message.f1 < 10")),
            "--value-rule-set: rule 'c' (domainRules[0]): CEL expression 'size(message.f1 < 10' does "
            "not compile",
        ),
        (
            ("--value-schema", RECORD_R, "--value-rule-set", '{"domainRule": []}'),
            "--value-rule-set: the rule set has an unknown key 'domainRule'; did you mean 'domainRules'?",
        ),
        (
            ("--value-schema", RECORD_R, "--value-rule-set", rule_set(onfailure="ERROR")),
            "rule 'c' (domainRules[0]) has an unknown key 'onfailure'; did you mean 'onFailure'?",
        ),
        (
            ("--value-schema", RECORD_R, "--value-metadata", '{"propertys": {"a": "b"}}'),
            "--value-metadata: the metadata has an unknown key 'propertys'; did you mean 'properties'?",
        ),
        (("--value-schema", RECORD_R, "--service-url", "127.0.0.1:6650"), "is not a Pulsar service URL"),
        (("--value-schema", RECORD_R, "-p", "subject.name.strategy=short"), "subject.name.strategy"),
    ],
    ids=[
        "schema not JSON",
        "Avro type typo",
        "JSON Schema without --format",
        ".proto without --format",
        "CEL that does not compile",
        "misspelled domainRules",
        "misspelled onFailure",
        "misspelled metadata key",
        "service URL without scheme",
        "bad config value",
    ],
)
def test_a_command_line_mistake_is_one_line_exit_2_and_registers_nothing(
    services: Services, topic: str, args: tuple[str, ...], expected: str
) -> None:
    result = cli(services, "produce", "--topic", topic, *args, stdin='{"f1": "x"}\n')

    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("pulsar-external-schema: produce: ") and expected in line, line
    short = topic.rsplit("/", 1)[1]
    assert cli(services, "subjects", "--prefix", f"public.default.{short}").stdout == ""


MISTAKES = {
    "negative config int": (("produce", "-p", "cache.capacity=-1"), 2, "takes a number of 0 or more"),
    "registry URL without scheme": (("produce", "--registry-url", "notaurl"), 2, "takes http:// or https://"),
    "registry URL of ftp": (("consume", "--registry-url", "ftp://x"), 2, "takes http:// or https:// URLs"),
    "service URL without host": (("produce", "--service-url", "pulsar://"), 2, "is not a Pulsar service URL"),
    "service URL, bad port": (("produce", "--service-url", "pulsar://h:port"), 2, "not a Pulsar service URL"),
    "subjects, bad registry URL": (("subjects", "--registry-url", "notaurl"), 2, "takes http:// or https://"),
    "unknown id": (("get", "--id", "999999"), 1, "Schema not found"),
    "bad version": (("get", "--topic", "t", "--version", "abc"), 2, "--version takes a number or 'latest'"),
    "rule without kind in config": (
        ("config", "--topic", "t", "--default-rule-set", '{"domainRules": [{"name": "a"}]}'),
        2,
        "has no 'kind'",
    ),
    "missing reference": (
        (
            "register", "--subject", "s", "--reference", "acme.Missing=nope:1", "--schema",
            '{"type": "record", "name": "o", "fields": [{"name": "m", "type": "acme.Missing"}]}',
        ),
        1,
        "the schema's references could not be read: the registry at",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("args", "code", "expected"), MISTAKES.values(), ids=MISTAKES.keys())
def test_no_mistake_shows_a_traceback(
    services: Services, args: tuple[str, ...], code: int, expected: str
) -> None:
    command, *rest = args
    if command in ("produce", "consume"):
        rest = ["t", *rest] + (["--value-schema", RECORD_R] if command == "produce" else [])
    result = cli(services, command, *rest, stdin="")

    assert result.returncode == code, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"pulsar-external-schema: {command}: ") and expected in line, line


def test_a_line_of_the_wrong_json_type_says_so(services: Services, topic: str) -> None:
    produced = produce(services, topic, '[1, 2]\n"text"\n')
    assert errors(produced) == [
        "line 1: a myrecord record is a JSON object, not a JSON array",
        "line 2: a myrecord record is a JSON object, not a JSON str",
    ]


def test_a_schema_the_registry_refuses_stops_once_before_the_first_line(
    services: Services, topic: str
) -> None:
    assert produce(services, topic, '{"f1": "a"}\n').returncode == 0
    int_schema = QUICK_START_SCHEMA.replace('"string"', '"int"')
    refused = cli(
        services, "produce", "--topic", topic, "--value-schema", int_schema, stdin='{"f1": 1}\n{"f1": 2}\n'
    )

    assert refused.returncode == 1
    [line] = refused.stderr.splitlines()  # once, not once per line
    assert "registering the schema under" in line and "(HTTP 409, error 409" in line
    assert "f1: type mismatch: reader has int, writer has string" in line
    assert records(read_all(services, topic)) == [{"f1": "a"}]


def test_a_rule_set_the_registry_did_not_keep_is_an_error(services: Services, topic: str) -> None:
    """AxonOps v0.2.1 stores a rule set's rules but drops its `enableAt`: the tool says so instead
    of reporting a contract that is not the one registered."""
    rules = json.dumps({**json.loads(rule_set()), "enableAt": "CLIENT"})
    result = produce(services, topic, '{"f1": "a"}\n', "--value-rule-set", rules)

    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert 'but did not keep ruleSet.enableAt ("CLIENT") as given' in line
    assert records(read_all(services, topic)) == []


def test_fields_the_avro_schema_lacks_are_refused(services: Services, topic: str) -> None:
    produced = produce(services, topic, '{"f1": "a", "f2": 1}\n{"f1": "b"}\n')

    assert produced.returncode == 1
    assert errors(produced) == ["line 1: field f2 is not in the schema (record myrecord has: f1)"]
    assert records(read_all(services, topic)) == [{"f1": "b"}]


def test_a_primitive_key_schema(services: Services, topic: str) -> None:
    produced = produce(services, topic, '{"key": "k1", "value": {"f1": "a"}}\n', "--key-schema", '"string"')

    assert produced.returncode == 0, produced.stderr
    assert records(read_all(services, topic, "--key-value")) == [{"key": "k1", "value": {"f1": "a"}}]


def test_a_broker_that_does_not_answer_is_one_line_after_the_connect_timeout(
    services: Services, topic: str
) -> None:
    url = closed_port_url().replace("http://", "pulsar://")
    result = cli(
        services, "produce", "--topic", topic, "--value-schema", RECORD_R, "--service-url", url,
        "--connect-timeout", "2", stdin='{"f1": "a"}\n',
    )  # fmt: skip

    assert result.returncode == 1
    [line] = result.stderr.splitlines()  # no C++ log lines without --verbose
    assert f"cannot connect to the broker at {url} within 2 s" in line and "--connect-timeout" in line


def test_confluent_console_properties_and_pulsar_client_habits(services: Services, topic: str) -> None:
    """`--property value.schema=... parse.key=true`, as kafka-avro-console-producer; `print.key`,
    as its consumer; `-s`, `-n` and a positional topic, as pulsar-client; keys and properties."""
    produced = cli(
        services, "produce", topic,
        "-p", f"value.schema={QUICK_START_SCHEMA}", "-p", f"value.rule.set={QUICK_START_RULES}",
        "-p", "parse.key=true", "--message-property", "source=cli",
        stdin='k1\t{"f1": "a"}\nk2\t{"f1": "far too long"}\nno separator\n',
    )  # fmt: skip
    assert produced.returncode == 1
    assert errors(produced)[0].startswith("line 2: rule 'checkLen'")
    assert errors(produced)[1] == "line 3: no key separator '\\t' in the line (--parse-key)"

    printed = cli(
        services, "consume", topic, "-s", "sub", "-n", "1", "--from-beginning", "-p", "print.key=true"
    )
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == 'k1\t{"f1": "a"}\n'
    [meta] = records(read_all(services, topic, "--print-metadata"))
    assert meta["key"] == "k1" and meta["properties"]["source"] == "cli"

    one_key = cli(
        services, "produce", topic, "--key", "same", "--print-key", stdin='{"f1": "b"}\n'
    )  # --print-key is a consume flag
    assert one_key.returncode == 2 and "unrecognized arguments: --print-key" in one_key.stderr
    group = cli(services, "consume", topic, "--group", "g")
    assert group.returncode == 2 and "--subscription g" in group.stderr
    swapped = cli(services, "produce", topic, "-p", "print.key=true", stdin="")
    assert swapped.returncode == 2 and "a setting of the console consumer" in swapped.stderr


def test_records_on_the_command_line_and_json_summaries(services: Services, topic: str) -> None:
    produced = cli(
        services, "produce", topic, "--value-schema", QUICK_START_SCHEMA,
        "-m", '{"f1": "a"}', "-m", '{"f1": "far too long, but no rule"}', "-m", '{"f2": 1}', "-o", "json",
    )  # fmt: skip
    assert produced.returncode == 1
    *rejections, summary = produced.stderr.splitlines()
    assert rejections == ["line 3: field f2 is not in the schema (record myrecord has: f1)"]
    assert json.loads(summary) == {
        "command": "produce",
        "topic": topic,
        "sent": 2,
        "failed": 1,
        "stopped": None,
    }

    consumed = cli(services, "consume", topic, "--from-beginning", "-n", "2", "-o", "json")
    assert consumed.returncode == 0 and len(records(consumed)) == 2
    assert json.loads(consumed.stderr) == {
        "command": "consume",
        "topic": topic,
        "printed": 2,
        "failed": 0,
        "dead_lettered": 0,
        "redelivered": 0,
        "stopped": None,
    }


def test_consume_with_a_subscription_dead_letters_or_keeps_failed_messages(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    read_rule = (
        '{"domainRules": [{"name": "noBad", "kind": "CONDITION", "type": "CEL", "mode": "READ", '
        '"expr": "message.f1 != \'bad\'", "onFailure": "ERROR"}]}'
    )
    produced = produce(
        services, topic, '{"f1": "ok"}\n{"f1": "bad"}\n{"f1": "fine"}\n', "--value-rule-set", read_rule
    )
    assert produced.returncode == 0, produced.stderr

    # Without a DLQ the failed message stays unacknowledged, so the subscription sees it again.
    kept = cli(
        services,
        "consume",
        "--topic",
        topic,
        "--subscription",
        "keeper",
        "--from-beginning",
        "--max-messages",
        "3",
    )
    assert kept.returncode == 1
    assert records(kept) == [{"f1": "ok"}, {"f1": "fine"}]
    [failure] = errors(kept)
    assert failure.startswith("message 2 (") and "rule 'noBad' (CONDITION CEL, READ) failed" in failure
    assert failure.endswith("(negatively acknowledged: redelivered later)")

    dlq = topic + "-dlq"
    moved = cli(
        services,
        "consume",
        "--topic",
        topic,
        "--subscription",
        "keeper",
        "--dead-letter-topic",
        dlq,
        "--max-messages",
        "1",
        "--timeout-ms",
        "30000",
    )
    assert moved.returncode == 1
    assert records(moved) == []
    assert errors(moved)[0].endswith(f"; copying it to {dlq} (acknowledged once persisted)")
    assert moved.stderr.splitlines()[-1].endswith("1 failed (1 dead-lettered, 0 redelivered later)")

    reader = pulsar_client.create_reader(dlq, pulsar.MessageId.earliest)
    copy = reader.read_next(10_000)
    reader.close()
    assert copy.properties()["__rule.name"] == "noBad"
    assert copy.properties()["__schema_id"].startswith("ff00")
    assert copy.data()[:1] == b"\x06" and copy.data().endswith(b"bad")  # the original Avro bytes

    raw = read_all(services, dlq, "--raw")
    [copied] = records(raw)
    assert copied["properties"]["__rule.name"] == "noBad" and copied["data"] == "\x06bad"
    # Replayed through the source topic's schema, the copy skips the rule that sent it there
    # (Confluent's replay rule: __rule.name) and decodes.
    replayed = read_all(services, dlq, "--schema-topic", topic)
    assert replayed.returncode == 0, replayed.stderr
    assert records(replayed) == [{"f1": "bad"}]

    # Acknowledged once in the DLQ: the subscription has nothing left.
    empty = cli(services, "consume", "--topic", topic, "--subscription", "keeper", "--timeout-ms", "2000")
    assert empty.returncode == 0 and records(empty) == []


def test_consume_reads_copies_of_another_topic_and_writer_versions(
    services: Services, topic: str, pulsar_client: Any
) -> None:
    """A validated copy (same bytes and properties on another topic) and a DLQ copy (plus
    `__rule.topic`) have no subject of their own; each message decodes with its writer's version."""
    assert produce(services, topic, '{"f1": "a"}\n').returncode == 0
    reader = pulsar_client.create_reader(topic, pulsar.MessageId.earliest)
    original = reader.read_next(10_000)
    reader.close()
    valid, dlq = topic + "-valid", topic + "-dlq"
    for target, extra in ((valid, {}), (dlq, {"__rule.topic": topic, "__rule.name": "checkLen"})):
        producer = pulsar_client.create_producer(target)
        producer.send(original.data(), properties={**original.properties(), **extra})
        producer.close()

    unknown = read_all(services, valid)
    assert unknown.returncode == 1
    assert "add --schema-topic SOURCE_TOPIC; --raw prints them undecoded" in unknown.stderr
    assert records(read_all(services, valid, "--schema-topic", topic)) == [{"f1": "a"}]
    assert records(read_all(services, dlq)) == [{"f1": "a"}]  # through its __rule.topic

    v2 = QUICK_START_SCHEMA.replace("]}", ',{"name":"f2","type":"int","default":7}]}')
    assert cli(services, "register", "--topic", topic, "--schema", v2).returncode == 0
    assert records(read_all(services, topic)) == [{"f1": "a"}]  # the writer's version
    pinned = read_all(services, topic, "-p", "use.latest.version=true")
    assert records(pinned) == [{"f1": "a", "f2": 7}]


def test_protobuf_from_proto_text(services: Services, topic: str) -> None:
    rule = (
        '{"domainRules": [{"name": "positive", "kind": "CONDITION", "type": "CEL", "mode": "WRITE", '
        '"expr": "message.qty > 0", "onFailure": "ERROR"}]}'
    )
    produced = cli(
        services,
        "produce",
        "--topic",
        topic,
        "--format",
        "protobuf",
        "--value-schema",
        ORDER_PROTO,
        "--value-rule-set",
        rule,
        stdin='{"id": "a", "qty": 2}\n{"id": "b", "qty": "x"}\n{"id": "c", "qty": -1}\n',
    )

    assert produced.returncode == 1
    reported = errors(produced)
    assert reported[0].startswith("line 2: not a acme.Order: Failed to parse qty field")
    assert reported[1].startswith("line 3: rule 'positive'")
    again = cli(services, "produce", "--topic", topic, stdin='{"id": "d", "qty": 4}\n')  # latest version
    assert again.returncode == 0, again.stderr
    consumed = read_all(services, topic, "--format", "protobuf")
    assert records(consumed) == [
        {"id": "a", "qty": "2"},
        {"id": "d", "qty": "4"},
    ]  # Protobuf JSON: int64 as text
    versions = cli(services, "get", "--topic", topic, "--version", "latest")
    assert json.loads(versions.stdout)["version"] == 1  # the .proto text was registered once, as given


def test_json_schema_and_key_value(services: Services, topic: str) -> None:
    person = (
        '{"type": "object", "properties": {"name": {"type": "string"}, '
        '"age": {"type": "integer", "minimum": 0}}}'
    )
    key = '{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}'
    produced = cli(
        services,
        "produce",
        "--topic",
        topic,
        "--format",
        "json",
        "--key-schema",
        key,
        "--value-schema",
        person,
        stdin=(
            '{"key": {"id": 1}, "value": {"name": "Ann", "age": 3}}\n'
            '{"key": {"id": 2}, "value": {"name": "Bob", "age": -1}}\n'
            '{"name": "no key"}\n'
        ),
    )

    assert produced.returncode == 1
    reported = errors(produced)
    assert reported[0].startswith("line 2: ") and "-1 is less than the minimum of 0" in reported[0]
    assert reported[1] == 'line 3: a key/value record is an object {"key": ..., "value": ...}'
    consumed = read_all(services, topic, "--key-value", "--print-metadata")
    [message] = records(consumed)
    assert message["value"] == {"key": {"id": 1}, "value": {"name": "Ann", "age": 3}}
    assert message["properties"]["__schema_id"].startswith("fe")
    as_value = read_all(services, topic)
    assert as_value.returncode == 1 and "add --key-value" in as_value.stderr


def test_progress_counts_on_long_runs(services: Services, topic: str) -> None:
    lines = "".join(f'{{"f1": "r{i}"}}\n' for i in range(3000))
    produced = produce(services, topic, lines, "--progress", "0.001")
    consumed = read_all(services, topic, "--progress", "0.001")
    quiet = read_all(services, topic, "--quiet")

    assert produced.returncode == 0 and consumed.returncode == 0, produced.stderr + consumed.stderr
    assert any(line.startswith("... produced ") and "/s" in line for line in produced.stderr.splitlines())
    assert any(line.startswith("... consumed ") for line in consumed.stderr.splitlines())
    assert len(records(consumed)) == 3000 and quiet.stderr == ""


# -- registry tools ------------------------------------------------------------------------------


def test_register_get_check_and_subjects(services: Services, subject: str) -> None:
    v1 = (
        '{"type": "record", "name": "R", "fields": [{"name": "f1", "type": "string"}, '
        '{"name": "a", "type": "string"}]}'  # f1: the field the quick start's rule checks
    )
    registered = cli(
        services,
        "register",
        "--subject",
        subject,
        "--schema",
        v1,
        "--metadata",
        '{"properties": {"owner": "team-a"}}',
        "--rule-set",
        QUICK_START_RULES,
    )
    assert registered.returncode == 0, registered.stderr
    first = json.loads(registered.stdout)
    assert first["subject"] == subject and first["version"] == 1
    again = json.loads(
        cli(
            services,
            "register",
            "--subject",
            subject,
            "--schema",
            v1,
            "--metadata",
            '{"properties": {"owner": "team-a"}}',
            "--rule-set",
            QUICK_START_RULES,
        ).stdout
    )
    assert again == first  # idempotent

    by_id = json.loads(cli(services, "get", "--id", str(first["id"])).stdout)
    assert subject in by_id["subjects"] and by_id["schemaType"] == "AVRO"
    latest = json.loads(cli(services, "get", "--subject", subject).stdout)
    assert latest["metadata"]["properties"]["owner"] == "team-a"
    assert latest["ruleSet"]["domainRules"][0]["expr"] == "size(message.f1) < 10"
    text = cli(services, "get", "--subject", subject, "--version", "1", "--schema-only").stdout
    assert json.loads(text)["name"] == "R" and text.startswith("{\n")

    bad = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}'
    verdict = cli(services, "check", "--subject", subject, "--schema", bad)
    assert verdict.returncode == 1
    assert verdict.stdout.splitlines()[0].startswith(f"incompatible: {subject} (BACKWARD, versions 1)")
    assert "a: type mismatch" in verdict.stdout  # the registry's reason
    good = (
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}, '
        '{"name": "b", "type": "string", "default": ""}]}'
    )
    assert cli(services, "check", "--subject", subject, "--schema", good).returncode == 0

    listed = cli(services, "subjects", "--prefix", subject[:20]).stdout.splitlines()
    assert subject in listed

    missing = cli(services, "get", "--subject", subject.removesuffix("-value"))
    assert missing.returncode == 1
    assert f"is not registered at {services.registry_url}; did you mean {subject}" in missing.stderr
    unknown_check = cli(services, "check", "--subject", "no-" + subject, "--schema", good)
    assert unknown_check.returncode == 1 and "is not registered" in unknown_check.stderr


def test_versions_json_output_delete_and_describe(services: Services, topic: str) -> None:
    short = topic.rsplit("/", 1)[1]
    subject = f"public.default.{short}-value"
    v2 = QUICK_START_SCHEMA.replace("]}", ',{"name":"f2","type":"int","default":1}]}')
    for schema in (QUICK_START_SCHEMA, v2):
        registered = cli(
            services, "register", "--topic", topic, "--schema", schema, "--rule-set", QUICK_START_RULES
        )
        assert registered.returncode == 0, registered.stderr

    assert cli(services, "subjects", "--prefix", subject, "--versions").stdout == f"{subject}\t1,2\n"
    as_json = cli(services, "subjects", "--prefix", subject, "--versions", "--output", "json")
    assert json.loads(as_json.stdout) == {subject: [1, 2]}
    assert json.loads(cli(services, "subjects", "--prefix", subject, "-o", "json").stdout) == [subject]
    verdict = json.loads(cli(services, "check", "--topic", topic, "--schema", v2, "-o", "json").stdout)
    assert verdict == {
        "subject": subject,
        "compatible": True,
        "compatibility": "BACKWARD",
        "versions": [1, 2],
        "against": "all",
        "messages": [],
    }

    view = cli(services, "describe", "--topic", topic)
    assert view.returncode == 0, view.stderr
    lines = view.stdout.splitlines()
    assert f"value subject {subject}" in lines and "  versions       1, 2" in lines
    rule = "domain checkLen CONDITION CEL WRITE ERROR size(message.f1) < 10"
    assert any(line.split() == rule.split() for line in lines)
    assert f"public.default.{short}-key: not registered (the topic's messages have no key schema)" in lines
    described = json.loads(cli(services, "describe", "--topic", topic, "--version", "1", "-o", "json").stdout)
    [value] = described["subjects"]
    assert value["version"] == 1 and value["versions"] == [1, 2] and value["config"]["fromGlobal"] is True
    assert value["ruleSet"]["domainRules"][0]["name"] == "checkLen"

    soft = cli(services, "delete", "--topic", topic, "--version", "2")
    assert json.loads(soft.stdout) == {"subject": subject, "deleted_versions": [2], "permanent": False}
    assert cli(services, "subjects", "--prefix", subject, "--versions").stdout == f"{subject}\t1\n"
    hard = cli(services, "delete", "--subject", subject, "--permanent")
    assert json.loads(hard.stdout) == {"subject": subject, "deleted_versions": [1], "permanent": True}
    assert cli(services, "subjects", "--prefix", subject, "--deleted").stdout == ""
    gone = cli(services, "describe", "--topic", topic)
    assert gone.returncode == 1 and "is not registered" in gone.stderr


def test_config_shows_and_changes_only_what_is_given(services: Services, subject: str) -> None:
    cli(services, "register", "--subject", subject, "--schema", QUICK_START_SCHEMA)
    inherited = json.loads(cli(services, "config", "--subject", subject).stdout)
    assert inherited["fromGlobal"] is True

    changed = cli(
        services,
        "config",
        "--subject",
        subject,
        "--compatibility",
        "full_transitive",
        "--compatibility-group",
        "major",
        "--default-metadata",
        '{"properties": {"major": "1"}}',
        "--override-rule-set",
        QUICK_START_RULES,
    )
    assert changed.returncode == 0, changed.stderr
    shown = json.loads(changed.stdout)
    assert shown["compatibility"] == "FULL_TRANSITIVE" and shown["compatibilityGroup"] == "major"
    assert shown["defaultMetadata"]["properties"] == {"major": "1"}
    assert shown["overrideRuleSet"]["domainRules"][0]["name"] == "checkLen"

    regrouped = json.loads(
        cli(services, "config", "--subject", subject, "--compatibility-group", "owner").stdout
    )
    assert regrouped["compatibilityGroup"] == "owner"
    assert regrouped["compatibility"] == "FULL_TRANSITIVE"  # kept
    assert regrouped["overrideRuleSet"]["domainRules"][0]["name"] == "checkLen"  # kept

    reset = json.loads(cli(services, "config", "--subject", subject, "--delete").stdout)
    assert reset["fromGlobal"] is True

    bad = cli(services, "config", "--subject", subject, "--default-rule-set", "{nope")
    assert bad.returncode == 2 and "--default-rule-set is not valid JSON" in bad.stderr
