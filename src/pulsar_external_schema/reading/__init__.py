"""Reading Pulsar topics into Arrow, with no need of pyspark: what the Spark source and
`pulsar_external_schema.arrow` share.

A read is planned from its options (`tasks.options`: the Spark source's names), on the admin
API (`planning`, over `tasks.topic_metadata` and `tasks.offsets`): the topics' partitions, each
cut into message-id ranges. The values' Arrow type comes from the registry's reader schema
(`decoders`, `types`; the columns: `tasks.columns`). Each range is then read by the native
extension (`native`) where it can read it, or on the Python path (`rows`), into Arrow record
batches with the same columns and values; what a process keeps between reads (clients, schemas)
is the shared task layer's (`tasks.executor`, `tasks.kept`, `tasks.schemas`).
"""

__all__: list[str] = []
