"""Schema evolution: compatibility checkers for every format, and Creek-style JSON Schema evolution.

* `compare` / `incompatibilities`: Confluent's JSON Schema diff rules, every difference named;
* `check_compatibility`: BACKWARD / FORWARD / FULL (and transitive) for JSON, Avro and Protobuf;
* `JsonSchemaEvolution`: closed producer schemas, open consumer schemas, client-side checks
  (docs/evolution.md).
"""

from ..errors import IncompatibleSchemaError
from .avro_diff import avro_incompatibilities
from .compatibility import CompatibilityLevel, Previous, check_compatibility, reader_incompatibilities
from .differences import Difference, Direction
from .json_diff import COMPATIBLE_LENIENT, COMPATIBLE_STRICT, JsonChange, compare, incompatibilities
from .json_evolution import OPEN_PRODUCER_SCHEMA, JsonSchemaEvolution, open_objects, to_consumer_schema
from .json_model import JsonSchemaError, parse_json_schema
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
    "JsonSchemaEvolution",
    "Previous",
    "avro_incompatibilities",
    "check_compatibility",
    "compare",
    "incompatibilities",
    "open_objects",
    "parse_json_schema",
    "protobuf_differences",
    "protobuf_incompatibilities",
    "reader_incompatibilities",
    "to_consumer_schema",
]
