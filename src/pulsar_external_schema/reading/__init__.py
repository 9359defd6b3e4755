"""Reading Pulsar topics into Arrow, below the Spark source and with no need of pyspark: so far,
the Arrow type of a topic's values (`types`), which the Spark source maps to its own types."""

__all__: list[str] = []
