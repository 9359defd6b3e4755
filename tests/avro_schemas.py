"""Avro record schemas and records drawn by Hypothesis: every type the readers map (primitives,
logical types, enums, fixed, arrays, maps, nullable unions), nested up to records of records.
Used by the differential tests that hold the native reader (tests/spark/test_native.py) and the
native writer (tests/integration/test_arrow_writers.py) to the Python path.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

UTC = dt.UTC


def avro_types(names: Iterator[int]) -> Any:
    """Strategy of (Avro type, strategy of its values), nested up to records of records."""
    primitives = [
        ("int", st.integers(-(2**31), 2**31 - 1)),
        ("long", st.integers(-(2**63), 2**63 - 1)),
        ("float", st.floats(width=32, allow_nan=False)),
        ("double", st.floats(allow_nan=False)),
        ("string", st.text(max_size=8)),
        ("bytes", st.binary(max_size=8)),
        ("boolean", st.booleans()),
        ("null", st.none()),
        ({"type": "int", "logicalType": "date"}, st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1))),
        (
            {"type": "long", "logicalType": "timestamp-millis"},
            st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC)).map(
                lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
            ),
        ),
        (
            {"type": "long", "logicalType": "timestamp-micros"},
            st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC)),
        ),
        (
            {"type": "long", "logicalType": "local-timestamp-micros"},
            st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)),
        ),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
            st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False),
        ),
        ({"type": "string", "logicalType": "uuid"}, st.uuids()),
        ({"type": "long", "logicalType": "time-micros"}, st.times()),
    ]

    def named(kind: str) -> str:
        return f"{kind}{next(names)}"

    def leaf() -> Any:
        return st.sampled_from(primitives).flatmap(lambda t: st.just((t[0], t[1])))

    def enum() -> Any:
        return st.lists(st.sampled_from(["A", "B", "C", "D"]), min_size=1, max_size=4, unique=True).map(
            lambda symbols: (
                {"type": "enum", "name": named("E"), "symbols": symbols},
                st.sampled_from(symbols),
            )
        )

    def fixed() -> Any:
        return st.integers(1, 6).map(
            lambda n: ({"type": "fixed", "name": named("F"), "size": n}, st.binary(min_size=n, max_size=n))
        )

    def nested(children: Any) -> Any:
        def record(fields: list[tuple[Any, Any]]) -> tuple[Any, Any]:
            names_ = [f"f{i}" for i in range(len(fields))]
            schema = {
                "type": "record",
                "name": named("R"),
                "fields": [{"name": n, "type": t} for n, (t, _) in zip(names_, fields, strict=True)],
            }
            values = st.fixed_dictionaries({n: v for n, (_, v) in zip(names_, fields, strict=True)})
            return schema, values

        return st.one_of(
            children.map(lambda c: ({"type": "array", "items": c[0]}, st.lists(c[1], max_size=3))),
            children.map(
                lambda c: (
                    {"type": "map", "values": c[0]},
                    st.dictionaries(st.text(max_size=3), c[1], max_size=3),
                )
            ),
            children.filter(lambda c: c[0] != "null" and not isinstance(c[0], list)).map(
                lambda c: (["null", c[0]], st.none() | c[1])
            ),
            st.lists(children, min_size=1, max_size=4).map(record),
        )

    return st.recursive(st.one_of(leaf(), enum(), fixed()), nested, max_leaves=6)


def record_of(names: Iterator[int]) -> Any:
    return st.lists(avro_types(names), min_size=1, max_size=5).map(
        lambda fields: (
            {
                "type": "record",
                "name": "Generated",
                "fields": [{"name": f"g{i}", "type": t} for i, (t, _) in enumerate(fields)],
            },
            st.fixed_dictionaries({f"g{i}": v for i, (_, v) in enumerate(fields)}),
        )
    )


def has_null_type(node: Any) -> bool:
    """Whether a schema holds the `null` type outside a nullable union. Such schemas' rows may go
    to the Python path: a record of nulls is zero bytes (which the reference refuses), items of
    zero bytes make every payload one the decoding limits walk (`codec/limits.py`), and arrow-avro
    refuses a nested record with a `null` field when it flushes."""
    if node == "null":
        return True
    if isinstance(node, list):
        return any(has_null_type(branch) for branch in node if branch != "null")
    if isinstance(node, dict):
        children = [f["type"] for f in node.get("fields", [])] + [node.get("items"), node.get("values")]
        return any(has_null_type(c) for c in children if c is not None)
    return False
