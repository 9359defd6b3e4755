"""Objects named by an import path, in one place.

* `import_object(path)`: what a config value or an option names: rule executors and actions
  (`rule.executors.<name>.class`), Protobuf message classes (`protobuf.message.class`), a Pulsar
  Function's schema and record classes. One way to read `pkg.module.Name` or `pkg.module:Name`;
  each caller words its own error, naming its setting.
* `deprecated_names(module, {old: "new.path.Name"})`: a module `__getattr__` that keeps a moved or
  trimmed name importable for one release, with a `DeprecationWarning` saying where it lives now.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deprecated_names", "import_object"]


def import_object(path: str) -> Any:
    """The object `path` names. Raises ValueError when `path` has no module part, and what the
    import raises (ImportError, AttributeError) when it cannot be found."""
    module_name, sep, name = path.replace(":", ".").rpartition(".")
    if not sep or not module_name or not name:
        raise ValueError(f"{path!r} is not an import path (pkg.module.Name)")
    return getattr(importlib.import_module(module_name), name)


def deprecated_names(module: str, moved: Mapping[str, str]) -> Callable[[str], Any]:
    """A `__getattr__` for `module` that resolves each old name in `moved` to the object at its new
    import path, lazily (so an alias pointing up the layers imports nothing until it is used), with
    a `DeprecationWarning` naming the new path."""

    def __getattr__(name: str) -> Any:
        path = moved.get(name)
        if path is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is deprecated and will be removed in the next release: use {path}",
            DeprecationWarning,
            stacklevel=2,
        )
        return import_object(path)

    return __getattr__
