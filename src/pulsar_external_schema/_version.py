"""The installed distribution's version, read once: the package root exports it as
`__version__`, and the console tools print it with `--version`."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["VERSION"]

try:
    VERSION = version("pulsar-external-schema")
except PackageNotFoundError:  # running from a source tree without installation
    VERSION = "0.0.0"
