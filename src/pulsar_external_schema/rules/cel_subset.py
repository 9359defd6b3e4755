"""The everyday CEL condition, evaluated in Python, where it can only say "passes".

A profile of a consumer with one CEL condition (`size(message.name) < 50`) puts cel-cpp's evaluation
at about half of what a decode costs: the Python dict handed over and converted, the program run,
its result brought back. The condition itself is a length and a comparison, a small fraction of that
in Python (docs/benchmarks.md measures both). Most data-contract conditions are of that kind: fields
of the record compared with literals, `size()`, `&&`, `||`, `!`.

`compile_condition(text)` parses that subset and returns a Python function of the decoded record
(a dict) that returns True or False, or raises `Unsupported`; for anything outside the subset it
returns None and the rule runs on cel-cpp alone. The function is exact where it answers, because
it answers only where CEL cannot fail and agrees with Python:

* a field is read only from a dict that has it (a missing key is an error in CEL), and a string
  only if it is valid Unicode (a lone surrogate from JSON is not);
* operands are compared only when they have the same type (int, float, str, bytes, bool; `null`
  with `==` / `!=`), ints within int64, never bool against int;
* `size()` of a string, bytes, list or map (CEL counts a string's code points, as `len`);
* `&&`, `||` and `!` of bools only.

Anything else raises `Unsupported`. And `CompiledCondition` trusts only a True: a message the
function does not pass (False, `Unsupported`) goes to cel-cpp as before, so a failing message's
outcome, error text and action stay the engine's. tests/unit/test_cel_subset.py holds it to
cel-cpp on generated records and expressions.

`condition_tree(text)` gives the same parse as a tree, for an evaluator over columns (the Spark
source's native reader, `tasks/conditions.py`), which keeps the same rules: the grammar and what
is in the subset are decided here, once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .._signal import InternalSignal

__all__ = ["Tree", "Unsupported", "compile_condition", "condition_tree"]

Evaluator = Callable[[Any], Any]
Tree = tuple[Any, ...]
"""A parsed condition: ("literal", value), ("field", (name, ...)), ("size", tree),
("compare", operator, tree, tree), ("and", tree, tree), ("or", tree, tree), ("not", tree)."""

_INT64 = (-(2**63), 2**63)
_ORDERED = frozenset({int, float, str, bytes, bool})
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+(?![\w.]))
      | (?P<string>"[^"\\\n]*"|'[^'\\\n]*')
      | (?P<name>[A-Za-z_]\w*)
      | (?P<op>&&|\|\||==|!=|<=|>=|<|>|!|\(|\)|\.|-)
    )""",
    re.VERBOSE,
)
_RELATIONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_SIZED = frozenset({str, bytes, list, dict})
_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else"})


class Unsupported(InternalSignal):
    """This record is not one the Python form may judge; cel-cpp does."""


class _NotInSubset(InternalSignal):
    pass


def compile_condition(text: str) -> Evaluator | None:
    """A Python function of the record for a CEL condition in the subset, or None."""
    parsed = _parse(text)
    return None if parsed is None else _condition(*parsed)


def condition_tree(text: str) -> Tree | None:
    """The condition in the subset as a tree (`Tree`), or None: what `compile_condition` runs."""
    parsed = _parse(text)
    return None if parsed is None else parsed[1].tree


def _parse(text: str) -> tuple[_Parser, _Node] | None:
    try:
        tokens = _tokens(text)
        parser = _Parser(tokens)
        node = parser.expression()
        if parser.position != len(tokens):
            return None
        return parser, node
    except _NotInSubset:
        return None


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    end = len(text.rstrip())
    while position < end:
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise _NotInSubset
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class _Node:
    """One subexpression as Python source over the record `r`, and what is known of its value:
    `kind`, its type where the subset fixes it (a comparison is a bool); `value`, a literal's."""

    __slots__ = ("code", "kind", "literal", "tree", "value")

    def __init__(
        self, code: str, tree: Tree, kind: type | None = None, *, literal: bool = False, value: Any = None
    ) -> None:
        self.code = code
        self.tree = tree
        self.kind = kind
        self.literal = literal
        self.value = value


