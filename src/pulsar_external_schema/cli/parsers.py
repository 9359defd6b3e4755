"""The command line of every console tool: its options, help and examples.

Light on purpose: `--help`, `--version`, a usage error and the completion script import this
module and nothing heavy (no pulsar-client, confluent-kafka, codec). A command's `run` is
imported when the command runs (`_later`); what a run needs is imported by its module
(`console`, `registry_tools`, `validate`). tests/unit/test_imports.py holds this to it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from .. import _native
from .._version import VERSION
from .common import (
    SCHEMA_TYPES,
    Parser,
    add_metrics_option,
    add_output_option,
    add_registry_options,
    connect_url,
    moment,
    non_negative,
    positive,
    topic_name,
    whole,
)
from .habits import add_key_options, add_topic
from .signals import PROG

__all__ = ["build_parser"]


class _Version(argparse.Action):
    """`--version`: the package's, and which native extension serves it (or why none does)."""

    def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
        super().__init__(
            option_strings,
            dest=argparse.SUPPRESS,
            default=argparse.SUPPRESS,
            nargs=0,
            help="print the version, and whether the native extension is used",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {VERSION}\n{_native.describe()}")  # on stdout, as argparse's own
        parser.exit()


def _later(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """A command's run, imported from `cli.<module>` when the command runs."""

    def run(args: argparse.Namespace) -> int:
        result: int = getattr(importlib.import_module(f"{__package__}.{module}"), function)(args)
        return result

    return run


EPILOG = """\
services: every command reads PULSAR_SERVICE_URL, PULSAR_ADMIN_URL and SCHEMA_REGISTRY_URL
(`eval "$(scripts/services env)"` sets them for the local services) unless given as flags.
`pulsar-external-schema COMMAND --help` shows a command's options and an example.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description=(
            "External schemas (PIP-420) and data contracts for Apache Pulsar, with a "
            "Confluent-compatible schema registry."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _console(commands)
    _registry(commands)
    _validate(commands)
    _export(commands)
    _import(commands)
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print a completion script for the shell, to source from its startup file.",
        epilog="example (bash):\n  pulsar-external-schema completion bash > ~/.local/share/bash-completion/"
        "completions/pulsar-external-schema",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    completion.add_argument("shell", choices=("bash", "zsh"))
    completion.set_defaults(run=lambda args: _completion(parser, args.shell))
    return parser


def _completion(parser: argparse.ArgumentParser, shell: str) -> int:
    import shtab

    print(shtab.complete(parser, shell=shell))
    return 0


# -- produce and consume ---------------------------------------------------------------------

PRODUCE_EXAMPLE = """\
example (the quick start of Confluent's data-contract docs):
  pulsar-external-schema produce --topic test \\
    --value-schema '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}]}' \\
    --value-rule-set '{"domainRules":[{"name":"checkLen","kind":"CONDITION","type":"CEL",
        "mode":"WRITE","expr":"size(message.f1) < 10","onFailure":"ERROR"}]}'
  {"f1": "success"}
  {"f1": "this will fail"}

Each line is a JSON record: Avro and JSON Schema values as plain JSON objects, Protobuf values
in Protobuf's JSON mapping, key/value records (with --key-schema) as {"key": ..., "value": ...}.
A rejected record is reported on stderr as "line N: why" and not sent; the others are sent.
Exit code: 0 when every record was sent, 1 when any was rejected or the run stopped early.
"""

CONSUME_EXAMPLE = """\
example:
  pulsar-external-schema consume --topic test --from-beginning --timeout-ms 5000

