"""The optional native extension (`native/` in the repository: `pulsar-external-schema-native`).

Where it is installed, the Spark source reads Avro with it (`spark/native.py`), the Spark sink
sends with it (`spark/writer.py`), and the JSON codec checks, writes and reads JSON Schema values
with it (`codec/json_validation.py`). Where it is not, each takes its Python path, which gives the
same values and verdicts: the package imports and works without it.
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["extension"]


def extension() -> ModuleType | None:
    """The native extension, or None where it is not installed."""
    try:
        import _pulsar_external_schema_native as module
    except ImportError:
        return None
    return module
