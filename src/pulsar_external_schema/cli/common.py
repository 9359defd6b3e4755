"""What the subcommands share: service options, `--property`, JSON arguments, one-line errors.

Exit codes, for every subcommand: 0 when everything worked; 1 when a record was rejected or the
command could not do its job (the reason is on stderr, one line); 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from .._signal import InternalSignal
from . import signals
from .signals import PROG

if TYPE_CHECKING:
    from ..connections import ClientConf

#: `--format`'s values, and the registry's name for each.
SCHEMA_TYPES = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CommandError(InternalSignal):
    """Why a command stops: printed as `pulsar-external-schema: <command>: <reason>`, exit 1."""

    exit_code = EXIT_FAILED


class UsageError(CommandError):
    """The command line itself is wrong (a flag missing or malformed, a schema or rule set given on
    it that does not parse, a URL of the wrong form): exit 2, as argparse's own usage errors."""

    exit_code = EXIT_USAGE


def fail(command: str, error: str | BaseException) -> int:
    """One line on stderr, even when a library's or the registry's reason spans several; the exit
    code of the error: 2 for a `UsageError`, else 1. Once a signal came, whatever ended the
    command is that signal (`signals`), and the line says so."""
    stopped = signals.received()
    message = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
    if stopped is not None:
        message = f"stopped by {stopped.name}"
    print(f"{PROG}: {command}: {message}", file=sys.stderr, flush=True)
    return error.exit_code if isinstance(error, CommandError) else EXIT_FAILED


