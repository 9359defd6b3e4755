"""JSON Schema compatibility: Confluent's diff rules, in Python, with every difference named.

`compare(writer, reader)` lists how the reader schema differs from the schema the data was written
with, as Confluent Schema Registry's JSON Schema checker does (`io.confluent.kafka.schemaregistry
.json.diff`): the same kinds of difference (`TYPE_CHANGED`, `PROPERTY_REMOVED_FROM_CLOSED_CONTENT
_MODEL`, ...) at the same JSON-pointer paths, the same open / closed / partially-open content
models, and the same two policies saying which differences are compatible (their names, the
policies and what each difference means are `json_changes.py`):

* `STRICT` (the registry's default): adding an optional property to an open content model, or
  removing one from a closed one, is incompatible, because the other schema could say anything
  about it;
* `LENIENT`: those are allowed, as the registry's `LENIENT` compatibility policy does.

`incompatibilities(reader, writer)` keeps the differences the policy rejects: empty means every
document valid under the writer schema is read by the reader schema. Behaviour of note, kept
from Confluent: `oneOf` / `anyOf` / `allOf` subschemas are matched pairwise (a maximum matching of
compatible pairs), a `$ref` is compared through to what it refers to, and a recursive schema is
compared once per pair of subschemas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from .differences import Difference
from .json_changes import (
    JsonChange,
    Policy,
    compatible_changes,
    difference,
)
from .json_model import (
    ArrayNode,
    CombinedNode,
    ConstNode,
    ContainerNode,
    EmptyNode,
    EnumNode,
    FalseNode,
    Node,
    NotNode,
    NumberNode,
    ObjectNode,
    StringNode,
    parse_json_schema,
    resolve,
)

__all__ = ["SchemaInput", "compare", "incompatibilities"]

C = JsonChange

SchemaInput = str | Mapping[str, Any] | bool | Node


def compare(
    writer: SchemaInput,
    reader: SchemaInput,
    *,
    policy: Policy = "strict",
    writer_references: Mapping[str, Any] | None = None,
    reader_references: Mapping[str, Any] | None = None,
) -> list[Difference]:
    """Every difference from `writer` (the schema data was written with) to `reader`.

    `policy` only matters where Confluent's checker asks it mid-way (a property covered by a
    partially open content model, a matching of `oneOf` subschemas); the result lists compatible
    and incompatible differences alike.
    """
    original = _node(writer, writer_references)
    update = _node(reader, reader_references)
    context = _Context(_Shared(compatible_changes(policy)))
    _compare(context, original, update)
    return [difference(kind, path) for kind, path in context.found]


def incompatibilities(
    reader: SchemaInput,
    writer: SchemaInput,
    *,
    policy: Policy = "strict",
    reader_references: Mapping[str, Any] | None = None,
    writer_references: Mapping[str, Any] | None = None,
) -> list[Difference]:
    """The differences that stop `reader` from reading data written with `writer` (none: it can).

    This is Confluent's `reader.isBackwardCompatible(writer)`.
    """
    allowed = compatible_changes(policy)
    return [
        found
        for found in compare(
            writer,
            reader,
            policy=policy,
            writer_references=writer_references,
            reader_references=reader_references,
        )
        if found.kind not in allowed
    ]


def _node(schema: SchemaInput, references: Mapping[str, Any] | None) -> Node:
    return schema if isinstance(schema, Node) else parse_json_schema(schema, references)


# -- the comparison --------------------------------------------------------------------------


@dataclass
class _Shared:
    """State of one comparison: pairs compared so far, and pairs being compared (cycles)."""

    compatible: frozenset[JsonChange]
    memo: dict[tuple[int, int], list[tuple[JsonChange, tuple[str, ...]]]] = field(default_factory=dict)
    in_progress: set[tuple[int, int]] = field(default_factory=set)
    assumptions: int = 0
    """How often a cycle was assumed compatible; a result that relied on that is not memoized."""


class _Context:
    def __init__(self, shared: _Shared, path: tuple[str, ...] = ()) -> None:
        self.shared = shared
        self.path = path
        self.found: list[tuple[JsonChange, tuple[str, ...]]] = []

    def sub(self, *segments: str) -> _Context:
        return _Context(self.shared, self.path + segments)

    def add(self, kind: JsonChange, *segments: str) -> None:
        self.found.append((kind, self.path + segments))

    def absorb(self, other: _Context) -> None:
        self.found.extend(other.found)

    def compatible(self) -> bool:
        return all(kind in self.shared.compatible for kind, _ in self.found)


def _compare(ctx: _Context, original: Node | None, update: Node | None) -> None:
    if original is None and update is None:
        return
    if original is None:
        ctx.add(C.SCHEMA_ADDED)
        return
    if update is None:
        ctx.add(C.SCHEMA_REMOVED)
        return
    original, update = resolve(original), resolve(update)
    shared = ctx.shared
    pair = (id(original), id(update))
    relative = shared.memo.get(pair)
    if relative is None:
        if pair in shared.in_progress:  # a recursive schema came back to this pair
            shared.assumptions += 1
            return
        shared.in_progress.add(pair)
        before = shared.assumptions
        try:
            inner = _Context(shared)
            _compare_types(inner, original, update)
        finally:
            shared.in_progress.discard(pair)
        relative = inner.found
        if shared.assumptions == before:
            shared.memo[pair] = relative
    ctx.found.extend((kind, ctx.path + path) for kind, path in relative)


def _same_kind(a: Node, b: Node) -> bool:
    return type(a) is type(b) or (isinstance(a, CombinedNode) and isinstance(b, CombinedNode))


def _compare_types(ctx: _Context, original: Node, update: Node) -> None:
    if not isinstance(original, CombinedNode) and isinstance(update, CombinedNode):
        subschemas = update.subschemas
        if len(subschemas) == 1:
            if _try(ctx, original, subschemas[0]):
                return
        elif update.criterion in ("anyOf", "oneOf"):
            for subschema in subschemas:
                if _try(ctx, original, subschema, C.SUM_TYPE_EXTENDED):
                    return
    elif isinstance(original, CombinedNode) and not isinstance(update, CombinedNode):
        subschemas = original.subschemas
        if len(subschemas) == 1:
            if _try(ctx, subschemas[0], update):
                return
        elif original.criterion == "allOf":
            for subschema in subschemas:
                if _try(ctx, subschema, update, C.PRODUCT_TYPE_NARROWED):
                    return

    if not _same_kind(original, update):
        if isinstance(original, FalseNode) or isinstance(update, EmptyNode):
            return  # nothing was written, or anything is read
        if original.connect_type == "bytes" and update.connect_type == "bytes":
            return  # Kafka Connect's bytes, as Confluent allows
        ctx.add(C.TYPE_CHANGED)
        return

    if original.id != update.id:
        ctx.add(C.ID_CHANGED)
    if original.title != update.title:
        ctx.add(C.TITLE_CHANGED)
    if original.description != update.description:
        ctx.add(C.DESCRIPTION_CHANGED)
    if original.default != update.default:
        ctx.add(C.DEFAULT_CHANGED)

    if isinstance(original, StringNode):
        _compare_string(ctx, original, update)  # type: ignore[arg-type]
    elif isinstance(original, NumberNode):
        _compare_number(ctx, original, update)  # type: ignore[arg-type]
    elif isinstance(original, ConstNode):
        if original.value != update.value:  # type: ignore[attr-defined]
            ctx.add(C.ENUM_ARRAY_CHANGED, "const")
    elif isinstance(original, EnumNode):
        _compare_enum(ctx, original, update)  # type: ignore[arg-type]
    elif isinstance(original, CombinedNode):
        _compare_combined(ctx, original, update)  # type: ignore[arg-type]
    elif isinstance(original, NotNode):
        _compare_not(ctx, original, update)  # type: ignore[arg-type]
    elif isinstance(original, ObjectNode):
        _compare_object(ctx, original, update)  # type: ignore[arg-type]
    elif isinstance(original, ArrayNode):
        _compare_array(ctx, original, update)  # type: ignore[arg-type]


def _try(ctx: _Context, original: Node, update: Node, then: JsonChange | None = None) -> bool:
    """Compare one side with a subschema of the other; keep the result if it is compatible."""
    sub = ctx.sub()
    _compare(sub, original, update)
    if not sub.compatible():
        return False
    ctx.absorb(sub)
    if then is not None:
        ctx.add(then)
    return True


def _limit(
    ctx: _Context,
    name: str,
    original: Any,
    update: Any,
    kinds: tuple[JsonChange, JsonChange, JsonChange, JsonChange],
) -> None:
    """A numeric keyword: (added, removed, increased, decreased)."""
    added, removed, increased, decreased = kinds
    if original == update:
        return
    if original is None:
        ctx.add(added, name)
    elif update is None:
        ctx.add(removed, name)
    elif original < update:
        ctx.add(increased, name)
    elif original > update:
        ctx.add(decreased, name)


def _compare_string(ctx: _Context, original: StringNode, update: StringNode) -> None:
    _limit(
        ctx,
        "maxLength",
        original.max_length,
        update.max_length,
        (C.MAX_LENGTH_ADDED, C.MAX_LENGTH_REMOVED, C.MAX_LENGTH_INCREASED, C.MAX_LENGTH_DECREASED),
    )
    _limit(
        ctx,
        "minLength",
        original.min_length,
        update.min_length,
        (C.MIN_LENGTH_ADDED, C.MIN_LENGTH_REMOVED, C.MIN_LENGTH_INCREASED, C.MIN_LENGTH_DECREASED),
    )
    if original.pattern is None and update.pattern is not None:
        ctx.add(C.PATTERN_ADDED, "pattern")
    elif original.pattern is not None and update.pattern is None:
        ctx.add(C.PATTERN_REMOVED, "pattern")
    elif original.pattern != update.pattern:
        ctx.add(C.PATTERN_CHANGED, "pattern")


def _decimal(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _compare_number(ctx: _Context, original: NumberNode, update: NumberNode) -> None:
    _limit(
        ctx,
        "maximum",
        original.maximum,
        update.maximum,
        (C.MAXIMUM_ADDED, C.MAXIMUM_REMOVED, C.MAXIMUM_INCREASED, C.MAXIMUM_DECREASED),
    )
    _limit(
        ctx,
        "minimum",
        original.minimum,
        update.minimum,
        (C.MINIMUM_ADDED, C.MINIMUM_REMOVED, C.MINIMUM_INCREASED, C.MINIMUM_DECREASED),
    )
    _limit(
        ctx,
        "exclusiveMaximum",
        original.exclusive_maximum,
        update.exclusive_maximum,
        (
            C.EXCLUSIVE_MAXIMUM_ADDED,
            C.EXCLUSIVE_MAXIMUM_REMOVED,
            C.EXCLUSIVE_MAXIMUM_INCREASED,
            C.EXCLUSIVE_MAXIMUM_DECREASED,
        ),
    )
    _limit(
        ctx,
        "exclusiveMinimum",
        original.exclusive_minimum,
        update.exclusive_minimum,
        (
            C.EXCLUSIVE_MINIMUM_ADDED,
            C.EXCLUSIVE_MINIMUM_REMOVED,
            C.EXCLUSIVE_MINIMUM_INCREASED,
            C.EXCLUSIVE_MINIMUM_DECREASED,
        ),
    )
    old, new = _decimal(original.multiple_of), _decimal(update.multiple_of)
    if old != new:  # Decimal equality ignores trailing zeros (0.5 == 0.50)
        if old is None:
            ctx.add(C.MULTIPLE_OF_ADDED, "multipleOf")
        elif new is None:
            ctx.add(C.MULTIPLE_OF_REMOVED, "multipleOf")
        elif old != 0 and new % old == 0:
            ctx.add(C.MULTIPLE_OF_EXPANDED, "multipleOf")
        elif new != 0 and old % new == 0:
            ctx.add(C.MULTIPLE_OF_REDUCED, "multipleOf")
        else:
            ctx.add(C.MULTIPLE_OF_CHANGED, "multipleOf")
    if original.requires_integer != update.requires_integer:
        ctx.add(C.TYPE_EXTENDED if original.requires_integer else C.TYPE_NARROWED)


def _compare_enum(ctx: _Context, original: EnumNode, update: EnumNode) -> None:
    if original.values == update.values:
        return
    if update.values >= original.values:
        ctx.add(C.ENUM_ARRAY_EXTENDED, "enum")
    elif original.values >= update.values:
        ctx.add(C.ENUM_ARRAY_NARROWED, "enum")
    else:
        ctx.add(C.ENUM_ARRAY_CHANGED, "enum")


def _compare_not(ctx: _Context, original: NotNode, update: NotNode) -> None:
    sub = ctx.sub("not")
    _compare(sub, update.negated, original.negated)  # what is excluded reads the other way round
    ctx.add(C.NOT_TYPE_NARROWED if sub.compatible() else C.NOT_TYPE_EXTENDED, "not")


def _compare_combined(ctx: _Context, original: CombinedNode, update: CombinedNode) -> None:
    if original.criterion != update.criterion:
        singleton_original = len(original.subschemas) == 1
        singleton_update = len(update.subschemas) == 1
        if (
            update.criterion == "anyOf"
            or (singleton_original and singleton_update)
            or (singleton_original and update.criterion == "oneOf")
            or (singleton_update and original.criterion == "allOf")
        ):
            ctx.add(C.COMBINED_TYPE_EXTENDED)
        else:
            ctx.add(C.COMBINED_TYPE_CHANGED)
            return
    olds = _distinct(original.subschemas)
    news = _distinct(update.subschemas)
    if len(olds) < len(news):
        ctx.add(C.PRODUCT_TYPE_EXTENDED if update.criterion == "allOf" else C.SUM_TYPE_EXTENDED)
    elif len(olds) > len(news):
        ctx.add(C.SUM_TYPE_NARROWED if original.criterion in ("anyOf", "oneOf") else C.PRODUCT_TYPE_NARROWED)
    tried: dict[tuple[int, int], _Context] = {}
    for i, old in enumerate(olds):
        for j, new in enumerate(news):
            tried[i, j] = ctx.sub(original.criterion, str(i))
            _compare(tried[i, j], old, new)
    edges = {pair: sub for pair, sub in tried.items() if sub.compatible()}
    matching = _maximum_matching(len(olds), len(news), edges)
    for i, j in sorted(matching):
        ctx.absorb(edges[i, j])
    if len(matching) < min(len(olds), len(news)):
        ctx.add(C.COMBINED_TYPE_SUBSCHEMAS_CHANGED)
        # Beyond Confluent's report, say why: an unmatched subschema against the one in its place.
        matched_old, matched_new = {i for i, _ in matching}, {j for _, j in matching}
        for i in range(min(len(olds), len(news))):
            if i not in matched_old and i not in matched_new:
                ctx.found.extend(
                    (kind, path) for kind, path in tried[i, i].found if kind not in ctx.shared.compatible
                )


def _distinct(nodes: Iterable[Node]) -> list[Node]:
    seen: dict[str, Node] = {}
    for node in nodes:
        seen.setdefault(node.key(), node)
    return list(seen.values())


def _maximum_matching(left: int, right: int, edges: Mapping[tuple[int, int], Any]) -> set[tuple[int, int]]:
    """Maximum bipartite matching (augmenting paths): which old subschema reads as which new one."""
    neighbours: dict[int, list[int]] = {i: [j for j in range(right) if (i, j) in edges] for i in range(left)}
    match_of_right: dict[int, int] = {}

    def augment(i: int, visited: set[int]) -> bool:
        for j in neighbours[i]:
            if j in visited:
                continue
            visited.add(j)
            if j not in match_of_right or augment(match_of_right[j], visited):
                match_of_right[j] = i
                return True
        return False

    for i in range(left):
        augment(i, set())
    return {(i, j) for j, i in match_of_right.items()}


def _is_open(node: ContainerNode) -> bool:
    """Fully open: any other property (item) is allowed, with any value."""
    if not node.permits_additional or node.additional_schema is not None:
        return False
    if isinstance(node, ObjectNode) and node.pattern_properties:
        return False
    return node.unevaluated is None or isinstance(resolve(node.unevaluated), EmptyNode)


def _partial_schema(node: ContainerNode, name: str | None = None) -> Node | None:
    """The schema a property (`name`) or item not declared by `node` is validated with, if any."""
    if isinstance(node, ObjectNode) and name is not None:
        for pattern, schema in node.pattern_properties.items():
            try:
                if re.search(pattern, name):
                    return schema
            except re.error:
                continue
    if node.additional_schema is not None:
        return node.additional_schema
    if node.permits_additional and node.unevaluated is not None:
        unevaluated = resolve(node.unevaluated)
        if not isinstance(unevaluated, FalseNode | EmptyNode):
            return node.unevaluated
    return None


def _compare_object(ctx: _Context, original: ObjectNode, update: ObjectNode) -> None:
    for name in original.properties:
        if name in update.properties:
            was, now = name in original.required, name in update.required
            if was and not now:
                ctx.add(C.REQUIRED_ATTRIBUTE_REMOVED, "required", name)
            elif now and not was:
                with_default = (
                    resolve(update.properties[name]).has_default or update.properties[name].has_default
                )
                ctx.add(
                    C.REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED if with_default else C.REQUIRED_ATTRIBUTE_ADDED,
                    "required",
                    name,
                )
    for name in _ordered_union(original.properties, update.properties):
        old, new = original.properties.get(name), update.properties.get(name)
        here = ctx.sub("properties", name)
        if new is None:
            assert old is not None
            _property_removed(here, old, update, name)
        elif old is None:
            _property_added(here, original, update, new, name)
        else:
            _compare(here, old, new)
        ctx.absorb(here)
    _compare_dependencies(ctx, original, update)
    _compare_additional(
        ctx,
        "additionalProperties",
        original,
        update,
        (
            C.ADDITIONAL_PROPERTIES_ADDED,
            C.ADDITIONAL_PROPERTIES_REMOVED,
            C.ADDITIONAL_PROPERTIES_EXTENDED,
            C.ADDITIONAL_PROPERTIES_NARROWED,
        ),
    )
    _compare_unevaluated(
        ctx,
        "unevaluatedProperties",
        original.unevaluated,
        update.unevaluated,
        (
            C.UNEVALUATED_PROPERTIES_ADDED,
            C.UNEVALUATED_PROPERTIES_REMOVED,
            C.UNEVALUATED_PROPERTIES_EXTENDED,
            C.UNEVALUATED_PROPERTIES_NARROWED,
        ),
    )
    _limit(
        ctx,
        "maxProperties",
        original.max_properties,
        update.max_properties,
        (
            C.MAX_PROPERTIES_ADDED,
            C.MAX_PROPERTIES_REMOVED,
            C.MAX_PROPERTIES_INCREASED,
            C.MAX_PROPERTIES_DECREASED,
        ),
    )
    _limit(
        ctx,
        "minProperties",
        original.min_properties,
        update.min_properties,
        (
            C.MIN_PROPERTIES_ADDED,
            C.MIN_PROPERTIES_REMOVED,
            C.MIN_PROPERTIES_INCREASED,
            C.MIN_PROPERTIES_DECREASED,
        ),
    )


def _ordered_union(first: Iterable[str], second: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _covered(ctx: _Context, writer: Node, reader: Node, covered: JsonChange, not_covered: JsonChange) -> None:
    """A property or item one side declares, against the other's additional/pattern schema."""
    sub = ctx.sub()
    _compare(sub, writer, reader)
    ctx.absorb(sub)
    ctx.add(covered if sub.compatible() else not_covered)


