"""The candidate index in partitions: opening reads nothing, a recall loads what its viewer may
see, eviction keeps the budget, and results are the same whatever is loaded or evicted."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memento_core import (
    Embedder,
    IndexStatus,
    InvalidInput,
    InvalidScope,
    Memento,
    MemoryDraft,
    Scope,
    _vector_rows,
)
from memento_core._storage import _chroma as chroma_module

if TYPE_CHECKING:
    from conftest import StoreFactory

ALICE = Scope(user_id="alice", project_id="apollo")
BOB = Scope(user_id="bob", project_id="apollo")
CAROL = Scope(user_id="carol", project_id="zephyr")

TOPICS = [
    "the quarterly budget review moved to Thursday",
    "the cat needs her vaccination booster in March",
    "the deploy pipeline fails when the cache is cold",
    "grandmother's lentil soup recipe uses smoked paprika",
    "the hiking trip to the lake is planned for August",
    "the new espresso machine descaling schedule is monthly",
]


def _drafts(scope: Scope, count: int, privacy: str = "private") -> list[MemoryDraft]:
    return [
        MemoryDraft(
            content=f"{scope.user_id} note {n}: {TOPICS[n % len(TOPICS)]}",
            scope=scope,
            privacy=privacy,
        )
        for n in range(count)
    ]


def _same(got: list[tuple[str, float, float]], expected: list[tuple[str, float, float]]) -> bool:
    """Same hits in the same order with the same relevance (a vector read back from the store
    may differ from the one just written in its last float32 bit)."""
    return [g[0] for g in got] == [e[0] for e in expected] and all(
        g[1:] == pytest.approx(e[1:], abs=1e-5) for g, e in zip(got, expected)
    )


def _fill(mem: Memento) -> None:
    mem.remember_many(
        _drafts(ALICE, 12)
        + _drafts(BOB, 12)
        + _drafts(CAROL, 12)
        + _drafts(Scope(user_id="dave", project_id="apollo"), 6, privacy="team")
        + _drafts(Scope(user_id="erin"), 4, privacy="public")
    )


def _answers(mem: Memento, viewer: Scope) -> list[tuple[str, float, float]]:
    """Each hit's id and relevance parts (the whole score also holds recency, which moves
    with the clock and with the accesses recall records)."""
    return [
        (hit.item.id, hit.reason.dense, hit.reason.keyword)
        for query in ("budget review", "soup recipe with paprika", "cold cache deploys")
        for hit in mem.recall(query, scope=viewer, limit=8)
    ]


def test_opening_a_store_loads_no_memories(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        _fill(mem)
    with store_factory.open() as mem:
        status = mem.index_status()
        assert isinstance(status, IndexStatus)
        assert (status.partitions, status.memories, status.loads) == (0, 0, 0)


def test_a_recall_loads_only_what_its_viewer_may_see(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        _fill(mem)
    with store_factory.open() as mem:
        mem.recall("budget", scope=ALICE)
        status = mem.index_status()
        # public (erin's 4), alice's own 12, apollo's team memories (dave's 6)
        assert status.partitions == 3
        assert status.memories == 4 + 12 + 6
        mem.recall("budget", scope=BOB)  # public and apollo are loaded already
        assert mem.index_status().partitions == 4
        assert mem.index_status().memories == 4 + 12 + 6 + 12


def test_results_do_not_depend_on_what_else_is_loaded(store_factory: StoreFactory) -> None:
    """BM25's statistics are over what the viewer may see: loading other users' memories,
    which share the viewer's words, changes no score."""
    with store_factory.open() as mem:
        _fill(mem)
    with store_factory.open() as mem:
        alone = _answers(mem, ALICE)
    with store_factory.open() as mem:
        for viewer in (BOB, CAROL, Scope(user_id="dave", project_id="apollo")):
            mem.recall("budget", scope=viewer)
        assert _same(_answers(mem, ALICE), alone)


