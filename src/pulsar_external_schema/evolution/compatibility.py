"""Compatibility levels (BACKWARD, FORWARD, FULL and their transitive forms) for every format.

`check_compatibility(schema_type, new, previous, level)` answers what a registry answers for
`POST /compatibility/subjects/{subject}/versions`, on the client and with every reason:

* BACKWARD: the new schema reads data written with the latest previous one;
* FORWARD: the latest previous schema reads data written with the new one;
* FULL: both; the `_TRANSITIVE` forms check every previous version, not only the latest.

JSON Schema goes through `json_diff` (Confluent's rules), Avro through the `avro` package's
reader/writer checker, Protobuf through `protobuf_diff`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .avro_diff import avro_incompatibilities
from .differences import Difference, Direction
from .json_changes import Policy
from .json_diff import incompatibilities
from .protobuf_diff import protobuf_incompatibilities


class CompatibilityLevel(StrEnum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def backward(self) -> bool:
        return self.value.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        return self.value.startswith(("FORWARD", "FULL"))

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")


@dataclass(frozen=True)
class Previous:
    """A schema checked against, with where it is registered (for the report)."""

    schema: Any
    version: int | None = None
    schema_id: int | None = None
    references: Mapping[str, Any] | None = None
    """For JSON Schema: the schemas its `$ref`s name, by name."""


def reader_incompatibilities(
    schema_type: str,
    reader: Any,
    writer: Any,
    *,
    policy: Policy = "strict",
    reader_references: Mapping[str, Any] | None = None,
    writer_references: Mapping[str, Any] | None = None,
) -> list[Difference]:
    """What stops `reader` from reading data written with `writer`, for AVRO, JSON or PROTOBUF."""
    kind = schema_type.upper()
    if kind == "JSON":
        return incompatibilities(
            reader,
            writer,
            policy=policy,
            reader_references=reader_references,
            writer_references=writer_references,
        )
    if kind == "AVRO":
        return avro_incompatibilities(reader, writer)
    if kind == "PROTOBUF":
        return protobuf_incompatibilities(reader, writer)
    raise ValueError(f"schema type is AVRO, JSON or PROTOBUF, not {schema_type!r}")


def check_compatibility(
    schema_type: str,
    new: Any,
    previous: Sequence[Any],
    level: CompatibilityLevel | str = CompatibilityLevel.BACKWARD,
    *,
    policy: Policy = "strict",
    references: Mapping[str, Any] | None = None,
) -> list[Difference]:
    """Every reason `new` is not compatible with `previous` (oldest first) at `level`; [] if it is.

    Items of `previous` are schemas, or `Previous(schema, version, schema_id)` to have the report
    say which registered version each difference is against.
    """
    level = CompatibilityLevel(level.upper() if isinstance(level, str) else level)
    olds = [p if isinstance(p, Previous) else Previous(p) for p in previous]
    if level is CompatibilityLevel.NONE or not olds:
        return []
    if not level.transitive:
        olds = olds[-1:]
    found: list[Difference] = []
    for old in olds:
        where = {"version": old.version, "schema_id": old.schema_id}
        if level.backward:
            found += [
                d.against(direction=Direction.BACKWARD, **where)
                for d in reader_incompatibilities(
                    schema_type,
                    new,
                    old.schema,
                    policy=policy,
                    reader_references=references,
                    writer_references=old.references,
                )
            ]
        if level.forward:
            found += [
                d.against(direction=Direction.FORWARD, **where)
                for d in reader_incompatibilities(
                    schema_type,
                    old.schema,
                    new,
                    policy=policy,
                    reader_references=old.references,
                    writer_references=references,
                )
            ]
    return found
