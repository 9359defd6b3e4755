"""Values checked against the writer schema's types before they are written: refused, never changed.

fastavro writes what Python hands it as best it can: 2.5 into an Avro `int` is written as 2,
99999999999 into an `int` as a varint no 32-bit reader takes, `"yes"` into a `boolean` as true, a
string into an array as its characters, 1e300 into a `float` as infinity, a record without the
keys it does not name (`qyt` for `qty`: lost, and `qty`'s default written). Python's `json` writes
`NaN` and `Infinity`, which are not JSON (RFC 8259), and which every other reader refuses. Java's
`GenericDatumWriter` (and `GenericRecord`, which holds no field its schema lacks) and Confluent's
Jackson-based JSON serializer refuse all of these; so does this
package, on every encode path (the compiled plan and confluent-kafka's serializer alike).

* `avro_check(parsed)` is made once per writer schema. Its fast form is generated Python that
  accepts only what is plainly of its type (a Python `int` in range for an `int` field, `True` or
  `False` for a `boolean`, a list for an array, a dict with no key its record does not name, ...)
  and checks only what fastavro would change (a key it does not name, fastavro leaves out):
  fastavro refuses a wrong string, bytes, fixed or enum value itself. Anything the fast form does
  not accept at once goes to `explain_avro`, which applies the exact rules (numpy integers,
  `datetime.date` for a `date`, a union's branches) and names what is wrong. The fast form costs
  less than preparing fastavro's writer once saves (`avro.py`; docs/benchmarks.md measures the
  whole encode against fastavro's).
* `explain_avro(parsed, value)` also explains fastavro's own refusals (a string for an `int`),
  with the field's path instead of fastavro's text, which shows the value.
* `json_dumps` is confluent-kafka's JSON writer (compact, non-ASCII as is) refusing `NaN` and
  `Infinity`; `explain_json(value)` finds where one is. `json_loads` reads what `json.loads`
  reads, as it reads it. Both go through orjson where it gives the same bytes or values.

A refusal is a `ValueOutsideSchemaError` naming the field's path, the value's Python type and the
schema's type: never the value, which may be a PII field's.
"""

from __future__ import annotations

import array
import datetime
import decimal
import json
import math
import numbers
import struct
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import ValueOutsideSchemaError

__all__ = [
    "Problem",
    "avro_check",
    "explain_avro",
    "explain_json",
    "json_dumps",
    "json_loads",
    "refusal",
]

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
#: The largest finite Avro `float` (IEEE 754 single precision); a double beyond it (after
#: rounding) is written as infinity.
FLOAT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]

#: Logical types of `int` / `long` and the Python type fastavro converts for each (a plain
#: integer is taken too, as the number the schema stores).
_TEMPORAL: dict[str, type] = {
    "date": datetime.date,
    "time-millis": datetime.time,
    "time-micros": datetime.time,
    "timestamp-millis": datetime.datetime,
    "timestamp-micros": datetime.datetime,
    "timestamp-nanos": datetime.datetime,
    "local-timestamp-millis": datetime.datetime,
    "local-timestamp-micros": datetime.datetime,
    "local-timestamp-nanos": datetime.datetime,
}
_AVRO_NAMES = {"int": "an Avro int (32-bit integer)", "long": "an Avro long (64-bit integer)"}
#: A field the value does not have (the fast form's `get`).
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Problem:
    """Where a value leaves its schema's types: the field's path (`""`: the whole value), the
    value's Python type, what the schema takes there, and why, when the types alone do not say."""

    path: str
    value_type: str
    schema_type: str
    why: str = ""

    def message(self) -> str:
        where = f"field {self.path}" if self.path else "the value"
        why = f": {self.why}" if self.why else ""
        return f"{where}: {_article(self.value_type)} is not {self.schema_type}{why}"


def refusal(problem: Problem) -> ValueOutsideSchemaError:
    """The error for `problem` (the caller adds topic, subject and schema id)."""
    return ValueOutsideSchemaError(
        f"refused to write a value outside the schema's types: {problem.message()}",
        path=problem.path,
        value_type=problem.value_type,
        schema_type=problem.schema_type,
    )


def _article(type_name: str) -> str:
    if type_name == "None":
        return "None"
    return f"{'an' if type_name[:1] in 'aeiou' else 'a'} {type_name}"