class _Parser:
    """Recursive descent over CEL's grammar, cut down to the subset: or > and > relation > unary.

    It writes the condition as one Python expression (`_Node.code`) rather than a tree of
    closures: one call a message instead of one per operator (the rule step of
    `size(message.name) < 50` took nearly half less). Every operation keeps the checks
    that make it exact; what fails them calls `_unsupported()`, which raises."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.position = 0
        self.fields: set[str] = set()
        """The top-level fields the expression names."""
        self.names: dict[str, Any] = {}
        """The generated code's globals: literals, types and helpers, by the name it uses."""
        self._temporaries = 0

    def name_for(self, value: Any) -> str:
        """A global of the generated code holding `value` (literals never go through repr)."""
        name = f"_k{len(self.names)}"
        self.names[name] = value
        return name

    def temporary(self) -> str:
        self._temporaries += 1
        return f"_t{self._temporaries}"

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self, text: str | None = None, kind: str | None = None) -> str:
        token = self._peek()
        if (
            token is None
            or (text is not None and token[1] != text)
            or (kind is not None and token[0] != kind)
        ):
            raise _NotInSubset
        self.position += 1
        return token[1]

    def _at(self, text: str) -> bool:
        token = self._peek()
        return token is not None and token[0] == "op" and token[1] == text

    def expression(self) -> _Node:
        left = self._and()
        while self._at("||"):
            self._take("||")
            right = self._and()
            left = _Node(
                f"({self.boolean(left)} or {self.boolean(right)})", ("or", left.tree, right.tree), bool
            )
        return left

    def _and(self) -> _Node:
        left = self._relation()
        while self._at("&&"):
            self._take("&&")
            right = self._relation()
            left = _Node(
                f"({self.boolean(left)} and {self.boolean(right)})", ("and", left.tree, right.tree), bool
            )
        return left

    def _relation(self) -> _Node:
        left = self._unary()
        token = self._peek()
        if token is not None and token[0] == "op" and token[1] in _RELATIONS:
            self._take()
            left = self.compare(token[1], left, self._unary())
            following = self._peek()
            if following is not None and following[0] == "op" and following[1] in _RELATIONS:
                raise _NotInSubset  # chained relations: left to cel-cpp
        return left

    def _unary(self) -> _Node:
        if self._at("!"):
            self._take("!")
            inner = self._unary()
            return _Node(f"(not {self.boolean(inner)})", ("not", inner.tree), bool)
        if self._at("-"):
            self._take("-")
            return self.constant(_number(self._take(kind="number"), negative=True))
        return self._primary()

    def _primary(self) -> _Node:
        token = self._peek()
        if token is None:
            raise _NotInSubset
        kind, text = token
        if kind == "op" and text == "(":
            self._take("(")
            inner = self.expression()
            self._take(")")
            return inner
        if kind == "number":
            self._take()
            return self.constant(_number(text, negative=False))
        if kind == "string":
            self._take()
            return self.constant(text[1:-1])
        if kind != "name" or (text in _RESERVED and text not in ("true", "false", "null")):
            raise _NotInSubset
        self._take()
        if text in ("true", "false", "null"):
            return self.constant({"true": True, "false": False, "null": None}[text])
        if text == "size":
            self._take("(")
            inner = self.expression()
            self._take(")")
            return self.size(inner)
        if text != "message":
            raise _NotInSubset  # other variables (`now`), functions and macros: cel-cpp
        path: list[str] = []
        while self._at("."):
            self._take(".")
            path.append(self._take(kind="name"))
        if not path or self._at("("):
            raise _NotInSubset  # `message` whole, or a method call on a field
        self.fields.add(path[0])
        return self.select(tuple(path))

    # -- the operations, as code ---------------------------------------------------------------

    def constant(self, value: Any) -> _Node:
        return _Node(self.name_for(value), ("literal", value), type(value), literal=True, value=value)

    def select(self, path: tuple[str, ...]) -> _Node:
        """`message.a.b`: the record's values are checked already (`_condition`); a missing key
        is CEL's "no such key" error, left to cel-cpp."""
        first, *rest = path
        tree = ("field", path)
        field = self.name_for(first)
        code = f"(r[{field}] if {field} in r else _unsupported())"  # `r` is a dict (checked)
        for name in rest:
            field, value = self.name_for(name), self.temporary()
            test = f"type({value} := {code}) is dict and {field} in {value}"
            code = f"({value}[{field}] if {test} else _unsupported())"
        return _Node(code, tree)

    def size(self, inner: _Node) -> _Node:
        """CEL's `size()` of a string (code points, as `len`), bytes, a list or a map."""
        value = self.temporary()
        code = f"(len({value}) if type({value} := {inner.code}) in _SIZED else _unsupported())"
        return _Node(code, ("size", inner.tree), int)

    def boolean(self, node: _Node) -> str:
        """The node's code, checked to be a bool (CEL's logical operators take nothing else)."""
        if node.kind is bool:
            return node.code
        value = self.temporary()
        return f"({value} if type({value} := {node.code}) is bool else _unsupported())"

    def compare(self, operator: str, left: _Node, right: _Node) -> _Node:
        """Operands of one type only (CEL's heterogeneous numbers and null comparisons go to
        cel-cpp): int, float, str, bytes or bool, or null with `==` / `!=`."""
        equality = operator in ("==", "!=")
        tree = ("compare", operator, left.tree, right.tree)
        a, b = self.temporary(), self.temporary()
        if right.literal:
            kind = right.kind
            if not (kind in _ORDERED or (equality and right.value is None)):
                return _Node(f"({left.code}, _unsupported())[1]", tree, bool)  # never judged here
            test = f"type({a} := {left.code}) is {self.name_for(kind)}"
            return _Node(f"({a} {operator} {right.code} if {test} else _unsupported())", tree, bool)
        test = (
            f"type({a} := {left.code}) is type({b} := {right.code}) "
            f"and (type({a}) in _ORDERED{f' or {a} is None' if equality else ''})"
        )
        return _Node(f"({a} {operator} {b} if {test} else _unsupported())", tree, bool)


