"""Objects named by an import path, in one place.

* `import_object(path)`: what a config value or an option names: rule executors and actions
  (`rule.executors.<name>.class`), Protobuf message classes (`protobuf.message.class`), a Pulsar
  Function's schema and record classes. One way to read `pkg.module.Name` or `pkg.module:Name`;
  each caller words its own error, naming its setting.

Old spellings of public names live in `_deprecated.py`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["import_object"]


def import_object(path: str) -> Any:
    """The object `path` names. Raises ValueError when `path` has no module part, and what the
    import raises (ImportError, AttributeError) when it cannot be found."""
    module_name, sep, name = path.replace(":", ".").rpartition(".")
    if not sep or not module_name or not name:
        raise ValueError(f"{path!r} is not an import path (pkg.module.Name)")
    return getattr(importlib.import_module(module_name), name)
