"""Large partitions searched where they live: past ``partition_load_limit`` a partition is copied
into a collection of its own by the first process that loads it, and later processes search it
there instead of loading it. Visibility holds on that path, a partition crossing the limit
either way keeps its memories findable, and other processes' writes show within the feed's
freshness bound."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memento_core import Embedder, InvalidInput, Memento, MemoryDraft, Scope
from memento_core._engine import FRESHNESS

if TYPE_CHECKING:
    from conftest import StoreFactory

LIMIT = 12
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
    "the library book about volcanoes is due on Friday",
]
QUERIES = ["budget review", "soup with paprika", "cold cache deploys", "volcano book due"]


def _public(count: int, author: Scope = CAROL, tag: str = "public") -> list[MemoryDraft]:
    return [
        MemoryDraft(
            content=f"{tag} note {n}: {TOPICS[n % len(TOPICS)]}", scope=author, privacy="public"
        )
        for n in range(count)
    ]


def _ids(mem: Memento, query: str, viewer: Scope, limit: int = 10) -> list[str]:
    return [hit.item.id for hit in mem.recall(query, scope=viewer, limit=limit)]


def _relevance(mem: Memento, viewer: Scope) -> dict[str, dict[str, tuple[float, float]]]:
    """Each query's hits with their relevance parts (dense, keyword): the whole score also
    holds recency, which moves with the clock."""
    return {
        query: {
            hit.item.id: (round(hit.reason.dense, 4), round(hit.reason.keyword, 4))
            for hit in mem.recall(query, scope=viewer, limit=60)
        }
        for query in QUERIES
    }


def _open(factory: StoreFactory, **options: object) -> Memento:
    options.setdefault("partition_load_limit", LIMIT)
    return factory.open(**options)


def test_a_partition_past_the_limit_is_searched_in_the_store_by_later_processes(
    store_factory: StoreFactory,
) -> None:
    with _open(store_factory) as mem:
        public = mem.remember_many(_public(40))
        mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
        first = _relevance(mem, ALICE)  # loads the public partition, and mirrors it
        assert mem.index_status().searched_in_store == 1
    with _open(store_factory) as mem:
        again = _relevance(mem, ALICE)
        status = mem.index_status()
        assert status.searched_in_store == 1
        assert status.memories == 1  # alice's own: the 40 public ones were not loaded
        assert status.partitions == 2  # alice's and apollo's, not the public one
        assert again == first
        assert set(_ids(mem, "note", ALICE, limit=60)) >= set(public)
    with _open(store_factory) as mem:
        mem.preload(ALICE)  # loads it whole, and recall searches it here
        assert mem.index_status().memories == 41
        assert _relevance(mem, ALICE) == first


def test_the_keyword_side_scores_what_a_mirror_finds(store_factory: StoreFactory) -> None:
    with _open(store_factory) as mem:
        mem.remember_many(_public(30))
        _ids(mem, "warm up", BOB)
    with _open(store_factory) as mem:
        hits = mem.recall("smoked paprika lentil soup", scope=BOB, limit=30)
        paprika = [hit for hit in hits if "paprika" in hit.item.content]
        assert len(paprika) == 4  # 30 notes over 7 topics
        assert all(hit.reason.keyword == 1.0 for hit in paprika)  # the best keyword score
        assert all(hit.reason.keyword == 0.0 for hit in hits if hit not in paprika)
        assert all("paprika" in hit.reason.matched_terms for hit in paprika)


def test_no_viewer_recalls_what_it_may_not_see_through_a_mirror(
    store_factory: StoreFactory,
) -> None:
    rng = random.Random(7)
    users = [f"u{n}" for n in range(6)]
    projects = ["red", "blue"]
    drafts = []
    for n in range(150):
        user = rng.choice(users)
        project = rng.choice([*projects, ""])
        privacy = rng.choice(["private", "team", "public"] if project else ["private", "public"])
        drafts.append(
            MemoryDraft(
                content=f"{user} {privacy} {project} memo {n}: {TOPICS[n % len(TOPICS)]}",
                scope=Scope(user_id=user, project_id=project or None),
                privacy=privacy,
            )
        )
    viewers = [Scope(user_id=u, project_id=p) for u in [*users, "stranger"] for p in projects]
    viewers += [Scope(user_id=u) for u in users]

    def may_see(viewer: Scope, draft: MemoryDraft) -> bool:
        if draft.privacy == "public":
            return True
        assert draft.scope is not None
        if draft.privacy == "team" and viewer.project_id == draft.scope.project_id:
            return viewer.project_id is not None
        return draft.scope.user_id == viewer.user_id

    with _open(store_factory, partition_load_limit=8) as mem:
        ids = mem.remember_many(drafts)
        by_id = dict(zip(ids, drafts))
        for viewer in viewers:  # loads, and mirrors every partition past 8
            _ids(mem, "memo", viewer)
        assert mem.index_status().searched_in_store >= 6
    with _open(store_factory, partition_load_limit=8) as mem:
        for viewer in viewers:
            for query in [*QUERIES, "memo"]:
                for memory_id in _ids(mem, query, viewer, limit=50):
                    assert may_see(viewer, by_id[memory_id]), (viewer, by_id[memory_id])
            seen = set(_ids(mem, "memo", viewer, limit=200))
            assert seen == {i for i, d in by_id.items() if may_see(viewer, d)}


def test_a_memory_made_private_leaves_the_public_mirror(store_factory: StoreFactory) -> None:
    with _open(store_factory) as mem:
        public = mem.remember_many(_public(30))
        _ids(mem, "warm up", ALICE)
    with _open(store_factory) as mem:
        mem.update(public[0], privacy="private", scope=CAROL)
        assert public[0] not in _ids(mem, "note", ALICE, limit=100)
        assert public[0] in _ids(mem, "note", CAROL, limit=100)
    with _open(store_factory) as mem:
        assert public[0] not in _ids(mem, "note", ALICE, limit=100)
        assert public[0] in _ids(mem, "note", CAROL, limit=100)


def test_a_partition_crossing_the_limit_either_way_keeps_its_memories_findable(
    store_factory: StoreFactory,
) -> None:
    with _open(store_factory) as mem:
        small = mem.remember_many(_public(LIMIT - 2))
        assert set(_ids(mem, "note", ALICE, limit=50)) == set(small)  # loaded: small
        grown = small + mem.remember_many(_public(20, tag="later"))
        assert set(_ids(mem, "note", ALICE, limit=50)) == set(grown)
    with _open(store_factory) as mem:
        assert set(_ids(mem, "note", ALICE, limit=50)) == set(grown)  # loaded, and mirrored
        assert mem.index_status().searched_in_store == 1
    with _open(store_factory) as mem:
        assert set(_ids(mem, "note", ALICE, limit=50)) == set(grown)  # searched in the store
        assert mem.index_status().memories == 0
        more = mem.remember_many(_public(5, tag="newest"))
        assert set(_ids(mem, "note", ALICE, limit=50)) == set(grown + more)
        for memory_id in grown[:-3]:
            mem.forget(memory_id, hard=True, scope=CAROL)
        kept = grown[-3:] + more
        assert set(_ids(mem, "note", ALICE, limit=50)) == set(kept)
    with _open(store_factory) as mem:
        assert set(_ids(mem, "note", ALICE, limit=50)) == set(kept)


def test_erasing_a_user_drops_the_mirror_of_their_memories(store_factory: StoreFactory) -> None:
    heavy = Scope(user_id="heavy")
    with _open(store_factory) as mem:
        mem.remember_many(
            [
                MemoryDraft(content=f"heavy's diary {n}: {t}", scope=heavy)
                for n, t in enumerate(TOPICS * 3)
            ]
        )
        mem.remember_many(_public(3))
        _ids(mem, "diary", heavy)
        assert mem.index_status().searched_in_store == 1
    with _open(store_factory) as mem:
        assert len(_ids(mem, "diary", heavy, limit=50)) == len(TOPICS) * 3 + 3  # and public
        mem.erase_user("heavy")
        assert mem.index_status().searched_in_store == 0
        assert len(_ids(mem, "diary", heavy, limit=50)) == 3  # the public ones alone
        assert len(_ids(mem, "note", ALICE)) == 3
    with _open(store_factory) as mem:
        assert len(_ids(mem, "diary", heavy, limit=50)) == 3


@pytest.mark.parametrize("limit", [0, -1, 2.5, "100", True])
def test_a_bad_load_limit_is_refused_and_the_store_is_unharmed(
    tmp_path: Path, embedder: Embedder, limit: object
) -> None:
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        kept = mem.remember("the harbour opens at dawn", scope=ALICE)
    with pytest.raises(InvalidInput, match="partition_load_limit"):
        Memento.open(tmp_path / "store", embedder=embedder, partition_load_limit=limit)  # type: ignore[arg-type]
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        assert _ids(mem, "harbour", ALICE) == [kept]


WRITER = textwrap.dedent(
    """
    import sys
    from memento_core import Memento, Scope
    where, prefix, text = sys.argv[1:]
    place = {"url": where} if "://" in where else {"path": where}
    with Memento.open(**place, collection_prefix=prefix, partition_load_limit=12) as mem:
        print(mem.remember(text, scope=Scope(user_id="carol"), privacy="public"))
    """
)


def _write_in_another_process(where: str, prefix: str, text: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", WRITER, where, prefix, text],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=True,
    ).stdout.split()[-1]


def test_another_process_writing_to_a_mirrored_partition_shows_within_the_freshness_bound(
    store_factory: StoreFactory,
) -> None:
    with _open(store_factory) as mem:
        mem.remember_many(_public(30))
        _ids(mem, "warm up", ALICE)  # mirrors the public partition
        prefix = mem.collection_prefix
        where = mem.location
    # An embedded store has one writer: this process reads, the other writes.
    reading = {"read_only": True} if store_factory.mode == "embedded" else {}
    with _open(store_factory, **reading) as mem:
        _ids(mem, "warm up", ALICE)
        assert mem.index_status().partitions == 2  # alice's and apollo's: public is not loaded
        # What was written before it began searching the mirror is found there: the reader
        # embedded none of the 30 memories the change feed still lists.
        assert mem.embedder.texts_embedded <= 1  # type: ignore[attr-defined]  # the query
        for text in [
            "the lighthouse keeper retires on the first of May",
            "the ferry timetable changes when the clocks go back",
        ]:
            written = _write_in_another_process(where, prefix, text)
            time.sleep(FRESHNESS)
            assert _ids(mem, text, ALICE, limit=3)[0] == written


def test_mirroring_every_large_partition_at_once(store_factory: StoreFactory) -> None:
    team = [
        MemoryDraft(content=f"apollo team memo {n}: {t}", scope=BOB, privacy="team")
        for n, t in enumerate(TOPICS * 3)
    ]
    # Written by a Memento without mirrors: every partition loaded, exact.
    with _open(store_factory, partition_load_limit=None) as mem:
        mem.remember_many(_public(20) + team)
        mem.remember("alice's own budget notes", scope=ALICE)
        exact = _relevance(mem, ALICE)
        assert mem.index_status().searched_in_store == 0
    with _open(store_factory) as mem:  # the first writable open mirrors them, in background
        copied: list[int] = []
        mirrored = mem.mirror_large_partitions(copied.append)  # waits for that, copies the rest
        assert mirrored == len(copied) and sum(copied) in (0, 20, 21, 41, 42, 62)
        assert mem.index_status().searched_in_store == 3  # public, bob's, apollo's
        assert mem.mirror_large_partitions() == 0  # nothing left to copy
    with _open(store_factory) as mem:
        assert _relevance(mem, ALICE) == exact
        assert mem.index_status().memories == 1  # alice's own; public and apollo's stay out


async def test_the_async_twin_mirrors_the_same(store_factory: StoreFactory) -> None:
    with _open(store_factory, partition_load_limit=None) as mem:
        await mem.aremember_many(_public(20))  # no mirror: no load limit
    with _open(store_factory) as mem:
        assert await mem.amirror_large_partitions() in (0, 1)  # or its open's background did
        assert mem.index_status().searched_in_store == 1


def test_the_cli_mirrors_the_large_partitions(tmp_path: Path, embedder: Embedder) -> None:
    from memento_core.cli import main

    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        mem.remember_many(_public(600))
    assert main(["mirror-partitions", "--path", str(tmp_path / "store")]) == 0
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        assert mem.index_status().searched_in_store == 1


def test_a_rare_word_in_a_large_partition_is_found_by_its_keyword(
    store_factory: StoreFactory,
) -> None:
    locker = "the spare key to the bike shed is kept under the qwzrtk stone"
    with _open(store_factory) as mem:
        mem.remember_many(_public(200))
        target = mem.remember(locker, scope=CAROL, privacy="public")
        mem.mirror_large_partitions()
    with _open(store_factory) as mem:
        hits = mem.recall("qwzrtk", scope=ALICE, limit=3)
        assert mem.index_status().memories == 0
        assert hits[0].item.id == target
        assert hits[0].reason.keyword == 1.0 and hits[0].reason.matched_terms == ("qwzrtk",)


def test_the_default_load_limit_searches_a_large_partition_in_the_store(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:  # the default limit, 500
        mem.remember_many(_public(520))
        own = mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
        _ids(mem, "warm up", ALICE)  # loads the public partition, and mirrors it
    with store_factory.open() as mem:
        assert _ids(mem, "budget review in the blue folder", ALICE, limit=1) == [own]
        hits = mem.recall("smoked paprika lentil soup", scope=ALICE, limit=5)
        assert "paprika" in hits[0].item.content and hits[0].reason.keyword == 1.0
        status = mem.index_status()
        assert status.searched_in_store == 1 and status.memories == 1  # alice's own


def test_without_a_load_limit_every_partition_is_loaded_and_searched_exactly(
    store_factory: StoreFactory,
) -> None:
    with _open(store_factory) as mem:
        mem.remember_many(_public(30))  # mirrored by the write that made it cross the limit
        mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
        assert mem.mirror_large_partitions() == 0
    with _open(store_factory) as mem:
        searched = _relevance(mem, ALICE)  # public is searched in its mirror
        assert mem.index_status().memories == 1
    with store_factory.open(partition_load_limit=None) as mem:  # every partition loaded
        exact = _relevance(mem, ALICE)
        assert exact == searched  # 30 memories: HNSW finds them all
        assert mem.index_status().memories == 31
        with pytest.raises(InvalidInput, match="partition_load_limit"):
            mem.mirror_large_partitions()
        for bad in (0, True, "5"):
            with pytest.raises(InvalidInput, match="limit must be"):
                mem.mirror_large_partitions(limit=bad)  # type: ignore[arg-type]
        assert mem.mirror_large_partitions(limit=10) == 0  # public is mirrored already
        assert _relevance(mem, ALICE) == exact


def _exact_and_searched(
    factory: StoreFactory, viewer: Scope, queries: list[str]
) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, dict[str, tuple[float, float]]]]:
    """Each query's relevant hits with their relevance parts (dense, keyword) in a process that
    searches the mirrored partitions in the store, and in one that loads them whole (exact).
    Compared within a thousandth for similarity (Chroma's and numpy's float32 sums differ
    in the fourth place), a hundredth for keyword scores: a memory reworded since the
    postings were folded is weighed with its former length estimated (``_postings``)."""

    def ranking(mem: Memento) -> dict[str, dict[str, tuple[float, float]]]:
        return {
            query: {
                hit.item.id: (hit.reason.dense, hit.reason.keyword)
                for hit in mem.recall(query, scope=viewer, limit=100)
                # The dense side takes the nearest 60 of ~70 memories: near that cut (cosines
                # about 0.3 here) HNSW may take another; the keyword side leaves out nothing
                if hit.reason.keyword > 0 or hit.reason.dense > 0.4
            }
            for query in queries
        }

    with _open(factory) as mem:
        searched = ranking(mem)
        assert mem.index_status().searched_in_store >= 1
    with _open(factory) as mem:
        mem.preload(viewer)
        exact = ranking(mem)
    return searched, exact


def _differences(
    searched: dict[str, dict[str, tuple[float, float]]],
    exact: dict[str, dict[str, tuple[float, float]]],
) -> list[tuple[str, str, tuple[float, float] | None, tuple[float, float] | None]]:
    """What the two disagree on: a hit one of them lacks, or relevance parts apart."""

    def apart(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
        return a is None or b is None or abs(a[0] - b[0]) > 1e-3 or abs(a[1] - b[1]) > 0.01

    return [
        (query, memory_id, searched[query].get(memory_id), exact[query].get(memory_id))
        for query in exact
        for memory_id in sorted(set(searched[query]) | set(exact[query]))
        if apart(searched[query].get(memory_id), exact[query].get(memory_id))
    ]


KEYWORD_QUERIES = [
    "budget review Thursday",
    "lentil soup paprika",
    "deploy pipeline cache",
    "volcanoes library Friday",
    "espresso descaling",
    "lighthouse keeper",
]


def test_keyword_ranking_in_a_mirror_is_exact_through_writes_rewordings_and_folds(
    store_factory: StoreFactory,
) -> None:
    """The mirror's postings hold the keyword side whole: a later process ranks exactly as
    one that loads the partition, with memories written after the mirror was copied (its
    tail), memories reworded, and once the tail is folded into the postings."""
    with _open(store_factory) as mem:
        originals = mem.remember_many(_public(40))
        mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
        _ids(mem, "warm up", ALICE)  # mirrors the public partition
        mem.remember_many(_public(25, tag="later"))  # the tail
        for n, memory_id in enumerate(originals[:6]):
            mem.update(memory_id, content=f"reworded {n}: the lighthouse keeper retires in May")
    searched, exact = _exact_and_searched(store_factory, ALICE, KEYWORD_QUERIES)
    assert _differences(searched, exact) == [], _differences(searched, exact)
    # The reworded ones match by their new words only (their old ones are no longer listed).
    lighthouse = {i for i, (_, keyword) in searched["lighthouse keeper"].items() if keyword}
    assert lighthouse == set(originals[:6])
    paprika = {i for i, (_, keyword) in searched["lentil soup paprika"].items() if keyword}
    assert paprika and not paprika & lighthouse
    with _open(store_factory) as mem:
        mem.mirror_large_partitions()  # folds the tail into the postings
        mem.remember_many(_public(5, tag="after the fold"))
    searched, exact = _exact_and_searched(store_factory, ALICE, KEYWORD_QUERIES)
    assert _differences(searched, exact) == [], _differences(searched, exact)


def test_a_tail_past_the_fold_size_is_folded_by_a_writing_process_and_stays_exact(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memento_core._storage import _postings

    monkeypatch.setattr(_postings, "FOLD_AT", 10)
    with _open(store_factory) as mem:
        mem.remember_many(_public(30))
        _ids(mem, "warm up", ALICE)
    with _open(store_factory) as mem:
        for n in range(4):
            mem.remember_many(_public(6, tag=f"batch {n}"))
            _ids(mem, "budget review", ALICE)  # a recall may start a fold in the background
    # Closed: the folds in flight finished. The tail is short again, and nothing was lost.
    with _open(store_factory) as mem:
        mirrors = mem._engine.store.mirrors
        assert all(mirrors.postings.tail_size(d) < 12 for d in mirrors.ready())
        assert len(_ids(mem, "note", ALICE, limit=60)) == 54
    searched, exact = _exact_and_searched(store_factory, ALICE, KEYWORD_QUERIES)
    assert _differences(searched, exact) == [], _differences(searched, exact)


def test_an_erased_memory_leaves_no_mention_in_the_mirror_postings(
    store_factory: StoreFactory,
) -> None:
    secret = "the safe combination is nine four seven zanzibar"
    with _open(store_factory) as mem:
        public = mem.remember_many(_public(30))
        target = mem.remember(secret, scope=CAROL, privacy="public")
        mem.mirror_large_partitions()
        later = mem.remember("zanzibar ferry timetable", scope=CAROL, privacy="public")
        # Reworded after the postings were written (they list it under its old words), and one
        # made private (it leaves the public partition), then all erased.
        mem.update(public[3], content="a reworded note about a rowing regatta")
        mem.update(public[4], privacy="private")
        erased = [target, public[3], public[4]]
        for memory_id in erased:
            mem.forget(memory_id, hard=True)
        prefix, client = mem.collection_prefix, mem._engine.store._chroma.client
        postings = client.get_collection(f"{prefix}_postings")
        stored = postings.get(include=["metadatas"])
        assert stored["ids"]  # the postings are there, and name none of them
        for memory_id in erased:
            assert not any(memory_id in record_id for record_id in stored["ids"])
            assert not any(memory_id in str(meta) for meta in stored["metadatas"])
    with _open(store_factory) as mem:
        found = _ids(mem, "zanzibar", ALICE, limit=5)
        assert found[0] == later and target not in found
        assert not set(_ids(mem, "note", ALICE, limit=60)) & set(erased)
    searched, exact = _exact_and_searched(store_factory, ALICE, ["zanzibar combination"])
    assert _differences(searched, exact) == [], _differences(searched, exact)


def test_a_mirror_copied_before_postings_is_searched_bounded_until_a_writer_writes_them(
    store_factory: StoreFactory,
) -> None:
    with _open(store_factory, partition_load_limit=None) as mem:
        mem.remember_many(_public(30))
        mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
        exact = _relevance(mem, ALICE)
    with _open(store_factory) as mem:
        mem.mirror_large_partitions()
        prefix, client = mem.collection_prefix, mem._engine.store._chroma.client
        client.delete_collection(f"{prefix}_postings")  # as if mirrored by an older Memento
    # May not write: never copies the partition while a user waits; searches it in the
    # store by a filtered query (its vectors), and says so.
    with _open(store_factory, read_only=True) as mem:
        hits = _ids(mem, "quarterly budget review", ALICE, limit=30)
        assert len(hits) == 30
        status = mem.index_status()
        assert status.memories == 1 and status.searched_by_filter == 1
    with _open(store_factory) as mem:  # a writer writes them, in the background at open
        mem.mirror_large_partitions()
        _ids(mem, "budget review", ALICE)
        assert mem.index_status().searched_by_filter == 0
    with _open(store_factory) as mem:
        assert _relevance(mem, ALICE) == exact
        assert mem.index_status().memories == 1  # alice's own: public is searched in the store
    with _open(store_factory) as mem:  # and mirror_large_partitions writes them too
        mem.mirror_large_partitions()  # the open's background pass, done
        client = mem._engine.store._chroma.client
        client.delete_collection(f"{prefix}_postings")
        mem._engine.store.mirrors.postings._records = None  # its handle names the old one
        assert mem.mirror_large_partitions() == 0  # nothing to copy; postings written
    with _open(store_factory) as mem:
        assert _relevance(mem, ALICE) == exact
        assert mem.index_status().memories == 1


def test_a_viewers_ranking_is_the_same_whatever_else_the_process_holds(
    store_factory: StoreFactory,
) -> None:
    """Each memory counts once in the keyword statistics: a teammate's team memories held
    here (their own partition loaded for their recall) and listed in the team partition
    searched in the store are not counted twice, nor are other users' memories counted."""
    bob = Scope(user_id="bob", project_id="apollo")
    erin = Scope(user_id="erin", project_id="apollo")
    drafts = [
        MemoryDraft(
            content=f"{who.user_id} team {n}: {TOPICS[n % len(TOPICS)]}", scope=who, privacy="team"
        )
        for who, count in ((ALICE, 3), (bob, 8), (erin, 8))
        for n in range(count)
    ]
    drafts += [
        MemoryDraft(content=f"bob's own budget review draft {n}", scope=bob) for n in range(2)
    ]
    drafts += [MemoryDraft(content=f"carol zephyr soup {n}", scope=CAROL) for n in range(4)]
    with _open(store_factory) as mem:
        mem.remember_many([*drafts, *_public(30)])  # mirrors what crossed the limit
        assert mem.index_status().searched_in_store == 2  # apollo's team partition, public
    # Two topics a query: how a hit on one ranks against a hit on the other (the keyword
    # part is divided by the best) turns on both terms' document frequencies.
    queries = ["budget soup", "cache volcano", "hiking espresso", "paprika deploy"]

    def keyword_parts(mem: Memento) -> dict[str, dict[str, float]]:
        return {
            query: {h.item.id: round(h.reason.keyword, 4) for h in mem.recall(query, scope=ALICE,
                                                                            limit=60)}
            for query in queries
        }  # fmt: skip

    with _open(store_factory) as mem:
        alone = keyword_parts(mem)
    with _open(store_factory) as mem:
        for other in (bob, CAROL, erin):  # their own partitions loaded here
            _ids(mem, "warm up", other)
        assert mem.index_status().memories > 5  # more than alice's own
        beside_others = keyword_parts(mem)
    assert beside_others == alone
    assert any(0 < v < 1 for hits in alone.values() for v in hits.values())


