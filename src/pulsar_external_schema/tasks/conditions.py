"""READ conditions over a batch: the everyday CEL subset as Arrow compute, as its Python form judges.

The native reader decodes values into an Arrow column; a subject's READ conditions then run over
the whole column at once, where the per-message path runs them value by value. Each condition
gives True or False for a row only where the subset's Python form (`rules/cel_subset.py`) would
say so for that row's value, which tests/unit/test_cel_subset.py holds to cel-cpp; anything else
(a value the form does not judge, a record of a kind it refuses) is null. A row passes here only
where every condition is True (`passing`); any other row goes to the per-message path, which
evaluates it again and decides its outcome, its error and its action. Rows whose conditions are
all judged share that outcome with the rows judged alike (`native.Finisher`).

The form's rules, per node of the parsed condition (`condition_tree`):

* a field is read from a record (a struct that is not null) that has it; its value may be None
  (a null child of a present record), which only `== null` / `!= null` judge;
* operands are compared only when of one kind: int (Avro int, long), float (float, double,
  compared as doubles), str (string, enum), bytes (bytes, fixed), bool; a literal's kind must be
  the field's;
* `size()` of a string (code points), bytes, a list or a map;
* `&&`, `||`, `!` of bools, left to right as Python's `and` / `or`: an operand the form does not
  judge makes the whole condition not judged where Python would reach it;
* every field the condition names must be of kinds the form takes (the Python form checks them
  all before it evaluates): a field holding a logical type (dates, timestamps, decimals, uuids,
  times), a union of several types, or a map is never judged here.

The kinds come from the Avro reader schema, not from the Spark column (a `uuid` is a string
column, but fastavro gives a `UUID`; a `time-millis` an int column, but a `time`). A JSON Schema
value's come from its column and its writer's schema (`json_kinds`): the Python path judges the
body's own object, which may lack a key or hold keys the schema does not name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..rules.cel_subset import Tree, condition_tree

__all__ = ["Evaluation", "Kind", "avro_kinds", "compile_conditions", "json_kinds", "passing"]

Kind = Any
"""What Python value fastavro gives: "int", "float", "str", "bytes", "bool", "none", "other", or
("record", {field: Kind}), ("list", Kind), ("map", Kind); ("given", Kind): a JSON object's
optional field, judged only where the column holds a value."""

_ORDERED = frozenset({"int", "float", "str", "bytes", "bool"})
_PRIMITIVE = {
    "int": "int",
    "long": "int",
    "float": "float",
    "double": "float",
    "string": "str",
    "bytes": "bytes",
    "boolean": "bool",
    "null": "none",
}
Evaluation = Callable[[pa.StructArray], list[pa.Array]]
"""The value column -> each condition's verdict over it, in the order the conditions run."""


def avro_kinds(schema: Any, named: dict[str, Any] | None = None) -> Kind:
    """The kinds of a (fastavro-parsed) Avro schema's values."""
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVE:
            return _PRIMITIVE[schema]
        return avro_kinds(named[schema], named) if schema in named else "other"
    if isinstance(schema, list):
        branches = [
            b for b in schema if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")
        ]
        return avro_kinds(branches[0], named) if len(branches) == 1 else "other"
    if not isinstance(schema, dict):
        return "other"
    kind = schema.get("type")
    if schema.get("name") and kind in ("record", "error", "enum", "fixed"):
        named[schema["name"]] = schema
    if schema.get("logicalType"):
        return "other"
    if isinstance(kind, dict | list):
        return avro_kinds(kind, named)
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind]
    if kind == "enum":
        return "str"
    if kind == "fixed":
        return "bytes"
    if kind == "array":
        return ("list", avro_kinds(schema["items"], named))
    if kind == "map":
        return ("map", avro_kinds(schema["values"], named))
    if kind in ("record", "error"):
        return ("record", {f["name"]: avro_kinds(f["type"], named) for f in schema["fields"]})
    return avro_kinds(kind, named) if isinstance(kind, str) else "other"


