"""Shared pieces of the property tests: the example budget, hostile strategies and oracles."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from memento_core import MemoryItem, Privacy, Scope
from memento_core._filters import FILTER_FIELDS

_FUZZ = os.environ.get("MEMENTO_FUZZ_EXAMPLES")


def budget(default: int, *, share: float = 1.0) -> int:
    """Examples for one test: ``default`` in CI; with ``MEMENTO_FUZZ_EXAMPLES=N`` set, ``N``
    times ``share`` (tests that write to a store take a small share), and never fewer."""
    if not _FUZZ:
        return default
    return max(default, int(int(_FUZZ) * share))


# ----------------------------------------------------------------------------- strings

INJECTIONS = [
    '{"$ne": ""}', '{"$gt": ""}', "$ne", "$or", "$and", "$where", "$in", "$contains", "$regex",
    "*", "**", ".*", "%", "_", "?", "' OR '1'='1", '" OR ""="', "1; DROP TABLE items", "--",
    "null", "None", "undefined", "true", "0", "-1", "[]", "{}", "__proto__", "constructor",
    "\\", "/", "../..", "a.b", "memory://x", "user_id", "alice ", " alice", "ALICE", "alice\u200b",
    "ａｌｉｃｅ", "Ａ", "e\u0301", "\u00e9", "\ufeff", "\u2028", "\u202e", "🙂", "한국어",
    "\U0001f600" * 3,
    "x" * 256, "y" * 257,
]  # fmt: skip
"""Strings that look like query syntax, wildcards, or near-collisions of one another."""

any_text = st.text(max_size=40)
"""Any Unicode, lone surrogates and control characters included."""

nasty_strings = st.one_of(
    st.sampled_from(INJECTIONS),
    any_text,
    st.text(st.characters(codec="utf-8"), min_size=250, max_size=260),
    st.builds(lambda a, b: a + b, st.sampled_from(INJECTIONS), any_text),
)
"""A value meant to be a plain string id, chosen to break one."""

operator_dicts = st.dictionaries(
    st.sampled_from(["$ne", "$eq", "$gt", "$in", "$nin", "$or", "$where", "$regex", "*", ""]),
    st.one_of(st.just(""), st.text(max_size=5), st.integers(), st.lists(st.text(max_size=3))),
    min_size=1,
    max_size=2,
)
"""``{"$ne": ""}`` and friends: an operator passed where a value belongs."""

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def valid_id(value: object) -> bool:
    """Whether core takes ``value`` as a scope id (mirrors ``check_scope_value``'s rules)."""
    import unicodedata

    return (
        isinstance(value, str)
        and bool(value.strip())
        and len(value) <= 256
        and not any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value)
    )


_id_chars = st.characters(exclude_categories=("Cc", "Cs"))
ids = st.one_of(
    st.sampled_from([s for s in INJECTIONS if valid_id(s)]),
    st.text(_id_chars, min_size=1, max_size=40),
    st.text(_id_chars, min_size=250, max_size=256),
    st.builds(
        lambda a, b: (a + b)[:256],
        st.sampled_from([s for s in INJECTIONS if valid_id(s)]),
        st.text(_id_chars, max_size=20),
    ),
).filter(valid_id)
"""Hostile ids that core nevertheless accepts as plain strings."""
maybe_ids = st.one_of(st.none(), ids)


@st.composite
def scopes(draw: st.DrawFn, *, user: bool = True) -> Scope:
    return Scope(
        user_id=draw(ids) if user else draw(maybe_ids),
        agent_id=draw(maybe_ids),
        project_id=draw(maybe_ids),
        session_id=draw(maybe_ids),
    )


# ----------------------------------------------------------------------------- filters

TYPES = ["working", "episodic", "semantic", "procedural"]
PRIVACIES = ["private", "team", "public"]
JUNK_KEYS = ["$or", "$and", "$where", "$ne", "user_id", "scope", "*", "", "tag", "type"]

_datetimes = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.none()
) | st.datetimes(
    min_value=datetime(1971, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.just(timezone(timedelta(hours=9))),
)
_junk = st.one_of(
    operator_dicts,
    st.sampled_from([0, 1, -1, "", " ", False, True, [], {}, 1.5, b"episodic", "yesterday"]),
    json_values,
)
FIELD_VALUES: dict[str, Any] = {
    "types": st.one_of(
        st.sampled_from(TYPES),
        st.lists(st.sampled_from(TYPES), max_size=3),
        st.lists(st.sampled_from([*TYPES, "dream", "*"]) | operator_dicts, max_size=3),
    ),
    "tags": st.one_of(
        st.lists(st.sampled_from(["t1", "t2", "$ne", "*", "tag ünï"]), max_size=3),
        st.lists(nasty_strings | operator_dicts, max_size=3),
    ),
    "since": _datetimes,
    "until": _datetimes,
    "privacy": st.one_of(
        st.sampled_from(PRIVACIES), st.lists(st.sampled_from([*PRIVACIES, "secret"]), max_size=3)
    ),
    "agent_id": nasty_strings,
    "session_id": nasty_strings,
    "project_id": nasty_strings,
    "include_deleted": st.booleans(),
}


@st.composite
def filter_dicts(draw: st.DrawFn) -> dict[Any, Any]:
    """A recall filter: sometimes valid, often hostile (junk keys, operators, wrong types)."""
    fields = draw(st.lists(st.sampled_from(FILTER_FIELDS), max_size=4, unique=True))
    result: dict[Any, Any] = {}
    for name in fields:
        result[name] = draw(
            st.one_of(FIELD_VALUES[name], _junk) if draw(st.booleans()) else FIELD_VALUES[name]
        )
    for key in draw(st.lists(st.sampled_from(JUNK_KEYS) | st.integers(), max_size=2)):
        if draw(st.integers(0, 2)) == 0:
            result[key] = draw(_junk)
    return result


def holds_a_mapping(value: object) -> bool:
    """Whether a filter value smuggles a dict anywhere (an operator, in query syntax)."""
    if isinstance(value, dict):
        return True
    if isinstance(value, (list, tuple)):
        return any(holds_a_mapping(v) for v in value)
    return False


# ----------------------------------------------------------------------------- oracles


def may_see(viewer: Scope, item: MemoryItem) -> bool:
    """The visibility rule, stated independently of core's query: public, your own (a viewer
    without a user owns the memories stored without one), or team in your project."""
    if item.privacy is Privacy.PUBLIC:
        return True
    if (item.scope.user_id or "") == (viewer.user_id or ""):
        return True
    return (
        item.privacy is Privacy.TEAM
        and viewer.project_id is not None
        and item.scope.project_id == viewer.project_id
    )