@pytest.mark.parametrize("batched", [True, False])
def test_a_store_written_in_bulk_serves_its_first_recall_without_copying_a_partition(
    store_factory: StoreFactory, batched: bool
) -> None:
    """The writer mirrors a partition crossing the limit itself (a batch write before it
    returns, a single write in its background, done by the time it closes), though it never
    recalls: the first recall of a fresh process finds the mirrors there, and copies
    nothing while it waits."""
    with _open(store_factory) as mem:
        if batched:
            mem.remember_many(_public(40))
        else:
            for draft in _public(20):
                mem.remember(draft.content, scope=draft.scope, privacy="public")
        mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
    reading = {"read_only": True} if store_factory.mode == "embedded" else {}
    with _open(store_factory, **reading) as mem:
        assert mem.index_status().searched_in_store == 1  # before any recall
        hits = mem.recall("budget review", scope=ALICE, limit=5)
        assert any("alice's budget review" in hit.item.content for hit in hits)
        assert any("public note" in hit.item.content for hit in hits)
        status = mem.index_status()
        assert status.memories == 1 and status.loads == 2  # alice's and apollo's, small
        assert status.searched_in_store == 1 and status.searched_by_filter == 0


async def test_warming_queries_every_mirror_once(store_factory: StoreFactory) -> None:
    """``warm`` has the store load each mirror's index (a server does it on a first query);
    a store opened on a server does it in the background too."""
    with _open(store_factory) as mem:
        mem.remember_many(_public(20))
    with _open(store_factory) as mem:
        assert mem.warm() == 1
        assert await mem.awarm() == 1
        assert mem.index_status().memories == 0  # warming loads nothing into this process
    with _open(store_factory, partition_load_limit=None) as mem:
        assert mem.warm() == 0  # nothing is searched in the store


