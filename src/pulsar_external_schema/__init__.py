"""External schemas (Pulsar PIP-420) backed by a Confluent-compatible schema registry.

The public API is re-exported here; everything else is internal.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pulsar-external-schema")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"

__all__ = ["__version__"]
