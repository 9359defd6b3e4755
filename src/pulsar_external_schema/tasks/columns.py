"""The columns a read gives, as Arrow types: the decoded value, the message's metadata and the
verdict. The Spark source gives the same columns (`spark/source.py` maps them to Spark's types
with pyspark's `from_arrow_schema`, which maps back to these).

Apart from the readers (which fill them) because the Spark driver's planning asks for them too,
in processes that read nothing: a streaming query's source runner starts fresh for each query,
and loads only what planning needs.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["FORWARDED", "MESSAGE_ID", "read_schema"]

#: A message's place in its partition.
MESSAGE_ID = pa.struct(
    [
        pa.field("ledgerId", pa.int64(), nullable=False),
        pa.field("entryId", pa.int64(), nullable=False),
        pa.field("batchIndex", pa.int32(), nullable=False),
    ]
)
_PROPERTIES = pa.map_(
    pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False)
)
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def read_schema(value_type: pa.DataType, include_data: bool) -> pa.Schema:
    """The columns of a read: the decoded value (of `value_type`, `types.py`), the message's
    metadata, and the verdict."""
    fields = [
        pa.field("key", pa.string()),
        pa.field("value", value_type),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("messageId", MESSAGE_ID, nullable=False),
        pa.field("publishTime", _TIMESTAMP, nullable=False),
        pa.field("eventTime", _TIMESTAMP),
        pa.field("properties", _PROPERTIES, nullable=False),
        pa.field("schemaId", pa.int32()),
    ]
    if include_data:
        fields.append(pa.field("data", pa.binary(), nullable=False))
    fields += [
        pa.field("_valid", pa.bool_(), nullable=False),
        pa.field("_error", pa.string()),
        pa.field("_rule", pa.string()),
        pa.field("_failure", _PROPERTIES),
    ]
    return pa.schema(fields)


#: The columns of a Spark stream that forwards as it reads (the options `forwardTo` and
#: `deadLetterTopic`, `spark/forwarding.py`): how many messages of a range had each verdict.
#: Their data went to the topics.
FORWARDED = pa.schema(
    [
        pa.field("schemaId", pa.int32()),
        pa.field("_valid", pa.bool_(), nullable=False),
        pa.field("_rule", pa.string()),
        pa.field("count", pa.int64(), nullable=False),
    ]
)
