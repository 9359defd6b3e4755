"""The native extension for tests, through the package's one gate (`_native.extension()`).

A test that needs the extension calls `required_extension()`. In the Python-path leg
(`PES_NATIVE=0`: scripts/test's second run of the unit tests) it skips, saying so, because the
native leg runs it; anywhere else a missing extension fails the test, never skips it, because
scripts/bootstrap builds the extension wherever cargo is.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from pulsar_external_schema import _native

__all__ = ["PYTHON_LEG", "required_extension"]

#: Whether this is the Python-path leg (the extension turned off).
PYTHON_LEG = _native.turned_off()


def required_extension() -> ModuleType:
    """The native extension, through the gate (fails where it is missing; skips in the Python leg)."""
    if PYTHON_LEG:
        pytest.skip(f"{_native.SWITCH}=0: this leg runs the Python path; the native leg runs this test")
    module = _native.extension()
    assert module is not None, f"{_native.why_absent()} (scripts/bootstrap builds it where cargo is)"
    return module
