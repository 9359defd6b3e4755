"""Avro compatibility: the Apache `avro` package's reader/writer checker, as `Difference`s.

`ReaderWriterCompatibilityChecker` implements Avro's schema-resolution rules (promotions,
defaults, enum symbols, union branches, names). Its result keeps the kinds of incompatibility in
order but merges messages and locations into sets, so when a check finds several, each kind is
reported with all the locations and messages found (the package does not pair them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import avro.errors
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from .differences import Difference

AvroInput = str | Mapping[str, Any] | list[Any] | avro.schema.Schema

_MEANINGS = {
    "name_mismatch": "the reader names the type differently (and has no alias for the writer's name)",
    "fixed_size_mismatch": "the reader's fixed type has another size",
    "missing_enum_symbols": "the writer's enum has symbols the reader lacks (and the reader has no default)",
    "reader_field_missing_default_value": "the reader has a field the writer lacks, without a default",
    "type_mismatch": "the reader's type cannot read the writer's (no promotion)",
    "missing_union_branch": "the writer's union has a branch the reader's union lacks",
}


def parse_avro_schema(schema: AvroInput) -> avro.schema.Schema:
    if isinstance(schema, avro.schema.Schema):
        return schema
    text = schema if isinstance(schema, str) else json.dumps(schema)
    try:
        return avro.schema.parse(text)
    except (avro.errors.SchemaParseException, json.JSONDecodeError, TypeError) as error:
        raise ValueError(f"not an Avro schema: {error}") from None


def avro_incompatibilities(reader: AvroInput, writer: AvroInput) -> list[Difference]:
    """What stops `reader` from reading data written with `writer` (empty: it can)."""
    checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    result = checker.get_compatibility(parse_avro_schema(reader), parse_avro_schema(writer))
    if result.compatibility is not SchemaCompatibilityType.incompatible:
        return []
    kinds = list(dict.fromkeys(kind.value for kind in result.incompatibilities))
    locations = ", ".join(sorted(result.locations))
    detail = "; ".join(sorted(result.messages))
    return [
        Difference(
            kind.upper(),
            f"#{locations}" if locations != "/" else "#/",
            f"{_MEANINGS.get(kind, kind)}: {detail}",
        )
        for kind in kinds
    ]
