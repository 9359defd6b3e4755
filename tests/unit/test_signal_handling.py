"""`cli.signals`: what a console tool does with SIGINT and SIGTERM, in this process (the real tools
get real signals in tests/integration/test_cli_signals.py)."""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any

import pytest

from pulsar_external_schema import cli
from pulsar_external_schema.cli import signals


@pytest.fixture(autouse=True)
def sigint_as_a_terminal_gives_it() -> Any:
    """SIGINT with Python's own handler, as a terminal's process has it: a suite started in the
    background (`nohup`, `&`) inherits it ignored, and an ignored signal stays ignored (below)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_signal_raises_and_sets_the_status() -> None:
    with signals.handled():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)  # lets the handler run
        assert signals.received() is signal.SIGTERM
        assert signals.status() == 143


def test_a_held_signal_is_raised_at_release() -> None:
    """A console consumer holds signals from printing a message to acknowledging it."""
    with signals.handled():
        signals.hold()
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0)
        assert signals.received() is signal.SIGINT  # recorded, not raised
        with pytest.raises(KeyboardInterrupt):
            signals.release()
        signals.release()  # raised once
        assert signals.status() == 130


def test_the_handlers_before_come_back_and_an_ignored_signal_stays_ignored() -> None:
    before = signal.getsignal(signal.SIGINT)
    ignored = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with signals.handled():
            assert signal.getsignal(signal.SIGINT) is not before
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGTERM, ignored)


def run_main(monkeypatch: pytest.MonkeyPatch, run: object) -> int:
    from pulsar_external_schema.cli import parsers

    parser = parsers.build_parser()
    monkeypatch.setattr(
        parsers, "build_parser", lambda: _Parsed(parser, argparse.Namespace(command="subjects", run=run))
    )
    return cli.main([])


class _Parsed:
    def __init__(self, parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
        self.parser, self.args = parser, args

    def parse_args(self, argv: object) -> argparse.Namespace:
        return self.args


def test_main_ends_a_command_a_signal_stopped_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)
        raise AssertionError("not reached")

    assert run_main(monkeypatch, interrupted) == 143
    assert capsys.readouterr().err == "pulsar-external-schema: subjects: stopped by SIGTERM\n"


def test_main_takes_any_error_after_a_signal_as_the_signal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pulsar-client raises its own `Interrupted` when a signal comes while it waits."""

    def interrupted(args: argparse.Namespace) -> int:
        signals.hold()
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0)
        raise RuntimeError("Pulsar error: ResultInterrupted")

    assert run_main(monkeypatch, interrupted) == 130
    assert capsys.readouterr().err == "pulsar-external-schema: subjects: stopped by SIGINT\n"


def test_main_ends_quietly_when_stdout_is_closed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def closed(args: argparse.Namespace) -> int:
        raise BrokenPipeError

    monkeypatch.setattr(signals, "silence_stdout", lambda: None)  # keep pytest's stdout
    assert run_main(monkeypatch, closed) == 0
    assert capsys.readouterr().err == ""


def test_an_error_without_a_signal_is_not_taken_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        run_main(monkeypatch, broken)


def test_a_signal_before_the_command_is_known_ends_the_tool_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C while the tool still imports its command lines: the status, and the tool's name
    without a command (it had none yet)."""
    from pulsar_external_schema.cli import parsers

    def interrupted() -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("not reached")

    monkeypatch.setattr(parsers, "build_parser", interrupted)
    assert cli.main(["subjects"]) == 130
    assert capsys.readouterr().err == "pulsar-external-schema: stopped by SIGINT\n"
