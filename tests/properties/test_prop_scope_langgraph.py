"""Scope isolation and value filters through LangGraph's store API (``MementoStore``).

Two users' items (hostile labels: query syntax, wildcards, near-collisions, very long, any
Unicode) go into one shared store; a search under one user's namespace returns exactly that
user's items that pass the filter, by the rules ``memento_langgraph.filters`` documents, and a
filter with an unknown operator anywhere in it is ``InvalidFilter`` whether or not anything
would have matched.

Run longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/properties``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping
from typing import Any
from uuid import uuid4

import pytest
from _prop_support import INJECTIONS, budget, nasty_strings
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError, PutOp

from memento_core import InvalidFilter, InvalidInput, Memento, Scope
from memento_langgraph import MementoStore
from memento_langgraph.filters import OPERATORS
from memento_langgraph.namespaces import user_id_for

# ----------------------------------------------------------------------------- the reference


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(actual: Any, wanted: Any) -> bool:
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return isinstance(actual, bool) and isinstance(wanted, bool) and actual == wanted
    return bool(actual == wanted)


ORDER = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def reference(actual: Any, wanted: Any) -> bool:
    """The module docstring's rules, written out again."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operation(op, actual, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(
            reference(actual.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(wanted)
            and all(reference(a, w) for a, w in zip(actual, wanted))
        )
    return _equal(actual, wanted)


def _operation(op: str, actual: Any, operand: Any) -> bool:
    if op == "$eq":
        return reference(actual, operand)
    if op == "$ne":
        return not reference(actual, operand)
    if (_number(actual) and _number(operand)) or (
        isinstance(actual, str) and isinstance(operand, str)
    ):
        return bool(ORDER[op](actual, operand))
    return False


def has_unknown_operator(value: Any, *, top: bool = True) -> bool:
    """A key starting with ``$`` that is not a supported operator, anywhere in the filter."""
    if isinstance(value, Mapping):
        keys = [k for k in value if isinstance(k, str)]
        if top and any(k.startswith("$") for k in keys):
            return True  # a top-level "$or" is query syntax, not a field name
        if not top and any(k.startswith("$") for k in keys) and set(value) - OPERATORS:
            return True
        return any(has_unknown_operator(v, top=False) for v in value.values())
    if isinstance(value, list):
        return any(has_unknown_operator(v, top=False) for v in value)
    return False


# ----------------------------------------------------------------------------- strategies

FIELDS = ["n", "s", "d", "flag", "$or", "a.b"]
scalars = st.one_of(
    st.integers(-3, 3), st.floats(-3, 3, allow_nan=False), st.booleans(), st.none(),
    st.sampled_from(["", "a", "b", "é", "e\u0301", "$ne", "*"]),
)  # fmt: skip
values = st.fixed_dictionaries(
    {},
    optional={
        "n": scalars,
        "s": scalars,
        "d": st.dictionaries(st.sampled_from(["x", "y", "$gt"]), scalars, max_size=2),
        "flag": st.booleans(),
        "l": st.lists(scalars, max_size=2),
        "$or": scalars,
    },
)
ops = st.sampled_from([*sorted(OPERATORS), "$where", "$or", "$in", "$regex", "$exists", "$"])
conditions = st.recursive(
    scalars | st.lists(scalars, max_size=2),
    lambda inner: st.one_of(
        st.dictionaries(ops, inner, min_size=1, max_size=2),
        st.dictionaries(st.sampled_from(["x", "y"]), inner, min_size=1, max_size=2),
        st.dictionaries(st.sampled_from(["$eq", "x"]), inner, min_size=2, max_size=2),
    ),
    max_leaves=6,
)
filters = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from([*FIELDS, "l", "$where", "$and"]), conditions, max_size=3),
)
labels = st.one_of(nasty_strings, st.sampled_from(INJECTIONS))


@pytest.fixture(scope="module")
def store(minilm_store: Memento) -> Iterator[MementoStore]:
    yield MementoStore(minilm_store, index={"fields": ["text"]})


def put_all(store: MementoStore, namespace: tuple[str, ...], items: list[dict[str, Any]]) -> bool:
    """Put ``items``; False if the namespace is one LangGraph or Memento refuses, clearly."""
    try:
        store.batch(
            [
                PutOp(namespace, f"k{n}", {"text": f"note {n} {value}", **value},
                      index=None if n % 2 else False)
                for n, value in enumerate(items)
            ]
        )  # fmt: skip
    except (InvalidNamespaceError, InvalidInput) as err:
        assert str(err)
        return False
    return True


@settings(max_examples=budget(30, share=0.002))
@given(
    user_a=labels,
    user_b=labels,
    items_a=st.lists(values, min_size=1, max_size=4),
    items_b=st.lists(values, min_size=1, max_size=2),
    value_filter=filters,
    query=st.one_of(
        st.none(), st.sampled_from(["note", "note 1 n", "$ne", "*"]), st.text(max_size=8)
    ),
)
def test_a_search_sees_one_users_items_and_exactly_those_the_filter_passes(
    store: MementoStore,
    user_a: str,
    user_b: str,
    items_a: list[dict[str, Any]],
    items_b: list[dict[str, Any]],
    value_filter: dict[str, Any] | None,
    query: str | None,
) -> None:
    root = f"r{uuid4().hex[:12]}"
    ns_a, ns_b = (root, user_a), (root, user_b)
    if not put_all(store, ns_a, items_a) or user_a == user_b:
        return
    put_ok_b = put_all(store, ns_b, items_b)

    if has_unknown_operator(value_filter):
        with pytest.raises(InvalidFilter):
            store.search(ns_a, filter=value_filter, query=query)
        return
    found = store.search(ns_a, filter=value_filter, query=query or None, limit=50)

    assert {h.namespace for h in found} <= {ns_a}
    expected = {
        f"k{n}" for n, value in enumerate(items_a)
        if reference({"text": f"note {n} {value}", **value}, value_filter or {})
    }  # fmt: skip
    assert {h.key for h in found} == expected
    # Through core, as user b (not in the store's project): none of a's items.
    if query and put_ok_b:
        # A label Memento refuses as a scope value is stored under its encoded user id.
        seen = store.memento.recall(query, scope=Scope(user_id=user_id_for(user_b)), limit=50)
        assert not [r for r in seen if r.item.scope.user_id == user_id_for(user_a)]
