"""Schema evolution: compatibility checkers for every format, and Creek-style JSON Schema evolution.

* `compare` / `incompatibilities`: Confluent's JSON Schema diff rules, every difference named;
* `check_compatibility`: BACKWARD / FORWARD / FULL (and transitive) for JSON, Avro and Protobuf;
* `to_consumer_schema`, `open_objects`, `producer_differences`, ...: Creek-style JSON Schema
  evolution's checks, closed producer schemas and open consumer schemas (docs/evolution.md). Its
  registry side, `JsonSchemaEvolution`, is exported from the package root (here it is a
  deprecated alias for one release).

Checkers only: nothing here talks to the registry or reads the config.
"""

from .._deprecated import deprecated_names
from ..errors import IncompatibleSchemaError, JsonSchemaError
from .avro_diff import avro_incompatibilities
from .compatibility import CompatibilityLevel, Previous, check_compatibility, reader_incompatibilities
from .creek import (
    OPEN_PRODUCER_SCHEMA,
    RegisteredVersion,
    closed_differences,
    open_objects,
    producer_differences,
    project,
    to_consumer_schema,
    unreadable,
    view_differences,
)
from .differences import Difference, Direction
from .json_changes import COMPATIBLE_LENIENT, COMPATIBLE_STRICT, JsonChange
from .json_diff import compare, incompatibilities
from .json_model import parse_json_schema
from .protobuf_diff import protobuf_differences, protobuf_incompatibilities

__all__ = [
    "COMPATIBLE_LENIENT",
    "COMPATIBLE_STRICT",
    "OPEN_PRODUCER_SCHEMA",
    "CompatibilityLevel",
    "Difference",
    "Direction",
    "IncompatibleSchemaError",
    "JsonChange",
    "JsonSchemaError",
    "Previous",
    "RegisteredVersion",
    "avro_incompatibilities",
    "check_compatibility",
    "closed_differences",
    "compare",
    "incompatibilities",
    "open_objects",
    "parse_json_schema",
    "producer_differences",
    "project",
    "protobuf_differences",
    "protobuf_incompatibilities",
    "reader_incompatibilities",
    "to_consumer_schema",
    "unreadable",
    "view_differences",
]

__getattr__ = deprecated_names(
    __name__, {"JsonSchemaEvolution": "pulsar_external_schema.json_evolution.JsonSchemaEvolution"}
)
