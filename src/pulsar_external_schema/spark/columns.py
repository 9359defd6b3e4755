"""The columns a read gives: the decoded value, the message's metadata and the verdict.

Apart from `rows.py` (which fills them on the executors) because the driver's planning asks for
them too, in processes that read nothing: a streaming query's source runner starts fresh for
each query, and loads only what planning needs.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["FORWARDED", "MESSAGE_ID", "read_schema"]

MESSAGE_ID = StructType(
    [
        StructField("ledgerId", LongType(), False),
        StructField("entryId", LongType(), False),
        StructField("batchIndex", IntegerType(), False),
    ]
)
_PROPERTIES = MapType(StringType(), StringType(), False)


def read_schema(value_type: DataType, include_data: bool) -> StructType:
    """The columns of a read: the decoded value, the message's metadata, and the verdict."""
    fields = [
        StructField("key", StringType(), True),
        StructField("value", value_type, True),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("messageId", MESSAGE_ID, False),
        StructField("publishTime", TimestampType(), False),
        StructField("eventTime", TimestampType(), True),
        StructField("properties", _PROPERTIES, False),
        StructField("schemaId", IntegerType(), True),
    ]
    if include_data:
        fields.append(StructField("data", BinaryType(), False))
    fields += [
        StructField("_valid", BooleanType(), False),
        StructField("_error", StringType(), True),
        StructField("_rule", StringType(), True),
        StructField("_failure", _PROPERTIES, True),
    ]
    return StructType(fields)


#: The columns of a stream that forwards as it reads (the options `forwardTo`/`deadLetterTopic`,
#: `forwarding.py`): how many messages of a range had each verdict. Their data went to the topics.
FORWARDED = StructType(
    [
        StructField("schemaId", IntegerType(), True),
        StructField("_valid", BooleanType(), False),
        StructField("_rule", StringType(), True),
        StructField("count", LongType(), False),
    ]
)
