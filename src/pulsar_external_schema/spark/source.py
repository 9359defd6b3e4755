"""The `pulsar-external` data source: Pulsar topics with external schemas as Spark DataFrames.

    spark.dataSource.register(PulsarExternalDataSource)
    df = (spark.read.format("pulsar-external")
          .option("service.url", "pulsar://127.0.0.1:6650")
          .option("admin.url", "http://127.0.0.1:8080")
          .option("schema.registry.url", "http://127.0.0.1:8081")
          .option("topic", "persistent://public/default/orders")
          .load())

The value column's type comes from the registry (the subject's latest version, or the pinned one),
so every writer version on the topic decodes into one schema. See docs/spark.md.

The readers, the writers and the registry's client load where a method needs them: Spark unpickles
this class in processes that only plan (a fresh one for each streaming query).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from ..errors import ConfigError
from ..tasks.columns import FORWARDED, read_schema
from ..tasks.options import SourceOptions

if TYPE_CHECKING:
    from ..tasks.schemas import ReaderSchema
    from .reader import PulsarBatchReader, PulsarStreamReader
    from .writer import PulsarBatchWriter, PulsarStreamWriter

FORMAT = "pulsar-external"


class PulsarExternalDataSource(DataSource):
    """Reads and writes Pulsar topics whose schemas live in a Confluent-compatible registry."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    @cached_property
    def source_options(self) -> SourceOptions:
        return SourceOptions.parse(self.options)

    @cached_property
    def _value(self) -> tuple[ReaderSchema, pa.DataType]:
        """The reader schema and the value column's Arrow type (`reading.decoders.query_value`)."""
        from ..reading.decoders import query_value

        return query_value(self.source_options)

    def schema(self) -> StructType:
        if self.source_options.forward_to is not None:
            return from_arrow_schema(FORWARDED)
        return from_arrow_schema(read_schema(self._value[1], self.source_options.include_data))

    def _check_schema(self, schema: StructType) -> None:
        if schema != self.schema():
            raise ConfigError(
                "the pulsar-external source takes its schema from the registry; remove .schema(...) "
                f"(given {schema.simpleString()[:200]})"
            )

    def reader(self, schema: StructType) -> PulsarBatchReader:
        from .reader import PulsarBatchReader

        if self.source_options.forward_to is not None:
            raise ConfigError(
                "the option 'forwardTo' is for streams (spark.readStream): a forwarded message's "
                "sequence id comes from its micro-batch"
            )
        self._check_schema(schema)
        reader, value_type = self._value
        return PulsarBatchReader(self.source_options, reader, value_type)

    def streamReader(self, schema: StructType) -> PulsarStreamReader:
        from .reader import PulsarStreamReader

        self._check_schema(schema)
        reader, value_type = self._value
        return PulsarStreamReader(self.source_options, reader, value_type)

    def writer(self, schema: StructType, overwrite: bool) -> PulsarBatchWriter:
        from .writer import PulsarBatchWriter

        return PulsarBatchWriter(self.source_options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> PulsarStreamWriter:
        from .writer import PulsarStreamWriter

        return PulsarStreamWriter(self.source_options)


def register(spark: Any) -> None:
    """Make `format("pulsar-external")` known to a SparkSession."""
    spark.dataSource.register(PulsarExternalDataSource)
