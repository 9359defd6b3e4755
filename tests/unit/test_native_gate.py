"""The one gate to the native extension (`_native.py`): the switch, the ABI handshake, and the
stub whose every change bumps the ABI. The behaviour suites run through both paths (scripts/test
runs the unit tests a second time with `PES_NATIVE=0`); these tests hold the gate itself."""

from __future__ import annotations

import ast
import hashlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from native_support import PYTHON_LEG, required_extension

from pulsar_external_schema import _native
from pulsar_external_schema._version import VERSION

NATIVE = Path(__file__).resolve().parents[2] / "native"
STUB = NATIVE / "_pulsar_external_schema_native.pyi"

#: The stub's API (its declarations, without docstrings or comments) at its ABI. A change to the
#: stub that changes this hash changes the extension's Python API: bump `ABI` in native/src/lib.rs
#: and in `_native.py`, then write the new hash here.
API_HASHES = {9: "2c7a2b9a33de8824", 10: "7b0f8211510fcf73"}


def api_hash(stub: str) -> str:
    tree = ast.parse(stub)
    for node in ast.walk(tree):
        body: list[ast.stmt] = getattr(node, "body", None) or []
        first = body[0] if isinstance(body, list) and body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and type(first.value.value) is str
        ):
            setattr(node, "body", body[1:] or [ast.Pass()])  # noqa: B010 (a field of several node types)
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def test_the_abi_is_bumped_with_every_change_to_the_extensions_api() -> None:
    assert api_hash(STUB.read_text(encoding="utf-8")) == API_HASHES[_native.ABI], (
        "native/_pulsar_external_schema_native.pyi changed: bump ABI in native/src/lib.rs and "
        "_native.py, and record the stub's new hash in API_HASHES"
    )


def test_the_extension_and_the_gate_speak_one_abi() -> None:
    declared = re.search(r"^const ABI: u32 = (\d+);$", (NATIVE / "src" / "lib.rs").read_text(), re.M)
    assert declared is not None and int(declared.group(1)) == _native.ABI


def test_the_built_extension_passes_the_gate() -> None:
    module = required_extension()
    assert module.ABI == _native.ABI


def gate(env: dict[str, str], fake: str | None = None) -> tuple[str, str]:
    """`extension()` and `why_absent()` in a fresh interpreter (the gate answers once a process),
    with `fake` as the extension's source where given; and what it warned."""
    setup = ""
    if fake is not None:
        setup = (
            "import sys, types; m = types.ModuleType('_pulsar_external_schema_native'); "
            f"exec({fake!r}, m.__dict__); sys.modules[m.__name__] = m; "
        )
    code = (
        f"{setup}import warnings; warnings.simplefilter('always'); "
        "from pulsar_external_schema import _native; "
        "print(_native.extension() is not None); print(_native.why_absent())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout, done.stderr


def base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != _native.SWITCH}


def test_pes_native_0_turns_the_extension_off_at_run_time() -> None:
    out, err = gate({**base_env(), "PES_NATIVE": "0"}, fake=f"ABI = {_native.ABI}")
    assert out.splitlines() == ["False", "the native extension is turned off (PES_NATIVE=0)"]
    assert err == ""


def test_an_extension_of_the_gates_abi_is_taken() -> None:
    out, err = gate(base_env(), fake=f"ABI = {_native.ABI}; __version__ = {VERSION!r}")
    assert out.splitlines()[0] == "True"
    assert err == ""


@pytest.mark.parametrize(
    ("fake", "speaks"),
    [
        (f"ABI = {_native.ABI + 1}; __version__ = '9.9.9'", f"ABI {_native.ABI + 1}"),
        ("__version__ = '0.1.0'", "no ABI"),
    ],
)
def test_an_extension_of_another_abi_takes_the_python_path_with_one_warning(fake: str, speaks: str) -> None:
    out, err = gate(base_env(), fake=fake)
    installed = re.search(r"__version__ = '([^']+)'", fake)
    assert installed is not None
    met = (
        f"pulsar-external-schema {VERSION} speaks ABI {_native.ABI} of its native extension, but the "
        f"installed pulsar-external-schema-native {installed.group(1)} speaks {speaks}"
    )
    assert out.splitlines() == ["False", met]
    assert err.count("RuntimeWarning") == 1
    assert f"{met}: taking the Python path" in err
    assert f"install pulsar-external-schema-native=={VERSION}" in err


def test_a_missing_extension_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['_pulsar_external_schema_native'] = None; "  # its import fails
        "from pulsar_external_schema import _native; "
        "print(_native.extension()); print(_native.why_absent())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=base_env(), capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == [
        "None",
        f"the native extension is not installed (pip install 'pulsar-external-schema[native]=={VERSION}')",
    ]


def test_this_process_took_the_path_its_leg_asked_for() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (_native.extension() is None) is PYTHON_LEG
