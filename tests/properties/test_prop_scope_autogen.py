"""Scope isolation through AutoGen's ``Memory`` API (``MementoMemory``).

Memories for random users (hostile ids) share one store. A ``MementoMemory`` for another user
never gets them back, whatever its query (text, or a ``MemoryContent`` whose metadata names
other users or carries operators) or its ``filter``; a bad filter is ``InvalidFilter``. Adding
with metadata that names scope fields never writes into another user's memories: it is stored
under the memory's own user, or refused with a ``memento_core`` error.

Run longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/properties``.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import pytest
from _prop_support import (
    budget,
    filter_dicts,
    ids,
    json_values,
    may_see,
    maybe_ids,
    nasty_strings,
    operator_dicts,
)
from autogen_core.memory import MemoryContent, MemoryMimeType
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from memento_autogen import MementoMemory, MementoMemoryConfig
from memento_core import InvalidFilter, Memento, MementoError, RecallFilter


def memory_for(store: Memento, **scope: Any) -> MementoMemory:
    return MementoMemory(MementoMemoryConfig(k=30, **scope), store=store)


def add(memory: MementoMemory, text: str, metadata: dict[str, Any] | None = None) -> None:
    content = MemoryContent(content=text, mime_type=MemoryMimeType.TEXT, metadata=metadata)
    asyncio.run(memory.add(content))


metadata_values = st.one_of(st.none(), nasty_strings, operator_dicts, st.integers(), json_values)


@settings(max_examples=budget(30, share=0.002))
@given(
    owner=ids,
    viewer=maybe_ids,
    project=maybe_ids,
    raw_filter=st.none() | filter_dicts(),
    query_metadata=st.dictionaries(
        st.sampled_from(["user_id", "project_id", "privacy", "filter", "$or", "id", "scope"]),
        metadata_values,
        max_size=3,
    ),
    as_content=st.booleans(),
)
def test_a_query_never_returns_another_users_private_memories(
    minilm_store: Memento,
    owner: str,
    viewer: str | None,
    project: str | None,
    raw_filter: dict[str, Any] | None,
    query_metadata: dict[str, Any],
    as_content: bool,
) -> None:
    canary = f"canary{uuid4().hex} autogen"
    add(memory_for(minilm_store, user_id=owner, project_id=project), canary)
    add(memory_for(minilm_store, user_id=owner, project_id=project, privacy="team"), canary + "!")
    reader = memory_for(minilm_store, user_id=viewer, project_id=project)
    query: str | MemoryContent = canary
    if as_content:
        query = MemoryContent(content=canary, mime_type="text/plain", metadata=query_metadata)

    try:
        RecallFilter.build(raw_filter)
    except InvalidFilter:
        with pytest.raises(InvalidFilter):
            asyncio.run(reader.query(query, filter=raw_filter))
        raw_filter = None
    found = asyncio.run(reader.query(query, filter=raw_filter)).results

    for result in found:
        assert result.metadata is not None
        item = minilm_store.get(result.metadata["id"])
        assert may_see(reader.scope, item), (reader.scope, item.scope, item.privacy)
    if (viewer or "") != owner:
        assert not [r for r in found if r.content == canary]


@settings(max_examples=budget(40, share=0.002))
@given(
    owner=ids,
    session=maybe_ids,
    metadata=st.dictionaries(
        st.sampled_from(["user_id", "agent_id", "project_id", "session_id", "privacy", "tags"]),
        metadata_values,
        max_size=3,
    ),
)
def test_metadata_never_writes_into_another_users_memories(
    minilm_store: Memento, owner: str, session: str | None, metadata: dict[str, Any]
) -> None:
    text = f"written{uuid4().hex} by {owner!r}"
    memory = memory_for(minilm_store, user_id=owner, session_id=session)
    try:
        add(memory, text, metadata)
    except (MementoError, ValidationError) as err:
        assert str(err)
        stored = []
    else:
        stored = [i for i in minilm_store.items() if i.content == text]
        assert len(stored) == 1
    for item in stored:
        assert item.scope.user_id == owner
        assert session is None or item.scope.session_id == session
