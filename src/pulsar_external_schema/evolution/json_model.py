"""JSON Schema documents as a typed tree of schema kinds, the shape Confluent's checker compares.

Confluent's JSON Schema compatibility rules are stated over the schema classes of the Java
`everit-json-schema` library (string, number, object, array, enum, combined, ...), not over raw
keywords. A document is therefore first sorted into those kinds, the same way:

* `true` / `{}` are *empty* (anything goes), `false` accepts nothing;
* `type` picks the kind and the keywords that belong to it; several types make an `anyOf` of
  one schema per type; without `type`, keywords imply the kind (`properties` -> object);
* `enum`, `const`, `not`, `allOf` / `anyOf` / `oneOf` are kinds of their own, and a schema
  with several of these parts (say `type: string` and `enum`) is the `allOf` of the parts;
* `$ref` is resolved (local pointers, `$id`s and anchors, and named registry references) with the
  `referencing` library that `jsonschema` uses; recursive schemas become cyclic trees.

Drafts 4 to 2020-12 are read: `definitions` and `$defs`, tuple `items` and `prefixItems`,
`dependencies` and `dependentRequired` / `dependentSchemas`, boolean and numeric exclusive limits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft7Validator, validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT4, DRAFT6, DRAFT7, specification_with

from ..errors import JsonSchemaError

_MISSING = object()

#: Keywords that imply the kind of a schema without `type`.
_OBJECT_KEYWORDS = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "propertyNames",
        "unevaluatedProperties",
    }
)
_ARRAY_KEYWORDS = frozenset(
    {
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "maxContains",
        "minContains",
        "unevaluatedItems",
    }
)
_NUMBER_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_STRING_KEYWORDS = frozenset({"minLength", "maxLength", "pattern"})
_COMBINERS = ("allOf", "anyOf", "oneOf")
_TYPES = ("string", "number", "integer", "boolean", "null", "object", "array")


@dataclass(eq=False)
class Node:
    """One schema of the tree. Compared by identity: cycles stay cycles."""

    raw: Any
    """The part of the document this node stands for (used to tell subschemas apart)."""
    title: Any = None
    description: Any = None
    id: Any = None
    default: Any = _MISSING
    connect_type: Any = None

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    def key(self) -> str:
        """Canonical text of the raw schema: equal subschemas have equal keys."""
        return json.dumps(self.raw, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(eq=False)
class EmptyNode(Node):
    """`true`, `{}`, or a schema of annotations only: every value is valid."""


@dataclass(eq=False)
class FalseNode(Node):
    """`false`: no value is valid."""


@dataclass(eq=False)
class StringNode(Node):
    max_length: int | None = None
    min_length: int | None = None
    pattern: str | None = None


@dataclass(eq=False)
class NumberNode(Node):
    maximum: float | None = None
    minimum: float | None = None
    exclusive_maximum: float | None = None
    exclusive_minimum: float | None = None
    multiple_of: Any = None
    requires_integer: bool = False


@dataclass(eq=False)
class BooleanNode(Node):
    pass


@dataclass(eq=False)
class NullNode(Node):
    pass


@dataclass(eq=False)
class ContainerNode(Node):
    """What objects and arrays share: whether members beyond the declared ones are allowed."""

    permits_additional: bool = True
    """False for `additionalProperties: false` / `additionalItems: false` (2020-12: `items: false`)."""
    additional_schema: Node | None = None
    """The schema of the other members, when `additionalProperties` / `additionalItems` is one."""
    unevaluated: Node | None = None
    """`unevaluatedProperties` / `unevaluatedItems`."""


@dataclass(eq=False)
class ObjectNode(ContainerNode):
    properties: dict[str, Node] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    pattern_properties: dict[str, Node] = field(default_factory=dict)
    max_properties: int | None = None
    min_properties: int | None = None
    property_dependencies: dict[str, frozenset[str]] = field(default_factory=dict)
    schema_dependencies: dict[str, Node] = field(default_factory=dict)


@dataclass(eq=False)
class ArrayNode(ContainerNode):
    all_items: Node | None = None
    """The schema of every item (`items` as a schema, without tuple items)."""
    item_list: list[Node] | None = None
    """Tuple items: `items` as a list (draft 7) or `prefixItems` (2020-12)."""
    max_items: int | None = None
    min_items: int | None = None
    unique_items: bool = False
    max_contains: int | None = None
    min_contains: int | None = None


@dataclass(eq=False)
class EnumNode(Node):
    values: frozenset[str] = frozenset()
    """The allowed values, as canonical JSON text (so 1 and true stay apart)."""


@dataclass(eq=False)
class ConstNode(Node):
    value: str = ""


@dataclass(eq=False)
class NotNode(Node):
    negated: Node | None = None


@dataclass(eq=False)
class ConditionalNode(Node):
    """`if` / `then` / `else`: kept as a kind, not compared further (as Confluent's checker)."""


@dataclass(eq=False)
class CombinedNode(Node):
    criterion: str = "allOf"
    subschemas: list[Node] = field(default_factory=list)


@dataclass(eq=False)
class RefNode(Node):
    """A `$ref`, resolved on first use so that recursive schemas load."""

    loader: _Loader | None = None
    target_raw: Any = None
    resolver: Any = None
    _target: Node | None = None

    @property
    def target(self) -> Node:
        if self._target is None:
            assert self.loader is not None
            self._target = self.loader.load(self.target_raw, self.resolver)
        return self._target


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def parse_json_schema(
    schema: str | Mapping[str, Any] | bool, references: Mapping[str, Any] | None = None
) -> Node:
    """Read a JSON Schema (text or parsed) into its tree of kinds.

    `references` maps the names a registered schema's `references` use (`"$ref": "address.json"`)
    to their schemas, as the registry resolves them.
    """
    document = _check(load_text(schema, "the schema"), "the schema")
    refs = {
        name: _check(load_text(text, f"referenced schema {name!r}"), f"referenced schema {name!r}")
        for name, text in (references or {}).items()
    }
    return _Loader(document, refs).root()


def _check(schema: Any, what: str) -> Any:
    """The schema, once `jsonschema` has checked it against its draft's meta-schema."""
    validator = validator_for(schema, default=Draft7Validator)
    try:
        validator.check_schema(schema)
    except SchemaError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise JsonSchemaError(f"{what} is not a valid JSON Schema at {where}: {error.message}") from None
    return schema


def load_text(schema: Any, what: str) -> Any:
    """A JSON Schema given as text or already parsed: the one place its text is read; an error is
    a `JsonSchemaError` (a `SchemaParseError`) that names `what`."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as error:
            raise JsonSchemaError(f"{what} is not JSON: {error}") from None
    if not isinstance(schema, Mapping | bool):
        raise JsonSchemaError(f"{what} must be a JSON object or a boolean, not {type(schema).__name__}")
    return schema


class _Loader:
    def __init__(self, document: Any, references: Mapping[str, Any]) -> None:
        dialect = document.get("$schema") if isinstance(document, Mapping) else None
        self.spec = specification_with(dialect, default=DRAFT7) if dialect else DRAFT7
        self.legacy = self.spec in (DRAFT4, DRAFT6, DRAFT7)
        self.draft4 = self.spec is DRAFT4
        self.document = document
        registry: Registry[Any] = Registry()
        for name, contents in references.items():
            registry = registry.with_resource(name, self.spec.create_resource(contents))
        resource: Resource[Any] = self.spec.create_resource(document)
        registry = registry.with_resource(resource.id() or "", resource).crawl()
        self.resolver = registry.resolver(base_uri=resource.id() or "")
        # Nodes by the identity of their raw dict (the documents hold every dict for the loader's
        # life): a schema reached twice, or recursively, is one node.
        self._loaded: dict[int, Node] = {}

    def root(self) -> Node:
        return self.load(self.document, self.resolver)

    def load(self, schema: Any, resolver: Any) -> Node:
        if schema is True:
            return EmptyNode(True)
        if schema is False:
            return FalseNode(False)
        if not isinstance(schema, Mapping):
            raise JsonSchemaError(f"a subschema must be an object or a boolean, not {schema!r}")
        identity = schema.get("$id", schema.get("id")) if self.draft4 else schema.get("$id")
        if isinstance(identity, str) and not identity.startswith("#"):
            resolver = resolver.in_subresource(self.spec.create_resource(schema))
        node = self._loaded.get(id(schema))
        if node is None:
            node = self._build(schema, resolver)
            self._loaded[id(schema)] = node
        return node

    def _build(self, schema: Mapping[str, Any], resolver: Any) -> Node:
        parts: list[Node] = []
        if "$ref" in schema:
            parts.append(self._ref(schema["$ref"], resolver))
            if self.legacy:  # drafts up to 7 ignore the keywords next to $ref
                return self._annotate(parts[0], schema)
        types = schema.get("type")
        if isinstance(types, list) and len(types) == 1:
            types = types[0]
        if isinstance(types, str):
            parts.append(self._typed(types, schema, resolver, required=True))
        elif isinstance(types, list):
            typed = [self._typed(t, schema, resolver, required=True) for t in types]
            parts.append(CombinedNode({"anyOf": [t.raw for t in typed]}, criterion="anyOf", subschemas=typed))
        else:
            for family, keywords in (
                ("object", _OBJECT_KEYWORDS),
                ("array", _ARRAY_KEYWORDS),
                ("number", _NUMBER_KEYWORDS),
                ("string", _STRING_KEYWORDS),
            ):
                if keywords & schema.keys():
                    parts.append(self._typed(family, schema, resolver, required=False))
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list):
                raise JsonSchemaError(f"enum must be an array, not {values!r}")
            parts.append(EnumNode({"enum": values}, values=frozenset(canonical(v) for v in values)))
        if "const" in schema:
            parts.append(ConstNode({"const": schema["const"]}, value=canonical(schema["const"])))
        if "not" in schema:
            parts.append(NotNode({"not": schema["not"]}, negated=self.load(schema["not"], resolver)))
        for criterion in _COMBINERS:
            if criterion in schema:
                subschemas = schema[criterion]
                if not isinstance(subschemas, list) or not subschemas:
                    raise JsonSchemaError(f"{criterion} must be a non-empty array of schemas")
                parts.append(
                    CombinedNode(
                        {criterion: subschemas},
                        criterion=criterion,
                        subschemas=[self.load(s, resolver) for s in subschemas],
                    )
                )
        if "if" in schema:
            parts.append(ConditionalNode({k: schema[k] for k in ("if", "then", "else") if k in schema}))
        if not parts:
            node: Node = EmptyNode(dict(schema))
        elif len(parts) == 1:
            node = parts[0]
            node.raw = dict(schema)
        else:
            node = CombinedNode(dict(schema), criterion="allOf", subschemas=parts)
        return self._annotate(node, schema)

    @staticmethod
    def _annotate(node: Node, schema: Mapping[str, Any]) -> Node:
        node.title = schema.get("title")
        node.description = schema.get("description")
        node.id = schema.get("$id")
        node.default = schema.get("default", _MISSING)
        node.connect_type = schema.get("connect.type")
        return node

    def _ref(self, ref: Any, resolver: Any) -> Node:
        if not isinstance(ref, str):
            raise JsonSchemaError(f"$ref must be a string, not {ref!r}")
        try:
            resolved = resolver.lookup(ref)
        except Unresolvable as error:
            raise JsonSchemaError(
                f"$ref {ref!r} does not resolve: {error} (a registered schema's references must be given)"
            ) from None
        return RefNode({"$ref": ref}, loader=self, target_raw=resolved.contents, resolver=resolved.resolver)

    def _typed(self, kind: Any, schema: Mapping[str, Any], resolver: Any, *, required: bool) -> Node:
        if kind not in _TYPES:
            raise JsonSchemaError(f"unknown type {kind!r} (one of {', '.join(_TYPES)})")
        raw = {"type": kind}
        if kind == "string":
            raw.update({k: schema[k] for k in _STRING_KEYWORDS if k in schema})
            return StringNode(
                raw,
                max_length=schema.get("maxLength"),
                min_length=schema.get("minLength"),
                pattern=schema.get("pattern"),
            )
        if kind in ("number", "integer"):
            raw.update({k: schema[k] for k in _NUMBER_KEYWORDS if k in schema})
            return self._number(raw, schema, integer=kind == "integer")
        if kind == "boolean":
            return BooleanNode(raw)
        if kind == "null":
            return NullNode(raw)
        if kind == "object":
            raw.update({k: schema[k] for k in _OBJECT_KEYWORDS if k in schema})
            return self._object(raw, schema, resolver)
        raw.update({k: schema[k] for k in _ARRAY_KEYWORDS if k in schema})
        return self._array(raw, schema, resolver)

    def _number(self, raw: dict[str, Any], schema: Mapping[str, Any], *, integer: bool) -> NumberNode:
        maximum, minimum = schema.get("maximum"), schema.get("minimum")
        exclusive_max, exclusive_min = schema.get("exclusiveMaximum"), schema.get("exclusiveMinimum")
        if isinstance(exclusive_max, bool):  # draft 4: a flag on maximum
            exclusive_max, maximum = (maximum, None) if exclusive_max else (None, maximum)
        if isinstance(exclusive_min, bool):
            exclusive_min, minimum = (minimum, None) if exclusive_min else (None, minimum)
        return NumberNode(
            raw,
            maximum=maximum,
            minimum=minimum,
            exclusive_maximum=exclusive_max,
            exclusive_minimum=exclusive_min,
            multiple_of=schema.get("multipleOf"),
            requires_integer=integer,
        )

    def _object(self, raw: dict[str, Any], schema: Mapping[str, Any], resolver: Any) -> ObjectNode:
        node = ObjectNode(raw)
        properties = schema.get("properties", {})
        node.properties = {name: self.load(sub, resolver) for name, sub in _mapping(properties, "properties")}
        required = schema.get("required", [])
        if isinstance(required, list):
            node.required = frozenset(r for r in required if isinstance(r, str))
        node.pattern_properties = {
            pattern: self.load(sub, resolver)
            for pattern, sub in _mapping(schema.get("patternProperties", {}), "patternProperties")
        }
        additional = schema.get("additionalProperties", True)
        if isinstance(additional, bool):
            node.permits_additional = additional
        else:
            node.additional_schema = self.load(additional, resolver)
        if "unevaluatedProperties" in schema:
            node.unevaluated = self.load(schema["unevaluatedProperties"], resolver)
        node.max_properties = schema.get("maxProperties")
        node.min_properties = schema.get("minProperties")
        dependencies = dict(_mapping(schema.get("dependencies", {}), "dependencies"))
        dependencies.update(_mapping(schema.get("dependentRequired", {}), "dependentRequired"))
        dependencies.update(_mapping(schema.get("dependentSchemas", {}), "dependentSchemas"))
        for name, dependency in dependencies.items():
            if isinstance(dependency, list):
                node.property_dependencies[name] = frozenset(dependency)
            else:
                node.schema_dependencies[name] = self.load(dependency, resolver)
        return node

    def _array(self, raw: dict[str, Any], schema: Mapping[str, Any], resolver: Any) -> ArrayNode:
        node = ArrayNode(raw)
        items = schema.get("items")
        if "prefixItems" in schema or (not self.legacy and isinstance(items, bool)):
            # 2020-12: tuple items, then `items` for the rest (`items: false` closes the array even
            # without tuple items, as Confluent reads it)
            node.item_list = [self.load(s, resolver) for s in schema.get("prefixItems", [])] or None
            rest = items
        else:
            if isinstance(items, list):  # drafts up to 2019-09: tuple items
                node.item_list = [self.load(s, resolver) for s in items]
            elif items is not None:
                node.all_items = self.load(items, resolver)
            rest = schema.get("additionalItems")  # read whether or not there are tuple items
        if rest is False:
            node.permits_additional = False
        elif rest is not None and rest is not True:
            node.additional_schema = self.load(rest, resolver)
        if "unevaluatedItems" in schema:
            node.unevaluated = self.load(schema["unevaluatedItems"], resolver)
        node.max_items = schema.get("maxItems")
        node.min_items = schema.get("minItems")
        node.unique_items = bool(schema.get("uniqueItems", False))
        node.max_contains = schema.get("maxContains")
        node.min_contains = schema.get("minContains")
        return node


def _mapping(value: Any, keyword: str) -> list[tuple[str, Any]]:
    if not isinstance(value, Mapping):
        raise JsonSchemaError(f"{keyword} must be an object, not {value!r}")
    return list(value.items())


def resolve(node: Node) -> Node:
    """The schema a `$ref` (or a chain of them) points to; other nodes are themselves."""
    seen = 0
    while isinstance(node, RefNode):
        node = node.target
        seen += 1
        if seen > 100:
            raise JsonSchemaError("$ref chain of more than 100 references (a $ref that refers to itself?)")
    return node
