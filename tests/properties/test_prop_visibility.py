"""The visibility rule's three encodings agree: on a record (``is_visible``), as the store's
``where`` (``visibility_clause``, evaluated by a real Chroma) and over the candidate index's
arrays (``visible_mask``, through the index's search), for random owners, projects, privacies
and viewers — near-collisions included (case, the empty user, a project named like a user).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
from _prop_support import budget
from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core import Memento, MemoryDraft, Privacy, Scope
from memento_core._candidate_index import CandidateIndex
from memento_core._visibility import Visibility, is_visible, may_see, visibility_of
from memento_core.testing import HashEmbedder

USERS = st.sampled_from([None, "ann", "Ann", "ben", "apollo"])
PROJECTS = st.sampled_from([None, "apollo", "Apollo", "ann"])
PRIVACIES = st.sampled_from(list(Privacy))
OWNERS = st.tuples(USERS, PROJECTS, PRIVACIES)
VIEWERS = st.builds(Scope, user_id=USERS, project_id=PROJECTS)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memento]:
    path: Path = tmp_path_factory.mktemp("visibility")
    with Memento.open(path, embedder=HashEmbedder(), track_usage=False) as mem:
        yield mem


@settings(max_examples=budget(40, share=0.01), deadline=None)
@given(owners=st.lists(OWNERS, min_size=1, max_size=8), viewer=VIEWERS)
def test_record_store_and_index_encodings_agree(
    store: Memento, owners: list[tuple[str | None, str | None, Privacy]], viewer: Scope
) -> None:
    marker = uuid4().hex  # this example's memories, among every earlier example's
    drafts = [
        MemoryDraft(
            f"note {n} {marker}",
            scope=Scope(user_id=user, project_id=project),
            privacy=privacy,
        )
        for n, (user, project, privacy) in enumerate(owners)
    ]
    ids = store.remember_many(drafts)
    items = {item.id: item for item in store.items(include_deleted=True) if marker in item.content}
    assert set(items) == set(ids)

    on_records = {i for i, item in items.items() if is_visible(item, viewer)}
    by_store_query = {item.id for item in store.items(scope=viewer) if item.id in items}

    index = CandidateIndex()
    embedder = HashEmbedder()
    for memory_id, item in items.items():
        index.add(memory_id, item.content, visibility_of(item), embedder.embed_query(item.content))
    by_index = {
        memory_id
        for memory_id, _ in index.nearest(
            embedder.embed_query(marker),
            limit=len(items),
            viewer_user=viewer.user_id,
            viewer_project=viewer.project_id,
        )
    }
    by_keywords = {
        memory_id
        for memory_id, _ in index.search(
            f"note {marker}",
            limit=len(items),
            viewer_user=viewer.user_id,
            viewer_project=viewer.project_id,
        )
    }
    assert on_records == by_store_query == by_index == by_keywords


@given(owner=OWNERS, viewer=VIEWERS)
def test_the_rule_is_fail_closed(
    owner: tuple[str | None, str | None, Privacy], viewer: Scope
) -> None:
    user, project, privacy = owner
    seen = may_see(viewer, Visibility(user or "", project or "", privacy.value))
    if seen:
        assert (
            privacy is Privacy.PUBLIC
            or (user or "") == (viewer.user_id or "")
            or (privacy is Privacy.TEAM and project is not None and project == viewer.project_id)
        )
    if privacy is Privacy.PRIVATE and (user or "") != (viewer.user_id or ""):
        assert not seen
