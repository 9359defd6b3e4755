"""Generated CEL conditions in the everyday subset (rules/cel_subset.py), for the tests that hold
its forms to cel-cpp (test_cel_subset.py) and to each other (test_cel_arrow.py)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

RELATIONS = ("<", "<=", ">", ">=", "==", "!=")


def subset_conditions(
    fields: Sequence[str], literals: st.SearchStrategy[str], leaves: Sequence[str]
) -> st.SearchStrategy[str]:
    """Relations between `message.<field>`, `size(message.<field>)` and literals, and `leaves`,
    combined with `&&`, `||` and `!`."""
    operands = st.one_of(
        st.sampled_from([f"message.{name}" for name in fields]),
        st.sampled_from([f"size(message.{name})" for name in fields]),
        literals,
    )
    relations = st.builds(lambda a, op, b: f"{a} {op} {b}", operands, st.sampled_from(RELATIONS), operands)
    return st.recursive(st.one_of(relations, st.sampled_from(list(leaves))), _combine, max_leaves=4)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a, b: f"{a} && {b}", children, children),
        st.builds(lambda a, b: f"({a}) || {b}", children, children),
        st.builds(lambda a: f"!({a})", children),
    )
