"""Periodic counts on stderr, so a long `produce` or `consume` shows that it is moving."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .common import plural


class Progress:
    """Prints `<verb> N <noun>s (M failed), R/s` at most every `interval` seconds (0: never), and
    `, about L left (T s)` where the caller knows about how many are left."""

    def __init__(self, verb: str, noun: str, interval: float, stream: TextIO | None = None) -> None:
        self._verb = verb
        self._noun = noun
        self._interval = interval
        self._stream = stream or sys.stderr
        self._started = self._last = time.monotonic()

    @property
    def shown(self) -> bool:
        return self._interval > 0

    def update(self, done: int, failed: int, left: int | None = None) -> None:
        if self._interval <= 0:
            return
        now = time.monotonic()
        if now - self._last >= self._interval:
            self._last = now
            self._print(done, failed, now, left)

    def _print(self, done: int, failed: int, now: float, left: int | None) -> None:
        rate = done / max(now - self._started, 1e-9)
        rest = f", about {left:,} left ({left / rate:,.0f} s)" if left is not None and rate > 0 else ""
        print(
            f"... {self._verb} {plural(done, self._noun)} ({failed} failed), {rate:,.0f}/s{rest}",
            file=self._stream,
            flush=True,
        )
