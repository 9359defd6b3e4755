"""JSON Schema differences: their names, which ones each policy accepts, and what each means.

The vocabulary `json_diff.py`'s comparer reports in, as Confluent Schema Registry names it
(`io.confluent.kafka.schemaregistry.json.diff.Difference.Type`):

* `JsonChange`: every kind of difference (`TYPE_CHANGED`, `PROPERTY_REMOVED_FROM_CLOSED_CONTENT
  _MODEL`, ...);
* `COMPATIBLE_STRICT` / `COMPATIBLE_LENIENT`: the kinds each policy accepts as backward
  compatible (`compatible_changes(policy)`);
* `difference(kind, path)`: a `Difference` that says, in words, what the change means for a reader
  of data written with the writer schema.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from .differences import Difference

__all__ = [
    "COMPATIBLE_LENIENT",
    "COMPATIBLE_STRICT",
    "MEANINGS",
    "JsonChange",
    "Policy",
    "compatible_changes",
    "difference",
    "meaning",
]

Policy = Literal["strict", "lenient"]


class JsonChange(StrEnum):
    """The kinds of difference, with the names Confluent Schema Registry reports."""

    ID_CHANGED = "ID_CHANGED"
    DESCRIPTION_CHANGED = "DESCRIPTION_CHANGED"
    TITLE_CHANGED = "TITLE_CHANGED"
    DEFAULT_CHANGED = "DEFAULT_CHANGED"
    SCHEMA_ADDED = "SCHEMA_ADDED"
    SCHEMA_REMOVED = "SCHEMA_REMOVED"
    TYPE_EXTENDED = "TYPE_EXTENDED"
    TYPE_NARROWED = "TYPE_NARROWED"
    TYPE_CHANGED = "TYPE_CHANGED"
    MAX_LENGTH_ADDED = "MAX_LENGTH_ADDED"
    MAX_LENGTH_REMOVED = "MAX_LENGTH_REMOVED"
    MAX_LENGTH_INCREASED = "MAX_LENGTH_INCREASED"
    MAX_LENGTH_DECREASED = "MAX_LENGTH_DECREASED"
    MIN_LENGTH_ADDED = "MIN_LENGTH_ADDED"
    MIN_LENGTH_REMOVED = "MIN_LENGTH_REMOVED"
    MIN_LENGTH_INCREASED = "MIN_LENGTH_INCREASED"
    MIN_LENGTH_DECREASED = "MIN_LENGTH_DECREASED"
    PATTERN_ADDED = "PATTERN_ADDED"
    PATTERN_REMOVED = "PATTERN_REMOVED"
    PATTERN_CHANGED = "PATTERN_CHANGED"
    MAXIMUM_ADDED = "MAXIMUM_ADDED"
    MAXIMUM_REMOVED = "MAXIMUM_REMOVED"
    MAXIMUM_INCREASED = "MAXIMUM_INCREASED"
    MAXIMUM_DECREASED = "MAXIMUM_DECREASED"
    MINIMUM_ADDED = "MINIMUM_ADDED"
    MINIMUM_REMOVED = "MINIMUM_REMOVED"
    MINIMUM_INCREASED = "MINIMUM_INCREASED"
    MINIMUM_DECREASED = "MINIMUM_DECREASED"
    EXCLUSIVE_MAXIMUM_ADDED = "EXCLUSIVE_MAXIMUM_ADDED"
    EXCLUSIVE_MAXIMUM_REMOVED = "EXCLUSIVE_MAXIMUM_REMOVED"
    EXCLUSIVE_MAXIMUM_INCREASED = "EXCLUSIVE_MAXIMUM_INCREASED"
    EXCLUSIVE_MAXIMUM_DECREASED = "EXCLUSIVE_MAXIMUM_DECREASED"
    EXCLUSIVE_MINIMUM_ADDED = "EXCLUSIVE_MINIMUM_ADDED"
    EXCLUSIVE_MINIMUM_REMOVED = "EXCLUSIVE_MINIMUM_REMOVED"
    EXCLUSIVE_MINIMUM_INCREASED = "EXCLUSIVE_MINIMUM_INCREASED"
    EXCLUSIVE_MINIMUM_DECREASED = "EXCLUSIVE_MINIMUM_DECREASED"
    MULTIPLE_OF_ADDED = "MULTIPLE_OF_ADDED"
    MULTIPLE_OF_REMOVED = "MULTIPLE_OF_REMOVED"
    MULTIPLE_OF_EXPANDED = "MULTIPLE_OF_EXPANDED"
    MULTIPLE_OF_REDUCED = "MULTIPLE_OF_REDUCED"
    MULTIPLE_OF_CHANGED = "MULTIPLE_OF_CHANGED"
    REQUIRED_ATTRIBUTE_ADDED = "REQUIRED_ATTRIBUTE_ADDED"
    REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
    REQUIRED_ATTRIBUTE_REMOVED = "REQUIRED_ATTRIBUTE_REMOVED"
    MAX_PROPERTIES_ADDED = "MAX_PROPERTIES_ADDED"
    MAX_PROPERTIES_REMOVED = "MAX_PROPERTIES_REMOVED"
    MAX_PROPERTIES_INCREASED = "MAX_PROPERTIES_INCREASED"
    MAX_PROPERTIES_DECREASED = "MAX_PROPERTIES_DECREASED"
    MIN_PROPERTIES_ADDED = "MIN_PROPERTIES_ADDED"
    MIN_PROPERTIES_REMOVED = "MIN_PROPERTIES_REMOVED"
    MIN_PROPERTIES_INCREASED = "MIN_PROPERTIES_INCREASED"
    MIN_PROPERTIES_DECREASED = "MIN_PROPERTIES_DECREASED"
    ADDITIONAL_PROPERTIES_ADDED = "ADDITIONAL_PROPERTIES_ADDED"
    ADDITIONAL_PROPERTIES_REMOVED = "ADDITIONAL_PROPERTIES_REMOVED"
    ADDITIONAL_PROPERTIES_EXTENDED = "ADDITIONAL_PROPERTIES_EXTENDED"
    ADDITIONAL_PROPERTIES_NARROWED = "ADDITIONAL_PROPERTIES_NARROWED"
    DEPENDENCY_ARRAY_ADDED = "DEPENDENCY_ARRAY_ADDED"
    DEPENDENCY_ARRAY_REMOVED = "DEPENDENCY_ARRAY_REMOVED"
    DEPENDENCY_ARRAY_EXTENDED = "DEPENDENCY_ARRAY_EXTENDED"
    DEPENDENCY_ARRAY_NARROWED = "DEPENDENCY_ARRAY_NARROWED"
    DEPENDENCY_ARRAY_CHANGED = "DEPENDENCY_ARRAY_CHANGED"
    DEPENDENCY_SCHEMA_ADDED = "DEPENDENCY_SCHEMA_ADDED"
    DEPENDENCY_SCHEMA_REMOVED = "DEPENDENCY_SCHEMA_REMOVED"
    REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL = "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL = (
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
    )
    OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL = "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
    PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL = (
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
    )
    REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL = (
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
    )
    OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
    PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL = "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL = (
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
    )
    PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
    PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    UNEVALUATED_PROPERTIES_ADDED = "UNEVALUATED_PROPERTIES_ADDED"
    UNEVALUATED_PROPERTIES_REMOVED = "UNEVALUATED_PROPERTIES_REMOVED"
    UNEVALUATED_PROPERTIES_EXTENDED = "UNEVALUATED_PROPERTIES_EXTENDED"
    UNEVALUATED_PROPERTIES_NARROWED = "UNEVALUATED_PROPERTIES_NARROWED"
    MAX_ITEMS_ADDED = "MAX_ITEMS_ADDED"
    MAX_ITEMS_REMOVED = "MAX_ITEMS_REMOVED"
    MAX_ITEMS_INCREASED = "MAX_ITEMS_INCREASED"
    MAX_ITEMS_DECREASED = "MAX_ITEMS_DECREASED"
    MIN_ITEMS_ADDED = "MIN_ITEMS_ADDED"
    MIN_ITEMS_REMOVED = "MIN_ITEMS_REMOVED"
    MIN_ITEMS_INCREASED = "MIN_ITEMS_INCREASED"
    MIN_ITEMS_DECREASED = "MIN_ITEMS_DECREASED"
    MAX_CONTAINS_ADDED = "MAX_CONTAINS_ADDED"
    MAX_CONTAINS_REMOVED = "MAX_CONTAINS_REMOVED"
    MAX_CONTAINS_INCREASED = "MAX_CONTAINS_INCREASED"
    MAX_CONTAINS_DECREASED = "MAX_CONTAINS_DECREASED"
    MIN_CONTAINS_ADDED = "MIN_CONTAINS_ADDED"
    MIN_CONTAINS_REMOVED = "MIN_CONTAINS_REMOVED"
    MIN_CONTAINS_INCREASED = "MIN_CONTAINS_INCREASED"
    MIN_CONTAINS_DECREASED = "MIN_CONTAINS_DECREASED"
    UNIQUE_ITEMS_ADDED = "UNIQUE_ITEMS_ADDED"
    UNIQUE_ITEMS_REMOVED = "UNIQUE_ITEMS_REMOVED"
    ADDITIONAL_ITEMS_ADDED = "ADDITIONAL_ITEMS_ADDED"
    ADDITIONAL_ITEMS_REMOVED = "ADDITIONAL_ITEMS_REMOVED"
    ADDITIONAL_ITEMS_EXTENDED = "ADDITIONAL_ITEMS_EXTENDED"
    ADDITIONAL_ITEMS_NARROWED = "ADDITIONAL_ITEMS_NARROWED"
    UNEVALUATED_ITEMS_ADDED = "UNEVALUATED_ITEMS_ADDED"
    UNEVALUATED_ITEMS_REMOVED = "UNEVALUATED_ITEMS_REMOVED"
    UNEVALUATED_ITEMS_EXTENDED = "UNEVALUATED_ITEMS_EXTENDED"
    UNEVALUATED_ITEMS_NARROWED = "UNEVALUATED_ITEMS_NARROWED"
    ITEM_ADDED_TO_OPEN_CONTENT_MODEL = "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
    ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
    ITEM_ADDED_TO_CLOSED_CONTENT_MODEL = "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"
    ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL = "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL"
    ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL = "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
    ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL = "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"
    ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = (
        "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )
    ENUM_ARRAY_EXTENDED = "ENUM_ARRAY_EXTENDED"
    ENUM_ARRAY_NARROWED = "ENUM_ARRAY_NARROWED"
    ENUM_ARRAY_CHANGED = "ENUM_ARRAY_CHANGED"
    COMBINED_TYPE_EXTENDED = "COMBINED_TYPE_EXTENDED"
    COMBINED_TYPE_CHANGED = "COMBINED_TYPE_CHANGED"
    PRODUCT_TYPE_EXTENDED = "PRODUCT_TYPE_EXTENDED"
    PRODUCT_TYPE_NARROWED = "PRODUCT_TYPE_NARROWED"
    SUM_TYPE_EXTENDED = "SUM_TYPE_EXTENDED"
    SUM_TYPE_NARROWED = "SUM_TYPE_NARROWED"
    COMBINED_TYPE_SUBSCHEMAS_CHANGED = "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
    NOT_TYPE_EXTENDED = "NOT_TYPE_EXTENDED"
    NOT_TYPE_NARROWED = "NOT_TYPE_NARROWED"


C = JsonChange

#: The differences Confluent's STRICT policy (its default) accepts as backward compatible.
COMPATIBLE_STRICT: frozenset[JsonChange] = frozenset(
    {
        C.ID_CHANGED,
        C.DESCRIPTION_CHANGED,
        C.TITLE_CHANGED,
        C.DEFAULT_CHANGED,
        C.SCHEMA_REMOVED,
        C.TYPE_EXTENDED,
        C.MAX_LENGTH_INCREASED,
        C.MAX_LENGTH_REMOVED,
        C.MIN_LENGTH_DECREASED,
        C.MIN_LENGTH_REMOVED,
        C.PATTERN_REMOVED,
        C.MAXIMUM_INCREASED,
        C.MAXIMUM_REMOVED,
        C.MINIMUM_DECREASED,
        C.MINIMUM_REMOVED,
        C.EXCLUSIVE_MAXIMUM_INCREASED,
        C.EXCLUSIVE_MAXIMUM_REMOVED,
        C.EXCLUSIVE_MINIMUM_DECREASED,
        C.EXCLUSIVE_MINIMUM_REMOVED,
        C.MULTIPLE_OF_REDUCED,
        C.MULTIPLE_OF_REMOVED,
        C.REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED,
        C.REQUIRED_ATTRIBUTE_REMOVED,
        C.DEPENDENCY_ARRAY_NARROWED,
        C.DEPENDENCY_ARRAY_REMOVED,
        C.DEPENDENCY_SCHEMA_REMOVED,
        C.MAX_PROPERTIES_INCREASED,
        C.MAX_PROPERTIES_REMOVED,
        C.MIN_PROPERTIES_DECREASED,
        C.MIN_PROPERTIES_REMOVED,
        C.ADDITIONAL_PROPERTIES_ADDED,
        C.ADDITIONAL_PROPERTIES_EXTENDED,
        C.UNEVALUATED_PROPERTIES_ADDED,
        C.UNEVALUATED_PROPERTIES_EXTENDED,
        C.PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL,
        C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL,
        C.OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL,
        C.PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL,
        C.PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL,
        C.PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
        C.PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
        C.MAX_ITEMS_INCREASED,
        C.MAX_ITEMS_REMOVED,
        C.MIN_ITEMS_DECREASED,
        C.MIN_ITEMS_REMOVED,
        C.MAX_CONTAINS_INCREASED,
        C.MAX_CONTAINS_REMOVED,
        C.MIN_CONTAINS_DECREASED,
        C.MIN_CONTAINS_REMOVED,
        C.UNIQUE_ITEMS_REMOVED,
        C.ADDITIONAL_ITEMS_ADDED,
        C.ADDITIONAL_ITEMS_EXTENDED,
        C.UNEVALUATED_ITEMS_ADDED,
        C.UNEVALUATED_ITEMS_EXTENDED,
        C.ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL,
        C.ITEM_ADDED_TO_CLOSED_CONTENT_MODEL,
        C.ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL,
        C.ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL,
        C.ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
        C.ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
        C.ENUM_ARRAY_EXTENDED,
        C.COMBINED_TYPE_EXTENDED,
        C.PRODUCT_TYPE_NARROWED,
        C.SUM_TYPE_EXTENDED,
        C.NOT_TYPE_NARROWED,
    }
)

#: What the LENIENT policy accepts on top: property changes the other content model may not cover.
COMPATIBLE_LENIENT: frozenset[JsonChange] = COMPATIBLE_STRICT | {
    C.ADDITIONAL_PROPERTIES_NARROWED,
    C.ADDITIONAL_PROPERTIES_REMOVED,
    C.UNEVALUATED_PROPERTIES_NARROWED,
    C.UNEVALUATED_PROPERTIES_REMOVED,
    C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL,
    C.OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
    C.PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL,
    C.PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    C.PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
}


def compatible_changes(policy: Policy = "strict") -> frozenset[JsonChange]:
    if policy not in ("strict", "lenient"):
        raise ValueError(f"policy is 'strict' or 'lenient', not {policy!r}")
    return COMPATIBLE_STRICT if policy == "strict" else COMPATIBLE_LENIENT


#: What a change means where the generic wording of `meaning` would say less.
MEANINGS: dict[JsonChange, str] = {
    C.TYPE_CHANGED: "the reader expects another type than the writer wrote",
    C.TYPE_NARROWED: "the reader only accepts integers where the writer wrote any number",
    C.TYPE_EXTENDED: "the reader accepts any number where the writer wrote integers",
    C.SCHEMA_ADDED: "the reader describes a schema the writer did not have",
    C.SCHEMA_REMOVED: "the reader no longer describes this schema",
    C.REQUIRED_ATTRIBUTE_ADDED: "the reader requires a property the writer left optional",
    C.REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED: (
        "the reader requires a property the writer left optional; it has a default"
    ),
    C.REQUIRED_ATTRIBUTE_REMOVED: "the reader makes optional a property the writer required",
    C.REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: (
        "the reader requires a property the writer did not declare (and the writer, open, may "
        "have written it "
        "with any value or not at all)"
    ),
    C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL: (
        "the reader requires a property, with a default, that the writer's open content model may have "
        "written with any value"
    ),
    C.OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: (
        "the reader declares an optional property that the writer's open content model may have written "
        "with any value"
    ),
    C.REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL: (
        "the reader requires a property the writer's closed content model never wrote"
    ),
    C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL: (
        "the reader requires a property the writer never wrote; its default fills it in"
    ),
    C.OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL: (
        "the reader declares an optional property the writer's closed content model never wrote"
    ),
    C.PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL: (
        "the reader declares a property that takes any value"
    ),
    C.PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL: (
        "the writer's property is no longer declared; the reader is open and ignores it"
    ),
    C.PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL: (
        "the writer wrote this property, and the reader's closed content model rejects it"
    ),
    C.PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL: (
        "a property the writer forbade is no longer declared"
    ),
    C.PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the writer's property is no longer declared; the reader's additional or pattern properties accept it"
    ),
    C.PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the writer's property is no longer declared, and the reader's additional or pattern "
        "properties reject it"
    ),
    C.PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the reader declares a property the writer's additional or pattern properties allowed, compatibly"
    ),
    C.PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the reader declares a property the writer's additional or pattern properties allowed "
        "with other values"
    ),
    C.ADDITIONAL_PROPERTIES_ADDED: "the reader accepts additional properties",
    C.ADDITIONAL_PROPERTIES_REMOVED: "the reader rejects additional properties the writer allowed",
    C.ADDITIONAL_PROPERTIES_NARROWED: "the reader restricts the additional properties the writer allowed",
    C.ADDITIONAL_PROPERTIES_EXTENDED: "the reader accepts any additional property",
    C.ENUM_ARRAY_EXTENDED: "the reader accepts more values than the writer",
    C.ENUM_ARRAY_NARROWED: "the reader accepts fewer values than the writer wrote",
    C.ENUM_ARRAY_CHANGED: "the reader and the writer allow different values",
    C.COMBINED_TYPE_CHANGED: "the reader combines subschemas differently (allOf / anyOf / oneOf)",
    C.COMBINED_TYPE_SUBSCHEMAS_CHANGED: (
        "some subschemas of the writer have no compatible subschema in the reader"
    ),
    C.SUM_TYPE_NARROWED: "the reader has fewer alternatives (anyOf / oneOf) than the writer",
    C.SUM_TYPE_EXTENDED: "the reader has more alternatives than the writer",
    C.PRODUCT_TYPE_EXTENDED: "the reader adds a constraint (allOf) to the writer's",
    C.PRODUCT_TYPE_NARROWED: "the reader drops a constraint (allOf) of the writer's",
    C.NOT_TYPE_EXTENDED: "the reader excludes values (not) that the writer may have written",
    C.NOT_TYPE_NARROWED: "the reader excludes fewer values (not) than the writer",
    C.ITEM_ADDED_TO_OPEN_CONTENT_MODEL: (
        "the reader describes a tuple item the writer's open array may have written otherwise"
    ),
    C.ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL: (
        "the writer wrote this tuple item and the reader's closed array rejects it"
    ),
    C.ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the writer's tuple item is no longer described, and the reader's additional items reject it"
    ),
    C.ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the reader describes a tuple item the writer's additional items allowed with other values"
    ),
    C.ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL: (
        "the reader describes a tuple item that takes any value"
    ),
    C.ITEM_ADDED_TO_CLOSED_CONTENT_MODEL: (
        "the reader describes a tuple item the writer's closed content model never wrote"
    ),
    C.ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL: (
        "the writer's tuple item is no longer described; the reader is open and accepts it"
    ),
    C.ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL: (
        "a tuple item the writer forbade is no longer described"
    ),
    C.ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the writer's tuple item is no longer described; the reader's additional items accept it"
    ),
    C.ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: (
        "the reader describes a tuple item the writer's additional items allowed"
    ),
    C.PATTERN_CHANGED: "the reader and the writer require different patterns",
    C.MULTIPLE_OF_CHANGED: "the reader and the writer require different multiples",
    C.DEPENDENCY_ARRAY_CHANGED: "the reader and the writer have different property dependencies",
}


def meaning(kind: JsonChange) -> str:
    """What `kind` means for a reader of data written with the writer schema."""
    if kind in MEANINGS:
        return MEANINGS[kind]
    words = kind.value.lower().split("_")
    change = words[-1]
    keyword = " ".join(words[:-1])
    if change in ("added", "increased", "decreased", "expanded", "narrowed"):
        return f"{keyword} {change} in the reader" + (
            "" if kind in COMPATIBLE_LENIENT else ": the reader may reject data the writer wrote"
        )
    if change in ("removed", "reduced", "extended", "changed"):
        return f"{keyword} {change} in the reader"
    return kind.value.lower().replace("_", " ")


def difference(kind: JsonChange, path: tuple[str, ...]) -> Difference:
    """The `Difference` for `kind` at `path` (JSON-pointer parts under `#`)."""
    return Difference(kind.value, "#/" + "/".join(path), meaning(kind))
