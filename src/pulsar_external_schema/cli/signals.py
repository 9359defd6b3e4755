"""How a console tool ends on SIGINT (Ctrl-C), SIGTERM (a container stop, systemd) or a closed stdout.

`main` runs every command inside `handled()`: the first SIGINT or SIGTERM is recorded and raised
as `KeyboardInterrupt`, which unwinds the command through its `finally` blocks (a producer
flushed, a consumer closed, which sends its acknowledgements), and the tool exits with 128 + the
signal's number (130, 143), as a shell reports a process a signal ended. While a console consumer
prints a message and acknowledges it (`hold`), a signal is only recorded; it is raised when the
consumer next waits (`release`), so a subscription acknowledges exactly what was printed.
pulsar-client, when a signal comes while it waits for a message, raises its own `Interrupted`
from the handler's `KeyboardInterrupt`: once a signal was received, whatever ends the command is
that signal (`received`).

A signal the tool was started with ignored (`nohup`, a shell's background job ignores SIGINT)
stays ignored. A closed stdout (`| head`) ends a command quietly with status 0: its reader has
what it wanted (`silence_stdout`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType

#: The tools' name, as their lines on stderr begin (here, the first module a tool imports).
PROG = "pulsar-external-schema"

__all__ = ["PROG", "handled", "hold", "received", "release", "silence_stdout", "status", "stopped"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _State:
    received: signal.Signals | None = None
    holding = False
    pending = False


_state = _State()


def _handle(signum: int, _frame: FrameType | None) -> None:
    if _state.received is None:
        _state.received = signal.Signals(signum)
    if _state.holding:
        _state.pending = True
        return
    raise KeyboardInterrupt


@contextmanager
def handled() -> Iterator[None]:
    """SIGINT and SIGTERM handled as the module says while the block runs (in the main thread;
    elsewhere they are left as they are), the previous handlers restored after."""
    global _state
    _state = _State()
    previous = {}
    try:
        for signum in _SIGNALS:
            with suppress(ValueError):  # not the main thread
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    previous[signum] = signal.signal(signum, _handle)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def received() -> signal.Signals | None:
    """The signal that stops the tool, if one came."""
    return _state.received


def status() -> int | None:
    """The exit status of a tool a signal stopped (128 + its number), or None."""
    return None if _state.received is None else 128 + _state.received


def hold() -> None:
    """From now until `release`, a signal is recorded, not raised."""
    _state.holding = True


def release() -> None:
    """Ends `hold`, and raises `KeyboardInterrupt` if a signal came meanwhile."""
    _state.holding = False
    if _state.pending:
        _state.pending = False
        raise KeyboardInterrupt


def stopped(prog: str) -> int:
    """A tool stopped before it knew its command (while it started): one line, and the status."""
    assert _state.received is not None
    print(f"{prog}: stopped by {_state.received.name}", file=sys.stderr, flush=True)
    return 128 + _state.received


def silence_stdout() -> None:
    """stdout to /dev/null, so that nothing written to it later (the interpreter's last flush
    included) raises again once its reader has gone."""
    with suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
