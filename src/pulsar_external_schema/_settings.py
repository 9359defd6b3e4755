"""The one reading of a boolean or an integer a user gives as a setting: the factory config's
keys (`config.py`), a `client.conf`'s keys (`connections.py`) and the Spark source's options
(`tasks/options.py`) all take these forms, and each words its own error with the key's name.

- a boolean: Python's `True` / `False`, or `true` / `false` in any case, spaces around allowed
  (as Java's `Boolean.parseBoolean` reads a properties file, but refusing every other word
  instead of taking it for false);
- an integer: a Python `int` (not a `bool`), or ASCII digits with an optional sign, spaces around
  allowed (as Java's `Integer.parseInt` and Spark's options read one: no `1_000`, no `1e3`, no
  other script's digits, which Python's `int()` would take).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["boolean", "integer"]

_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")  # more digits than any setting needs: not a number


def boolean(value: Any) -> bool | None:
    """`value` as a boolean, or None where it is not one (the caller says so, naming its key)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "false"):
            return word == "true"
    return None


def integer(value: Any) -> int | None:
    """`value` as an integer, or None where it is not one (the caller says so, naming its key)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    return None