Values are printed one JSON line each (Protobuf in its JSON mapping). Without --subscription a
reader reads the topic and acknowledges nothing; with one, each printed message is acknowledged,
and a message that cannot be decoded or fails its data contract is negatively acknowledged (Pulsar
redelivers it later), or copied to --dead-letter-topic with __rule.* properties and acknowledged
once the broker has persisted the copy (copies are sent without waiting, as by consume());
a registry outage is never dead-lettered: the message is negatively acknowledged and the tool stops.
Exit code: 0 when every message was printed (or stdout closed early, as `| head` does), 1 when
any failed or the run stopped early.
"""


def _console(commands: Any) -> None:
    produce = commands.add_parser(
        "produce",
        help="send JSON lines from stdin to a topic, through its schema and data contract",
        description=(
            "Read JSON records, one per line, from stdin (or --input), encode each with the topic's "
            "external schema and send it with its schema id. --value-schema registers the schema "
            "(with --value-rule-set and --value-metadata) under the topic's subject; without it the "
            "subject's latest registered version is used."
        ),
        epilog=PRODUCE_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_topic(produce)
    _record_schema_options(produce, producing=True)
    add_key_options(produce, producing=True)
    records = produce.add_mutually_exclusive_group()
    records.add_argument(
        "--input", default="-", metavar="FILE", help="file of JSON lines to send (default: stdin)"
    )
    records.add_argument(
        "--message",
        "-m",
        action="append",
        metavar="JSON",
        help="a record to send, instead of reading lines (repeatable), as pulsar-client's -m",
    )
    produce.add_argument(
        "--stop-on-error",
        action="store_true",
        help="stop at the first line that cannot be sent, and say the line to resume from "
        "(default: report it and go on with the next line)",
    )
    _progress_options(produce)
    add_registry_options(produce, pulsar=True)
    produce.set_defaults(run=_later("console", "run_produce"))

    consume = commands.add_parser(
        "consume",
        help="print a topic's messages as JSON lines, decoded with their schemas",
        description=(
            "Read a topic and print each message's value as one JSON line on stdout, decoded with "
            "the schema its id names and checked by its data contract (READ rules, migrations, "
            "decryption). Runs until --max-messages, --timeout-ms, or Ctrl-C."
        ),
        epilog=CONSUME_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_topic(consume)
    _record_schema_options(consume, producing=False)
    add_key_options(consume, producing=False)
    consume.add_argument(
        "--from-beginning", action="store_true", help="start at the earliest message (default: new ones only)"
    )
    consume.add_argument(
        "--subscription",
        "-s",
        metavar="NAME",
        help="consume (and acknowledge) through this durable subscription (a Kafka consumer group)",
    )
    consume.add_argument(
        "--dead-letter-topic",
        type=topic_name,
        metavar="TOPIC",
        help="with --subscription: copy messages that fail to this topic, then acknowledge them",
    )
    consume.add_argument(
        "--schema-topic",
        type=topic_name,
        metavar="TOPIC",
        help="find the schema through this topic's subject, e.g. the source topic of a DLQ topic",
    )
    consume.add_argument(
        "--raw",
        action="store_true",
        help="no decoding: print metadata and the payload (UTF-8 text, else base64), e.g. for DLQ copies",
    )
    consume.add_argument("--max-messages", "-n", type=whole(1), metavar="N", help="stop after N messages")
    consume.add_argument(
        "--timeout-ms", type=whole(1), metavar="MS", help="stop when no message arrives for MS milliseconds"
    )
    consume.add_argument(
        "--print-metadata",
        action="store_true",
        help="print {message_id, publish_time, event_time, key, properties, value} instead of the value",
    )
    _progress_options(consume)
    add_registry_options(consume, pulsar=True)
    consume.set_defaults(run=_later("console", "run_consume"))


def _record_schema_options(parser: argparse.ArgumentParser, *, producing: bool) -> None:
    group = parser.add_argument_group("schema")
    group.add_argument(
        "--format",
        choices=sorted(SCHEMA_TYPES),
        help=(
            "schema format of --value-schema (default avro)"
            if producing
            else "check that the topic's subject holds schemas of this format"
        ),
    )
    if producing:
        value = group.add_mutually_exclusive_group()
        value.add_argument(
            "--value-schema", metavar="SCHEMA", help="the value schema text (Avro, JSON Schema, .proto)"
        )
        value.add_argument("--value-schema-file", metavar="FILE", help="the value schema, from a file")
        key = group.add_mutually_exclusive_group()
        key.add_argument(
            "--key-schema", metavar="SCHEMA", help="a key schema too: records are {'key': ..., 'value': ...}"
        )
        key.add_argument("--key-schema-file", metavar="FILE", help="the key schema, from a file")
        group.add_argument(
            "--value-rule-set",
            metavar="JSON",
            help='rule set registered with --value-schema, e.g. {"domainRules": [...]} (or @file)',
        )
        group.add_argument(
            "--value-metadata",
            metavar="JSON",
            help='metadata registered with --value-schema, e.g. {"properties": {"owner": "team"}} (or @file)',
        )
    else:
        group.add_argument(
            "--key-value", action="store_true", help="messages carry a key schema too (key/value schema ids)"
        )
    group.add_argument(
        "--protobuf-message",
        metavar="NAME",
        help="Protobuf: the message of the .proto file (default: its first message)",
    )


def _progress_and_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        type=non_negative,
        default=10.0,
        metavar="SECONDS",
        help="print counts on stderr every SECONDS during long runs (default 10; 0 turns them off)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress and no summary on stderr")


def _progress_options(parser: argparse.ArgumentParser) -> None:
    _progress_and_quiet(parser)
    add_output_option(
        parser, help="the summary on stderr: a line of text (default), or a JSON object for scripts"
    )
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="show the Pulsar client's warnings and errors on stderr"
    )
    add_metrics_option(parser)
    parser.add_argument(
        "--connect-timeout",
        type=positive,
        default=10.0,
        metavar="SECONDS",
        help="give up connecting to the broker (and looking the topic up) after SECONDS (default 10)",
    )


# -- the registry commands --------------------------------------------------------------------

LEVELS = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)


def _registry(commands: Any) -> None:
    subjects = _registry_command(
        commands,
        "subjects",
        "list the registry's subjects",
        "Print the registered subjects, one per line (with --versions, each with its versions).",
        "examples:\n  pulsar-external-schema subjects --prefix public.default. --versions\n"
        "  pulsar-external-schema subjects --output json | jq length",
    )
    subjects.add_argument("--prefix", help="only subjects that start with this")
    subjects.add_argument("--deleted", action="store_true", help="include soft-deleted subjects")
    subjects.add_argument("--versions", action="store_true", help="each subject's versions too")
    add_output_option(subjects)

    delete = _registry_command(
        commands,
        "delete",
        "delete a subject, or one version of it (soft, or --permanent)",
        "Soft-delete a subject's versions (or one, with --version): readers of messages that carry "
        "their ids still decode them, new producers cannot use them. --permanent removes them for "
        "good (soft-deleting first, as the registry requires). Prints what was deleted as JSON.",
        "examples:\n  pulsar-external-schema delete --topic orders --version 2\n"
        "  pulsar-external-schema delete --subject orders-value --permanent",
    )
    _subject_options(delete)
    delete.add_argument("--version", help="only this version (a number or 'latest'; default: every one)")
    delete.add_argument("--permanent", action="store_true", help="hard delete: ids no longer resolve")

    register = _registry_command(
        commands,
        "register",
        "register a schema (with its rule set and metadata) under a subject",
        "Register a schema version and print {subject, id, version}. Registering a schema that is "
        "already there returns its existing id and version.",
        "example:\n  pulsar-external-schema register --topic orders --schema-file order.avsc \\\n"
        '    --rule-set @rules.json --metadata \'{"properties": {"owner": "sales"}}\'',
    )
    _subject_options(register)
    _schema_options(register)
    register.add_argument(
        "--normalize", action="store_true", help="ask the registry to normalize the schema first"
    )

    get = _registry_command(
        commands,
        "get",
        "show a registered schema: by subject and version, or by id",
        "Print a registered schema as JSON: subject, version, id, schemaType, schema, references, "
        "metadata and ruleSet.",
        "examples:\n  pulsar-external-schema get --topic orders            # the latest version\n"
        "  pulsar-external-schema get --subject orders-value --version 2 --schema-only\n"
        "  pulsar-external-schema get --id 7",
    )
    _subject_options(get, required=False)
    get.add_argument("--version", default="latest", help="version number or 'latest' (default)")
    get.add_argument("--id", type=whole(0), help="a schema id instead of a subject and version")
    get.add_argument(
        "--schema-only", action="store_true", help="print only the schema text (pretty JSON for Avro/JSON)"
    )

    check = _registry_command(
        commands,
        "check",
        "ask the registry whether a schema is compatible with a subject, and why not",
        "Test a schema against a subject's registered versions under the subject's compatibility "
        "level (see `config`), with the registry's reasons when it is not compatible. Nothing is "
        "registered. Exit code 0 when compatible, 1 when not.",
        "example:\n  pulsar-external-schema check --topic orders --schema-file order-v2.avsc",
    )
    _subject_options(check)
    _schema_options(check)
    add_output_option(check)
    check.add_argument(
        "--version",
        default="all",
        help="check against this version, 'latest', or 'all' the level covers (default all)",
    )

    config = _registry_command(
        commands,
        "config",
        "show or change compatibility, compatibility group, and default/override metadata and rule sets",
        "Without a setting, print the config of --subject (or --topic), or the global one. With "
        "settings, change only those (the others are kept) and print the result. Default metadata "
        "and rule sets apply to new versions that have none; override ones apply to every new "
        "version (Confluent's data-contract docs).",
        "examples:\n  pulsar-external-schema config --topic orders --compatibility BACKWARD "
        "--compatibility-group major\n"
        "  pulsar-external-schema config --default-rule-set @rules.json      # global",
    )
    _subject_options(config, required=False)
    config.add_argument("--compatibility", choices=LEVELS, type=str.upper, help="compatibility level")
    config.add_argument(
        "--compatibility-group",
        metavar="PROPERTY",
        help="metadata property whose value groups versions for compatibility checks, e.g. major",
    )
    for which in ("default", "override"):
        config.add_argument(f"--{which}-metadata", metavar="JSON", help=f"{which} metadata (JSON or @file)")
        config.add_argument(f"--{which}-rule-set", metavar="JSON", help=f"{which} rule set (JSON or @file)")
    config.add_argument(
        "--delete",
        action="store_true",
        help="remove the subject's own config (it falls back to the global one)",
    )

    describe = _registry_command(
        commands,
        "describe",
        "one view of a topic's contract: subjects, versions, schema, rules, compatibility",
        "Print what the registry holds for a topic (or a subject): its value and key subjects, "
        "their versions, the latest version's schema, metadata and rules, and the compatibility "
        "config that applies.",
        "examples:\n  pulsar-external-schema describe --topic orders\n"
        "  pulsar-external-schema describe --topic orders --version 1 --output json",
    )
    which = describe.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", type=topic_name, help="the topic: its value and key subjects")
    which.add_argument("--subject", help="one subject")
    describe.add_argument("--version", default="latest", help="the version to show (default latest)")
    add_output_option(describe)


def _registry_command(
    commands: Any, name: str, summary: str, description: str, epilog: str | None = None
) -> Any:
    parser = commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_registry_options(parser)
    parser.set_defaults(run=_later("registry_tools", "run"))  # `registry_tools.run` dispatches on the command
    return parser


def _subject_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    group = parser.add_argument_group("subject (one of)")
    which = group.add_mutually_exclusive_group(required=required)
    which.add_argument("--subject", help="the subject name")
    which.add_argument(
        "--topic", type=topic_name, help="a topic: its subject under the subject name strategy"
    )
    group.add_argument("--key", action="store_true", help="with --topic: the key subject, not the value one")


def _schema_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("schema")
    text = group.add_mutually_exclusive_group(required=True)
    text.add_argument("--schema", help="the schema text (Avro, JSON Schema or .proto)")
    text.add_argument("--schema-file", metavar="FILE", help="the schema, from a file")
    group.add_argument("--format", choices=sorted(SCHEMA_TYPES), help="default avro")
    group.add_argument("--rule-set", metavar="JSON", help="the rule set (JSON or @file)")
    group.add_argument("--metadata", metavar="JSON", help="the metadata (JSON or @file)")
    group.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=SUBJECT:VERSION",
        help="a schema reference (repeatable), e.g. acme.Address=address-value:1",
    )


# -- validate ----------------------------------------------------------------------------------


def _validate(commands: Any) -> None:
    validate = commands.add_parser(
        "validate",
        help="validate a topic with Spark: valid messages to a topic or Parquet, invalid ones to a DLQ",
        description=(
            "Read --input with its external schemas, decode every message and run its data contract. "
            "Valid messages go on unchanged (same bytes and schema id) to --valid, a topic, or as "
            "decoded rows to Parquet when --valid is a path; invalid ones go to --dead-letter-topic "
            "with __rule.* properties saying why. Restart with the same --checkpoint to go on where it "
            "stopped. Needs the spark extra (in the clone: pip install -e '.[spark]') and Java 17+."
        ),
        epilog=(
            "example:\n  pulsar-external-schema validate --input persistent://public/default/orders \\\n"
            "    --valid persistent://public/default/orders-valid \\\n"
            "    --dead-letter-topic persistent://public/default/orders-dlq \\\n"
            "    --checkpoint /tmp/validate-orders\n"
            "  pulsar-external-schema consume --topic orders-valid --schema-topic orders --from-beginning\n"
            "  pulsar-external-schema consume --topic orders-dlq --from-beginning"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument(
        "--input", required=True, type=topic_name, metavar="TOPIC", help="the topic producers write to"
    )
    validate.add_argument(
        "--valid",
        required=True,
        metavar="TOPIC_OR_PATH",
        help="a full topic name (persistent://tenant/namespace/topic) or a Parquet directory",
    )
    validate.add_argument(
        "--dead-letter-topic",
        "--dlq",
        type=topic_name,
        dest="dead_letter_topic",
        required=True,
        metavar="TOPIC",
        help="the dead-letter topic (full name; --dlq is its short alias)",
    )
    validate.add_argument(
        "--dead-letter-subscription",
        metavar="NAME",
        help=(
            "the subscription made on the dead-letter topic first, which keeps the dead letters until "
            "read (default: dead-letters; '': none, the namespace's retention keeps them)"
        ),
    )
    validate.add_argument(
        "--checkpoint", required=True, metavar="DIR", help="Spark checkpoint directory (keep it between runs)"
    )
    validate.add_argument(
        "--trigger",
        choices=("available-now", "continuous"),
        default="available-now",
        help="available-now: process what is there and stop (default); continuous: run until stopped",
    )
    validate.add_argument(
        "--interval",
        default="10 seconds",
        help="micro-batch interval of --trigger continuous (default 10 seconds)",
    )
    validate.add_argument(
        "--max-entries-per-partition",
        type=whole(1),
        metavar="N",
        help="cap each micro-batch at N entries per partition",
    )
    validate.add_argument(
        "--starting-offsets",
        metavar="WHERE",
        help="earliest (default), latest, or JSON per partition (first run)",
    )
    validate.add_argument(
        "--producer-name",
        default="pulsar-external-schema-validate",
        help="prefix of the deterministic producer names (enable deduplication on the target namespaces)",
    )
    spark = validate.add_mutually_exclusive_group()
    spark.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    spark.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        type=connect_url,
        help="run the job on a Spark Connect server (its Python workers need this package)",
    )
    add_registry_options(validate, pulsar=True, admin=True)
    add_metrics_option(validate)
    validate.set_defaults(run=_later("validate", "run_validate"))


# -- export ------------------------------------------------------------------------------------


def _export(commands: Any) -> None:
    export = commands.add_parser(
        "export",
        help="write a topic, or the part of it between two times, to Parquet, Arrow, CSV or JSON lines",
        description=(
            "Read the topic from its first message (or --start-time) to what is written when the export "
            "begins (or --end-time), decode every message with its schema and data contract, and write the "
            "rows to --to, in the format its extension names. The columns are those of "
            "pulsar_external_schema.arrow.read_table (docs/tables.md): key, value, topic, partition, "
            "messageId, publishTime, eventTime, properties, schemaId and the verdict (_valid, _error, _rule, "
            "_failure); a message that cannot be decoded or fails a READ rule is a row that says why. CSV "
            "spreads structs into columns (value.id) and writes lists and maps as JSON."
        ),
        epilog=(
            "example:\n  pulsar-external-schema export --topic orders --to orders.parquet\n"
            "  pulsar-external-schema export orders --to today.jsonl --start-time 2026-11-28T00:00:00Z"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_topic(export)
    export.add_argument(
        "--to", required=True, metavar="FILE", help="the file: .parquet, .arrow, .csv, .jsonl (or .ndjson)"
    )
    export.add_argument(
        "--start-time",
        type=moment,
        metavar="TIME",
        help="the first message published at or after TIME (ISO 8601; no offset: local time; or epoch ms)",
    )
    export.add_argument(
        "--end-time",
        type=moment,
        metavar="TIME",
        help="stop before the first message published at or after TIME",
    )
    export.add_argument(
        "--reader",
        choices=("auto", "native", "python"),
        default="auto",
        help="auto (default): the native reader where it can read the topic's schema; native; python",
    )
    export.add_argument(
        "--include-data", action="store_true", help="also a column `data`: each message's payload as written"
    )
    export.add_argument(
        "--batch-size", type=whole(1), default=8192, metavar="ROWS", help="rows read and written at a time"
    )
    _progress_and_quiet(export)
    add_registry_options(export, pulsar=True, admin=True)
    export.set_defaults(run=_later("export", "run_export"))


def _import(commands: Any) -> None:
    imported = commands.add_parser(
        "import",
        help="send a Parquet, Arrow, CSV or JSON lines file's rows to a topic, with its schema and rules",
        description=(
            "Read --from, in the format its extension names, and send each row as a message to the "
            "topic, encoded with the subject's latest schema and checked by its WRITE rules, as "
            "`produce` sends a record. A file of records (its columns the record's fields) sends each "
            "row as the value, with --key-column, --event-time-column and --properties-column naming "
            "the message's key, event time and properties. A file `export` wrote (a `value` column "
            "beside `key`, `eventTime`, ...) imports as it is (a CSV's value.x columns are gathered "
            "again). --untouched sends each "
            "row's `data` column (export --include-data) with its properties instead, as it was. A "
            "refused row is reported on stderr as 'row N: why' and not sent; the others are sent."
        ),
        epilog=(
            "example:\n  pulsar-external-schema export --topic orders --to /tmp/orders.parquet\n"
            "  pulsar-external-schema import --topic orders-copy --from /tmp/orders.parquet\n\n"
            "Exit code: 0 when every row was sent, 1 when any was refused or the import stopped."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_topic(imported)
    imported.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="FILE",
        help="the file: .parquet, .arrow, .csv, .jsonl (or .ndjson)",
    )
    imported.add_argument(
        "--untouched",
        action="store_true",
        help="send each row's `data` column and properties as they are (a file of export --include-data)",
    )
    imported.add_argument(
        "--rows",
        choices=("auto", "messages", "values"),
        default="auto",
        help="what a row is: a value (its columns the record's fields), a message (a `value` or `data` "
        "column beside key, properties, eventTime, ...), or auto (default): messages where the columns "
        "are an exported file's",
    )
    imported.add_argument(
        "--key-column",
        metavar="COLUMN",
        help="a field of each record that is also the message's key (the partition key)",
    )
    imported.add_argument(
        "--event-time-column",
        metavar="COLUMN",
        help="a field of each record (a timestamp) that is also the message's event time",
    )
    imported.add_argument(
        "--properties-column",
        metavar="COLUMN",
        help="a map<string,string> column (not a field of the record) of each message's properties",
    )
    imported.add_argument(
        "--producer-name",
        metavar="NAME",
        help="send as this producer, with sequence ids from --sequence-base: an import run again after "
        "a failure sends nothing twice where the namespace has deduplication",
    )
    imported.add_argument(
        "--sequence-base",
        type=whole(0),
        metavar="N",
        help="with --producer-name: a number that grows with each import (e.g. a date, 20261129)",
    )
    imported.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    add_registry_options(imported, pulsar=True)
    imported.set_defaults(run=_later("import_file", "run_import"))