def test_incremental_folds_stay_exact_through_rewordings_erasures_and_a_compaction(
    store_factory: StoreFactory,
) -> None:
    """A fold writes only the terms its tail touched, on top of the generations before; ten
    folds in a row (past ``CHAIN_AT_MOST``, so one rewrites every term) with memories
    reworded, erased and made private between them rank exactly as a process that loads the
    partition, and the postings hold only the terms written last."""
    with _open(store_factory) as mem:
        notes = mem.remember_many(_public(30))
        mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
        for n in range(10):
            mem.remember_many(_public(3, tag=f"round {n}"))
            mem.update(notes[n], content=f"reworded {n}: the lighthouse keeper retires in May")
            if n % 3 == 0:
                mem.forget(notes[10 + n], hard=True)
            if n % 3 == 1:
                mem.update(notes[10 + n], privacy="private")
            mem.mirror_large_partitions()  # folds the tail
    searched, exact = _exact_and_searched(store_factory, ALICE, KEYWORD_QUERIES)
    assert _differences(searched, exact) == [], _differences(searched, exact)
    lighthouse = {i for i, (_, keyword) in searched["lighthouse keeper"].items() if keyword}
    assert lighthouse == set(notes[:10])


def test_the_writer_of_a_large_partition_searches_it_in_memory_and_others_in_its_mirror(
    store_factory: StoreFactory,
) -> None:
    """A process that wrote a partition from empty holds all of it: past the load limit it
    keeps searching it in memory, exactly, reading nothing back, while the mirror it made
    serves a fresh process, which copies nothing; both rank alike."""
    with _open(store_factory, track_usage=False) as mem:
        public = mem.remember_many(_public(40))
        own = mem.remember("alice's budget review notes are in the blue folder", scope=ALICE)
        status = mem.index_status()
        assert status.searched_in_store == 1  # mirrored by this writer, for the others
        assert status.held_past_limit == 1 and status.memories == 41  # and held here
        assert status.loads == 0  # nothing was read back
        held = _relevance(mem, ALICE)
        top = _ids(mem, "where are alice's budget review notes", ALICE, limit=1)
        assert set(_ids(mem, "note", ALICE, limit=60)) == {*public, own}
        status = mem.index_status()
        assert status.held_past_limit == 1 and status.memories == 41
        assert status.loads == 1  # apollo's team partition, empty: public was not read
    reading = {"read_only": True} if store_factory.mode == "embedded" else {}
    with _open(store_factory, track_usage=False, **reading) as mem:
        assert _relevance(mem, ALICE) == held
        assert _ids(mem, "where are alice's budget review notes", ALICE, limit=1) == top == [own]
        status = mem.index_status()
        assert status.memories == 1 and status.held_past_limit == 0  # public was not copied
        assert status.loads == 2 and status.searched_by_filter == 0  # alice's and apollo's


