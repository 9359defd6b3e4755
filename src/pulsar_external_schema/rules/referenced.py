"""Rules of referenced schemas: a referenced schema's domain rules run on the parts of a message
that have its type. Beyond Confluent, and off unless asked for.

Confluent's documentation: "Schema rules are only executed for the root schema, not referenced
schemas" - so a team sharing a `Product` contract across topics copies its rules into every root
schema. With the config key `rules.referenced` = true (or a root schema's metadata property
`rules.referenced`, which wins either way), when the writer (or reader) schema references other
registered schemas, each referenced version's domain rules run on each part of the message of its
type:

* Avro: a field (or array item, map value, union branch) whose type is the referenced named type
  (the reference's name is its full name, `acme.Product`);
* JSON Schema: a property (or array item, map value) whose schema is `{"$ref": <the reference's
  name>}`;
* Protobuf: a field (or repeated item, map value) whose message type the referenced file defines
  (the reference's name is the import path, `acme/product.proto`).

A CEL condition of `Product` sees `message` bound to the part; its CEL_FIELD and ENCRYPT rules
apply to the part's fields, with `Product`'s own tags. A part's rule runs with the referenced
subject: a failure reports it (`__rule.subject`), and the part's place in the root message
(`__rule.path`, e.g. `Order.items[1].product`). On WRITE the parts' rules run before the root's,
on READ after, so a field encrypted by `Product` is encrypted before the root's rules see the
message, and decrypted after they ran. References nest (`Order` -> `LineItem` -> `Product`): a part's
own references are run the same way, inside it. A reference graph that comes back to a subject
already on its path is refused.

Not run for parts: migration rules (a reader's migrations rewrite the whole message between the
root's major versions; a part's versions are pinned by the root's reference, so there is nothing
to migrate between), and encoding rules (ENCRYPT_PAYLOAD works on a payload's bytes; a part has
none).

Messages whose schema has referenced rules that apply take the reference path (confluent-kafka's
rule engine, through `_confluent.SerdeHooks`). What depends on the schemas only is made once: each
root's reference graph (and the check for cycles), how parts are found in its messages, and each
referenced version's tags and field transformer; per message, the walk and the parts' rules run.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.serialization import SerializationContext

from .. import _confluent
from ..errors import ConfigError
from ..redaction import sensitive_fields

__all__ = [
    "PATH",
    "PROPERTY",
    "ROOT",
    "Referenced",
    "ReferencedRules",
    "Scope",
    "avro_walker",
    "json_walker",
    "opted_in",
    "protobuf_walker",
    "sensitive_fields_down",
    "walker_for",
]

#: The metadata property of a root schema that turns referenced rules on or off for it.
PROPERTY = "rules.referenced"

#: Root schemas (and referenced versions) whose graphs, walks and rule inputs a serde keeps (as
#: many as it keeps plans, `codec/`).
GRAPHS_KEPT = 1000

#: Where in the root message the part whose rules run now sits (None: the root itself).
PATH: contextvars.ContextVar[str | None] = contextvars.ContextVar("rule_path", default=None)


@dataclass(frozen=True)
class Scope:
    """The root message whose domain rules (and its parts') run now, and what the rule engine walks
    its values with: a DLQ copy made meanwhile is redacted with every schema of the message."""

    serde: Any
    ser_ctx: SerializationContext
    subject: str
    mode: RuleMode
    schema: Schema
    inline_tags: Any
    transformer: Any


#: The root's scope while its domain rules run (set by `codec/serdes.py`); None outside.
ROOT: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("rule_root", default=None)

#: A part: (its path below the root, its value, how to put a new value in its place, its
#: reference name).
Part = tuple[str, Any, Callable[[Any], None], str]
Walk = Callable[[Any, Any], Iterator[Part]]


@dataclass(frozen=True)
class Referenced:
    """A referenced schema whose rules run on the parts of its type."""

    name: str
    subject: str
    version: int
    schema: Schema


def opted_in(schema: Schema | None, default: bool) -> bool:
    """Whether `schema`'s referenced rules run: its metadata property `rules.referenced`, else the
    config's `rules.referenced`."""
    metadata = schema.metadata if schema is not None else None
    properties = metadata.properties if metadata is not None else None  # a MetadataProperties
    value = properties.properties.get(PROPERTY) if properties is not None else None
    if value is None:
        return default
    return str(value).strip().lower() == "true"


def _applies(schema: Schema, mode: RuleMode, transforms: bool = False) -> bool:
    """Whether a domain rule of `schema` runs in `mode` (only transforms, with `transforms`)."""
    rule_set = schema.rule_set
    rules = (rule_set.domain_rules if rule_set is not None else None) or []
    for rule in rules:
        if transforms and (rule.kind is None or rule.kind.value != "TRANSFORM"):
            continue
        if rule.mode == mode or (rule.mode == RuleMode.WRITEREAD and mode in (RuleMode.WRITE, RuleMode.READ)):
            return True
    return False


class ReferencedRules:
    """A serde's view of the reference graphs of the schemas it writes or reads (resolved once
    per root schema), and the runs of the parts' rules."""

    def __init__(self, default: bool, walker: Callable[[Any, Schema], Walk]) -> None:
        self._default = default
        self._walker = walker
        self._graphs: dict[tuple[str | None, str], dict[str, Referenced]] = {}
        self._walks: dict[tuple[str | None, str], tuple[Walk, list[str]]] = {}
        self._inputs: dict[tuple[str, int, str], tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def graph(self, serde: Any, root: Schema) -> dict[str, Referenced]:
        """The schemas `root` references directly, by reference name, with their rule sets.
        Raises `ConfigError` when the references (followed all the way) come back to a subject."""
        key = (root.schema_str, repr(root.references))
        found = self._graphs.get(key)
        if found is None:
            client = _confluent.registry_client(serde)
            found = {}
            for reference in root.references or []:
                registered = _version(client, root, reference.subject, reference.version)
                name = reference.name or ""
                found[name] = Referenced(
                    name, reference.subject or "", int(registered.version or 0), registered.schema
                )
            self._check_no_cycle(client, root, [])
            _keep(self._graphs, key, found, self._lock)
        return found

    def _check_no_cycle(self, client: Any, schema: Schema, path: list[str]) -> None:
        for reference in schema.references or []:
            if reference.subject in path:
                chain = " -> ".join([*path, reference.subject])
                raise ConfigError(
                    f"schema references form a cycle ({chain}): rules of referenced schemas need "
                    "references that do not come back to a subject"
                )
            registered = _version(client, schema, reference.subject, reference.version)
            self._check_no_cycle(client, registered.schema, [*path, reference.subject or ""])

    def apply_to(
        self,
        root: Schema | None,
        mode: RuleMode,
        serde: Any,
        transforms: bool = False,
        *,
        inside: bool = False,
    ) -> bool:
        """Whether messages of `root` have referenced rules to run in `mode` (anywhere in the
        graph); with `transforms`, rules that may rewrite the value. `inside`: `root` is itself a
        part, whose root message opted in (the parts' own references follow it)."""
        if root is None or not root.references or not (inside or opted_in(root, self._default)):
            return False
        return any(
            _applies(part.schema, mode, transforms)
            or self.apply_to(part.schema, mode, serde, transforms, inside=True)
            for part in self.graph(serde, root).values()
        )

    def run(
        self,
        serde: Any,
        ser_ctx: SerializationContext,
        mode: RuleMode,
        root: Schema | None,
        message: Any,
        original: Any,
    ) -> Any:
        """`message` with the rules of the schemas `root` references run on its parts, in place."""
        above = PATH.get()
        if message is None or not self.apply_to(root, mode, serde, inside=above is not None):
            return message
        assert root is not None
        graph = self.graph(serde, root)
        walk, named = self._walk(serde, root)
        if not named:  # how a path names this root's messages: the same for all of them
            named.append(_root_name(root, message))
        for below, value, put, name in list(walk(message, graph)):
            part = graph[name]
            token = PATH.set(f"{above or named[0]}{below}")
            try:
                tags, transformer = self.rule_inputs(serde, part, value)
                put(
                    _confluent.run_domain_rules(
                        serde, ser_ctx, part.subject, mode, part.schema, value, tags, transformer, original
                    )
                )
            finally:
                PATH.reset(token)
        return message

    def reachable(self, serde: Any, root: Schema | None) -> list[Referenced]:
        """Every version `root` references, all the way down, where its referenced rules run
        (opted in): the schemas whose tags a message of `root` carries."""
        if root is None or not root.references or not opted_in(root, self._default):
            return []
        return self.referenced_by(serde, root)

    def referenced_by(self, serde: Any, root: Schema | None) -> list[Referenced]:
        """Every version `root` references, all the way down, whether their rules run or not
        (a field tagged PII in one is sensitive either way: `redaction.py`)."""
        if root is None or not root.references:
            return []
        found: dict[tuple[str, int], Referenced] = {}
        pending = list(self.graph(serde, root).values())
        while pending:
            part = pending.pop()
            if (part.subject, part.version) not in found:
                found[(part.subject, part.version)] = part
                if part.schema.references:
                    pending.extend(self.graph(serde, part.schema).values())
        return list(found.values())

    def parts(
        self, serde: Any, root: Schema, message: Any
    ) -> Iterator[tuple[Referenced, Any, Callable[[Any], None]]]:
        """Each part of `message` whose type a schema `root` references (where they run: opted
        in), all the way down: (its referenced version, its value, how to put a new one in)."""
        if message is None or not self.reachable(serde, root):
            return
        yield from self._parts(serde, root, message)

    def _parts(
        self, serde: Any, root: Schema, message: Any
    ) -> Iterator[tuple[Referenced, Any, Callable[[Any], None]]]:
        graph = self.graph(serde, root)
        walk, _ = self._walk(serde, root)
        for _, value, put, name in list(walk(message, graph)):
            part = graph[name]
            yield part, value, put
            if part.schema.references and value is not None:
                yield from self._parts(serde, part.schema, value)

    def _walk(self, serde: Any, root: Schema) -> tuple[Walk, list[str]]:
        """How parts are found in `root`'s messages (its parsed schema read once), and the root's
        name for paths once its first message has told it."""
        key = (root.schema_str, repr(root.references))
        found = self._walks.get(key)
        if found is None:
            found = (self._walker(serde, root), [])
            _keep(self._walks, key, found, self._lock)
        return found

    def rule_inputs(self, serde: Any, part: Referenced, value: Any) -> tuple[Any, Any]:
        """What the engine needs to run `part`'s rules (its tags, its field transformer), made
        once per referenced version (and Protobuf message type) rather than per message."""
        descriptor = getattr(value, "DESCRIPTOR", None)
        key = (part.subject, part.version, descriptor.full_name if descriptor is not None else "")
        found = self._inputs.get(key)
        if found is None:
            found = _confluent.rule_inputs(serde, part.schema, value)
            _keep(self._inputs, key, found, self._lock)
        return found


def _keep(cache: dict[Any, Any], key: Any, value: Any, lock: threading.Lock) -> None:
    """`cache[key] = value`, the cache bounded as plans are (`GRAPHS_KEPT`): a bound, not an
    eviction policy."""
    with lock:
        if len(cache) >= GRAPHS_KEPT:
            cache.clear()
        cache[key] = value


def _version(client: Any, root: Schema, subject: str | None, version: int | None) -> Any:
    """A referenced version, asked for in the form the serde asks for it: the registry client
    caches versions by (subject, version) whatever the form, and confluent-kafka's Protobuf serdes
    read references as serialized descriptors."""
    form = "serialized" if root.schema_type == "PROTOBUF" else None
    return client.get_version(subject, version, True, form)


def _root_name(root: Schema, message: Any) -> str:
    """How a path names the root message: its message type's, record's or (JSON Schema) title's
    short name."""
    descriptor = getattr(message, "DESCRIPTOR", None)
    if descriptor is not None:
        return str(descriptor.name)
    try:
        parsed = json.loads(root.schema_str or "")
    except ValueError:
        return "message"
    if isinstance(parsed, dict):
        name = parsed.get("name") or parsed.get("title")
        if isinstance(name, str) and name:
            return name.rsplit(".", 1)[-1]
    return "message"


# -- finding the parts ----------------------------------------------------------------------------


def _setter(container: Any, key: Any) -> Callable[[Any], None]:
    def put(value: Any) -> None:
        container[key] = value

    return put


def avro_walker(serde: Any, root: Schema) -> Walk:
    """The parts of an Avro value whose type is a referenced named type."""
    parsed = _confluent.parsed(serde, root)
    named: dict[str, Any] = parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}

    def walk(value: Any, graph: dict[str, Referenced]) -> Iterator[Part]:
        yield from _avro_parts(parsed, value, "", None, None, graph, named, top=True)

    return walk


def _avro_parts(
    node: Any,
    value: Any,
    path: str,
    container: Any,
    key: Any,
    graph: dict[str, Referenced],
    named: dict[str, Any],
    top: bool = False,
) -> Iterator[Part]:
    if value is None:
        return
    if isinstance(node, str):
        if node in graph and not top:
            yield path, value, _setter(container, key), node
        elif node in named:
            yield from _avro_parts(named[node], value, path, container, key, graph, named, top)
        return
    if isinstance(node, list):  # a union: the branch the value is
        branch = _avro_branch(node, value, named)
        if branch is not None:
            yield from _avro_parts(branch, value, path, container, key, graph, named, top)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    name = node.get("name")
    if kind in ("record", "error") and name in graph and not top:
        yield path, value, _setter(container, key), name
        return
    if kind in ("record", "error") and isinstance(value, dict):
        for field in node.get("fields", []):
            if field["name"] in value:
                yield from _avro_parts(
                    field["type"],
                    value[field["name"]],
                    f"{path}.{field['name']}",
                    value,
                    field["name"],
                    graph,
                    named,
                )
    elif kind == "array" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _avro_parts(node["items"], item, f"{path}[{index}]", value, index, graph, named)
    elif kind == "map" and isinstance(value, dict):
        for name_, item in value.items():
            yield from _avro_parts(node["values"], item, f"{path}[{name_!r}]", value, name_, graph, named)
    elif isinstance(kind, (dict, list, str)) and kind not in _AVRO_PRIMITIVES:
        yield from _avro_parts(kind, value, path, container, key, graph, named, top)


_AVRO_PRIMITIVES = frozenset(
    {"null", "boolean", "int", "long", "float", "double", "bytes", "string", "enum", "fixed"}
)


def _avro_branch(union: list[Any], value: Any, named: dict[str, Any]) -> Any:
    """The union branch a value belongs to, for records (by their field names); else None."""
    if not isinstance(value, dict):
        return None
    candidates = []
    for branch in union:
        definition = named.get(branch, branch) if isinstance(branch, str) else branch
        if isinstance(definition, dict) and definition.get("type") in ("record", "error", "map"):
            candidates.append((branch, definition))
    if len(candidates) == 1:
        return candidates[0][0]
    keys = set(value)
    for branch, definition in candidates:
        if definition.get("type") != "map" and {f["name"] for f in definition.get("fields", [])} >= keys:
            return branch
    return None


def json_walker(serde: Any, root: Schema) -> Walk:
    """The parts of a JSON value whose schema is a `$ref` to a referenced schema."""
    try:
        schema = json.loads(root.schema_str or "")
    except ValueError:
        schema = {}

    def walk(value: Any, graph: dict[str, Referenced]) -> Iterator[Part]:
        yield from _json_parts(schema, value, "", None, None, graph, schema)

    return walk


def _json_parts(
    node: Any, value: Any, path: str, container: Any, key: Any, graph: dict[str, Referenced], root: Any
) -> Iterator[Part]:
    if value is None or not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in graph and container is not None:
            yield path, value, _setter(container, key), ref
        elif ref.startswith("#/"):
            target = root
            for step in ref[2:].split("/"):
                target = target.get(step) if isinstance(target, dict) else None
            yield from _json_parts(target, value, path, container, key, graph, root)
        return
    if isinstance(value, dict):
        properties = node.get("properties") or {}
        for name, sub in properties.items():
            if name in value:
                yield from _json_parts(sub, value[name], f"{path}.{name}", value, name, graph, root)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                if name not in properties:
                    yield from _json_parts(extra, item, f"{path}[{name!r}]", value, name, graph, root)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            yield from _json_parts(node["items"], item, f"{path}[{index}]", value, index, graph, root)


def protobuf_walker(serde: Any, root: Schema) -> Walk:
    """The parts of a Protobuf message whose message type a referenced file (an import, named by
    its path as the reference is) defines. Sub-messages are changed in place: a rule that gives a
    new one has it copied into the part."""

    def walk(value: Any, graph: dict[str, Referenced]) -> Iterator[Part]:
        yield from _protobuf_parts(value, "", graph)

    return walk


def _protobuf_parts(message: Any, path: str, graph: dict[str, Referenced]) -> Iterator[Part]:
    for field, item in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                for key, value in item.items():
                    yield from _protobuf_part(value, f"{path}.{field.name}[{key!r}]", graph)
        elif field.is_repeated:
            for index, value in enumerate(item):
                yield from _protobuf_part(value, f"{path}.{field.name}[{index}]", graph)
        else:
            yield from _protobuf_part(item, f"{path}.{field.name}", graph)


def _protobuf_part(value: Any, path: str, graph: dict[str, Referenced]) -> Iterator[Part]:
    name = value.DESCRIPTOR.file.name
    if name in graph:

        def put(new: Any) -> None:
            if new is not None and new is not value:
                value.CopyFrom(new)

        yield path, value, put, name
    else:
        yield from _protobuf_parts(value, path, graph)


def walker_for(schema_type: str) -> Callable[[Any, Schema], Walk]:
    """How parts are found in values of a format (AVRO, JSON or PROTOBUF)."""
    return {"AVRO": avro_walker, "JSON": json_walker, "PROTOBUF": protobuf_walker}[schema_type]


def sensitive_fields_down(
    serde: Any, schema: Schema | None, inline_tags: dict[str, Any] | None = None
) -> list[str]:
    """The sensitive fields (`redaction.sensitive_fields`) of `schema` and of every version it
    references, all the way down, whether their rules run or not: a referenced schema's tags are
    in its own text, not in its root's. Raises what looking the references up raises."""
    found = set(sensitive_fields(schema, inline_tags))
    referenced = getattr(serde, "referenced", None)
    if isinstance(referenced, ReferencedRules):
        for part in referenced.referenced_by(serde, schema):
            found.update(sensitive_fields(part.schema))
    return sorted(found)
