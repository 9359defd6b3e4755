"""The everyday CEL condition, evaluated in Python, where it can only say "passes".

A profile of a consumer with one CEL condition (`size(message.name) < 50`) puts cel-cpp's
evaluation at ~3 us of the ~7 us a decode costs: the Python dict handed over and converted, the
program run, its result brought back. The condition itself is a length and a comparison, ~0.2 us
in Python. Most data-contract conditions are of that kind: fields of the record compared with
literals, `size()`, `&&`, `||`, `!`.

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["Unsupported", "compile_condition"]

Evaluator = Callable[[Any], Any]

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
_RELATIONS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else"})


class Unsupported(Exception):
    """This record is not one the Python form may judge; cel-cpp does."""


class _NotInSubset(Exception):
    pass


def compile_condition(text: str) -> Evaluator | None:
    """A Python function of the record for a CEL condition in the subset, or None."""
    try:
        tokens = _tokens(text)
        parser = _Parser(tokens)
        evaluator = parser.expression()
        if parser.position != len(tokens):
            return None
        return _condition(evaluator, tuple(sorted(parser.fields)))
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


class _Parser:
    """Recursive descent over CEL's grammar, cut down to the subset: or > and > relation > unary."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.position = 0
        self.fields: set[str] = set()
        """The top-level fields the expression names."""

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

    def expression(self) -> Evaluator:
        left = self._and()
        while self._at("||"):
            self._take("||")
            left = _or(left, self._and())
        return left

    def _and(self) -> Evaluator:
        left = self._relation()
        while self._at("&&"):
            self._take("&&")
            left = _and(left, self._relation())
        return left

    def _relation(self) -> Evaluator:
        left = self._unary()
        token = self._peek()
        if token is not None and token[0] == "op" and token[1] in _RELATIONS:
            self._take()
            left = _compare(token[1], left, self._unary())
            following = self._peek()
            if following is not None and following[0] == "op" and following[1] in _RELATIONS:
                raise _NotInSubset  # chained relations: left to cel-cpp
        return left

    def _unary(self) -> Evaluator:
        if self._at("!"):
            self._take("!")
            return _not(self._unary())
        if self._at("-"):
            self._take("-")
            return _constant(_number(self._take(kind="number"), negative=True))
        return self._primary()

    def _primary(self) -> Evaluator:
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
            return _constant(_number(text, negative=False))
        if kind == "string":
            self._take()
            return _constant(text[1:-1])
        if kind != "name" or (text in _RESERVED and text not in ("true", "false", "null")):
            raise _NotInSubset
        self._take()
        if text in ("true", "false", "null"):
            return _constant({"true": True, "false": False, "null": None}[text])
        if text == "size":
            self._take("(")
            inner = self.expression()
            self._take(")")
            return _size(inner)
        if text != "message":
            raise _NotInSubset  # other variables (`now`), functions and macros: cel-cpp
        path: list[str] = []
        while self._at("."):
            self._take(".")
            path.append(self._take(kind="name"))
        if not path or self._at("("):
            raise _NotInSubset  # `message` whole, or a method call on a field
        self.fields.add(path[0])
        return _select(tuple(path))


def _condition(evaluator: Evaluator, fields: tuple[str, ...]) -> Evaluator:
    """The condition over a record: every field it names checked first, whether or not the
    evaluation reaches it, since cel-cpp converts them all before it runs (a field it cannot
    take fails the whole evaluation, even under a `false &&`)."""
    if len(fields) == 1:
        (field,) = fields

        def one_field(record: Any) -> Any:
            if type(record) is not dict:
                raise Unsupported
            if field in record:
                _check_plain(record[field])
            return _boolean(evaluator(record))

        return one_field

    def condition(record: Any) -> Any:
        if type(record) is not dict:
            raise Unsupported
        for field in fields:
            if field in record:
                _check_plain(record[field])
        return _boolean(evaluator(record))

    return condition


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


def _constant(value: Any) -> Evaluator:
    return lambda record: value


def _select(path: tuple[str, ...]) -> Evaluator:
    """`message.a.b`: the record's values are checked already (`_condition`); a missing key is
    CEL's "no such key" error, left to cel-cpp."""
    if len(path) == 1:  # the usual `message.field`, a call less
        (field,) = path

        def select_field(record: Any) -> Any:
            if field not in record:
                raise Unsupported
            return record[field]

        return select_field

    def select(record: Any) -> Any:
        value = record
        for name in path:
            if type(value) is not dict or name not in value:
                raise Unsupported
            value = value[name]
        return value

    return select


def _is_utf8(text: str) -> bool:
    """False for a string with lone surrogates (JSON's `"\\ud800"`), which cel-cpp cannot take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _size(inner: Evaluator) -> Evaluator:
    def size(record: Any) -> int:
        value = inner(record)
        kind = type(value)
        if kind is str or kind is bytes or kind is list or kind is dict:
            return len(value)
        raise Unsupported

    return size


def _compare(operator: str, left: Evaluator, right: Evaluator) -> Evaluator:
    relation = _RELATIONS[operator]
    equality = operator in ("==", "!=")

    def compare(record: Any) -> bool:
        a, b = left(record), right(record)
        kind = type(a)
        if kind is not type(b):
            raise Unsupported  # CEL's heterogeneous numbers and null comparisons: cel-cpp
        if kind in _ORDERED or (equality and a is None):
            return relation(a, b)
        raise Unsupported

    return compare


def _boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise Unsupported
    return value


def _and(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda record: _boolean(left(record)) and _boolean(right(record))


def _or(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda record: _boolean(left(record)) or _boolean(right(record))


def _not(inner: Evaluator) -> Evaluator:
    return lambda record: not _boolean(inner(record))