def test_a_small_budget_evicts_and_recalls_stay_the_same(store_factory: StoreFactory) -> None:
    viewers = [Scope(user_id=f"user-{n}", project_id=f"project-{n % 3}") for n in range(8)]
    with store_factory.open() as mem:
        mem.remember_many([d for viewer in viewers for d in _drafts(viewer, 30)])
        mem.remember_many(_drafts(Scope(user_id="shared", project_id="project-1"), 20, "team"))
        expected = {viewer: _answers(mem, viewer) for viewer in viewers}
        roomy = mem.index_status()
    assert roomy.evictions == 0
    # Room for about two users' partitions: each recall below must evict others.
    budget_mb = 2.5 * roomy.bytes / len(viewers) / 2**20
    with store_factory.open(index_budget_mb=budget_mb) as mem:
        for viewer in [*viewers, *reversed(viewers)]:
            assert _same(_answers(mem, viewer), expected[viewer])
        status = mem.index_status()
    assert status.evictions > 0
    assert status.bytes < roomy.bytes


def test_recall_is_the_same_when_the_vectors_span_many_blocks(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index keeps its vectors in blocks (16,384 rows each); with blocks of 4 rows every
    partition spans several, and eviction's compaction moves rows between them."""
    viewers = [ALICE, BOB, CAROL, Scope(user_id="dave", project_id="apollo")]
    with store_factory.open() as mem:
        _fill(mem)
        expected = {viewer: _answers(mem, viewer) for viewer in viewers}
        roomy = mem.index_status()
    monkeypatch.setattr(_vector_rows, "BLOCK_ROWS", 4)
    with store_factory.open(index_budget_mb=0.6 * roomy.bytes / 2**20) as mem:
        for viewer in [*viewers, *reversed(viewers)]:
            assert _same(_answers(mem, viewer), expected[viewer]), viewer
        assert mem.index_status().evictions > 0


def test_preload_loads_what_a_viewer_needs_so_its_first_recall_loads_nothing(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:
        _fill(mem)
        expected = _answers(mem, ALICE)
    with store_factory.open() as mem:
        status = mem.preload(ALICE)
        assert (status.partitions, status.memories, status.loads) == (3, 4 + 12 + 6, 3)
        assert _same(_answers(mem, ALICE), expected)
        assert mem.index_status().loads == 3
    with store_factory.open() as mem:
        status = mem.preload()  # the public memories and those stored without a user
        assert (status.partitions, status.memories) == (2, 4)


async def test_the_async_preload_loads_the_same(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        _fill(mem)
    with store_factory.open() as mem:
        status = await mem.apreload(BOB)
        assert (status.partitions, status.memories) == (3, 4 + 12 + 6)


@pytest.mark.parametrize("scope", [{"user_id": "alice"}, "alice", 7])
def test_preload_refuses_what_is_not_a_scope_and_loads_nothing(
    store_factory: StoreFactory, scope: object
) -> None:
    with store_factory.open() as mem:
        _fill(mem)
    with store_factory.open() as mem:
        with pytest.raises(InvalidScope, match="scope must be a Scope"):
            mem.preload(scope)  # type: ignore[arg-type]
        assert mem.index_status().loads == 0
        assert len(mem.recall("note", scope=ALICE, limit=50)) == 12 + 6 + 4


def test_partitions_read_in_many_pages_index_every_memory(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition is read by id in pages (on a server, the next ones in flight while one is
    taken); with pages of 5 memories every partition spans several, and a viewer's partitions
    are read at once."""
    viewers = [ALICE, BOB, CAROL, Scope(user_id="dave", project_id="apollo")]
    with store_factory.open() as mem:
        _fill(mem)
        expected = {viewer: _answers(mem, viewer) for viewer in viewers}
        whole = mem.index_status().memories
    monkeypatch.setattr(chroma_module, "PAGE", 5)
    with store_factory.open() as mem:
        for viewer in viewers:
            assert _same(_answers(mem, viewer), expected[viewer]), viewer
        assert mem.index_status().memories == whole
        hits = mem.recall("note", scope=ALICE, limit=50)
        assert len(hits) == 12 + 6 + 4  # her own, apollo's team notes, the public ones


def test_writes_reach_loaded_partitions_and_wait_in_the_store_for_others(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:
        _fill(mem)
    with store_factory.open() as mem:
        mem.recall("anything", scope=ALICE)
        held = mem.index_status().memories
        new_alice = mem.remember("alice booked a ferry to the island", scope=ALICE)
        new_carol = mem.remember("carol booked a ferry to the island", scope=CAROL)
        assert mem.index_status().memories == held + 1  # carol's partition is not loaded
        for viewer, mine, theirs in ((ALICE, new_alice, new_carol), (CAROL, new_carol, new_alice)):
            hits = [h.item.id for h in mem.recall("ferry island", scope=viewer)]
            assert hits[0] == mine
            assert theirs not in hits


def test_a_memory_made_public_moves_between_partitions(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        secret = mem.remember("alice's lighthouse photo collection", scope=ALICE)
        assert mem.recall("lighthouse photo", scope=BOB) == []
        mem.update(secret, privacy="public", scope=ALICE)
        assert [h.item.id for h in mem.recall("lighthouse photo", scope=BOB)] == [secret]
        assert mem.recall("lighthouse photo", scope=BOB)[0].item.privacy.value == "public"
        mem.update(secret, privacy="private", scope=ALICE)
        assert mem.recall("lighthouse photo", scope=BOB) == []
        assert [h.item.id for h in mem.recall("lighthouse photo", scope=ALICE)] == [secret]


def test_another_process_sees_writes_in_unloaded_and_loaded_partitions(
    writer_and_reader: tuple[Memento, Memento],
) -> None:
    writer, reader = writer_and_reader
    reader.recall("warm up", scope=ALICE)
    alice_note = writer.remember("alice's passport expires in June", scope=ALICE)
    carol_note = writer.remember("carol's passport expires in June", scope=CAROL)
    assert alice_note in [h.item.id for h in reader.recall("passport", scope=ALICE)]
    assert carol_note in [h.item.id for h in reader.recall("passport", scope=CAROL)]
    writer.forget(carol_note, hard=True, scope=CAROL)
    assert carol_note not in [h.item.id for h in reader.recall("passport", scope=CAROL)]


@pytest.mark.parametrize("budget", [0, -5, float("nan"), float("inf"), "100", True, None])
def test_a_bad_budget_is_refused_and_the_store_is_unharmed(
    tmp_path: Path, embedder: Embedder, budget: object
) -> None:
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        kept = mem.remember("the harbour opens at dawn", scope=ALICE)
    with pytest.raises(InvalidInput, match="index_budget_mb"):
        Memento.open(tmp_path / "store", embedder=embedder, index_budget_mb=budget)  # type: ignore[arg-type]
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        assert [h.item.id for h in mem.recall("harbour", scope=ALICE)] == [kept]


def test_every_viewer_recalls_exactly_what_it_may_see_under_eviction(
    store_factory: StoreFactory,
) -> None:
    """Random owners, projects and privacies; every viewer (anonymous, without a project,
    strangers) recalls with room for all, so the results are every memory it may see."""
    rng = random.Random(17)
    users, projects = ["", "ann", "ben", "cy"], ["", "north", "south"]
    written: list[tuple[str, str, str, str]] = []
    with store_factory.open() as mem:
        for n in range(60):
            user, project = rng.choice(users), rng.choice(projects)
            privacy = rng.choice(["private", "team", "public"])
            scope = Scope(user_id=user or None, project_id=project or None)
            memory_id = mem.remember(f"harbour log entry {n}", scope=scope, privacy=privacy)
            written.append((memory_id, user, project, privacy))
    viewers = [Scope(user_id=u or None, project_id=p or None) for u in users for p in projects]
    viewers.append(Scope(user_id="stranger", project_id="north"))
    with store_factory.open(index_budget_mb=0.02) as mem:
        for viewer in [*viewers, *viewers]:
            expected = {
                memory_id
                for memory_id, user, project, privacy in written
                if privacy == "public"
                or user == (viewer.user_id or "")
                or (privacy == "team" and project and project == viewer.project_id)
            }
            got = {h.item.id for h in mem.recall("harbour log entry", scope=viewer, limit=100)}
            assert got == expected, viewer
        assert mem.index_status().evictions > 0
