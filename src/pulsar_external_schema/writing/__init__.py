"""Writing Arrow rows to Pulsar topics, with no need of pyspark: what the Spark sink and
`pulsar_external_schema.arrow.write_table` share (`rows.TaskWriter`: a `value` row encoded with
its schema and WRITE rules, a `data` row forwarded as it is, by pulsar-client or the native
sender, deduplication-safe with a producer name)."""

__all__: list[str] = []
