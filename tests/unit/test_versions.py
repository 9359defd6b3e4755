"""The package and its native extension are released in lockstep: one version, written in
`_version.py` (the package) and `native/Cargo.toml` (the extension: maturin writes `0.1.0-dev0` as
`0.1.0.dev0`), with the `native` extra pinned to it, so that `pip install
'pulsar-external-schema[native]'` installs the extension of the same release."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from native_support import required_extension

from pulsar_external_schema import __version__
from pulsar_external_schema._version import VERSION

REPOSITORY = Path(__file__).resolve().parents[2]


def pep440(cargo_version: str) -> str:
    """Cargo's version as maturin writes it in the wheel (a pre-release's `-` as `.`)."""
    return cargo_version.replace("-", ".", 1)


def test_the_extension_is_versioned_with_the_package() -> None:
    cargo = tomllib.loads((REPOSITORY / "native" / "Cargo.toml").read_text())["package"]["version"]
    assert pep440(cargo) == VERSION == __version__
    lock = (REPOSITORY / "native" / "Cargo.lock").read_text()
    assert f'name = "pulsar-external-schema-native"\nversion = "{cargo}"' in lock


def test_the_native_extra_pins_the_extension_of_this_release() -> None:
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["native"] == [f"pulsar-external-schema-native=={VERSION}"]
    native = tomllib.loads((REPOSITORY / "native" / "pyproject.toml").read_text())["project"]
    assert native["dynamic"] == ["version"] and "version" not in native  # Cargo.toml's


def test_the_installed_extension_is_of_this_release() -> None:
    assert required_extension().__version__ == VERSION


def test_the_version_is_pep_440() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", VERSION)