def _property_removed(ctx: _Context, old: Node, update: ObjectNode, name: str) -> None:
    """A property the writer declares and the reader does not: what the reader makes of it."""
    if _is_open(update):
        ctx.add(C.PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL)
        return
    partial = _partial_schema(update, name)
    if partial is not None:
        _covered(
            ctx,
            old,
            partial,
            C.PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
            C.PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
        )
    elif isinstance(resolve(old), FalseNode):
        ctx.add(C.PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL)
    else:
        ctx.add(C.PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL)


def _property_added(ctx: _Context, original: ObjectNode, update: ObjectNode, new: Node, name: str) -> None:
    """A property the reader declares and the writer does not: could written data hold it?"""
    required = name in update.required
    with_default = new.has_default or resolve(new).has_default
    if _is_open(original):
        if isinstance(resolve(new), EmptyNode):
            ctx.add(C.PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL)
        elif required:
            ctx.add(
                C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL
                if with_default
                else C.REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL
            )
        else:
            ctx.add(C.OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL)
        return
    partial = _partial_schema(original, name)
    if partial is not None:
        _covered(
            ctx,
            partial,
            new,
            C.PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
            C.PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
        )
    if required:
        ctx.add(
            C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
            if with_default
            else C.REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
        )
    else:
        ctx.add(C.OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL)


