"""One registered version of a subject, as the registry answered it.

Apart from `topic_schemas` (which looks versions up) because Spark pickles it into its planning
processes: a streaming query starts a fresh one, which unpickles the version without loading the
serdes, the codec and confluent-kafka's registry client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import Schema

__all__ = ["RegisteredSchema"]


@dataclass(frozen=True)
class RegisteredSchema:
    """One registered version of a subject."""

    subject: str
    schema_type: str
    """AVRO, JSON or PROTOBUF."""
    schema_str: str
    schema_id: int
    version: int | None
    references: tuple[tuple[str, str], ...] = ()
    """(name, schema text) of each schema reference, for Avro and JSON Schema, the references'
    own included (each once, after those it references), as the serdes resolve them."""
    registry_references: tuple[tuple[str, str, int], ...] = ()
    """(name, subject, version) of each schema reference, as the registry names them."""

    def for_factory(self) -> str | Schema:
        """What a factory makes the version's schema from: its text, or, where it references other
        versions, confluent-kafka's `Schema` with the references, which the serdes resolve (the
        text alone names types it does not define)."""
        if not self.registry_references:
            return self.schema_str
        from confluent_kafka.schema_registry import Schema, SchemaReference

        references = [
            SchemaReference(name, subject, version) for name, subject, version in self.registry_references
        ]
        return Schema(self.schema_str, self.schema_type, references)
