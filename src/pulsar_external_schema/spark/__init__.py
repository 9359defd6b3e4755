"""PySpark: the `pulsar-external` data source and the validation pipeline (`pip install
'pulsar-external-schema[spark]'`). See docs/spark.md."""

from .admin import PulsarAdminError
from .offsets import Bound
from .pipeline import ValidationJob
from .source import FORMAT, PulsarExternalDataSource, register

__all__ = ["FORMAT", "Bound", "PulsarAdminError", "PulsarExternalDataSource", "ValidationJob", "register"]