def json_kinds(value_type: pa.DataType, required: frozenset[str]) -> Kind:
    """The kinds of JSON Schema values the native reader put in a column of `value_type`, each
    checked against a schema whose top level requires `required`. Only a top-level field of a
    column that holds one Python kind is judged: a string (Python `str`), an integer (an `int`:
    the column takes only integers written as such), a boolean, or a list of those; one the body
    may lack (not in `required`) only where the column holds a value (its null is Python's missing
    key, or a None). A number column is not (Python holds `2` as an int and `2.5` as a float, the
    column both as doubles), nor an object or a map (the body's own may hold keys the column
    drops)."""
    if not isinstance(value_type, pa.StructType):
        return "other"
    kinds = {f.name: _json_kind(f.type) for f in value_type}
    optional = {name: ("given", k) for name, k in kinds.items() if name not in required and k != "other"}
    return ("record", {**kinds, **optional})


def _json_kind(data_type: pa.DataType) -> Kind:
    if pa.types.is_string(data_type):
        return "str"
    if pa.types.is_int64(data_type):
        return "int"
    if pa.types.is_boolean(data_type):
        return "bool"
    if pa.types.is_list(data_type):
        return ("list", _json_kind(data_type.value_type))
    return "other"


def compile_conditions(
    texts: tuple[str, ...], kinds: Kind, *, open_record: bool = False
) -> Evaluation | None:
    """One function of the value column: each condition's verdict, True or False where the
    Python form would say so, else null. None where some condition is outside the subset or never
    judged for these kinds. `open_record`: the value may hold top-level fields `kinds` does not
    name (a JSON object), which the Python form checks before it evaluates; a condition naming
    one is never judged here."""
    evaluations = []
    for text in texts:
        tree = condition_tree(text)
        if tree is None or not _fields_judged(tree, kinds, open_record):
            return None
        evaluations.append(tree)

    def verdicts(values: pa.StructArray) -> list[pa.Array]:
        found = []
        for tree in evaluations:
            verdict = _boolean(_Node.of(tree, values, kinds))
            if not isinstance(verdict, pa.Array):  # a condition of literals alone
                verdict = pa.repeat(verdict, len(values))
            found.append(verdict)
        return found

    return verdicts


def passing(verdicts: list[pa.Array]) -> pa.Array:
    """True where every condition is True for sure, else false."""
    result = verdicts[0]
    for verdict in verdicts[1:]:
        result = pc.and_kleene(result, verdict)
    return pc.fill_null(result, False)


def _fields_judged(tree: Tree, kinds: Kind, open_record: bool = False) -> bool:
    """Whether every top-level field the condition names is of kinds the Python form takes."""
    if kinds[0] != "record":
        return not open_record  # fields of a value that is not a record: none judged
    named = _top_fields(tree)
    if open_record and not named <= kinds[1].keys():
        return False
    return all(_plain(kinds[1][name]) for name in named if name in kinds[1])


def _top_fields(tree: Tree) -> set[str]:
    if tree[0] == "field":
        return {tree[1][0]}
    children = [c for c in tree[1:] if isinstance(c, tuple)]
    return set().union(*(_top_fields(child) for child in children)) if children else set()


def _plain(kind: Kind) -> bool:
    if isinstance(kind, str):
        return kind != "other"
    if kind[0] in ("list", "given"):
        return _plain(kind[1])
    if kind[0] == "record":
        return all(_plain(k) for k in kind[1].values())
    return False  # maps: a key with a NUL is refused per value; not judged here


class _Node:
    """A node's values over the batch. `values`: an array (or a scalar for a literal); where a
    value is null, `judged` tells a Python None (true: a field of a present record) from a value
    the form does not judge (false). Computed nodes (comparisons, sizes, logic) are null only
    where not judged."""

    __slots__ = ("field", "judged", "kind", "literal", "values")

    def __init__(
        self, values: Any, kind: Kind, judged: Any = True, literal: bool = False, field: bool = False
    ) -> None:
        self.values = values
        self.kind = kind
        self.judged = judged
        self.literal = literal
        self.field = field

    @classmethod
    def of(cls, tree: Tree, values: pa.StructArray, kinds: Kind) -> _Node:
        n = len(values)
        op = tree[0]
        if op == "literal":
            value = tree[1]
            kind = {bool: "bool", int: "int", float: "float", str: "str", type(None): "none"}[type(value)]
            return cls(pa.scalar(value), kind, literal=True)
        if op == "field":
            return _field(tree[1], values, kinds)
        if op == "size":
            return _size(cls.of(tree[1], values, kinds), n)
        if op == "compare":
            return _compare(tree[1], cls.of(tree[2], values, kinds), cls.of(tree[3], values, kinds), n)
        if op == "not":
            return cls(pc.invert(_boolean(cls.of(tree[1], values, kinds))), "bool")
        left = _boolean(cls.of(tree[1], values, kinds))
        right = _boolean(cls.of(tree[2], values, kinds))
        if op == "and":
            return cls(pc.if_else(left, right, False), "bool")
        return cls(pc.if_else(left, True, right), "bool")


