"""Reading Pulsar topics into Arrow, with no need of pyspark: what the Spark source and
`pulsar_external_schema.arrow` share.

A read is planned from its options (`options`: the Spark source's names), on the admin API
(`planning`, `topic_metadata`, `offsets`): the topics' partitions, each cut into message-id
ranges. The values' Arrow type comes from the registry's reader schema (`values`, `types`,
`columns`). Each range is then read by the native extension (`native`) where it can read it, or
on the Python path (`rows`), into Arrow record batches with the same columns and values; what a
process keeps between reads (clients, schemas) is in `executor` and `kept`.
"""

__all__: list[str] = []