class Parser(argparse.ArgumentParser):
    """argparse's parser, which also says "did you mean" for a mistyped flag or command, as
    Python 3.14's `suggest_on_error` does (3.11-3.13 have none). Its subcommands' parsers are
    of this class too (argparse makes them of their parent's). It reads argparse's `_actions`,
    `_SubParsersAction` and the wording of two of its errors: the did-you-mean tests of
    `tests/unit/test_cli_habits.py` are their touch points, failing where a Python changes them."""

    _argv: tuple[str, ...] = ()

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._argv = tuple(str(arg) for arg in (sys.argv[1:] if args is None else args))
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        super().error(message + self._suggestion(message))

    def _suggestion(self, message: str) -> str:
        unrecognized = message.removeprefix("unrecognized arguments: ")
        if unrecognized != message:
            options = [option for action in self._command()._actions for option in action.option_strings]
            words = [word.split("=", 1)[0] for word in unrecognized.split() if word.startswith("--")]
        elif message.startswith("argument COMMAND: invalid choice: "):
            options = list(self._commands())
            words = [message.split("'")[1]]
        else:
            return ""
        hints = [
            f"{match[0]} for {word}" if len(words) > 1 else match[0]
            for word in words
            if (match := difflib.get_close_matches(word, options, n=1, cutoff=0.6))
        ]
        return f"; did you mean {', '.join(hints)}?" if hints else ""

    def _commands(self) -> dict[str, argparse.ArgumentParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    def _command(self) -> argparse.ArgumentParser:
        """The parser of the subcommand the command line names (else this one)."""
        commands = self._commands()
        return next((commands[word] for word in self._argv if word in commands), self)


def topic_name(text: str) -> str:
    """An argparse type: a Pulsar topic name (`split_topic`), checked before anything connects
    (a broker answers a malformed one with InvalidTopicName to a client that retries it until
    its timeout)."""
    from ..subjects import split_topic

    try:
        split_topic(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def moment(text: str) -> dt.datetime | int:
    """An argparse type: an ISO 8601 time (`2026-11-28`, `2026-11-28T06:00:00+01:00`; without an
    offset, local time) or milliseconds since the epoch."""
    if text.strip().isdigit():
        return int(text)
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give ISO 8601 (2026-11-28T06:00:00Z) or milliseconds since the epoch"
        ) from None


def connect_url(text: str) -> str:
    """An argparse type: a Spark Connect URL, `sc://HOST[:PORT][/;param=value...]`."""
    try:
        connect_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def connect_address(url: str) -> tuple[str, int]:
    """The host and port of a Spark Connect URL (15002 where it names none)."""
    try:
        if not url.startswith("sc://"):
            raise ValueError("it must start with sc://")
        address = urlsplit(url.replace("sc://", "http://", 1))
        if not address.hostname:
            raise ValueError("no host")
        return address.hostname, address.port or 15002
    except ValueError as error:
        raise ValueError(f"{url!r} is not a Spark Connect URL (sc://HOST:PORT): {error}") from None


def property_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


#: The environment variables of the console's connection flags (`scripts/services env` prints
#: them), by the `ClientConf` field they give; PULSAR_CLIENT_CONF names a file under them all.
ENVIRONMENT = {"service_url": "PULSAR_SERVICE_URL", "web_service_url": "PULSAR_ADMIN_URL"}
TOKEN_ENVIRONMENT = "PULSAR_AUTH_TOKEN"


def add_registry_options(
    parser: argparse.ArgumentParser, *, pulsar: bool = False, admin: bool = False
) -> None:
    """`--registry-url` (and `--service-url` / `--admin-url`, `--client-conf`, `--auth-token`:
    `connection` resolves them with the environment)."""
    group = parser.add_argument_group(
        "services (a flag over --client-conf's file, over the environment variables in brackets)"
    )
    if pulsar:
        group.add_argument(
            "--service-url",
            help="Pulsar service URL, e.g. pulsar://127.0.0.1:6650 [PULSAR_SERVICE_URL]",
        )
    if admin:
        group.add_argument(
            "--admin-url",
            help="Pulsar admin REST URL, e.g. http://127.0.0.1:8080 [PULSAR_ADMIN_URL]",
        )
    if pulsar or admin:
        group.add_argument(
            "--client-conf",
            metavar="FILE",
            help="a Pulsar client.conf, as pulsar-client and pulsar-admin read it: brokerServiceUrl, "
            "webServiceUrl, the TLS files (tlsTrustCertsFilePath, ...) and authPlugin/authParams; the "
            "flags here override it, and it overrides the environment variables [PULSAR_CLIENT_CONF: "
            "a file under the variables, not read when this is given]",
        )
        group.add_argument(
            "--auth-token",
            metavar="TOKEN",
            help="a token (JWT) for Pulsar and its admin API, or @FILE holding it [PULSAR_AUTH_TOKEN]",
        )
    group.add_argument(
        "--registry-url",
        default=os.environ.get("SCHEMA_REGISTRY_URL"),
        help="schema registry URL, e.g. http://127.0.0.1:8081 [SCHEMA_REGISTRY_URL]",
    )
    group.add_argument(
        "--property",
        "-p",
        action="append",
        type=property_pair,
        default=[],
        metavar="KEY=VALUE",
        help="any config key of docs/configuration.md (repeatable), e.g. -p basic.auth.user.info=u:p",
    )


def plural(count: int, word: str) -> str:
    """`1 record`, `2 records`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def add_output_option(
    parser: argparse.ArgumentParser, help: str = "text for people (default), or json for scripts (`| jq`)"
) -> None:
    """`--output text|json`, the same on every command that prints results."""
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help=help)


def whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `minimum` (`--max-messages 0` or
    `--timeout-ms -5` are usage errors, not a silent wait)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"takes a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"takes a number of {minimum} or more, not {text!r}")
        return value

    parse.__name__ = "number"  # argparse names the type in its own messages
    return parse


def non_negative(text: str) -> float:
    """An argparse type: a number of 0 or more."""
    return _number(text, 0.0, "of 0 or more")


def positive(text: str) -> float:
    """An argparse type: a number above 0 (seconds to wait)."""
    return _number(text, 0.0, "of seconds above 0", strict=True)


def _number(text: str, minimum: float, what: str, *, strict: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a number {what}, not {text!r}") from None
    if not (value > minimum if strict else value >= minimum):  # NaN too
        raise argparse.ArgumentTypeError(f"takes a number {what}, not {text!r}")
    return value


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port number from 0 to 65535, not {text!r}")
    return port


def add_metrics_option(parser: argparse.ArgumentParser) -> None:
    """`--metrics-port PORT`: rule metrics for Prometheus while the command runs."""
    parser.add_argument(
        "--metrics-port",
        type=_port,
        metavar="PORT",
        help="serve rule metrics for Prometheus at http://0.0.0.0:PORT/metrics while this runs "
        "(0: any free port, printed on stderr; needs the prometheus extra)",
    )


def serve_rule_metrics(args: argparse.Namespace) -> None:
    """Start the `/metrics` endpoint `--metrics-port` asks for, before any schema is made (plans
    are metered when they are built)."""
    port = getattr(args, "metrics_port", None)
    if port is None:
        return
    from ..errors import ExternalSchemaError

    try:
        from ..metrics import prometheus
    except ImportError as error:
        raise UsageError(f"--metrics-port {error}") from None
    try:
        server, _ = prometheus.serve_metrics(port)
    except ExternalSchemaError as error:
        raise CommandError(str(error)) from None
    print(f"rule metrics at http://0.0.0.0:{server.server_port}/metrics", file=sys.stderr, flush=True)


def connection(args: argparse.Namespace) -> ClientConf:
    """The cluster's client configuration, each source over the ones after it, key by key: the
    flags (`--service-url`, `--admin-url`, `--auth-token`); the file of `--client-conf`; the
    environment variables (PULSAR_SERVICE_URL, PULSAR_ADMIN_URL, PULSAR_AUTH_TOKEN); the file
    PULSAR_CLIENT_CONF names (not read when `--client-conf` names one). Where a file's or
    variable's URL is used over another's, a line on stderr says so (a flag's is used as typed). Then
    `args.service_url`, `args.admin_url`, `args.client_conf` (the file read) and
    `args.auth_token` (the token of a flag or variable, where it gives the credentials) are what
    the command uses, for `require` and every message."""
    from ..connections import AUTH_OAUTH2, CLIENT_CONF_ENV, ClientConf, Layer, layered
    from ..errors import ConfigError

    flags_of = {"service_url": "service_url", "web_service_url": "admin_url"}
    taken = [name for name, flag in flags_of.items() if hasattr(args, flag)]
    path = getattr(args, "client_conf", None)
    named_by = "--client-conf"
    if not path and os.environ.get(CLIENT_CONF_ENV):
        path, named_by = os.environ[CLIENT_CONF_ENV], CLIENT_CONF_ENV
    environment = {name: os.environ.get(ENVIRONMENT[name]) for name in taken}
    try:
        flag_token = auth_token(args)
        env_token = _token(os.environ.get(TOKEN_ENVIRONMENT), TOKEN_ENVIRONMENT)
        flags = Layer(
            ClientConf().overridden(
                service_url=getattr(args, "service_url", None),
                web_service_url=getattr(args, "admin_url", None),
                token=flag_token,
            ),
            "the command line",
            {"service_url": "--service-url", "web_service_url": "--admin-url"},
            explicit=True,
        )
        file = Layer(ClientConf.read(path), f"{named_by} {path}") if path else None
        env = Layer(
            ClientConf().overridden(
                service_url=environment.get("service_url"),
                web_service_url=environment.get("web_service_url"),
                token=env_token,
            ),
            "the environment",
            {name: f"{variable} in the environment" for name, variable in ENVIRONMENT.items()},
        )
        # a file named on the command line over the environment; the one it names, under it
        result = layered(flags, env, file) if named_by == CLIENT_CONF_ENV else layered(flags, file, env)
        conf = result.conf.check()
    except ConfigError as error:
        raise UsageError(f"{named_by}: {error}" if path and str(path) in str(error) else str(error)) from None
    if conf.plugin == AUTH_OAUTH2:  # a refused credential: the issuer's answer, before any connection
        try:
            conf.token()
        except ConfigError as error:
            raise CommandError(str(error)) from None
    result.announce(tuple(taken), say=lambda line: print(f"{PROG}: {line}", file=sys.stderr, flush=True))
    if hasattr(args, "service_url"):
        args.service_url = conf.service_url
    if hasattr(args, "admin_url"):
        args.admin_url = conf.web_service_url
    credentials = result.source_of("auth_plugin")
    args.auth_token = flag_token if credentials is flags else env_token if credentials is env else None
    args.auth_token_given_as = "--auth-token" if credentials is flags else TOKEN_ENVIRONMENT
    args.client_conf = path or None
    args.connection = conf
    return conf


def require(args: argparse.Namespace, *names: str) -> None:
    """Fail with the flags (and environment variables) a command needs and did not get."""
    flags = {
        "service_url": "--service-url (PULSAR_SERVICE_URL, or brokerServiceUrl of --client-conf)",
        "admin_url": "--admin-url (PULSAR_ADMIN_URL, or webServiceUrl of --client-conf)",
        "registry_url": "--registry-url (SCHEMA_REGISTRY_URL)",
    }
    missing = [flags[name] for name in names if not getattr(args, name, None)]
    if missing:
        raise UsageError(f"missing {', '.join(missing)}")


def schema_config(args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """The package config of a command: the registry URL, `--property` pairs, then `extra`.
    `--auth-token` is the admin API's token too (`-p pulsar.admin.url` declares the topic
    EXTERNAL with it) unless `-p pulsar.admin.token` gives another, as the Spark source does."""
    from ..config import with_broker_token

    config = {"schema.registry.url": args.registry_url, **dict(args.property), **extra}
    if getattr(args, "client_conf", None):  # the admin API's TLS and credentials (-p pulsar.admin.url)
        config.setdefault("pulsar.client.conf", args.client_conf)
    given_as = getattr(args, "auth_token_given_as", "--auth-token")
    return with_broker_token(config, auth_token(args), given_as)


def json_argument(text: str | None, flag: str) -> Any:
    """A JSON command-line value, given inline or as `@path` (a file holding it)."""
    if text is None:
        return None
    source = text
    if text.startswith("@"):
        source = read_file(text[1:], flag)
    try:
        return json.loads(source)
    except json.JSONDecodeError as error:
        raise UsageError(f"{flag} is not valid JSON ({error}): {_short(source)}") from None


def auth_token(args: argparse.Namespace) -> str | None:
    """`--auth-token`: the token, given inline or as `@path` (a file holding it, as a secret
    store writes one: the token stays out of the shell's history and the process list)."""
    return _token(getattr(args, "auth_token", None), "--auth-token")


def _token(text: str | None, given_as: str) -> str | None:
    """A token given inline or as `@path` (`--auth-token`, PULSAR_AUTH_TOKEN)."""
    if not text:
        return None
    return read_file(text[1:], given_as).strip() if text.startswith("@") else text


def read_file(path: str, flag: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as error:
        raise UsageError(f"{flag}: cannot read {path}: {error.strerror or error}") from None


def schema_text(inline: str | None, path: str | None, flag: str) -> str | None:
    """The schema of `--X-schema` or `--X-schema-file` (at most one is given: argparse checks)."""
    if path is not None:
        return read_file(path, f"{flag}-file")
    return inline


def registry_failure(error: Exception, url: str, doing: str) -> CommandError:
    """A registry call's failure as one line: what was asked, and what the registry said, or that it
    could not be reached (confluent-kafka raises connection errors from httpx as they are)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    from ..errors import ExternalSchemaError
    from ..registry import describe, not_a_registry

    if isinstance(error, ExternalSchemaError):
        return CommandError(str(error))
    if not_a_registry(error):
        return CommandError(f"{doing}: {url}: {describe(error)}")
    if isinstance(error, SchemaRegistryError) and error.http_status_code > 0:
        return CommandError(f"{doing}: the registry at {url} answered: {describe(error)}")
    reason = str(error) or type(error).__name__
    return CommandError(f"{doing}: cannot reach the schema registry at {url}: {reason}")


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