def _unjudged(n: int) -> _Node:
    return _Node(pa.nulls(n, pa.bool_()), "other", judged=False)


def _field(path: tuple[str, ...], values: pa.StructArray, kinds: Kind) -> _Node:
    """`message.a.b`: each step from a record that is there (a null record is not judged)."""
    current: Any = values
    kind = kinds
    present: Any = current.is_valid()
    for i, name in enumerate(path):
        if not (isinstance(kind, tuple) and kind[0] == "record" and name in kind[1]):
            return _unjudged(len(values))
        if i:
            present = pc.and_(present, current.is_valid())
        current = pc.struct_field(current, name)
        kind = kind[1][name]
        if isinstance(kind, tuple) and kind[0] == "given":  # a null: a missing key, or a None
            present, kind = pc.and_(present, current.is_valid()), kind[1]
    return _Node(current, kind, judged=present, field=True)


def _size(node: _Node, n: int) -> _Node:
    values = node.values
    if node.literal:
        return _unjudged(n)  # `size('abc')`: left to the per-message path
    if node.kind == "str":
        sizes = pc.utf8_length(values)
    elif node.kind == "bytes":
        sizes = pc.binary_length(values)
    elif isinstance(node.kind, tuple) and node.kind[0] == "list":
        sizes = pc.list_value_length(values)
    elif isinstance(node.kind, tuple) and node.kind[0] == "map":
        entries = values.type
        sizes = pc.list_value_length(
            values.cast(pa.list_(pa.struct([entries.key_field, entries.item_field])))
        )
    else:
        return _unjudged(n)
    return _Node(_where_judged(sizes.cast(pa.int64()), node), "int")


def _compare(operator: str, left: _Node, right: _Node, n: int) -> _Node:
    function = _COMPARE[operator]
    equality = operator in ("==", "!=")
    if right.literal and right.kind == "none":
        if not equality or not left.field:
            return _unjudged(n)  # only a field's value can be None
        # only a None is judged: `x == null` is true for it, `x != null` false
        none = pc.is_null(left.values)
        if not isinstance(left.judged, bool):
            none = pc.and_(left.judged, none)
        return _Node(pc.if_else(none, pa.scalar(operator == "=="), pa.scalar(None, pa.bool_())), "bool")
    if left.kind != right.kind or not isinstance(left.kind, str) or left.kind not in _ORDERED:
        return _unjudged(n)
    if left.literal and right.literal:
        return _unjudged(n)  # constant folding is not the form's business; cel-cpp decides
    a, b = _comparable(left), _comparable(right)
    result = function(a, b)
    if not isinstance(result, pa.Array):
        return _unjudged(n)
    return _Node(_where_judged(_where_judged(result, left), right), "bool")


def _comparable(node: _Node) -> Any:
    """Values compared as Python compares them: floats as doubles, ints as int64, bools as ints."""
    if node.kind == "float":
        return node.values.cast(pa.float64())
    if node.kind == "int":
        return node.values.cast(pa.int64())
    if node.kind == "bool":
        return node.values.cast(pa.int8())
    return node.values


def _where_judged(values: pa.Array, node: _Node) -> pa.Array:
    """`values`, null where `node` is not judged (a Python None is not an operand either)."""
    if node.literal or isinstance(node.judged, bool):
        return values
    return pc.if_else(node.judged, values, pa.scalar(None, values.type))


def _boolean(node: _Node) -> pa.Array:
    """The node as an operand of `&&`, `||`, `!` or the result: a bool, else not judged."""
    if node.kind != "bool":
        return pa.nulls(_length(node), pa.bool_()) if not node.literal else pa.scalar(None, pa.bool_())
    if node.literal:
        return node.values
    return _where_judged(node.values, node)


def _length(node: _Node) -> int:
    return len(node.values) if isinstance(node.values, pa.Array) else 1


_COMPARE = {
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
    "==": pc.equal,
    "!=": pc.not_equal,
}