def _type_name(value: Any) -> str:
    if value is None:
        return "None"
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


# -- Avro: the exact rules ---------------------------------------------------------------------------


def explain_avro(parsed: Any, value: Any) -> Problem | None:
    """The first place `value` leaves the types of `parsed` (a fastavro-parsed schema), or None."""
    named = parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}
    return _avro(parsed, value, "", named)


def _is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and not _is_numpy_bool(value)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not _is_numpy_bool(value)


def _is_numpy_bool(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


def _avro(node: Any, value: Any, path: str, named: dict[str, Any]) -> Problem | None:
    if isinstance(node, list):
        return _avro_union(node, value, path, named)
    if isinstance(node, str):
        if node in named:
            return _avro(named[node], value, path, named)
        return _avro_primitive(node, None, value, path)
    if not isinstance(node, dict):
        return None  # not a schema fastavro parses: let it say so
    kind = node.get("type")
    if isinstance(kind, (dict, list)):
        return _avro(kind, value, path, named)
    if kind in ("record", "error"):
        return _avro_record(node, value, path, named)
    if kind == "array":
        if not isinstance(value, (Sequence, array.array)) or isinstance(value, (str, bytes, bytearray)):
            return Problem(path, _type_name(value), "an Avro array (a list or tuple)")
        for index, item in enumerate(value):
            problem = _avro(node["items"], item, f"{path}[{index}]", named)
            if problem is not None:
                return problem
        return None
    if kind == "map":
        if not isinstance(value, Mapping):
            return Problem(path, _type_name(value), "an Avro map (a dict with string keys)")
        for key, item in value.items():
            if not isinstance(key, str):
                return Problem(f"{path}[*]", _type_name(key), "an Avro map key (a string)")
            problem = _avro(node["values"], item, f"{path}[*]", named)
            if problem is not None:
                return problem
        return None
    if kind == "enum":
        if not isinstance(value, str) or value not in node.get("symbols", ()):
            return Problem(path, _type_name(value), f"a symbol of enum {node.get('name')}")
        return None
    if kind == "fixed":
        if node.get("logicalType") and isinstance(value, decimal.Decimal):
            return None  # fastavro checks the scale and precision itself
        if not isinstance(value, (bytes, bytearray)) or len(value) != node.get("size"):
            size = node.get("size")
            got = f"it has {len(value)}" if isinstance(value, (bytes, bytearray)) else ""
            return Problem(path, _type_name(value), f"fixed {node.get('name')} ({size} bytes)", got)
        return None
    if isinstance(kind, str) and kind in named:
        return _avro(named[kind], value, path, named)
    if isinstance(kind, str):
        return _avro_primitive(kind, node.get("logicalType"), value, path)
    return None


def _avro_record(node: dict[str, Any], value: Any, path: str, named: dict[str, Any]) -> Problem | None:
    if not isinstance(value, Mapping):
        return Problem(path, _type_name(value), f"record {node.get('name')} (a dict)")
    names = {field["name"] for field in node.get("fields", ())}
    for key in value:
        if key not in names:
            here = f"{path}.{key}" if path else str(key)
            return Problem(
                here,
                _type_name(value[key]),
                f"a field of record {node.get('name')}",
                "the record has no such field (misspelt?), and Avro writers leave out what it does not name",
            )
    for field in node.get("fields", ()):
        name = field["name"]
        here = f"{path}.{name}" if path else name
        if name in value:
            problem = _avro(field["type"], value[name], here, named)
        elif "default" in field:
            continue  # fastavro writes the default
        else:
            problem = _avro(field["type"], None, here, named)
            if problem is not None:
                problem = Problem(
                    here, "None", problem.schema_type, "the field is missing and has no default"
                )
        if problem is not None:
            return problem
    return None


def _avro_union(branches: list[Any], value: Any, path: str, named: dict[str, Any]) -> Problem | None:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        # fastavro's tuple notation, (branch name, value): written as that branch, unchecked
        for branch in branches:
            if _branch_name(branch, named) == value[0]:
                return _avro(branch, value[1], path, named)
    problems = [_avro(branch, value, path, named) for branch in branches]
    if any(problem is None for problem in problems):
        return None
    others = [problem for branch, problem in zip(branches, problems, strict=True) if branch != "null"]
    if len(others) == 1 and others[0] is not None:
        # an optional field: what its one type says (a record's field deeper down), or null
        inner = others[0]
        if inner.path == path and "null" in branches:
            return Problem(path, inner.value_type, f"{inner.schema_type} or null", inner.why)
        return inner
    names = ", ".join(_branch_name(branch, named) or "?" for branch in branches)
    return Problem(path, _type_name(value), f"any branch of the union [{names}]")


def _branch_name(branch: Any, named: dict[str, Any]) -> str | None:
    if isinstance(branch, str):
        return branch
    if isinstance(branch, dict):
        name = branch.get("name")
        kind = branch.get("type")
        return name if isinstance(name, str) else kind if isinstance(kind, str) else None
    return None


def _avro_primitive(kind: str, logical: Any, value: Any, path: str) -> Problem | None:
    if kind == "null":
        return None if value is None else Problem(path, _type_name(value), "an Avro null")
    if kind == "boolean":
        if isinstance(value, bool) or _is_numpy_bool(value):
            return None
        return Problem(path, _type_name(value), "an Avro boolean (True or False)")
    if kind in ("int", "long"):
        temporal = _TEMPORAL.get(logical) if isinstance(logical, str) else None
        if temporal is not None and isinstance(value, temporal):
            if temporal is datetime.date and isinstance(value, datetime.datetime):
                return Problem(
                    path, _type_name(value), "an Avro date", "it would lose its time; pass value.date()"
                )
            return None
        if not _is_integer(value):
            what = f"an Avro {logical} ({kind})" if temporal is not None else _AVRO_NAMES[kind]
            return Problem(path, _type_name(value), what)
        low, high = INT_RANGE if kind == "int" else LONG_RANGE
        if not low <= int(value) <= high:
            return Problem(path, _type_name(value), _AVRO_NAMES[kind], "out of range")
        return None
    if kind in ("float", "double"):
        if not _is_real(value):
            return Problem(path, _type_name(value), f"an Avro {kind}")
        try:
            number = float(value)
            if kind == "float" and math.isfinite(number):
                struct.pack("<f", number)
        except OverflowError:
            return Problem(path, _type_name(value), f"an Avro {kind}", "out of range")
        return None
    if kind == "string":
        if isinstance(value, str) or (logical == "uuid" and isinstance(value, uuid.UUID)):
            return None
        return Problem(path, _type_name(value), "an Avro string")
    if kind == "bytes":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return None
        if logical == "decimal" and isinstance(value, decimal.Decimal):
            return None
        return Problem(path, _type_name(value), "Avro bytes")
    return None  # an unknown name: fastavro says so


# -- Avro: the fast form ------------------------------------------------------------------------------


def avro_check(parsed: Any) -> Callable[[Any], None] | None:
    """value -> None, raising `ValueOutsideSchemaError` for a value outside `parsed`'s types;
    None where the schema has nothing fastavro would change (a string, bytes, an enum, ...; a
    record always has: its keys)."""
    form = _FastForm(parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {})
    record = isinstance(parsed, dict) and parsed.get("type") in ("record", "error")
    if record:  # the usual root: its fields in line, one call less per message
        assigns, tests = form.fields(parsed, "v")  # never empty: a record's keys are checked
        plain = [
            "if type(v) is _dict:",
            *(f"    {line}" for line in assigns),
            f"    if {' and '.join(tests)}:",
        ]
    else:
        root = form.expression(parsed, "v")
        if root is None:
            return None
        plain = [f"if {root}:"]

    def refuse_if_outside(value: Any) -> None:
        problem = explain_avro(parsed, value)
        if problem is not None:
            raise refusal(problem)

    form.names["_refuse_if_outside"] = refuse_if_outside
    lines = [
        "def check(v):",
        "    try:",
        *(f"        {line}" for line in plain),
        f"        {'    ' * record}    return",
        "    except Exception:",  # an odd value (a missing field, a Mapping that is not a dict, ...)
        "        pass",
        "    _refuse_if_outside(v)",  # the exact rules decide, and name what is wrong
    ]
    check: Callable[[Any], None] = form.function(lines)  # type: ignore[assignment]
    return check


class _FastForm:
    """Generates the fast form: a boolean expression per schema node that is True only for values
    plainly of its type; None where nothing needs checking (fastavro refuses what is wrong). A
    missing field without a default raises (KeyError), which sends the value to the exact rules."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.names: dict[str, Any] = {
            "_FMAX": FLOAT_MAX,
            "_tuple": tuple,
            "_list": list,
            "_dict": dict,
            "_MISSING": _MISSING,
        }
        self.records: dict[str, str] = {}  # a named record -> its function's name
        self._counter = 0

    def _fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"_{prefix}{self._counter}"

    def function(self, lines: list[str]) -> Callable[[Any], bool]:
        exec(compile("\n".join(lines), "<avro value check>", "exec"), self.names)
        name = lines[0][4 : lines[0].index("(")]
        checker: Callable[[Any], bool] = self.names[name]
        return checker

    def expression(self, node: Any, var: str) -> str | None:
        if isinstance(node, list):
            return self._union(node, var)
        if isinstance(node, str):
            if node in self.named:
                return self.expression(self.named[node], var)
            return self._primitive(node, None, var)
        if not isinstance(node, dict):
            return None
        kind = node.get("type")
        if isinstance(kind, (dict, list)):
            return self.expression(kind, var)
        if kind in ("record", "error"):
            return self._record(node, var)
        if kind == "array":
            return self._loop(node["items"], var, "_list", "_tuple", f"{var}")
        if kind == "map":
            return self._loop(node["values"], var, "_dict", None, f"{var}.values()")
        if isinstance(kind, str) and kind in self.named:
            return self.expression(self.named[kind], var)
        if isinstance(kind, str):
            return self._primitive(kind, node.get("logicalType"), var)
        return None

    def _primitive(self, kind: str, logical: Any, var: str) -> str | None:
        if logical in _TEMPORAL:
            return f"(type({var}) is int and {_range(kind, var)})"  # a date etc.: the exact rules
        if kind == "null":
            return f"{var} is None"
        if kind == "boolean":
            return f"({var} is True or {var} is False)"
        if kind in ("int", "long"):
            return f"(type({var}) is int and {_range(kind, var)})"
        if kind == "float":
            return f"((type({var}) is float or type({var}) is int) and -_FMAX <= {var} <= _FMAX)"
        if kind == "double":
            return f"(type({var}) is float or type({var}) is int)"
        return None  # string, bytes, enum, fixed: fastavro refuses a wrong one itself

    def fields(self, node: dict[str, Any], var: str) -> tuple[list[str], list[str]]:
        """(statements that read the record's checked fields, the test of each): a field without
        a default read by subscript, one with a default by `get` (fastavro writes the default)."""
        assigns: list[str] = []
        names = self._fresh("names")  # `issuperset` bound once: a lookup less per record
        self.names[names] = frozenset(field["name"] for field in node.get("fields", ())).issuperset
        tests: list[str] = [f"{names}({var})"]  # no key the record does not name
        for field in node.get("fields", ()):
            item = self._fresh("f")
            expression = self.expression(field["type"], item)
            if expression is None:
                continue
            key = self._fresh("k")
            self.names[key] = field["name"]
            if "default" in field:
                assigns.append(f"{item} = {var}.get({key}, _MISSING)")
                tests.append(f"({item} is _MISSING or {expression})")
            else:
                assigns.append(f"{item} = {var}[{key}]")
                tests.append(expression)
        return assigns, tests

    def _record(self, node: dict[str, Any], var: str) -> str:
        name = node.get("name", "")
        if name not in self.records:
            # named before its body is made: a record inside itself (through an array or a map)
            # calls its own function, which exists by the time it runs
            function = self.records[name] = self._fresh("record")
            assigns, tests = self.fields(node, "r")
            lines = [f"def {function}(r):", "    if type(r) is not _dict:", "        return False"]
            lines += [f"    {line}" for line in assigns]
            lines.append(f"    return {' and '.join(tests)}")
            self.function(lines)
        return f"{self.records[name]}({var})"

    def _loop(self, items: Any, var: str, kind: str, other: str | None, iterable: str) -> str:
        test = f"type({var}) is {kind}" + (f" or type({var}) is {other}" if other else "")
        item = self._fresh("i")
        expression = self.expression(items, item)
        if expression is None:
            return f"({test})"
        function = self._fresh("loop")
        self.function(
            [
                f"def {function}({var}):",
                f"    for {item} in {iterable}:",
                f"        if not {expression}:",
                "            return False",
                "    return True",
            ]
        )
        return f"(({test}) and {function}({var}))"

    def _union(self, branches: list[Any], var: str) -> str:
        """fastavro chooses a union's branch by validating the value against each, which checks
        types and ranges: what is left is its tuple notation (no validation), a `-type` key, and a
        `float` branch that takes a double out of its range."""
        kinds = {_branch_kind(branch, self.named) for branch in branches}
        test = f"(type({var}) is not _tuple and (type({var}) is not _dict or '-type' not in {var}))"
        if "float" in kinds and "double" not in kinds:
            test += f" and (type({var}) is not float and type({var}) is not int or -_FMAX <= {var} <= _FMAX)"
        return f"({var} is None or ({test}))"


def _range(kind: str, var: str) -> str:
    low, high = INT_RANGE if kind == "int" else LONG_RANGE
    return f"{low} <= {var} <= {high}"


def _branch_kind(branch: Any, named: dict[str, Any]) -> Any:
    if isinstance(branch, str):
        return _branch_kind(named[branch], named) if branch in named else branch
    if isinstance(branch, dict):
        kind = branch.get("type")
        return _branch_kind(kind, named) if isinstance(kind, (dict, list)) else kind
    return "union"


# -- JSON -------------------------------------------------------------------------------------------


def json_dumps(value: Any) -> bytes:
    """JSON as confluent-kafka writes it (compact, non-ASCII as is), refusing `NaN` and `Infinity`:
    RFC 8259 has no such numbers, and Confluent's Java serializer fails them.

    orjson writes it (several times faster than `json`: docs/benchmarks.md); what orjson
    does not write as `json` would, `json` writes: integers beyond 64 bits and dict keys that are
    not strings (orjson refuses both), so every value is written, or refused, as before. orjson
    writes NaN and Infinity as `null`, so a text holding `null` is checked for them. Numbers are
    written as the shortest text that reads back as the same double, as `json` does; a negative
    exponent has no leading zero (`1e-7`, where `json` wrote `1e-07`)."""
    try:
        text = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: json's rules, and its error
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    if text.find(b"null") >= 0 and not _finite(value):  # find: `in` costs a buffer export
        raise ValueError("Out of range float values are not JSON compliant")
    return text


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in `value` (`explain_json` says where; this is its quick form,
    for every text that holds a `null`)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(map(_finite, value.values()))
    if isinstance(value, (list, tuple)):
        return all(map(_finite, value))
    return True


def json_loads(data: bytes | bytearray | str) -> Any:
    """JSON as `json.loads` reads it, read by orjson where that gives the same value.

    orjson reads an integer beyond 64 bits as a float (18446744073709551616 becomes
    1.8446744073709552e+19) and refuses what `json` takes (NaN, lone surrogates, numbers beyond a
    double): a text with a run of 19 digits, or one orjson refuses, is read by `json`. (confluent-
    kafka reads with orjson wherever it is installed; its deserializer is given this instead.)"""
    text = data.encode() if isinstance(data, str) else data
    if text.translate(_DIGITS).find(_LONG_NUMBER) < 0:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


#: Nineteen digits in a row (2**63 has 19): an integer orjson might not read exactly. Found in
#: the text with its digits turned into `1` and all else into `0` (two C passes, a fraction of what
#: a regular expression took).
_DIGITS = bytes(0x31 if 0x30 <= byte <= 0x39 else 0x30 for byte in range(256))
_LONG_NUMBER = b"1" * 19


def explain_json(value: Any) -> Problem | None:
    """The first place `value` holds a number JSON cannot carry (NaN, Infinity), or None."""
    for path, number in _json_floats(value, ""):
        if not math.isfinite(number):
            return Problem(path, "float", "a JSON number", "NaN and Infinity are not JSON")
    return None


def _json_floats(value: Any, path: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, float):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _json_floats(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _json_floats(item, f"{path}[{index}]")
