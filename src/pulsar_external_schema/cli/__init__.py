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

import sys

from . import signals
from .signals import PROG

TYPE_CHECKING = False  # `typing`'s, not imported before the signals are handled (`main`)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .parsers import build_parser

__all__ = ["PROG", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs a command; ends it on SIGINT, SIGTERM or a closed stdout as `signals` says, with one
    line on stderr at most and never a traceback. The command lines' module is imported once the
    signals are handled: a Ctrl-C while the tool starts ends it as one during its command."""
    with signals.handled():
        command: str | None = None
        try:
            from . import parsers
            from .common import EXIT_OK, fail

            args = parsers.build_parser().parse_args(argv)
            command = args.command
            result: int = args.run(args)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the reader of stdout has what it wanted
            signals.silence_stdout()
            result = EXIT_OK
        except BaseException as error:
            if signals.received() is None or isinstance(error, SystemExit):
                raise
            result = signals.stopped(PROG) if command is None else fail(command, error)
        stopped = signals.status()
    return result if stopped is None else stopped


def __getattr__(name: str) -> Any:
    if name == "build_parser":
        from .parsers import build_parser

        return build_parser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
