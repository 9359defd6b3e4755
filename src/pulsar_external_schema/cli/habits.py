"""What Confluent's and Pulsar's console tools taught their users, understood by `produce` and
`consume`.

- Confluent's `kafka-avro-console-producer` / `-consumer` take their settings as
  `--property NAME=VALUE`: `value.schema`, `key.schema`, `value.schema.file`, `key.schema.file`,
  `value.rule.set`, `value.metadata`, `value.schema.id`, `parse.key`, `key.separator`,
  `print.key`. Given with `-p`/`--property` here, they act as the matching flag; every other
  `-p` key is a config key of docs/configuration.md.
- `kafka-console-consumer --group G` is a subscription here: `--group` says so.
- `pulsar-client consume -s SUB -n N TOPIC`: `-s`, `-n` and the positional topic are understood
  by `consume`, the positional topic by `produce` too.
"""

from __future__ import annotations

import argparse
import difflib
from typing import Any

from .common import UsageError, topic_name

#: Confluent console property -> (the destination of the flag it stands for, the flag).
_PRODUCE_PROPERTIES = {
    "value.schema": ("value_schema", "--value-schema"),
    "value.schema.file": ("value_schema_file", "--value-schema-file"),
    "key.schema": ("key_schema", "--key-schema"),
    "key.schema.file": ("key_schema_file", "--key-schema-file"),
    "value.rule.set": ("value_rule_set", "--value-rule-set"),
    "value.metadata": ("value_metadata", "--value-metadata"),
    "parse.key": ("parse_key", "--parse-key"),
    "key.separator": ("key_separator", "--key-separator"),
}
_CONSUME_PROPERTIES = {
    "print.key": ("print_key", "--print-key"),
    "key.separator": ("key_separator", "--key-separator"),
}
_SWITCHES = {"parse_key", "print_key"}
#: Confluent's console properties that name a config key of this package.
_CONFIG_ALIASES = {"value.schema.id": "use.schema.id"}

DEFAULT_KEY_SEPARATOR = "\t"


def add_topic(parser: argparse.ArgumentParser) -> None:
    """`--topic T`, or T alone as `pulsar-client` takes it."""
    parser.add_argument("--topic", type=topic_name, help="topic name, e.g. test or persistent://t/ns/orders")
    parser.add_argument(
        "topic_name", nargs="?", type=topic_name, metavar="TOPIC", help="the topic, instead of --topic"
    )


def add_key_options(parser: argparse.ArgumentParser, *, producing: bool) -> None:
    group = parser.add_argument_group("keys and properties")
    if producing:
        group.add_argument("--key", metavar="KEY", help="partition key of every message sent")
        group.add_argument(
            "--parse-key",
            action="store_true",
            help="each line is KEY<separator>VALUE: the key is the message's partition key "
            "(with --key-schema, the key record as JSON)",
        )
        group.add_argument(
            "--message-property",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a property of every message sent (repeatable)",
        )
    else:
        group.add_argument(
            "--print-key",
            action="store_true",
            help="print KEY<separator>VALUE: the partition key (with --key-value, the key as JSON)",
        )
    group.add_argument(
        "--key-separator",
        default=DEFAULT_KEY_SEPARATOR,
        metavar="TEXT",
        help="between key and value with --%s-key (default: a tab)" % ("parse" if producing else "print"),
    )
    if not producing:
        parser.add_argument("--group", help=argparse.SUPPRESS)  # answered by `settle`


def settle_topic(args: argparse.Namespace) -> None:
    """`args.topic` from `--topic` or the position (`add_topic`)."""
    if args.topic and args.topic_name and args.topic != args.topic_name:
        raise UsageError(f"two topics: --topic {args.topic} and {args.topic_name}; give one")
    args.topic = args.topic or args.topic_name
    if not args.topic:
        raise UsageError("give the topic: --topic TOPIC (or TOPIC alone, as pulsar-client takes it)")


def settle(args: argparse.Namespace, *, producing: bool) -> None:
    """The topic from the flag or the position, and Confluent's console properties as flags."""
    settle_topic(args)
    if not producing and getattr(args, "group", None):
        raise UsageError(
            f"--group: a Kafka consumer group is a Pulsar subscription: --subscription {args.group} "
            "(its position is kept, and each message is acknowledged once printed)"
        )
    bridged = _PRODUCE_PROPERTIES if producing else _CONSUME_PROPERTIES
    kept: list[tuple[str, str]] = []
    for name, value in args.property:
        if name in _CONFIG_ALIASES:
            kept.append((_CONFIG_ALIASES[name], value))
        elif name in bridged:
            _set(args, name, value, *bridged[name])
        elif name in _PRODUCE_PROPERTIES or name in _CONSUME_PROPERTIES:
            other = "consume" if producing else "produce"
            raise UsageError(f"-p {name}: a setting of the console {other}r, not of this command")
        else:
            _near_a_console_property(name, bridged)
            kept.append((name, value))
    args.property = kept
    if producing:
        args.message_property = [_pair(text) for text in args.message_property]
        if args.key is not None and args.parse_key:
            raise UsageError("--key gives every message one key, --parse-key reads one per line: give one")


def _near_a_console_property(name: str, bridged: dict[str, tuple[str, str]]) -> None:
    """A `-p` key that is neither a config key nor one of Confluent's console properties, but
    nearest one of the latter (`value.shema`): "did you mean" that property. Other unknown keys
    are the config's to answer, with its own suggestion."""
    from ..config import ALIASES, KEYS, RENAMED

    config_keys = [*KEYS, *ALIASES, *RENAMED]
    if name in config_keys:
        return
    properties = [*bridged, *_CONFIG_ALIASES]
    close = difflib.get_close_matches(name, [*properties, *config_keys], n=1)
    if close and close[0] in properties:
        raise UsageError(f"-p {name}: unknown property; did you mean {close[0]!r}?")


def _set(args: argparse.Namespace, name: str, value: str, dest: str, flag: str) -> None:
    if dest in _SWITCHES:
        if value.lower() not in ("true", "false"):
            raise UsageError(f"-p {name}={value}: takes true or false")
        setattr(args, dest, getattr(args, dest) or value.lower() == "true")
        return
    current: Any = getattr(args, dest, None)
    if dest == "key_separator":
        current = None if current == DEFAULT_KEY_SEPARATOR else current
    if current is not None:
        raise UsageError(f"-p {name}=... and {flag}: the same setting twice; give one")
    if dest.endswith("_schema") and getattr(args, f"{dest}_file", None) is not None:
        raise UsageError(f"-p {name}=... and {flag}-file: the same setting twice; give one")
    setattr(args, dest, value)


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--message-property takes NAME=VALUE, not {text!r}")
    return name.strip(), value
