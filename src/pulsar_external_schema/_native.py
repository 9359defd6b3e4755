"""The one gate to the optional native extension (`native/` in the repository, shipped as the
`pulsar-external-schema-native` wheel).

`extension()` is the only place in the package that imports the extension; every user of it
(the JSON codec's check, `ExternalSchema`'s everyday encode and decode, the Spark source's reader
and the sink's producer) asks it, and takes its Python path, which gives the same values and
verdicts, where it answers None. It answers None when:

- the extension is not installed (the package imports and works without it);
- `PES_NATIVE=0` is set in the environment (read once, at the first call);
- the extension speaks another version of its Python API than this package: its `ABI` differs
  from `ABI` here. One `RuntimeWarning` says which versions met and what to install.

`ABI` is bumped with every change to the extension's Python API (`native/_pulsar_external_schema_native.pyi`;
tests/unit/test_native_gate.py holds the stub to the number), so that a wheel of one release
never serves another's calls: the two packages are released in lockstep, and the `native` extra
pins the extension to the package's own version.
"""

from __future__ import annotations

import functools
import os
import warnings
from types import ModuleType

from ._version import VERSION

__all__ = ["ABI", "SWITCH", "describe", "extension", "turned_off", "why_absent"]

#: The version of the extension's Python API this package calls (the extension's own `ABI`).
ABI = 10
#: The environment variable that turns the extension off at run time (`0`).
SWITCH = "PES_NATIVE"


def turned_off() -> bool:
    """Whether `PES_NATIVE=0` is set: the extension is not used, whatever is installed."""
    return os.environ.get(SWITCH, "").strip() == "0"


def extension() -> ModuleType | None:
    """The native extension, or None: not installed, turned off, or of another ABI (`why_absent`)."""
    return _found()[0]


def why_absent() -> str:
    """Why `extension()` answers None, for an error or a log line."""
    return _found()[1] or "the native extension is turned off"


def describe() -> str:
    """Which extension serves this process, or why none does (the console tools' `--version`)."""
    module = extension()
    if module is None:
        return f"native extension: not used: {why_absent()}"
    return f"native extension: pulsar-external-schema-native {module.__version__} (ABI {ABI})"


@functools.cache
def _found() -> tuple[ModuleType | None, str | None]:
    if turned_off():
        return None, f"the native extension is turned off ({SWITCH}=0)"
    try:
        import _pulsar_external_schema_native as module
    except ImportError:
        return None, (
            f"the native extension is not installed (pip install 'pulsar-external-schema[native]=={VERSION}')"
        )
    found = getattr(module, "ABI", None)
    if found == ABI:
        return module, None
    met = (
        f"pulsar-external-schema {VERSION} speaks ABI {ABI} of its native extension, but the "
        f"installed pulsar-external-schema-native {getattr(module, '__version__', '(unknown)')} "
        f"speaks {'no ABI' if found is None else f'ABI {found}'}"
    )
    warnings.warn(
        f"{met}: taking the Python path (same answers, slower); "
        f"install pulsar-external-schema-native=={VERSION}",
        RuntimeWarning,
        stacklevel=4,
    )
    return None, met
