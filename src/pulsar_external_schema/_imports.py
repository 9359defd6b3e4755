"""Objects named by an import path, in one place.

* `import_object(path)`: what a config value or an option names: rule executors and actions
  (`rule.executors.<name>.class`), Protobuf message classes (`protobuf.message.class`), a Pulsar
  Function's schema and record classes. One way to read `pkg.module.Name` or `pkg.module:Name`;
  each caller words its own error, naming its setting.
* `lazy_exports(module, {name: ".submodule"})`: a package's public names, imported on first use.
  A Spark worker unpickling the data source imports `pulsar_external_schema.spark.source`, which
  imports the package root first: an eager root would load the consumer, producer, rule engine
  and CEL in every worker (most of what the package adds to a session's first query:
  docs/spark.md). The names stay
  importable from the root as before, and type checkers see them through `TYPE_CHECKING` imports.

Old spellings of public names live in `_deprecated.py`.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # `typing`'s, without importing it: the package root imports this module
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["import_object", "lazy_exports"]


def import_object(path: str) -> Any:
    """The object `path` names. Raises ValueError when `path` has no module part, and what the
    import raises (ImportError, AttributeError) when it cannot be found."""
    module_name, sep, name = path.replace(":", ".").rpartition(".")
    if not sep or not module_name or not name:
        raise ValueError(f"{path!r} is not an import path (pkg.module.Name)")
    return getattr(importlib.import_module(module_name), name)


def lazy_exports(
    module: str, exports: Mapping[str, str], fallback: Callable[[str], Any] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's `__getattr__` and `__dir__` for `exports` (public name -> its module, relative to
    `module`), each imported on first use and then kept in the module's namespace. Any other name
    goes to `fallback` (e.g. `_deprecated.deprecated_names`), or is an AttributeError."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            if fallback is not None:
                return fallback(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, module), name)
        setattr(sys.modules[module], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[module]), *exports})

    return __getattr__, __dir__
