"""CEL_FIELD transforms compiled (Avro, JSON Schema, Protobuf): which fields a rule touches, decided once.

confluent-kafka walks the whole schema and the whole message for every field rule and every
message: it builds a field context per field (its full name, type and tags, the inline tags
recomputed from the schema, the metadata tags matched by wildcard), checks the rule's tags
against them, and runs the guard (`typeName == 'STRING' ; ...`) to find out what it could have
known from the schema. `compile_field_rule` does all of that when the plan is built, and leaves
a list of fields, each with its constants (`name`, `fullName`, `typeName`, `tags`) and whether
its guard holds; per message only the body runs, once per field it applies to.

What compiles: records, nested records, primitive fields (and `["null", primitive]` unions,
whose type name is NULL or the primitive's, decided per value), arrays and maps of primitives
(each item is the field's value in turn), enums and fixed (which field rules leave alone). A
field the rule would reach through another union, a collection of records or a logical type
keeps the schema's messages on the reference path. JSON Schema: objects with `properties`
(nested too), properties of type string, integer, number and boolean, arrays of those; `enum`,
`const`, maps (objects without properties) and `null` are left alone, as the reference leaves
them; `$ref`, `allOf`/`anyOf`/`oneOf` and type lists keep the messages on the reference path.
Protobuf: the runtime message's fields, paired by number with the registered schema's (whose
names and tags the rule sees); scalars, repeated scalars, nested and repeated messages, oneof
members and optional fields only when set; maps and Decimal/Timestamp fields the rule reaches,
and recursive types, keep the messages on the reference path.

On WRITE the caller's value is never changed: the records on the way to a rewritten field are
copied, not the whole value (confluent-kafka deep-copies it); a Protobuf message is copied once.
On READ the decoded value is the reader's own, and is changed in place, as the reference does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.schema_registry.serde import RuleContext

from .. import _confluent
from .._signal import InternalSignal
from ..errors import CelEvaluationError

#: Avro primitives, with the Python types fastavro gives and takes for them (a value of another
#: type in a `["null", primitive]` union takes the reference path, which resolves the branch).
PRIMITIVES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "bytes": (bytes,),
    "int": (int,),
    "long": (int,),
    "float": (float, int),
    "double": (float, int),
    "boolean": (bool,),
}
_NO_OPS = ("enum", "fixed")  # not primitive: a field rule returns them as they are


class FieldTransform(Protocol):
    """What a field walk runs per field: `rules.cel.CompiledFieldTransform` (CEL_FIELD) or
    `rules.encryption.CompiledEncryption` (ENCRYPT). `apply` raises where the reference path
    must decide."""

    def guard_for(self, constants: dict[str, Any]) -> bool | None: ...

    def passes_guard(self, value: Any, message: Any, constants: dict[str, Any]) -> bool: ...

    def apply(self, value: Any, message: Any, constants: dict[str, Any]) -> Any: ...


class NotCompiled(InternalSignal):
    """This rule's walk over this schema does not compile; the reason says what."""


class _Field:
    """One field a rule applies to: its constants per type name and the guard's verdict."""

    __slots__ = ("accepts", "branch", "constants", "each", "guards", "kind", "name", "skip_none", "transform")

    def __init__(
        self,
        name: str,
        transform: FieldTransform,
        constants: dict[str, dict[str, Any]],
        branch: str | None,
        each: str | None = None,
        skip_none: bool = False,
    ) -> None:
        self.skip_none = skip_none  # JSON: a null property is not walked
        self.name = name
        self.transform = transform
        self.constants = constants  # type name -> name, fullName, typeName, tags
        self.guards = {kind: transform.guard_for(values) for kind, values in constants.items()}
        self.branch = branch  # the primitive of a ["null", primitive] union
        self.kind = next(iter(constants)) if branch is None else ""  # the type name, when fixed
        self.accepts = PRIMITIVES[branch] if branch is not None else ()
        self.each = each  # "array" / "map": the rule sees each item of the collection

    @property
    def idle(self) -> bool:
        """The guard is false whatever the value: the rule leaves the field as it is."""
        return all(guard is False for guard in self.guards.values())

    def __call__(self, value: Any, record: dict[str, Any]) -> Any:
        each = self.each
        if each is None:
            return self.new_value(value, record)
        if each == "array":
            if type(value) is not list:
                raise NotCompiled("not a list")
            return [self.new_value(item, record) for item in value]
        if type(value) is not dict:
            raise NotCompiled("not a map")
        return {key: self.new_value(item, record) for key, item in value.items()}

    def new_value(self, value: Any, record: dict[str, Any]) -> Any:
        if value is None and self.skip_none:
            return value  # JSON: a null property or item is not walked
        if self.branch is None:
            kind = self.kind
        elif value is None:
            kind = "NULL"
        elif type(value) in self.accepts:
            kind = self.branch.upper()
        else:
            raise NotCompiled("a union value the compiled walk does not resolve")
        return _rewritten(self.transform, self.guards[kind], value, record, self.constants[kind])


