"""The package's version: the one place it is written (pyproject.toml's `[tool.hatch.version]`
reads it from here). The package root exports it as `__version__`, and the console tools print
it with `--version`. A constant, not `importlib.metadata`: importing that takes tens of
milliseconds, a good part of what a console tool's `--help` may take."""

__all__ = ["VERSION"]

VERSION = "0.1.0.dev0"
