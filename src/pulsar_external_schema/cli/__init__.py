"""`pulsar-external-schema`: console tools.

    produce / consume      JSON lines in and out of a topic, through its schemas and data contract
    describe / register / get / subjects / check / config / delete      the schema registry
    validate               the Spark validation pipeline (valid messages on, invalid ones to a DLQ)
    completion             a shell completion script (bash, zsh)

Every subcommand takes its service URLs from flags or from PULSAR_SERVICE_URL, PULSAR_ADMIN_URL
and SCHEMA_REGISTRY_URL, reports failures as one line on stderr, and exits 0 when everything
worked, 1 when something failed, 2 on a bad command line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import console, registry, signals, validate
from .common import EXIT_OK, PROG, Parser, fail

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
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    console.add_parsers(commands)
    registry.add_parsers(commands)
    validate.add_parser(commands)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Runs a command; ends it on SIGINT, SIGTERM or a closed stdout as `signals` says, with one
    line on stderr at most and never a traceback."""
    with signals.handled():
        command = "?"
        try:
            args = build_parser().parse_args(argv)
            command = args.command
            result: int = args.run(args)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the reader of stdout has what it wanted
            signals.silence_stdout()
            result = EXIT_OK
        except BaseException as error:
            if signals.received() is None or isinstance(error, SystemExit):
                raise
            result = fail(command, error)
        stopped = signals.status()
    return result if stopped is None else stopped


def _version() -> str:
    from .._version import VERSION

    return VERSION


if __name__ == "__main__":
    sys.exit(main())
