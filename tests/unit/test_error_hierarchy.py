"""Every error the package raises is an `ExternalSchemaError`, and errors.py's drawing of the
hierarchy names them all, each under the class it derives from."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pulsar_external_schema
from pulsar_external_schema import errors
from pulsar_external_schema.errors import ExternalSchemaError

#: Exceptions that never leave the package: control flow between its own layers, or the console
#: tools' (which end as one line on stderr). Each is caught where it is raised, or one layer up.
INTERNAL = {
    "ForeignSchema",  # codec/part.py -> ForeignSchemaIdError
    "PayloadError",  # codec/part.py -> DecodeError
    "LimitExceeded",  # codec/limits.py -> DecodeLimitError
    "NotCompiled",  # codec/fields.py: a rule stays on the reference path
    "NotEncrypted",  # rules/encryption.py: a field left as it is
    "Unsupported",  # rules/cel_subset.py: cel-cpp judges the record
    "CommandError",  # cli: one line, exit 1
    "UsageError",  # cli: one line, exit 2
    "RecordError",  # cli: one input line's error
}


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class the package's modules define (files, not `pkgutil`: `rules/` is a
    namespace package, which `walk_packages` does not enter)."""
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
                and not attribute.startswith("_")
            ):
                found[attribute] = value
    return found


def test_every_public_error_is_an_external_schema_error() -> None:
    outside = sorted(
        name
        for name, cls in package_exceptions().items()
        if name not in INTERNAL and not issubclass(cls, ExternalSchemaError)
    )
    assert outside == []


def test_the_drawing_in_errors_py_names_every_public_error_under_its_base() -> None:
    drawing = errors.__doc__ or ""
    rows = re.findall(r"^( *)[├└│ ─]*(\w+Error)\b", drawing, re.M)
    assert rows, "errors.py draws no hierarchy"
    drawn = {name for _, name in rows}
    public = {name for name in package_exceptions() if name not in INTERNAL and name.endswith("Error")}
    assert public - drawn == set()
    # Each drawn class derives from the nearest class drawn above it with less indentation.
    classes = package_exceptions()
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