def _rewritten(
    transform: FieldTransform, guard: bool | None, value: Any, record: Any, constants: dict[str, Any]
) -> Any:
    """A field's value after the rule: unchanged where the guard (decided, or None: evaluated now)
    is not true, else the body's result."""
    if guard is False or (guard is None and not transform.passes_guard(value, record, constants)):
        return value
    return transform.apply(value, record, constants)


class RecordWalk:
    """The fields of one record a rule applies to, in schema order; nested records recursively."""

    __slots__ = ("copy", "items")

    def __init__(self, items: list[tuple[str, _Field | RecordWalk]], copy: bool) -> None:
        # A field whose guard is false for every value is left out: the walk has nothing to do there
        self.items = [(name, item) for name, item in items if not (isinstance(item, _Field) and item.idle)]
        self.copy = copy

    def __bool__(self) -> bool:
        return bool(self.items)

    def __call__(self, record: Any) -> Any:
        if type(record) is not dict:
            raise NotCompiled("not a record")  # the reference path says what it is
        if self.copy:
            record = dict(record)
        for name, item in self.items:
            if name not in record:
                continue
            if isinstance(item, RecordWalk):
                record[name] = item(record[name])
            else:
                record[name] = item(record[name], record)
        return record


#: How a format compiles one field rule over its schema (`avro_walk`, `json_walk`).
FieldWalk = Callable[[FieldTransform, RuleContext, RuleMode], "RecordWalk"]


def avro_walk(parsed_schema: Any) -> FieldWalk:
    """Field rules over this Avro schema (fastavro's parsed form)."""
    return lambda transform, ctx, mode: compile_avro_walk(transform, ctx, parsed_schema, mode)


def json_walk(parsed_schema: Any) -> FieldWalk:
    """Field rules over this JSON schema (the parsed document)."""
    return lambda transform, ctx, mode: compile_json_walk(transform, ctx, parsed_schema, mode)


