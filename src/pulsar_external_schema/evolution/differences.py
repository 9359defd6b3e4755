"""`Difference`: one named change between two schemas, the unit every checker reports in.

A difference says *what* changed (`kind`, Confluent's name for it, e.g. `TYPE_CHANGED`), *where*
(`path`: a JSON pointer such as `#/properties/checked` for JSON Schema, the field for Avro and
Protobuf) and, in `message`, what it means for a reader. Checks that compare one schema with
several registered versions fill in which version (`version`, `schema_id`) and which direction
(`direction`: backward = the new schema reads old data, forward = old schemas read new data).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class Direction(StrEnum):
    """Which schema reads and which wrote, in a compatibility check."""

    BACKWARD = "backward"
    """The new schema reads data written with an existing one."""
    FORWARD = "forward"
    """An existing schema reads data written with the new one."""
    VIEW = "view"
    """A consumer's view schema reads data the full consumer schema accepts."""


@dataclass(frozen=True)
class Difference:
    """A change from a writer schema to a reader schema that a checker found."""

    kind: str
    """Confluent's name for the change (`TYPE_CHANGED`, `REQUIRED_ATTRIBUTE_ADDED`, ...)."""
    path: str
    """Where: `#/properties/name` (JSON Schema), `Person/fields/name` (Avro), `Person.name` (Protobuf)."""
    message: str
    """What it means for data written with the writer schema and read with the reader schema."""
    version: int | None = None
    """The registered version this schema was compared with, when there is one."""
    schema_id: int | None = None
    """The registry id of that version."""
    direction: Direction | None = None
    """backward (the new schema reads old data) or forward (old schemas read new data)."""

    def against(self, *, version: int | None, schema_id: int | None, direction: Direction) -> Difference:
        """This difference, found against a registered version in a direction."""
        return replace(self, version=version, schema_id=schema_id, direction=direction)

    def __str__(self) -> str:
        where = []
        if self.direction is not None:
            where.append(self.direction.value)
        if self.version is not None:
            where.append(f"version {self.version}")
        if self.schema_id is not None:
            where.append(f"id {self.schema_id}")
        context = f" [{', '.join(where)}]" if where else ""
        return f"{self.kind} at {self.path}{context}: {self.message}"
