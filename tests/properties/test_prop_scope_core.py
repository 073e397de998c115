"""Scope isolation in core under hostile scopes and filters.

Every example writes a private memory (plus a team and a public one) for a random owner into one
shared store, then reads as a random viewer, often one whose ids are near-collisions of the
owner's (case, spacing, zero-width, composed/decomposed) or query syntax (``{"$ne": ""}``, ``*``,
``$or``), with a random filter. Whatever the store holds by then (every earlier example's
memories too), nothing comes back that the viewer may not see, and an accepted filter never lets
through what it excludes. Bad filters are ``InvalidFilter``, never another exception.

Run longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/properties``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import unicodedata
from typing import Any
from uuid import uuid4

import pytest
from _prop_support import (
    budget,
    filter_dicts,
    holds_a_mapping,
    ids,
    may_see,
    maybe_ids,
    nasty_strings,
    operator_dicts,
    scopes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core import (
    InvalidFilter,
    InvalidScope,
    Memento,
    MemoryDraft,
    MemoryItem,
    MemoryNotFound,
    RecallFilter,
    Scope,
)
from memento_core._filters import FILTER_FIELDS

MUTATIONS = [
    str.upper,
    str.lower,
    str.casefold,
    lambda s: s + " ",
    lambda s: " " + s,
    lambda s: s + "\u200b",
    lambda s: unicodedata.normalize("NFD", s),
    lambda s: unicodedata.normalize("NFKC", s),
    lambda s: s[:-1] or "x",
    lambda s: s + "*",
    lambda s: '{"$ne": "' + s + '"}',
]


@st.composite
def owner_and_viewer(draw: st.DrawFn) -> tuple[Scope, Scope]:
    owner = draw(scopes())
    how = draw(st.sampled_from(["independent", "near-user", "same-project", "anonymous"]))
    viewer = draw(scopes(user=False))
    if how == "near-user":
        mutated = draw(st.sampled_from(MUTATIONS))(owner.user_id or "")
        with contextlib.suppress(InvalidScope):
            viewer = dataclasses.replace(viewer, user_id=mutated)
    elif how == "same-project" and owner.project_id:
        viewer = dataclasses.replace(viewer, project_id=owner.project_id)
    elif how == "anonymous":
        viewer = dataclasses.replace(viewer, user_id=None)
    return owner, viewer


def check_filter_held(item: MemoryItem, f: RecallFilter) -> None:
    """An accepted filter narrows: each result has every property the filter asked for."""
    assert not f.types or item.type in f.types
    assert set(f.tags) <= set(item.tags)
    assert not f.privacy or item.privacy in f.privacy
    for name in ("agent_id", "session_id", "project_id"):
        wanted = getattr(f, name)
        assert wanted is None or getattr(item.scope, name) == wanted
    assert f.since is None or item.created_at >= f.since
    assert f.until is None or item.created_at <= f.until
    assert f.include_deleted or item.deleted_at is None


@settings(max_examples=budget(40, share=0.002))
@given(people=owner_and_viewer(), raw_filter=filter_dicts(), words=st.text(max_size=30))
def test_recall_never_shows_what_the_viewer_may_not_see(
    minilm_store: Memento,
    people: tuple[Scope, Scope],
    raw_filter: dict[Any, Any],
    words: str,
) -> None:
    owner, viewer = people
    mem = minilm_store
    canary = f"canary{uuid4().hex} {words}"
    private, *_ = mem.remember_many(
        [
            MemoryDraft(canary, scope=owner, tags=["t1"]),
            MemoryDraft(canary + " team", scope=owner, privacy="team", type="semantic"),
            MemoryDraft(canary + " public", scope=owner, privacy="public", tags=["t2"]),
        ]
    )
    try:
        parsed = RecallFilter.build(raw_filter)
    except InvalidFilter:
        parsed = None
    if parsed is None:
        with pytest.raises(InvalidFilter):
            mem.recall(canary, scope=viewer, limit=30, filter=raw_filter)
        results = mem.recall(canary, scope=viewer, limit=30)
    else:
        results = mem.recall(canary, scope=viewer, limit=30, filter=raw_filter)
        for result in results:
            check_filter_held(result.item, parsed)

    for result in results:
        assert may_see(viewer, result.item), (viewer, result.item.scope, result.item.privacy)
    owns = (owner.user_id or "") == (viewer.user_id or "")
    if not owns:
        assert private not in {r.item.id for r in results}
        with pytest.raises(MemoryNotFound):
            mem.get(private, scope=viewer)
    listed = mem.items(scope=viewer)
    assert all(may_see(viewer, item) for item in listed)
    assert (private in {i.id for i in listed}) == owns


@settings(max_examples=budget(300, share=0.2))
@given(raw_filter=filter_dicts())
def test_a_filter_is_parsed_or_refused_as_invalid_filter(raw_filter: dict[Any, Any]) -> None:
    """``RecallFilter.build`` raises nothing but ``InvalidFilter``; an unknown key, or a dict
    anywhere in a value (an operator in query syntax), is always refused."""
    hostile = any(k not in FILTER_FIELDS for k in raw_filter) or any(
        holds_a_mapping(v) for v in raw_filter.values()
    )
    try:
        RecallFilter.build(raw_filter)
    except InvalidFilter as err:
        assert str(err)
    else:
        assert not hostile, raw_filter


FALSY = [0, "", False, [], (), {}, 0.0]


@settings(max_examples=budget(200, share=0.2))
@given(name=st.sampled_from(["since", "until", "include_deleted", "agent_id", "project_id"]),
       value=st.sampled_from(FALSY))  # fmt: skip
def test_a_falsy_wrong_value_is_refused_not_ignored(name: str, value: Any) -> None:
    """``{"since": 0}`` is a mistake: dropping it would return more than was asked for."""
    if name == "include_deleted" and value is False:
        return  # the one falsy value that is right
    with pytest.raises(InvalidFilter, match=name):
        RecallFilter.build({name: value})


@settings(max_examples=budget(300, share=0.2))
@given(
    fields=st.dictionaries(
        st.sampled_from(["types", "tags", "privacy", "agent_id", "session_id", "project_id",
                         "since", "until"]),
        operator_dicts | st.lists(operator_dicts, min_size=1, max_size=2) | nasty_strings
        | st.integers(),
        min_size=1,
    )
)  # fmt: skip
def test_a_filter_built_directly_cannot_carry_an_operator(fields: dict[str, Any]) -> None:
    """``RecallFilter(...)`` checks its fields too: it is public, and its values go straight
    into the store's ``where`` clause."""
    try:
        built = RecallFilter(**fields)
    except InvalidFilter:
        return
    assert not any(holds_a_mapping(v) for v in fields.values())
    assert (
        RecallFilter.build(
            {k: v for k, v in dataclasses.asdict(built).items() if v not in ((), None)}
        )
        == built
    )


@settings(max_examples=budget(300, share=0.2))
@given(
    user=nasty_strings | operator_dicts | st.integers() | st.none(),
    agent=maybe_ids,
    other=st.sampled_from(["agent_id", "project_id", "session_id"]),
    bad=nasty_strings | operator_dicts | st.lists(ids, max_size=2),
)
def test_scope_takes_plain_strings_or_raises_invalid_scope(
    user: Any, agent: str | None, other: str, bad: Any
) -> None:
    for values in ({"user_id": user, "agent_id": agent}, {"user_id": "u", other: bad}):
        try:
            scope = Scope(**values)
        except InvalidScope as err:
            assert str(err)
        else:
            assert all(v is None or isinstance(v, str) for v in scope.as_dict().values())
            assert all(v is None or v == v.strip() or v.strip() for v in scope.as_dict().values())
