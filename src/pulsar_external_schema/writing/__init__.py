"""Writing Arrow rows to Pulsar topics, with no need of pyspark: what the Spark sink and
`pulsar_external_schema.arrow.write_table` share (`rows.TaskWriter`: a `value` row encoded with
its schema and WRITE rules, a `data` row forwarded as it is, by pulsar-client or the native
sender, deduplication-safe with a producer name; `shape.RowShape`: a table of records or of
messages). What it shares with `reading/` (options, kept clients and schemas, topic metadata,
conditions over a batch) is `tasks/`'s: `writing/` imports nothing of `reading/`."""

__all__: list[str] = []
