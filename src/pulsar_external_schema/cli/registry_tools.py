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
from .._secrets import masked
from ..errors import ExternalSchemaError, SchemaParseError
from ..factory import SchemaRegistrySchemaFactory
from ..rules.checks import check_metadata, check_rule_set
from ..topic_schemas import topic_subject
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    CommandError,
    UsageError,
    fail,
    json_argument,
    registry_failure,
    require,
    schema_config,
    schema_text,
)
from .schemas import checked, contract_schema, guess_format, new_factory, register

_SUBJECT_NOT_FOUND = 40401
_NO_SUBJECT_CONFIG = 40408


Command = Callable[[argparse.Namespace, "_Registry"], int]


def run(args: argparse.Namespace) -> int:
    """Runs the registry command `args.command` (`parsers` defines each) with a client of
    `--registry-url`."""
    command = _COMMANDS[args.command]
    try:
        require(args, "registry_url")
        with _Registry(args) as registry:
            return command(args, registry)
    except CommandError as error:
        return fail(args.command, error)


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
    for _section, rule in rules:  # where a DLQ action sends a record, the KEK a field is encrypted with
        params = masked(rule.get("params") or {})
        if params:
            given = ", ".join(f"{key}={value}" for key, value in sorted(params.items()))
            print(f"    {rule.get('name', '')} params: {given}")


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


_COMMANDS: dict[str, Command] = {
    "subjects": run_subjects,
    "delete": run_delete,
    "register": run_register,
    "get": run_get,
    "check": run_check,
    "config": run_config,
    "describe": run_describe,
}
