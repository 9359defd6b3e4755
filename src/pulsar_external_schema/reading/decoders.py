"""What a read's values become: the reader schema's value column type (fixed once, on the driver,
for every topic of the read) and the parsed forms the decoders of the executors take. The
schemas themselves are the shared task layer's (`tasks/schemas.py`)."""

from __future__ import annotations

import functools
import json
from typing import Any

import pyarrow as pa

from .. import _confluent
from ..errors import ConfigError, ExternalSchemaError, RegistryUnavailableError
from ..tasks.options import SourceOptions
from ..tasks.schemas import ReaderSchema, protobuf_class, resolve_reader_schema
from .planning import Planner
from .types import Converter, avro_type, json_type, protobuf_type


def query_value(options: SourceOptions) -> tuple[ReaderSchema, pa.DataType]:
    """The reader schema of a read and its value column's Arrow type, on the driver: one for all
    the topics it reads (converters are made where the rows are: they hold Protobuf descriptors,
    which do not pickle)."""
    options.require_topics()
    planner = Planner(options)
    admin = planner.admin()
    try:
        topics = planner.topics(admin)
    finally:
        admin.close()
    if not topics:
        raise ConfigError(f"no topic matches topicPattern {options.topic_pattern!r}")
    chosen: tuple[ReaderSchema, pa.DataType] | None = None
    for topic in topics:
        reader = resolve_reader_schema(options, topic)
        value_type, _ = arrow_value_type(reader, options)
        if chosen is None:
            chosen = (reader, value_type)
        elif value_type != chosen[1] or reader.schema_type != chosen[0].schema_type:
            raise ConfigError(
                f"topics read together need one value type: subject {reader.subject} gives "
                f"{value_type}, subject {chosen[0].subject} gives {chosen[1]}; read them apart"
            )
    assert chosen is not None
    return chosen


@functools.lru_cache(maxsize=16)
def avro_parsed(reader: ReaderSchema) -> Any:
    """An Avro reader schema parsed as its executors' deserializers parse it, referenced named
    types written out at their first use (`_confluent.parse_avro`); shared, not to be changed."""
    named = {name: json.loads(text) for name, text in reader.references}
    return _confluent.parse_avro(reader.schema_str, named)


def json_references(reader: ReaderSchema) -> dict[str, Any]:
    """A JSON Schema version's references, by name, as `json_type` takes them."""
    return {name: json.loads(text) for name, text in reader.references}


def arrow_value_type(reader: ReaderSchema, options: SourceOptions) -> tuple[pa.DataType, Converter]:
    """The Arrow type of the value column, and the converter of decoded values to it."""
    if reader.schema_type == "AVRO":
        return avro_type(avro_parsed(reader))
    if reader.schema_type == "JSON":
        return json_type(reader.schema_str, json_references(reader))
    if reader.schema_type == "PROTOBUF":
        return protobuf_type(protobuf_class(options, reader).DESCRIPTOR)
    raise ConfigError(
        f"subject {reader.subject} has schema type {reader.schema_type}, which is not supported"
    )


def is_data_error(error: Exception) -> bool:
    """Errors of a message (bad bytes, unknown id, failed rule), not of the registry or the network."""
    return isinstance(error, ExternalSchemaError) and not isinstance(error, RegistryUnavailableError)