def _compare_dependencies(ctx: _Context, original: ObjectNode, update: ObjectNode) -> None:
    for name in _ordered_union(original.property_dependencies, update.property_dependencies):
        old = original.property_dependencies.get(name)
        new = update.property_dependencies.get(name)
        if new is None:
            ctx.add(C.DEPENDENCY_ARRAY_REMOVED, "dependencies", name)
        elif old is None:
            ctx.add(C.DEPENDENCY_ARRAY_ADDED, "dependencies", name)
        elif old != new:
            if new >= old:
                ctx.add(C.DEPENDENCY_ARRAY_EXTENDED, "dependencies", name)
            elif old >= new:
                ctx.add(C.DEPENDENCY_ARRAY_NARROWED, "dependencies", name)
            else:
                ctx.add(C.DEPENDENCY_ARRAY_CHANGED, "dependencies", name)
    for name in _ordered_union(original.schema_dependencies, update.schema_dependencies):
        old_schema = original.schema_dependencies.get(name)
        new_schema = update.schema_dependencies.get(name)
        if new_schema is None:
            ctx.add(C.DEPENDENCY_SCHEMA_REMOVED, "dependencies", name)
        elif old_schema is None:
            ctx.add(C.DEPENDENCY_SCHEMA_ADDED, "dependencies", name)
        else:
            sub = ctx.sub("dependencies", name)
            _compare(sub, old_schema, new_schema)
            ctx.absorb(sub)


