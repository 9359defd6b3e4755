"""Writing Arrow rows to Pulsar topics, with no need of pyspark: what the Spark sink and
`pulsar_external_schema.arrow.write_table` share, by concern:

    shape.py          a table of records or of messages (`RowShape`)
    rows.py           `TaskWriter`: a task's batches, row by row through pulsar-client, or the
                      batch at once through the native extension where it can
    python_values.py  Arrow's values as the Python values a producer encodes
    native.py         the extension's Avro encoding of a column and its senders (`NativeTopic`)
    routing.py        the batching and keyless routing that keep a re-run deduplicated

What it shares with `reading/` (options, kept clients and schemas, topic metadata, conditions over
a batch) is `tasks/`'s: `writing/` imports nothing of `reading/`."""

__all__: list[str] = []