def test_a_held_partition_grown_past_the_hold_bound_is_searched_in_its_mirror(
    store_factory: StoreFactory,
) -> None:
    """Holding is bounded (``HOLD_FACTOR`` times the load limit: 40 memories here): past it,
    the writer drops the partition and searches its mirror; a partition a process preloaded
    stays loaded however it grows. Nothing is lost on either path."""
    from memento_core._partitions import HOLD_FACTOR

    limit = 2
    bound = HOLD_FACTOR * limit
    with _open(store_factory, partition_load_limit=limit) as mem:
        first = mem.remember_many(_public(bound - 5))
        assert mem.index_status().held_past_limit == 1
        assert mem.index_status().memories == bound - 5
        grown = first + mem.remember_many(_public(10, tag="later"))
        status = mem.index_status()
        assert status.held_past_limit == 0 and status.memories == 0
        assert set(_ids(mem, "note", CAROL, limit=100)) == set(grown)
        assert mem.index_status().memories == 0  # searched in its mirror
    with _open(store_factory, partition_load_limit=limit) as mem:
        mem.preload(CAROL)
        more = grown + mem.remember_many(_public(5, tag="newest"))
        assert set(_ids(mem, "note", CAROL, limit=100)) == set(more)
        status = mem.index_status()
        assert status.memories == len(more) and status.held_past_limit == 1


def test_a_partition_loaded_before_it_crossed_the_limit_stays_searched_in_memory(
    store_factory: StoreFactory,
) -> None:
    """A process that loaded a small partition, then wrote it past the limit, holds all of
    it: it keeps it (and mirrors it for the others, who search it there)."""
    with _open(store_factory) as mem:
        small = mem.remember_many(_public(LIMIT - 2))
    with _open(store_factory, track_usage=False) as mem:
        assert set(_ids(mem, "note", ALICE, limit=60)) == set(small)  # loads it: small
        assert mem.index_status().loads >= 1
        grown = small + mem.remember_many(_public(20, tag="later"))
        status = mem.index_status()
        assert status.searched_in_store == 1  # mirrored by this writer, for the others
        assert status.held_past_limit == 1 and status.memories == len(grown)
        held = _relevance(mem, ALICE)
        assert set(_ids(mem, "note", ALICE, limit=60)) == set(grown)
    reading = {"read_only": True} if store_factory.mode == "embedded" else {}
    with _open(store_factory, track_usage=False, **reading) as mem:
        assert _relevance(mem, ALICE) == held
        status = mem.index_status()
        assert status.memories == 0 and status.held_past_limit == 0  # searched in its mirror
