"""Scope isolation through LlamaIndex's retriever API (``MementoRetriever``), if installed.

Memories for random users (hostile ids) share one store; a retriever for another user, with a
random ``filter``, never returns them; a bad filter is ``InvalidFilter`` when the retriever is
built; ``delete_nodes`` with another user's id deletes nothing.

Run longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/properties``.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from _prop_support import budget, filter_dicts, ids, may_see, maybe_ids
from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core import InvalidFilter, Memento, MemoryDraft, MemoryNotFound, RecallFilter, Scope

llamaindex = pytest.importorskip("memento_llamaindex")


@settings(max_examples=budget(20, share=0.002))
@given(
    owner=ids,
    viewer=maybe_ids,
    project=maybe_ids,
    raw_filter=st.none() | filter_dicts(),
)
def test_a_retriever_never_returns_another_users_private_memories(
    minilm_store: Memento,
    owner: str,
    viewer: str | None,
    project: str | None,
    raw_filter: dict[str, Any] | None,
) -> None:
    canary = f"canary{uuid4().hex} llamaindex"
    private, _ = minilm_store.remember_many(
        [
            MemoryDraft(canary, scope=Scope(user_id=owner, project_id=project)),
            MemoryDraft(canary + "!", scope=Scope(user_id=owner, project_id=project),
                        privacy="team"),
        ]
    )  # fmt: skip
    try:
        RecallFilter.build(raw_filter)
    except InvalidFilter:
        with pytest.raises(InvalidFilter):
            llamaindex.MementoRetriever(minilm_store, user_id=viewer, filter=raw_filter)
        raw_filter = None
    retriever = llamaindex.MementoRetriever(
        minilm_store, user_id=viewer, project_id=project, similarity_top_k=30, filter=raw_filter
    )

    nodes = retriever.retrieve(canary)

    for node in nodes:
        assert may_see(retriever.scope, minilm_store.get(node.node.node_id))
    if (viewer or "") != owner:
        assert private not in {node.node.node_id for node in nodes}
        with pytest.raises(MemoryNotFound):
            retriever.delete_nodes([private])
        assert minilm_store.get(private).content == canary
