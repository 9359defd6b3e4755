"""Every exception class of the package has one of two roots: `ExternalSchemaError` (what a user
catches: each one defined in errors.py, drawn there under its base, and exported by the package
root) or `InternalSignal` (raised and caught inside the package: none exported)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pulsar_external_schema
from pulsar_external_schema import errors
from pulsar_external_schema._signal import InternalSignal
from pulsar_external_schema.errors import ExternalSchemaError

#: Signals under the public root, because the code that catches them catches their public base:
#: a compiled CEL condition that did not pass is a `CelEvaluationError` to the plan's rule steps,
#: which leave the message to the reference path either way.
UNDER_THE_ROOT = {"ConditionNotMet"}


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class the package's modules define, private ones too (files, not
    `pkgutil`: `rules/` is a namespace package, which `walk_packages` does not enter)."""
    root = Path(pulsar_external_schema.__file__).parent
    found: dict[str, type[BaseException]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        try:
            module = importlib.import_module(name)
        except ImportError:  # spark/ without pyspark, functions/ without the Functions runtime
            continue
        for attribute, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{module.__name__}.{attribute}"] = value
    return found


def public_errors() -> dict[str, type[BaseException]]:
    return {
        cls.__name__: cls
        for cls in package_exceptions().values()
        if issubclass(cls, ExternalSchemaError) and cls.__name__ not in UNDER_THE_ROOT
    }


def test_the_search_finds_the_classes_it_judges() -> None:
    found = package_exceptions()
    assert found["pulsar_external_schema.codec.limits._Malformed"].__mro__[1] is InternalSignal
    assert "pulsar_external_schema.rules.cel.ConditionNotMet" in found
    assert len(public_errors()) >= 25


def test_every_exception_class_has_one_of_the_two_roots() -> None:
    rootless = sorted(
        name
        for name, cls in package_exceptions().items()
        if not issubclass(cls, ExternalSchemaError | InternalSignal)
    )
    assert rootless == []
    both = sorted(
        name
        for name, cls in package_exceptions().items()
        if issubclass(cls, ExternalSchemaError) and issubclass(cls, InternalSignal)
    )
    assert both == []


def test_every_public_error_lives_in_errors_py_and_the_package_root_exports_it() -> None:
    homes = {name: cls.__module__ for name, cls in public_errors().items()}
    assert {name for name, home in homes.items() if home != "pulsar_external_schema.errors"} == set()
    assert set(homes) - set(pulsar_external_schema.__all__) == set()
    assert all(getattr(pulsar_external_schema, name) is cls for name, cls in public_errors().items())


def test_no_internal_signal_is_exported() -> None:
    signals = {cls.__name__ for cls in package_exceptions().values() if issubclass(cls, InternalSignal)}
    signals |= UNDER_THE_ROOT
    assert signals & set(pulsar_external_schema.__all__) == set()
    assert "InternalSignal" not in pulsar_external_schema.__all__


def test_the_drawing_in_errors_py_names_every_public_error_under_its_base() -> None:
    drawing = errors.__doc__ or ""
    rows = re.findall(r"^( *)[├└│ ─]*(\w+Error)\b", drawing, re.M)
    assert rows, "errors.py draws no hierarchy"
    drawn = {name for _, name in rows}
    classes = public_errors()
    assert set(classes) - drawn == set()
    # Each drawn class derives from the nearest class drawn above it with less indentation.
    lines = [
        line
        for line in drawing.splitlines()
        if (re.search(r"\w+Error\b", line) and "──" in line) or line.strip() == "ExternalSchemaError"
    ]
    stack: list[tuple[int, str]] = []
    for line in lines:
        match = re.search(r"(\w+Error)\b", line)
        assert match is not None
        depth = match.start()
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parent, child = classes[stack[-1][1]], classes[match.group(1)]
            assert issubclass(child, parent), f"{match.group(1)} is drawn under {stack[-1][1]}"
        stack.append((depth, match.group(1)))