def _compare_additional(
    ctx: _Context,
    name: str,
    original: ContainerNode,
    update: ContainerNode,
    kinds: tuple[JsonChange, JsonChange, JsonChange, JsonChange],
) -> None:
    """`additionalProperties` / `additionalItems`: (added, removed, extended, narrowed)."""
    added, removed, extended, narrowed = kinds
    sub = ctx.sub(name)
    if original.permits_additional != update.permits_additional:
        sub.add(added if update.permits_additional else removed)
    elif original.additional_schema is None and update.additional_schema is not None:
        sub.add(narrowed)
    elif original.additional_schema is not None and update.additional_schema is None:
        sub.add(extended)
    else:
        _compare(sub, original.additional_schema, update.additional_schema)
    ctx.absorb(sub)


def _compare_unevaluated(
    ctx: _Context,
    name: str,
    original: Node | None,
    update: Node | None,
    kinds: tuple[JsonChange, JsonChange, JsonChange, JsonChange],
) -> None:
    """`unevaluatedProperties` / `unevaluatedItems`: (added, removed, extended, narrowed)."""
    added, removed, extended, narrowed = kinds
    if original is None and update is None:
        return
    old = resolve(original) if original is not None else None
    new = resolve(update) if update is not None else None
    sub = ctx.sub(name)
    if old is None:
        sub.add(removed if isinstance(new, FalseNode) else narrowed)
    elif new is None:
        sub.add(added if isinstance(old, FalseNode) else extended)
    elif isinstance(old, FalseNode) and not isinstance(new, FalseNode):
        sub.add(added)
    elif not isinstance(old, FalseNode) and isinstance(new, FalseNode):
        sub.add(removed)
    elif isinstance(old, EmptyNode) and not isinstance(new, EmptyNode):
        sub.add(narrowed)
    elif not isinstance(old, EmptyNode) and isinstance(new, EmptyNode):
        sub.add(extended)
    else:
        _compare(sub, old, new)
    ctx.absorb(sub)


