"""PySpark: the `pulsar-external` data source and the validation pipeline (`pip install
'pulsar-external-schema[spark]'`). See docs/spark.md."""

from typing import TYPE_CHECKING

from .._imports import lazy_exports

if TYPE_CHECKING:
    from ..errors import PulsarAdminError
    from ..tasks.offsets import Bound
    from .pipeline import ValidationJob
    from .source import FORMAT, PulsarExternalDataSource, register

# Imported on first use: a worker reading a partition needs neither the pipeline nor the writer
# (`_imports.lazy_exports`).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "PulsarAdminError": "..errors",
        "Bound": "..tasks.offsets",
        "ValidationJob": ".pipeline",
        **dict.fromkeys(["FORMAT", "PulsarExternalDataSource", "register"], ".source"),
    },
)

__all__ = ["FORMAT", "Bound", "PulsarAdminError", "PulsarExternalDataSource", "ValidationJob", "register"]
