"""Old spellings of public names, kept for at least one minor release, each warning once it is used.

A renamed public name must not break its callers silently. Three kinds, each in one function here:

* `deprecated_names(module, {old: "new.path.Name"})`: a module `__getattr__` that keeps a moved or
  trimmed name importable, resolving it lazily (an alias pointing up the layers imports nothing
  until it is used);
* `renamed_parameters(old="new", ...)`: a decorator for a function or class whose keyword
  parameter was renamed: the old keyword is passed on as the new one;
* `renamed_key(old, new)`: a config key read under its old name.

Each warns with a `DeprecationWarning` that names the new spelling, and records itself in
`DEPRECATED`, which `tests/unit/test_deprecations.py` holds against its own list (each old spelling
still works and warns) and CHANGELOG.md's "Deprecated" section lists.
"""

from __future__ import annotations

import functools
import sys
import warnings

from ._imports import import_object

# The package root imports this module, and the console tools start from the root: `typing` and
# `dataclasses` (with `inspect`) are imported only by type checkers here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    Callee = TypeVar("Callee", bound=Callable[..., Any])

__all__ = ["DEPRECATED", "Deprecation", "deprecated_names", "renamed_key", "renamed_parameters"]


class Deprecation:
    """One old spelling: its kind ("name", "parameter", "config key"), where it is, old and new."""

    __slots__ = ("kind", "new", "old", "where")

    def __init__(self, kind: str, where: str, old: str, new: str) -> None:
        self.kind, self.where, self.old, self.new = kind, where, old, new

    def __repr__(self) -> str:
        return f"Deprecation({self.kind!r}, {self.where!r}, {self.old!r}, {self.new!r})"


#: Every old spelling the package still takes, as each registers itself at import.
DEPRECATED: list[Deprecation] = []


def _warn(what: str, new: str, stacklevel: int) -> None:
    warnings.warn(
        f"{what} is deprecated and will be removed in a future minor release: use {new}",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


def deprecated_names(module: str, moved: Mapping[str, str], *, wrapped: bool = False) -> Callable[[str], Any]:
    """A `__getattr__` for `module` that resolves each old name in `moved` to the object at its new
    import path, lazily, with a `DeprecationWarning` naming the new path. `wrapped`: it is called
    from another `__getattr__` (`_imports.lazy_exports`), one frame further from the caller."""
    DEPRECATED.extend(Deprecation("name", module, old, new) for old, new in moved.items())

    def __getattr__(name: str) -> Any:
        path = moved.get(name)
        if path is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        _warn(f"{module}.{name}", path, stacklevel=3 if wrapped else 2)
        return import_object(path)

    return __getattr__


def renamed_parameters(**renamed: str) -> Callable[[Callee], Callee]:
    """Take each old keyword (`old="new"`) as its new one, with a `DeprecationWarning`. Both given:
    `TypeError`, as Python says of any argument given twice. On a class, wraps its `__init__`."""

    def decorate(callee: Callee) -> Callee:
        target = callee.__init__ if isinstance(callee, type) else callee  # type: ignore[misc]
        name = callee.__qualname__
        DEPRECATED.extend(
            Deprecation("parameter", f"{callee.__module__}.{name}", old, new) for old, new in renamed.items()
        )

        @functools.wraps(target)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{name}() got {old}= and {new}=, the same argument: give {new}=")
                    _warn(f"{name}({old}=...)", f"{new}=", stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return target(*args, **kwargs)

        if isinstance(callee, type):
            callee.__init__ = call  # type: ignore[misc]
            return callee
        return call  # type: ignore[return-value]

    return decorate


def renamed_key(old: str, new: str, where: str) -> Callable[[], None]:
    """A function to call whenever config key `old` is read in place of `new` (in `where`). Its
    warning points at the first caller outside the package: a config is read some calls below
    the user's line, how many depending on the way in."""
    DEPRECATED.append(Deprecation("config key", where, old, new))

    def used() -> None:
        _warn(f"config key {old!r}", repr(new), stacklevel=_outside_the_package())

    return used


def _outside_the_package() -> int:
    """How many frames up from `_warn`'s caller the first frame of code outside this package is."""
    package = __name__.rpartition(".")[0]
    frame = sys._getframe(2)  # the caller of `used`
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == package:
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
