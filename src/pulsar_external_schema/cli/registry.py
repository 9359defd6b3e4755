"""Registry tools: `subjects`, `register`, `get`, `check`, `config`.

Thin commands over confluent-kafka's `SchemaRegistryClient`, so they speak to any
Confluent-compatible registry with the same auth keys as the library (`--property`). A subject
is given as `--subject`, or as `--topic` (and `--key`), which names it with the subject name
strategy the producers use (`subject.name.strategy`, default `{tenant}.{namespace}.{topic}-value`).
Results are JSON on stdout, ready for `jq`; failures are one line on stderr.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from confluent_kafka.schema_registry import Schema, SchemaReference, ServerConfig
from confluent_kafka.serialization import MessageField

from .. import _confluent
from ..errors import ExternalSchemaError, SchemaParseError
from ..factory import SchemaRegistrySchemaFactory
from ..registered import topic_subject
from ..rules.checks import check_metadata, check_rule_set
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    CommandError,
    UsageError,
    add_output_option,
    add_registry_options,
    fail,
    json_argument,
    registry_failure,
    require,
    schema_config,
    schema_text,
    topic_name,
    whole,
)
from .schemas import SCHEMA_TYPES, checked, contract_schema, guess_format, new_factory, register

LEVELS = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
_SUBJECT_NOT_FOUND = 40401
_NO_SUBJECT_CONFIG = 40408


def add_parsers(commands: Any) -> None:
    subjects = _command(
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
    subjects.set_defaults(run=_runner("subjects", run_subjects))

    delete = _command(
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
    delete.set_defaults(run=_runner("delete", run_delete))

    register = _command(
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
    register.set_defaults(run=_runner("register", run_register))

    get = _command(
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
    get.set_defaults(run=_runner("get", run_get))

    check = _command(
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
    check.set_defaults(run=_runner("check", run_check))

    config = _command(
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
    config.set_defaults(run=_runner("config", run_config))

    describe = _command(
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
    describe.set_defaults(run=_runner("describe", run_describe))


def _command(commands: Any, name: str, summary: str, description: str, epilog: str | None = None) -> Any:
    parser = commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_registry_options(parser)
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


Command = Callable[[argparse.Namespace, "_Registry"], int]


def _runner(name: str, command: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            require(args, "registry_url")
            with _Registry(args) as registry:
                return command(args, registry)
        except CommandError as error:
            return fail(name, error)

    return run


class _Registry:
    """The registry client of the command's config, and registry errors as one-line reasons."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._factory = new_factory(schema_config(args))
        self.url = self._factory.config.registry_url
        self.client = self._factory.registry_client

    def __enter__(self) -> _Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self._factory.close()

    def parse(self, schema: Schema) -> None:
        """Parse an Avro or JSON schema here, before the registry sees it, for an error that says
        what is wrong with it (the registry parses `.proto` text itself)."""
        if schema.schema_type == "PROTOBUF":
            return
        make = self._factory.avro if schema.schema_type == "AVRO" else self._factory.json
        try:
            make(schema).close()
        except SchemaParseError as error:
            raise UsageError(str(error)) from None
        except ExternalSchemaError as error:  # a reference the registry does not hold
            raise CommandError(str(error)) from None

    def subject(self, args: argparse.Namespace) -> str | None:
        if args.subject:
            return str(args.subject)
        if args.topic:
            field = MessageField.KEY if args.key else MessageField.VALUE
            return topic_subject(self._factory, args.topic, field)
        return None

    def call(self, doing: str, call: Callable[[], Any], subject: str | None = None) -> Any:
        try:
            return call()
        except Exception as error:
            if subject and getattr(error, "error_code", None) == _SUBJECT_NOT_FOUND:
                raise CommandError(self.not_found(subject)) from None
            raise registry_failure(error, self.url, doing) from None

    @property
    def factory(self) -> SchemaRegistrySchemaFactory:
        return self._factory

    def not_found(self, subject: str) -> str:
        try:
            known = self.client.get_subjects()
        except Exception:
            known = []
        close = difflib.get_close_matches(subject, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f" ({len(known)} subjects there)"
        return f"subject {subject} is not registered at {self.url}{hint}"


# -- the commands ------------------------------------------------------------------------------


def run_subjects(args: argparse.Namespace, registry: _Registry) -> int:
    subjects = sorted(
        registry.call(
            "listing subjects",
            lambda: registry.client.get_subjects(subject_prefix=args.prefix, deleted=args.deleted),
        )
    )
    if not args.versions:
        if args.output == "json":
            _print_json(subjects)
        else:
            for subject in subjects:
                print(subject)
        return EXIT_OK
    versions = {subject: _versions(registry, subject, deleted=args.deleted) for subject in subjects}
    if args.output == "json":
        _print_json(versions)
    else:
        for subject, numbers in versions.items():
            print(f"{subject}\t{','.join(map(str, numbers))}")
    return EXIT_OK


def _versions(registry: _Registry, subject: str, *, deleted: bool = False) -> list[int]:
    found: list[int] = registry.call(
        f"listing the versions of {subject}",
        lambda: registry.client.get_versions(subject, deleted=deleted),
        subject,
    )
    return found


def run_delete(args: argparse.Namespace, registry: _Registry) -> int:
    subject = _required_subject(args, registry)
    client = registry.client
    version = None if args.version is None else _version(args.version)
    what = f"version {version} of {subject}" if version is not None else subject
    if version is None:
        deleted = registry.call(f"deleting {what}", lambda: client.delete_subject(subject), subject)
    else:
        version = registry.call(
            f"finding {what}", lambda: client.get_version(subject, version).version, subject
        )
        registry.call(f"deleting {what}", lambda: client.delete_version(subject, version), subject)
        deleted = [version]
    if args.permanent:
        if version is None:
            registry.call(f"permanently deleting {what}", lambda: client.delete_subject(subject, True))
        else:
            registry.call(
                f"permanently deleting {what}", lambda: client.delete_version(subject, version, True)
            )
    _print_json({"subject": subject, "deleted_versions": sorted(deleted), "permanent": args.permanent})
    return EXIT_OK


def run_register(args: argparse.Namespace, registry: _Registry) -> int:
    subject = _required_subject(args, registry)
    schema = _schema(args)
    registry.parse(schema)
    found = register(registry.client, registry.url, subject, schema, normalize=args.normalize)
    _print_json({"subject": subject, "id": found.schema_id, "version": found.version})
    return EXIT_OK


def run_get(args: argparse.Namespace, registry: _Registry) -> int:
    subject = registry.subject(args)
    if args.id is not None:
        if subject is not None:
            raise UsageError("give --id, or a subject (--subject / --topic) and --version, not both")
        schema = registry.call(f"getting schema id {args.id}", lambda: registry.client.get_schema(args.id))
        subjects = registry.call(
            f"listing the subjects of schema id {args.id}",
            lambda: registry.client.get_subjects_by_schema_id(args.id),
        )
        document = {"id": args.id, "subjects": subjects, **schema.to_dict()}
    elif subject is None:
        raise UsageError("give a subject (--subject or --topic), or --id")
    else:
        version = _version(args.version)
        found = registry.call(
            f"getting version {version} of {subject}",
            lambda: registry.client.get_version(subject, version),
            subject,
        )
        document = {
            "subject": subject,
            "version": found.version,
            "id": found.schema_id,
            **found.schema.to_dict(),
        }
    document.setdefault("schemaType", "AVRO")
    if args.schema_only:
        print(_pretty_schema(document["schema"], document["schemaType"]))
    else:
        _print_json(document)
    return EXIT_OK


def run_check(args: argparse.Namespace, registry: _Registry) -> int:
    subject = _required_subject(args, registry)
    schema = _schema(args)
    registry.parse(schema)
    versions = registry.call(
        f"listing the versions of {subject}", lambda: registry.client.get_versions(subject), subject
    )
    level = _effective_level(registry, subject)
    path = f"compatibility/subjects/{_quote(subject)}/versions"
    if args.version != "all":
        path += f"/{_version(args.version)}"
    # confluent-kafka's test_compatibility returns only the verdict; the reasons are in the same
    # response, so the request is made through its REST client (same auth, same retries).
    answer = registry.call(
        f"checking a schema against {subject}",
        lambda: _confluent.rest_post(registry.client, f"{path}?verbose=true", schema.to_dict()),
        subject,
    )
    against = "every version the level covers" if args.version == "all" else f"version {args.version}"
    scope = f"{subject} ({level}, versions {', '.join(map(str, versions))}), {against}"
    compatible = bool(answer.get("is_compatible"))
    reasons = [] if compatible else list(answer.get("messages") or ["(the registry gave no reason)"])
    if args.output == "json":
        _print_json(
            {
                "subject": subject,
                "compatible": compatible,
                "compatibility": level,
                "versions": versions,
                "against": args.version,
                "messages": reasons,
            }
        )
    else:
        print(f"{'compatible' if compatible else 'incompatible'}: {scope}")
        for reason in reasons:
            print(f"  - {reason}")
    return EXIT_OK if compatible else EXIT_FAILED


def run_config(args: argparse.Namespace, registry: _Registry) -> int:
    subject = registry.subject(args)
    where = f"the config of {subject}" if subject else "the global config"
    if args.delete:
        if subject is None:
            raise UsageError("--delete removes a subject's config: give --subject or --topic")
        registry.call(f"deleting {where}", lambda: registry.client.delete_config(subject))
    changes = _config_changes(args)
    if changes:
        current = _own_config(registry, subject, where)
        merged = {**current, **changes}
        if "compatibility" not in merged:
            # Some registries (AxonOps) ignore a PUT without a level: keep the effective one.
            merged["compatibility"] = _effective_level(registry, subject)
        config = ServerConfig.from_dict(merged)
        registry.call(f"changing {where}", lambda: registry.client.set_config(subject, config))
    shown = _own_config(registry, subject, where)
    if subject is not None and not shown:
        shown = {"compatibility": _effective_level(registry, subject), "fromGlobal": True}
    _print_json({"subject": subject, **shown} if subject else shown)
    return EXIT_OK


def run_describe(args: argparse.Namespace, registry: _Registry) -> int:
    if args.subject:
        subjects = [(str(args.subject), "value")]
    else:
        subjects = [
            (topic_subject(registry.factory, args.topic, field), name)
            for field, name in ((MessageField.VALUE, "value"), (MessageField.KEY, "key"))
        ]
    views = [_subject_view(registry, subject, field, args.version) for subject, field in subjects]
    found = [view for view in views if view is not None]
    if not found:
        names = " or ".join(subject for subject, _ in subjects)
        raise CommandError(registry.not_found(subjects[0][0]).replace(subjects[0][0], names, 1))
    if args.output == "json":
        _print_json({"topic": args.topic, "subjects": found} if args.topic else found[0])
        return EXIT_OK
    if args.topic:
        print(f"topic {args.topic}")
    for view in found:
        _print_view(view)
    missing = [subject for (subject, _), view in zip(subjects, views, strict=True) if view is None]
    for subject in missing:
        print(f"\n{subject}: not registered (the topic's messages have no key schema)")
    return EXIT_OK


def _subject_view(registry: _Registry, subject: str, field: str, version_text: str) -> dict[str, Any] | None:
    try:
        versions = registry.client.get_versions(subject)
    except Exception as error:
        if getattr(error, "error_code", None) == _SUBJECT_NOT_FOUND:
            return None
        raise registry_failure(error, registry.url, f"listing the versions of {subject}") from None
    version = _version(version_text)
    found = registry.call(
        f"getting version {version} of {subject}",
        lambda: registry.client.get_version(subject, version),
        subject,
    )
    own = _own_config(registry, subject, f"the config of {subject}")
    level = own.get("compatibility") or _effective_level(registry, None)
    return {
        "subject": subject,
        "field": field,
        "versions": versions,
        "version": found.version,
        "id": found.schema_id,
        **found.schema.to_dict(),
        "config": {**own, "compatibility": level, "fromGlobal": "compatibility" not in own},
    }


def _print_view(view: dict[str, Any]) -> None:
    config = view["config"]
    schema_type = view.get("schemaType") or "AVRO"
    print(f"\n{view['field']} subject {view['subject']}")
    print(f"  versions       {', '.join(map(str, view['versions']))}")
    print(f"  shown          version {view['version']}, schema id {view['id']}, {schema_type}")
    where = "global" if config["fromGlobal"] else "subject"
    group = (
        f", group by metadata property {config['compatibilityGroup']!r}"
        if config.get("compatibilityGroup")
        else ""
    )
    print(f"  compatibility  {config['compatibility']} ({where}){group}")
    for key in ("defaultRuleSet", "overrideRuleSet", "defaultMetadata", "overrideMetadata"):
        if config.get(key):
            print(f"  {key:<14} {json.dumps(config[key])}")
    properties = (view.get("metadata") or {}).get("properties") or {}
    if properties:
        print("  metadata       " + ", ".join(f"{k}={v}" for k, v in sorted(properties.items())))
    for reference in view.get("references") or []:
        print(f"  reference      {reference['name']} = {reference['subject']} version {reference['version']}")
    print("  schema:")
    for line in _pretty_schema(view["schema"], schema_type).splitlines():
        print(f"    {line}")
    rules = [
        (section.removesuffix("Rules"), rule)
        for section in ("domainRules", "migrationRules", "encodingRules")
        for rule in (view.get("ruleSet") or {}).get(section) or []
    ]
    if not rules:
        print("  rules:         none")
        return
    rows = [("", "NAME", "KIND", "TYPE", "MODE", "ON FAILURE", "EXPRESSION / TAGS")]
    for section, rule in rules:
        what = rule.get("expr") or ",".join(rule.get("tags") or []) or ""
        disabled = " (disabled)" if rule.get("disabled") else ""
        rows.append(
            (
                section,
                rule.get("name", "") + disabled,
                rule.get("kind", ""),
                rule.get("type", ""),
                rule.get("mode", ""),
                rule.get("onFailure") or "ERROR",
                " ".join(str(what).split()),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    print("  rules:")
    for row in rows:
        print(
            "    "
            + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[-1]
        )


# -- helpers -----------------------------------------------------------------------------------


def _required_subject(args: argparse.Namespace, registry: _Registry) -> str:
    subject = registry.subject(args)
    if subject is None:
        raise UsageError("give --subject or --topic")
    return subject


def _schema(args: argparse.Namespace) -> Schema:
    text = schema_text(args.schema, args.schema_file, "--schema")
    assert text is not None  # argparse requires one of them
    return contract_schema(
        text,
        args.format or guess_format(text, "--schema"),
        json_argument(args.rule_set, "--rule-set"),
        json_argument(args.metadata, "--metadata"),
        [_reference(reference) for reference in args.reference],
        flags=("--rule-set", "--metadata"),
    )


def _reference(text: str) -> SchemaReference:
    name, _, target = text.partition("=")
    subject, _, version = target.rpartition(":")
    if not name or not subject or not version.isdigit():
        raise UsageError(f"--reference takes NAME=SUBJECT:VERSION, not {text!r}")
    return SchemaReference(name, subject, int(version))


def _config_changes(args: argparse.Namespace) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if args.compatibility:
        changes["compatibility"] = args.compatibility
    if args.compatibility_group is not None:
        changes["compatibilityGroup"] = args.compatibility_group
    for flag, key in (
        ("default_metadata", "defaultMetadata"),
        ("override_metadata", "overrideMetadata"),
        ("default_rule_set", "defaultRuleSet"),
        ("override_rule_set", "overrideRuleSet"),
    ):
        option = "--" + flag.replace("_", "-")
        value = json_argument(getattr(args, flag), option)
        if value is not None:
            checked(check_metadata if key.endswith("Metadata") else check_rule_set, value, option)
            changes[key] = value
    return changes


def _own_config(registry: _Registry, subject: str | None, where: str) -> dict[str, Any]:
    """The subject's own config (empty when it has none), or the global config, as registry JSON."""
    try:
        config: dict[str, Any] = registry.client.get_config(subject).to_dict()
    except Exception as error:
        if subject is not None and getattr(error, "error_code", None) in (
            _NO_SUBJECT_CONFIG,
            _SUBJECT_NOT_FOUND,
        ):
            return {}
        raise registry_failure(error, registry.url, f"reading {where}") from None
    if "compatibilityLevel" in config and "compatibility" not in config:
        config["compatibility"] = config.pop("compatibilityLevel")
    return config


def _effective_level(registry: _Registry, subject: str | None) -> str:
    own = _own_config(registry, subject, "the config") if subject else {}
    if own.get("compatibility"):
        return str(own["compatibility"])
    return str(_own_config(registry, None, "the global config").get("compatibility", "BACKWARD"))


def _version(text: str) -> int | str:
    if text == "latest":
        return "latest"
    if text.isdigit():
        return int(text)
    raise UsageError(f"--version takes a number or 'latest', not {text!r}")


def _quote(subject: str) -> str:
    return quote(subject, safe="")


def _pretty_schema(text: str, schema_type: str) -> str:
    if schema_type in ("AVRO", "JSON"):
        try:
            return json.dumps(json.loads(text), indent=2)
        except json.JSONDecodeError:
            return text
    return text


def _print_json(document: Any) -> None:
    print(json.dumps(document, indent=2))