def _condition(parser: _Parser, node: _Node) -> Evaluator:
    """The condition over a record, as one function: every field it names checked first, whether
    or not the evaluation reaches it, since cel-cpp converts them all before it runs (a field it
    cannot take fails the whole evaluation, even under a `false &&`). An ASCII string, the usual
    field, is checked in line; anything else by `_check_plain`."""
    lines = ["def condition(r):", "    if type(r) is not dict:", "        _unsupported()"]
    for field in sorted(parser.fields):
        name = parser.name_for(field)
        lines += [
            f"    if {name} in r:",
            f"        _v = r[{name}]",
            "        if type(_v) is not str or not _v.isascii():",
            "            _check_plain(_v)",
        ]
    lines.append(f"    return {parser.boolean(node)}")
    names = {
        **parser.names,
        "_unsupported": _unsupported,
        "_check_plain": _check_plain,
        "_SIZED": _SIZED,
        "_ORDERED": _ORDERED,
    }
    exec(compile("\n".join(lines), "<cel condition>", "exec"), names)
    condition: Evaluator = names["condition"]
    return condition


def _unsupported() -> Any:
    raise Unsupported


def _check_plain(value: Any) -> None:
    """Raises Unsupported unless `value` is one cel-cpp takes as this module reads it: plain
    values (ints within int64, valid Unicode), and lists and string-keyed maps of them."""
    kind = type(value)
    if kind is str:
        if not (value.isascii() or _is_utf8(value)):
            raise Unsupported
    elif kind is int:
        if not _INT64[0] <= value < _INT64[1]:
            raise Unsupported
    elif kind is float or kind is bool or kind is bytes or value is None:
        return
    elif kind is list:
        for item in value:
            _check_plain(item)
    elif kind is dict:
        for key, item in value.items():
            if type(key) is not str or "\x00" in key or not (key.isascii() or _is_utf8(key)):
                raise Unsupported  # cel-expr-python cuts a key at a NUL (values it wraps)
            _check_plain(item)
    else:
        raise Unsupported  # unions as tuples, dates, decimals, ...: cel-cpp's conversions decide


def _number(text: str, *, negative: bool) -> int | float:
    if any(mark in text for mark in ".eE"):
        number: int | float = -float(text) if negative else float(text)
        return number
    value = -int(text) if negative else int(text)
    if not _INT64[0] <= value < _INT64[1]:
        raise _NotInSubset
    return value


def _is_utf8(text: str) -> bool:
    """False for a string with lone surrogates (JSON's `"\\ud800"`), which cel-cpp cannot take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
