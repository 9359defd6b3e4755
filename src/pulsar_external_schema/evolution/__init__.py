"""Schema evolution: compatibility checkers for every format, and Creek-style JSON Schema evolution.

* `compare` / `incompatibilities`: Confluent's JSON Schema diff rules, every difference named;
* `check_compatibility`: BACKWARD / FORWARD / FULL (and transitive) for JSON, Avro and Protobuf;
* `to_consumer_schema`, `open_objects`, `producer_differences`, ...: Creek-style JSON Schema
  evolution's checks, closed producer schemas and open consumer schemas (docs/evolution.md). Its
  registry side, `JsonSchemaEvolution`, is exported from the package root (here it is a
  deprecated alias for one release).

Checkers only: nothing here talks to the registry or reads the config.
"""

from typing import TYPE_CHECKING

from .._deprecated import deprecated_names
from .._imports import lazy_exports

if TYPE_CHECKING:
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

#: Imported on first use (`_imports.lazy_exports`): a module of this package that needs one
#: checker (the Spark source's JSON types need `json_model`) loads that one, not all of them
#: (with the `jsonschema` package), in every process that decodes (docs/benchmarks.md).
_LAZY = {
    "IncompatibleSchemaError": "..errors",
    "JsonSchemaError": "..errors",
    "avro_incompatibilities": ".avro_diff",
    **dict.fromkeys(
        ["CompatibilityLevel", "Previous", "check_compatibility", "reader_incompatibilities"],
        ".compatibility",
    ),
    **dict.fromkeys(
        [
            "OPEN_PRODUCER_SCHEMA",
            "RegisteredVersion",
            "closed_differences",
            "open_objects",
            "producer_differences",
            "project",
            "to_consumer_schema",
            "unreadable",
            "view_differences",
        ],
        ".creek",
    ),
    "Difference": ".differences",
    "Direction": ".differences",
    **dict.fromkeys(["COMPATIBLE_LENIENT", "COMPATIBLE_STRICT", "JsonChange"], ".json_changes"),
    "compare": ".json_diff",
    "incompatibilities": ".json_diff",
    "parse_json_schema": ".json_model",
    "protobuf_differences": ".protobuf_diff",
    "protobuf_incompatibilities": ".protobuf_diff",
}

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    _LAZY,
    deprecated_names(
        __name__,
        {"JsonSchemaEvolution": "pulsar_external_schema.json_evolution.JsonSchemaEvolution"},
        wrapped=True,
    ),
)