def compile_avro_walk(
    transform: FieldTransform, ctx: RuleContext, parsed_schema: Any, mode: RuleMode
) -> RecordWalk:
    """The walk of one CEL_FIELD rule over a record schema (fastavro's parsed form); raises
    NotCompiled with the reason when the walk depends on more than the schema."""
    expanded = _confluent.expand_avro_schema(parsed_schema)
    if not isinstance(expanded, dict) or expanded.get("type") != "record":
        raise NotCompiled("the schema is not a record")
    inline_tags = _confluent.avro_inline_tags(parsed_schema)
    rule_tags = set(ctx.rule.tags or ())
    copy = mode in (RuleMode.WRITE, RuleMode.UPGRADE)

    def tags_of(full_name: str) -> set[str]:
        return set(inline_tags.get(full_name, ())) | ctx.get_tags(full_name)

    def applies(tags: set[str]) -> bool:
        return not rule_tags or not rule_tags.isdisjoint(tags)

    def walk(record: dict[str, Any]) -> RecordWalk:
        items: list[tuple[str, _Field | RecordWalk]] = []
        for field in record["fields"]:
            name, kind = field["name"], field["type"]
            full_name = f"{record['name']}.{name}"
            tags = tags_of(full_name)
            if isinstance(kind, dict) and kind.get("type") == "record":
                nested = walk(kind)
                if nested:
                    items.append((name, nested))
                continue
            if not applies(tags):
                if _holds_records(kind):
                    raise NotCompiled(f"field {full_name} holds records inside a collection or union")
                continue  # the rule's tags are not the field's: the reference leaves it alone
            item = _field(name, full_name, kind, tags)
            if item is not None:
                items.append((name, item))
        return RecordWalk(items, copy)

    def _field(name: str, full_name: str, kind: Any, tags: set[str]) -> _Field | None:
        primitive = _primitive(kind)
        if primitive is not None:
            return _Field(
                name,
                transform,
                {primitive.upper(): _constants(name, full_name, primitive.upper(), tags)},
                None,
            )
        if _type_of(kind) in _NO_OPS:
            return None
        if isinstance(kind, dict) and kind.get("type") in ("array", "map"):
            each = kind["type"]
            inner = kind.get("items" if each == "array" else "values")
            primitive = _primitive(inner)
            if primitive is not None:
                constants = {primitive.upper(): _constants(name, full_name, primitive.upper(), tags)}
                return _Field(name, transform, constants, None, each)
            if _type_of(inner) in _NO_OPS:
                return None
        if isinstance(kind, list) and len(kind) == 2 and "null" in kind:
            branch = _primitive(kind[1] if kind[0] == "null" else kind[0])
            if branch is not None and branch != "null":
                constants = {
                    "NULL": _constants(name, full_name, "NULL", tags),
                    branch.upper(): _constants(name, full_name, branch.upper(), tags),
                }
                return _Field(name, transform, constants, branch)
        raise NotCompiled(f"field {full_name} ({_describe(kind)}) is walked on the reference path")

    try:
        return walk(expanded)
    except CelEvaluationError as error:
        raise NotCompiled(f"a guard does not evaluate ({error})") from None


#: JSON Schema types a field rule transforms, and their type names.
_JSON_PRIMITIVES = {"string": "STRING", "integer": "INT", "number": "DOUBLE", "boolean": "BOOLEAN"}
_JSON_UNWALKED = ("$ref", "allOf", "anyOf", "oneOf", "not", "if", "dependentSchemas", "patternProperties")


def compile_json_walk(transform: FieldTransform, ctx: RuleContext, schema: Any, mode: RuleMode) -> RecordWalk:
    """The walk of one CEL_FIELD rule over a JSON schema, as confluent-kafka's `transform` walks
    it (full names `$.a.b`, inline `confluent:tags` and metadata tags); raises NotCompiled."""
    rule_tags = set(ctx.rule.tags or ())
    copy = mode in (RuleMode.WRITE, RuleMode.UPGRADE)

    def walk(record: dict[str, Any], path: str) -> RecordWalk:
        _walkable(record, path)
        items: list[tuple[str, _Field | RecordWalk]] = []
        for name, prop in (record.get("properties") or {}).items():
            if not isinstance(prop, dict):
                continue
            full_name = f"{path}.{name}"
            tags = set(prop.get("confluent:tags") or ()) | ctx.get_tags(full_name)
            applies = not rule_tags or not rule_tags.isdisjoint(tags)
            if applies or _json_holds_records(prop):
                _walkable(prop, full_name)  # the walk reaches it: it must be a shape it follows
            elif _unwalked(prop):
                continue  # primitives only, and the rule's tags are not the field's: left alone
            kind = _json_kind(prop)
            if kind == "record":
                nested = walk(prop, full_name)
                if nested:
                    items.append((name, nested))
                continue
            if kind == "array":
                element = prop.get("items")
                if not isinstance(element, dict):
                    continue
                _walkable(element, full_name)
                item_kind = _json_kind(element)
                if item_kind in _JSON_PRIMITIVES:
                    if applies:
                        constants = {
                            _JSON_PRIMITIVES[item_kind]: _constants(
                                name, full_name, _JSON_PRIMITIVES[item_kind], tags
                            )
                        }
                        items.append((name, _Field(name, transform, constants, None, "array", True)))
                    continue
                if item_kind in ("record", "array"):
                    raise NotCompiled(f"field {full_name}: a collection of records or arrays")
                continue
            if kind in _JSON_PRIMITIVES and applies:
                type_name = _JSON_PRIMITIVES[kind]
                constants = {type_name: _constants(name, full_name, type_name, tags)}
                items.append((name, _Field(name, transform, constants, None, skip_none=True)))
        return RecordWalk(items, copy)

    if not isinstance(schema, dict) or _json_kind(schema) != "record":
        raise NotCompiled("the schema is not an object with properties")
    try:
        return walk(schema, "$")
    except CelEvaluationError as error:
        raise NotCompiled(f"a guard does not evaluate ({error})") from None