def _compare_array(ctx: _Context, original: ArrayNode, update: ArrayNode) -> None:
    sub = ctx.sub("items")
    _compare(sub, original.all_items, update.all_items)
    ctx.absorb(sub)
    _compare_tuple_items(ctx, original, update)
    _compare_additional(
        ctx,
        "additionalItems",
        original,
        update,
        (
            C.ADDITIONAL_ITEMS_ADDED,
            C.ADDITIONAL_ITEMS_REMOVED,
            C.ADDITIONAL_ITEMS_EXTENDED,
            C.ADDITIONAL_ITEMS_NARROWED,
        ),
    )
    _compare_unevaluated(
        ctx,
        "unevaluatedItems",
        original.unevaluated,
        update.unevaluated,
        (
            C.UNEVALUATED_ITEMS_ADDED,
            C.UNEVALUATED_ITEMS_REMOVED,
            C.UNEVALUATED_ITEMS_EXTENDED,
            C.UNEVALUATED_ITEMS_NARROWED,
        ),
    )
    _limit(
        ctx,
        "maxItems",
        original.max_items,
        update.max_items,
        (C.MAX_ITEMS_ADDED, C.MAX_ITEMS_REMOVED, C.MAX_ITEMS_INCREASED, C.MAX_ITEMS_DECREASED),
    )
    _limit(
        ctx,
        "minItems",
        original.min_items,
        update.min_items,
        (C.MIN_ITEMS_ADDED, C.MIN_ITEMS_REMOVED, C.MIN_ITEMS_INCREASED, C.MIN_ITEMS_DECREASED),
    )
    if original.unique_items != update.unique_items:
        ctx.add(C.UNIQUE_ITEMS_REMOVED if original.unique_items else C.UNIQUE_ITEMS_ADDED, "uniqueItems")
    _limit(
        ctx,
        "maxContains",
        original.max_contains,
        update.max_contains,
        (C.MAX_CONTAINS_ADDED, C.MAX_CONTAINS_REMOVED, C.MAX_CONTAINS_INCREASED, C.MAX_CONTAINS_DECREASED),
    )
    _limit(
        ctx,
        "minContains",
        original.min_contains,
        update.min_contains,
        (C.MIN_CONTAINS_ADDED, C.MIN_CONTAINS_REMOVED, C.MIN_CONTAINS_INCREASED, C.MIN_CONTAINS_DECREASED),
    )


def _compare_tuple_items(ctx: _Context, original: ArrayNode, update: ArrayNode) -> None:
    olds, news = original.item_list or [], update.item_list or []
    for index in range(max(len(olds), len(news))):
        here = ctx.sub("items", str(index))
        if index < len(olds) and index < len(news):
            _compare(here, olds[index], news[index])
        elif index < len(olds):  # an item the reader no longer describes
            if _is_open(update):
                here.add(C.ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL)
            elif (partial := _partial_schema(update)) is not None:
                _covered(
                    here,
                    olds[index],
                    partial,
                    C.ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
                    C.ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
                )
            elif isinstance(resolve(olds[index]), FalseNode):
                here.add(C.ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL)
            else:
                here.add(C.ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL)
        elif _is_open(original):  # an item the writer did not describe
            if isinstance(resolve(news[index]), EmptyNode):
                here.add(C.ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL)
            else:
                here.add(C.ITEM_ADDED_TO_OPEN_CONTENT_MODEL)
        elif (partial := _partial_schema(original)) is not None:
            _covered(
                here,
                partial,
                news[index],
                C.ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
                C.ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
            )
        else:
            here.add(C.ITEM_ADDED_TO_CLOSED_CONTENT_MODEL)
        ctx.absorb(here)
