"""What a Python worker keeps from one task (or query) to the next: a few of each kind of thing,
by key, the least recently used one closed beyond that.

Spark reuses its Python workers (`spark.python.worker.reuse`, on by default), for the executors'
tasks and for the driver's planning calls alike. What costs to make (a Pulsar client, a
factory whose registry clients each load the system's CA certificates, a schema with its
plans) is made once a worker, not once a task or a query (`executor.py`, `schemas.py`).
"""

from __future__ import annotations

import atexit
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Kept", "close_all"]

T = TypeVar("T")

_lock = threading.Lock()
_all: list[Kept[object]] = []


class Kept(Generic[T]):
    """At most `most` things by key; `close` closes one that is dropped (and all at exit)."""

    def __init__(self, most: int, close: Callable[[T], None]) -> None:
        self.most = most
        """How many are kept."""
        self._close = close
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        with _lock:
            _all.append(self)  # type: ignore[arg-type]

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """The thing kept under `key`, made (outside the lock: it may wait on the network) if none
        is; the caller must not close it."""
        with _lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        made = make()
        evicted: list[T] = []
        with _lock:
            found = self._items.get(key)
            if found is not None:  # another thread made one meanwhile: keep that one
                evicted.append(made)
                made = found
            else:
                self._items[key] = made
                while len(self._items) > self.most:
                    evicted.append(self._items.popitem(last=False)[1])
        for item in evicted:
            self._close(item)
        return made

    def close_all(self) -> None:
        with _lock:
            items = list(self._items.values())
            self._items.clear()
        for item in items:
            self._close(item)


def close_all() -> None:
    """Close everything every `Kept` holds (at exit, and in tests)."""
    with _lock:
        kept = list(_all)
    for one in kept:
        one.close_all()


atexit.register(close_all)