def _unwalked(schema: dict[str, Any]) -> list[str]:
    found = [key for key in _JSON_UNWALKED if key in schema]
    return [*found, "a list of types"] if isinstance(schema.get("type"), list) else found


def _walkable(schema: dict[str, Any], where: str) -> None:
    unwalked = _unwalked(schema)
    if unwalked:
        raise NotCompiled(f"{where} uses {', '.join(unwalked)}")


def _json_holds_records(schema: Any) -> bool:
    """Whether a JSON schema may hold objects or arrays (which hold fields a rule may reach)."""
    if not isinstance(schema, dict):
        return False
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return (
        "object" in kinds
        or "array" in kinds
        or "properties" in schema
        or any(key in schema for key in ("$ref", "allOf", "anyOf", "oneOf", "patternProperties"))
    )


def _json_kind(schema: dict[str, Any]) -> str:
    """What confluent-kafka's JSON walk does with a schema: `record`, `array`, a primitive type,
    or `leave` (enum, const, map, null, anything else)."""
    if schema.get("const") is not None or schema.get("enum") is not None:
        return "leave"
    kind = schema.get("type")
    if kind == "object" or (kind is None and schema.get("properties") is not None):
        return "record" if schema.get("properties") else "leave"
    if kind == "array":
        return "array"
    return kind if kind in _JSON_PRIMITIVES else "leave"


def _type_of(kind: Any) -> Any:
    return kind.get("type") if isinstance(kind, dict) else kind


def _primitive(kind: Any) -> str | None:
    """The primitive type name of a plain primitive (no logical type), else None."""
    if isinstance(kind, dict):
        if "logicalType" in kind:
            return None
        kind = kind.get("type")
    return kind if isinstance(kind, str) and (kind in PRIMITIVES or kind == "null") else None


def _holds_records(kind: Any) -> bool:
    if isinstance(kind, list):
        return any(_holds_records(branch) for branch in kind)
    if isinstance(kind, dict):
        inner = kind.get("type")
        if inner == "record":
            return True
        if inner == "array":
            return _holds_records(kind.get("items"))
        if inner == "map":
            return _holds_records(kind.get("values"))
    return False


def _constants(name: str, full_name: str, type_name: str, tags: set[str]) -> dict[str, Any]:
    return {"name": name, "fullName": full_name, "typeName": type_name, "tags": sorted(tags)}


def _describe(kind: Any) -> str:
    if isinstance(kind, list):
        return "a union"
    if isinstance(kind, dict):
        return kind.get("logicalType") or kind.get("type") or "a type"
    return str(kind)


# -- Protobuf --------------------------------------------------------------------------------------


class _ProtoField:
    """A scalar field (or repeated scalars) of a Protobuf message a rule applies to."""

    __slots__ = ("constants", "guard", "name", "presence", "repeated", "transform")

    def __init__(
        self,
        name: str,
        transform: FieldTransform,
        constants: dict[str, Any],
        presence: bool,
        repeated: bool,
    ) -> None:
        self.name = name  # the runtime field's name (what the message answers to)
        self.transform = transform
        self.constants = constants
        self.guard = transform.guard_for(constants)
        self.presence = presence
        self.repeated = repeated

    def __call__(self, message: Any) -> None:
        if self.guard is False or (self.presence and not message.HasField(self.name)):
            return
        if self.repeated:
            values = [self._new(item, message) for item in getattr(message, self.name)]
            message.ClearField(self.name)
            getattr(message, self.name).extend(values)
        else:
            setattr(message, self.name, self._new(getattr(message, self.name), message))

    def _new(self, value: Any, message: Any) -> Any:
        return _rewritten(self.transform, self.guard, value, message, self.constants)


