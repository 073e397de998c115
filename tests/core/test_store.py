"""Storing, reading and managing memories, in an embedded store and on a Chroma server."""

from __future__ import annotations

import hashlib
import inspect
import threading
import unicodedata
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pytest

from memento_core import (
    Embedder,
    EmbedderMismatch,
    FeedbackKind,
    InvalidInput,
    LinkType,
    Memento,
    MemoryDraft,
    MemoryNotFound,
    MemoryType,
    NotAMementoStore,
    Privacy,
    Scope,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann", agent_id="planner", project_id="apollo", session_id="s1")
BEN = Scope(user_id="ben", project_id="apollo")


class TinyEmbedder:
    """A real (if useless) embedder: a fixed random unit vector of dimension 8 per text."""

    def __init__(self, name: str = "tiny-random-8", dimension: int = 8) -> None:
        self.name = name
        self.dimension = dimension

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
            vector = np.random.default_rng(seed).standard_normal(self.dimension)
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embed_documents([text])[0]


def export(store: Memento) -> list[str]:
    return list(store.export())


# ------------------------------------------------------------------ remember / get / dedup


def test_remember_then_get_returns_every_field(mem: Memento) -> None:
    expires = datetime(2999, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    memory_id = mem.remember(
        "Ann prefers MariaDB over Postgres for the billing service",
        scope=ANN,
        type="semantic",
        title="Database preference",
        data={"db": "mariadb", "versions": [10, 11], "nested": {"ok": True}},
        source="tool",
        privacy=Privacy.TEAM,
        importance=0.8,
        pinned=True,
        tags=["tech:mariadb", "team:billing"],
        hotwords=["MariaDB", "마리아DB"],
        expires_at=expires,
        origin_trace={"messages": ["m1", "m2"]},
    )
    item = mem.get(memory_id)
    assert item.id == memory_id
    assert item.content == "Ann prefers MariaDB over Postgres for the billing service"
    assert item.type is MemoryType.SEMANTIC
    assert item.title == "Database preference"
    assert item.data == {"db": "mariadb", "versions": [10, 11], "nested": {"ok": True}}
    assert item.source == "tool"
    assert item.scope == ANN
    assert item.privacy is Privacy.TEAM
    assert item.importance == 0.8
    assert item.pinned is True
    assert item.tags == ("tech:mariadb", "team:billing")
    assert item.hotwords == ("MariaDB", "마리아DB")
    assert item.expires_at == expires
    assert item.origin_trace == {"messages": ["m1", "m2"]}
    assert item.access_count == 0
    assert item.deleted_at is None
    assert item.created_at.tzinfo is not None


def test_remember_defaults(mem: Memento) -> None:
    item = mem.get(mem.remember("A plain memory"))
    assert item.type is MemoryType.EPISODIC
    assert item.privacy is Privacy.PRIVATE
    assert item.scope == Scope()
    assert (item.importance, item.pinned, item.tags, item.data) == (0.5, False, (), None)


def test_identical_content_in_the_same_scope_is_stored_once(mem: Memento) -> None:
    first = mem.remember("The standup is at 9:30", scope=ANN, importance=0.2)
    again = mem.remember("The standup is at 9:30", scope=ANN, importance=0.9, tags=["x"])
    assert again == first
    assert mem.stats().memories == 1
    item = mem.get(first)
    assert (item.importance, item.tags) == (0.2, ()), "a repeat must change nothing"


def test_dedup_ignores_surrounding_whitespace_and_unicode_normal_form(mem: Memento) -> None:
    composed = unicodedata.normalize("NFC", "Café in Hà Nội")
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    first = mem.remember(composed, scope=ANN)
    assert mem.remember(decomposed, scope=ANN) == first
    assert mem.remember(f"  {composed}\n", scope=ANN) == first
    assert mem.stats().memories == 1


def test_identical_content_in_another_scope_is_another_memory(mem: Memento) -> None:
    ann_id = mem.remember("I parked on level 3", scope=ANN)
    ben_id = mem.remember("I parked on level 3", scope=BEN)
    other_session = mem.remember("I parked on level 3", scope=ANN.with_session("s2"))
    assert len({ann_id, ben_id, other_session}) == 3
    assert mem.get(ann_id).scope == ANN
    assert mem.get(ben_id).scope == BEN
    assert mem.stats().memories == 3


def test_remember_many_returns_ids_in_order_and_reports_progress(mem: Memento) -> None:
    texts = [f"Fact number {n}: the {word} is on shelf {n}" for n, word in
             enumerate(["atlas", "globe", "compass", "sextant", "telescope"])]  # fmt: skip
    progress: list[int] = []
    threads: set[threading.Thread] = set()

    def advance(done: int) -> None:
        progress.append(done)
        threads.add(threading.current_thread())

    ids = mem.remember_many(
        [MemoryDraft(text, scope=ANN, tags=[f"n:{n}"]) for n, text in enumerate(texts)],
        batch_size=2,
        on_progress=advance,
    )
    assert len(ids) == len(set(ids)) == 5
    assert [mem.get(i).content for i in ids] == texts
    assert [mem.get(i).tags for i in ids] == [(f"n:{n}",) for n in range(5)]
    assert progress == [2, 2, 1]
    assert threads == {threading.current_thread()}  # writes run in a worker; progress here
    assert mem.remember(texts[3], scope=ANN) == ids[3]


def test_remember_many_with_a_repeated_draft_stores_it_once(mem: Memento) -> None:
    ids = mem.remember_many(
        [
            MemoryDraft("same", scope=ANN),
            MemoryDraft("other", scope=ANN),
            MemoryDraft("same", scope=ANN),
        ]
    )
    assert ids[0] == ids[2] != ids[1]
    assert mem.stats().memories == 2


def test_remember_many_of_nothing_stores_nothing(mem: Memento) -> None:
    assert mem.remember_many([]) == []
    assert mem.stats().memories == 0


def test_caller_set_created_at_is_kept_to_the_microsecond(mem: Memento) -> None:
    aware = datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=timezone(timedelta(hours=9)))
    naive = datetime(2020, 1, 1, 12, 0, 0, 999999)
    first = mem.get(mem.remember("imported from the old chat log", created_at=aware))
    second = mem.get(mem.remember("another imported line", created_at=naive))
    assert first.created_at == aware
    assert first.created_at.utcoffset() == timedelta(0), "times come back in UTC"
    assert second.created_at == naive.replace(tzinfo=timezone.utc), "naive times are UTC"
    assert [i.id for i in mem.items()] == [second.id, first.id], "items() is oldest first"


# ----------------------------------------------------------------- pin / forget / restore


def test_pin_and_unpin(mem: Memento) -> None:
    memory_id = mem.remember("Never forget: the server password rotates monthly")
    pinned = mem.pin(memory_id)
    assert pinned.pinned is True
    assert mem.get(memory_id).pinned is True
    unpinned = mem.unpin(memory_id)
    assert unpinned.pinned is False
    assert mem.get(memory_id).pinned is False


def test_an_expired_memory_is_hidden_unless_pinned(mem: Memento) -> None:
    past = datetime.now(timezone.utc) - timedelta(days=1)
    expired = mem.remember("The sale ended yesterday", scope=ANN, expires_at=past)
    with pytest.raises(MemoryNotFound):
        mem.get(expired)
    assert mem.recall("sale ended", scope=ANN) == []
    mem.pin(expired)
    assert mem.get(expired).content == "The sale ended yesterday"
    assert [r.item.id for r in mem.recall("sale ended", scope=ANN)] == [expired]


def test_soft_forget_hides_and_restore_brings_back(mem: Memento) -> None:
    keep = mem.remember("The office plant is a fern", scope=ANN)
    gone = mem.remember("The office plant needs water on Mondays", scope=ANN)
    mem.forget(gone)

    with pytest.raises(MemoryNotFound):
        mem.get(gone)
    assert mem.get(gone, include_deleted=True).deleted_at is not None
    assert [r.item.id for r in mem.recall("office plant water", scope=ANN)] == [keep]
    assert [i.id for i in mem.items(include_deleted=False)] == [keep]
    assert mem.stats().memories == 1
    assert mem.stats().deleted == 1

    restored = mem.restore(gone)
    assert restored.deleted_at is None
    assert mem.get(gone).content == "The office plant needs water on Mondays"
    found = [r.item.id for r in mem.recall("office plant water", scope=ANN)]
    assert set(found) == {keep, gone}
    assert mem.stats().deleted == 0


def test_remembering_a_soft_forgotten_memory_again_restores_it(mem: Memento) -> None:
    memory_id = mem.remember("Lunch is at noon")
    mem.forget(memory_id)
    assert mem.remember("Lunch is at noon") == memory_id
    assert mem.get(memory_id).deleted_at is None


def test_hard_forget_erases_the_memory_its_links_and_its_feedback(mem: Memento) -> None:
    a = mem.remember("The deploy failed because the disk was full", scope=ANN)
    b = mem.remember("We added disk alerts to the monitoring", scope=ANN)
    c = mem.remember("Disk alerts page the on-call engineer", scope=ANN)
    mem.link(a, "cause_of", b)
    mem.link(c, LinkType.CONTRADICTS, a)  # (derived_from would erase c too)
    mem.link(b, LinkType.CAUSE_OF, c)
    mem.feedback(a, "helpful")
    mem.feedback(a, FeedbackKind.USED)
    mem.feedback(b, "used")

    mem.forget(a, hard=True)

    with pytest.raises(MemoryNotFound):
        mem.get(a, include_deleted=True)
    assert mem.feedback_events(a) == []
    assert [(x.source_id, x.target_id) for x in mem.links(b)] == [(b, c)]
    assert [(x.source_id, x.target_id) for x in mem.links(c)] == [(b, c)]
    assert [e.memory_id for e in mem.feedback_events(b)] == [b]
    stats = mem.stats()
    assert (stats.memories, stats.deleted, stats.links, stats.feedback_events) == (2, 0, 1, 1)
    assert not any(a in line for line in export(mem)), "an export must no longer hold it"
    assert a not in [r.item.id for r in mem.recall("deploy failed disk full", scope=ANN)]
    with pytest.raises(MemoryNotFound):
        mem.restore(a)


def test_hard_forget_of_a_soft_forgotten_memory_erases_it(mem: Memento) -> None:
    memory_id = mem.remember("temporary")
    mem.forget(memory_id)
    mem.forget(memory_id, hard=True)
    with pytest.raises(MemoryNotFound):
        mem.get(memory_id, include_deleted=True)
    assert mem.stats().deleted == 0


def test_hard_forget_then_remember_again_stores_it_fresh(mem: Memento) -> None:
    memory_id = mem.remember("Ephemeral thought about kites", scope=ANN)
    mem.forget(memory_id, hard=True)
    assert mem.remember("Ephemeral thought about kites", scope=ANN) == memory_id
    assert [r.item.id for r in mem.recall("kites", scope=ANN)] == [memory_id]


# ------------------------------------------------------------------- links and feedback


def test_links_in_both_directions_oldest_first_and_idempotent(mem: Memento) -> None:
    a = mem.remember("Episode: the build broke on Tuesday")
    b = mem.remember("Fact: builds break when the cache is stale")
    c = mem.remember("Fact: clear the cache before release builds")
    first = mem.link(b, "derived_from", a, note="from the Tuesday incident")
    mem.link(c, LinkType.DERIVED_FROM, b)
    again = mem.link(b, "derived_from", a, note="from the Tuesday incident")

    assert (first.source_id, first.type, first.target_id) == (b, LinkType.DERIVED_FROM, a)
    assert again.note == "from the Tuesday incident"
    links_of_b = mem.links(b)
    assert [(x.source_id, x.type, x.target_id) for x in links_of_b] == [
        (b, LinkType.DERIVED_FROM, a),
        (c, LinkType.DERIVED_FROM, b),
    ]
    assert links_of_b[0].note == "from the Tuesday incident"
    assert [(x.source_id, x.target_id) for x in mem.links(a)] == [(b, a)]
    assert mem.stats().links == 2
    assert mem.links("no-such-memory") == []


def test_different_link_types_between_the_same_pair_are_different_links(mem: Memento) -> None:
    a = mem.remember("Coffee helps me focus")
    b = mem.remember("Coffee makes me jittery")
    mem.link(a, "contradicts", b)
    mem.link(a, "duplicates", b)
    assert {x.type for x in mem.links(a)} == {LinkType.CONTRADICTS, LinkType.DUPLICATES}


def test_a_memory_cannot_link_to_itself(mem: Memento) -> None:
    a = mem.remember("Self-reference")
    with pytest.raises(InvalidInput, match="itself"):
        mem.link(a, "duplicates", a)
    assert mem.links(a) == []


def test_feedback_is_recorded_and_counted(mem: Memento) -> None:
    memory_id = mem.remember("Use ruff for linting")
    other = mem.remember("Use mypy for types")
    first = mem.feedback(memory_id, "helpful", note="saved me time")
    mem.feedback(memory_id, FeedbackKind.HELPFUL, score=0.5)
    mem.feedback(memory_id, "not_helpful")
    mem.feedback(other, "used")

    assert (first.memory_id, first.kind, first.score, first.note) == (
        memory_id,
        FeedbackKind.HELPFUL,
        1.0,
        "saved me time",
    )
    events = mem.feedback_events(memory_id)
    assert [e.kind for e in events] == [
        FeedbackKind.HELPFUL,
        FeedbackKind.HELPFUL,
        FeedbackKind.NOT_HELPFUL,
    ]
    assert [e.score for e in events] == [1.0, 0.5, 1.0]
    assert events[0].at <= events[1].at <= events[2].at
    item = mem.get(memory_id)
    assert item.feedback == {"helpful": 2, "not_helpful": 1}
    assert item.last_accessed_at is not None
    assert mem.get(other).feedback == {"used": 1}
    assert mem.stats().feedback_events == 4


# ------------------------------------------------------------------------------- stats


def test_stats_counts_what_is_stored(mem: Memento) -> None:
    empty = mem.stats()
    assert (empty.memories, empty.deleted, empty.users, empty.links) == (0, 0, 0, 0)
    assert (empty.embedder, empty.dimension) == ("all-MiniLM-L6-v2", 384)

    a = mem.remember("a fact", scope=ANN, type="semantic", privacy="team")
    mem.remember("an episode", scope=ANN)
    mem.remember("a how-to", scope=BEN, type="procedural", privacy="public")
    mem.remember("nobody's", type="working")
    gone = mem.remember("forgotten", scope=Scope(user_id="cat"))
    mem.forget(gone)
    mem.link(a, "cause_of", gone)
    mem.feedback(a, "used")

    stats = mem.stats()
    assert stats.memories == 4
    assert stats.deleted == 1
    assert dict(stats.by_type) == {"episodic": 1, "procedural": 1, "semantic": 1, "working": 1}
    assert dict(stats.by_privacy) == {"private": 2, "public": 1, "team": 1}
    assert stats.users == 2, "live memories of ann and ben; cat's only memory is forgotten"
    assert (stats.links, stats.feedback_events) == (1, 1)
    assert stats.location == mem.location


# -------------------------------------------------------------------- reopening a store


def test_reopening_a_store_keeps_everything(store_factory: StoreFactory) -> None:
    with store_factory.open() as store:
        a = store.remember("도손의 해안 마을에서 휴가를 보냈다", scope=ANN, tags=["trip"])
        b = store.remember("The vacation photos are on the NAS", scope=ANN, pinned=True)
        gone = store.remember("This one was forgotten", scope=ANN)
        store.forget(gone)
        store.link(b, "derived_from", a)
        store.feedback(a, "helpful")
        before = export(store)

    with store_factory.open() as reopened:
        assert export(reopened) == before
        assert reopened.get(b).pinned is True
        with pytest.raises(MemoryNotFound):
            reopened.get(gone)
        # The keyword index is rebuilt from the store: BM25 still finds a word inside Korean.
        top = reopened.recall("도손", scope=ANN, limit=1)[0]
        assert top.item.id == a
        assert "도손" in top.reason.matched_terms
        assert reopened.remember("A memory after reopening", scope=ANN) not in {a, b, gone}
        assert reopened.stats().memories == 3


def test_stores_with_different_locations_do_not_share_data(store_factory: StoreFactory) -> None:
    with store_factory.open("one") as one, store_factory.open("two") as two:
        one.remember("Only in store one", scope=ANN)
        assert two.stats().memories == 0
        assert two.recall("store one", scope=ANN) == []


# --------------------------------------------------------------------------- embedders


def test_the_store_records_its_embedder(store_factory: StoreFactory) -> None:
    with store_factory.open() as store:
        memory_id = store.remember("Built with MiniLM")
        before = export(store)

    wrong_dimension = TinyEmbedder()
    with pytest.raises(EmbedderMismatch, match="all-MiniLM-L6-v2") as caught:
        store_factory.open(embedder=wrong_dimension)
    assert "tiny-random-8" in str(caught.value) and "384" in str(caught.value)

    same_name_other_dimension = TinyEmbedder(name="all-MiniLM-L6-v2", dimension=8)
    with pytest.raises(EmbedderMismatch, match="8 dimensions"):
        store_factory.open(embedder=same_name_other_dimension)

    same_dimension_other_name = TinyEmbedder(name="another-384-model", dimension=384)
    with pytest.raises(EmbedderMismatch, match="another-384-model"):
        store_factory.open(embedder=same_dimension_other_name)

    with store_factory.open() as store:
        assert export(store) == before, "a refused open must leave the store untouched"
        assert store.get(memory_id).content == "Built with MiniLM"


def test_a_store_built_by_a_custom_embedder_works_and_refuses_the_default(
    store_factory: StoreFactory,
) -> None:
    tiny = TinyEmbedder()
    with store_factory.open("tiny", embedder=tiny) as store:
        memory_id = store.remember("Embedded with eight random dimensions", scope=ANN)
        assert (store.stats().embedder, store.stats().dimension) == ("tiny-random-8", 8)
        found = store.recall("eight random dimensions", scope=ANN)
        assert [r.item.id for r in found] == [memory_id]
    with pytest.raises(EmbedderMismatch, match="tiny-random-8"):
        store_factory.open("tiny")
    with store_factory.open("tiny", embedder=TinyEmbedder()) as store:
        assert store.get(memory_id).content == "Embedded with eight random dimensions"


# ----------------------------------------------------------------- not a Memento store


def test_a_directory_holding_other_files_is_not_a_store(embedder: Embedder, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("my notes")
    with pytest.raises(NotAMementoStore, match="not empty"):
        Memento.open(tmp_path, embedder=embedder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "my notes"


def test_a_file_is_not_a_store(embedder: Embedder, tmp_path: Path) -> None:
    path = tmp_path / "memento.db"
    path.write_bytes(b"SQLite format 3\x00 but not really")
    with pytest.raises(NotAMementoStore, match="file"):
        Memento.open(path, embedder=embedder)
    assert path.read_bytes() == b"SQLite format 3\x00 but not really"


def test_a_chroma_directory_without_a_memento_store_is_refused(
    embedder: Embedder, tmp_path: Path
) -> None:
    import chromadb

    client = chromadb.PersistentClient(
        path=str(tmp_path), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    client.get_or_create_collection("someone_elses_data", embedding_function=None)
    with pytest.raises(NotAMementoStore, match="someone_elses_data"):
        Memento.open(tmp_path, embedder=embedder)
    assert [c.name for c in client.list_collections()] == ["someone_elses_data"]


def test_a_closed_store_says_so_and_reopening_finds_everything(
    store_factory: StoreFactory,
) -> None:
    mem = store_factory.open()
    kept = mem.remember("the ferry leaves at nine", scope=ANN)
    mem.close()
    calls = [
        lambda: mem.recall("ferry", scope=ANN),
        lambda: mem.remember("the ferry is late", scope=ANN),
        lambda: mem.get(kept),
        lambda: mem.preload(ANN),
        mem.stats,
    ]
    for call in calls:
        with pytest.raises(StoreUnavailable, match="was closed in this process"):
            call()
    with store_factory.open() as mem:
        assert [h.item.content for h in mem.recall("ferry", scope=ANN)] == [
            "the ferry leaves at nine"
        ]


def test_a_new_directory_becomes_a_store(embedder: Embedder, tmp_path: Path) -> None:
    path = tmp_path / "deep" / "new" / "store"
    with Memento.open(path, embedder=embedder) as store:
        store.remember("first memory")
    assert path.is_dir()
    with Memento.open(path, embedder=embedder) as store:
        assert store.stats().memories == 1


# ------------------------------------------------------------------------- async twins


async def test_async_twins_work(mem: Memento) -> None:
    a = await mem.aremember("Async memory about the harbour at Do Son", scope=ANN)
    b, c = await mem.aremember_many(
        [MemoryDraft("Async batch one", scope=ANN), MemoryDraft("Async batch two", scope=ANN)]
    )
    assert (await mem.aget(a)).content == "Async memory about the harbour at Do Son"
    recalled = await mem.arecall("harbour Do Son", scope=ANN, limit=1)
    assert [r.item.id for r in recalled] == [a]
    assert (await mem.apin(b)).pinned is True
    assert (await mem.aunpin(b)).pinned is False
    link = await mem.alink(b, "cause_of", c)
    assert [x.target_id for x in await mem.alinks(b)] == [link.target_id] == [c]
    event = await mem.afeedback(a, "helpful")
    assert await mem.afeedback_events(a) == [event]
    await mem.aforget(c)
    with pytest.raises(MemoryNotFound):
        await mem.aget(c)
    assert (await mem.arestore(c)).deleted_at is None
    assert {i.id for i in await mem.aitems()} == {a, b, c}
    assert (await mem.astats()).memories == 3
    lines = await mem.aexport()
    assert lines == export(mem)
    await mem.aforget(c, hard=True)
    assert (await mem.astats()).memories == 2


async def test_async_twins_import(store_factory: StoreFactory) -> None:
    with store_factory.open("source") as source, store_factory.open("copy") as copy:
        source.remember("Carried over asynchronously")
        lines = await source.aexport()
        counts = await copy.aimport_ndjson(lines)
        assert counts == {"memories": 1, "links": 0, "feedback": 0}
        assert await copy.aexport() == lines


def test_every_async_twin_mirrors_its_sync_method() -> None:
    twins = [name for name in dir(Memento) if name.startswith("a") and hasattr(Memento, name[1:])]
    assert len(twins) >= 15
    for name in twins:
        sync, twin = getattr(Memento, name[1:]), getattr(Memento, name)
        assert inspect.iscoroutinefunction(twin), name
        if name != "aexport":  # export yields lines; its twin returns them as a list
            assert twin.__doc__ == sync.__doc__, name
            assert inspect.signature(twin) == inspect.signature(sync), name