class MessageWalk:
    """The fields of one Protobuf message a rule applies to; nested messages recursively. On
    WRITE the caller's message is copied once (protobuf messages are not copied by parts)."""

    __slots__ = ("copy", "items")

    def __init__(self, items: list[Any], copy: bool) -> None:
        self.items = [item for item in items if not (isinstance(item, _ProtoField) and item.guard is False)]
        self.copy = copy

    def __bool__(self) -> bool:
        return bool(self.items)

    def __call__(self, message: Any) -> Any:
        if self.copy:
            original, message = message, type(message)()
            message.CopyFrom(original)
        self.walk(message)
        return message

    def walk(self, message: Any) -> None:
        for item in self.items:
            item(message)


class _ProtoNested:
    """A message-valued field (or repeated messages): walk what it holds."""

    __slots__ = ("name", "repeated", "walk")

    def __init__(self, name: str, walk: MessageWalk, repeated: bool) -> None:
        self.name, self.walk, self.repeated = name, walk, repeated

    def __call__(self, message: Any) -> None:
        if self.repeated:
            for item in getattr(message, self.name):
                self.walk.walk(item)
        elif message.HasField(self.name):
            self.walk.walk(getattr(message, self.name))


def protobuf_walk(schema_descriptor: Any, runtime_descriptor: Any) -> FieldWalk:
    """Field rules over Protobuf messages of `runtime_descriptor` (the generated class), with the
    names and tags of `schema_descriptor` (the registered schema's), fields paired by number."""
    return lambda transform, ctx, mode: compile_protobuf_walk(
        transform, ctx, schema_descriptor, runtime_descriptor, mode
    )


def compile_protobuf_walk(
    transform: FieldTransform, ctx: RuleContext, schema: Any, runtime: Any, mode: RuleMode
) -> Any:
    """The walk of one CEL_FIELD rule over a Protobuf message type, as confluent-kafka's
    `transform` walks it; raises NotCompiled (maps and Decimal/Timestamp fields the rule reaches,
    recursive types)."""
    rule_tags = set(ctx.rule.tags or ())

    def walk(schema_desc: Any, runtime_desc: Any, seen: frozenset[str]) -> MessageWalk:
        if runtime_desc.full_name in seen:
            raise NotCompiled(f"{runtime_desc.full_name} is recursive")
        seen = seen | {runtime_desc.full_name}
        items: list[Any] = []
        for fd in runtime_desc.fields:
            schema_fd = schema_desc.fields_by_number.get(fd.number)
            if schema_fd is None:
                continue  # no schema field, no tags: the reference leaves it alone
            type_name, repeated, is_map, leaf, _ = _confluent.protobuf_field(fd)
            tags = set(_confluent.protobuf_field(schema_fd)[4]) | ctx.get_tags(schema_fd.full_name)
            applies = not rule_tags or not rule_tags.isdisjoint(tags)
            if is_map:
                if applies or fd.message_type.fields_by_name["value"].message_type is not None:
                    raise NotCompiled(f"field {schema_fd.full_name} is a map")
                continue
            if type_name == "RECORD":
                nested = walk(schema_fd.message_type, fd.message_type, seen)
                if nested:
                    items.append(_ProtoNested(fd.name, nested, repeated))
                continue
            if leaf:
                if applies:
                    raise NotCompiled(f"field {schema_fd.full_name} is a {fd.message_type.full_name}")
                continue
            if not applies or type_name in ("ENUM", "NULL"):
                continue  # enums are not primitive: the rule returns them as they are
            constants = _constants(schema_fd.name, schema_fd.full_name, type_name, tags)
            items.append(_ProtoField(fd.name, transform, constants, fd.has_presence, repeated))
        return MessageWalk(items, False)

    try:
        compiled = walk(schema, runtime, frozenset())
    except CelEvaluationError as error:
        raise NotCompiled(f"a guard does not evaluate ({error})") from None
    compiled.copy = mode in (RuleMode.WRITE, RuleMode.UPGRADE)
    return compiled
