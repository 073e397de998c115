"""The partition directory lets a recall read a user's partitions by id. Recall stays exact on
a store written before the directory existed, after a backfill, after many small writes are
merged, and erasing a user leaves none of their memory ids in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chromadb
import pytest

import memento_core._memento as memento_module
from memento_core import Embedder, Memento, MemoryDraft, ReadOnlyStore, Scope
from memento_core.cli import main

if TYPE_CHECKING:
    from conftest import StoreFactory

ALICE = Scope(user_id="alice", project_id="apollo")
BOB = Scope(user_id="bob", project_id="apollo")
ERIN = Scope(user_id="erin")
VIEWERS = [ALICE, BOB, ERIN, Scope(user_id="stranger")]

TOPICS = [
    "the quarterly budget review moved to Thursday",
    "grandmother's lentil soup recipe uses smoked paprika",
    "the deploy pipeline fails when the cache is cold",
]


def _drafts(scope: Scope, count: int, privacy: str = "private") -> list[MemoryDraft]:
    return [
        MemoryDraft(
            content=f"{scope.user_id} {privacy} note {n}: {TOPICS[n % len(TOPICS)]}",
            scope=scope,
            privacy=privacy,
        )
        for n in range(count)
    ]


def _fill(mem: Memento) -> None:
    mem.remember_many(
        _drafts(ALICE, 8) + _drafts(ALICE, 4, "team") + _drafts(BOB, 8) + _drafts(ERIN, 3, "public")
    )


def _seen(mem: Memento) -> dict[Scope, set[str]]:
    """What each viewer's recalls return (ids), with a limit above any partition's size."""
    return {
        viewer: {
            hit.item.id
            for query in ("budget review", "soup recipe", "deploy cache")
            for hit in mem.recall(query, scope=viewer, limit=50)
        }
        for viewer in VIEWERS
    }


def _client(factory: StoreFactory, name: str = "main") -> Any:
    if factory.mode == "embedded":
        return chromadb.PersistentClient(path=str(factory.root / name))
    host, port = str(factory.url).rsplit("//", 1)[1].split(":")
    return chromadb.HttpClient(host=host, port=int(port))


def _as_older_store(factory: StoreFactory, prefix: str) -> None:
    """Make the (closed) store look written by a Memento before the directory: no directory
    records and no mark saying it is complete."""
    client = _client(factory)
    client.delete_collection(f"{prefix}_partitions")
    client.get_collection(f"{prefix}_meta").delete(ids=["partition_directory"])


def _directory_records(factory: StoreFactory, prefix: str) -> list[list[str]]:
    found = (
        _client(factory)
        .get_collection(f"{prefix}_partitions")
        .get(where={"partition": {"$ne": "~erased"}}, include=["documents"])
    )  # a tombstone names a hash of an erased id, and no partition
    return [json.loads(document) for document in found["documents"]]


def test_a_store_older_than_the_directory_recalls_exactly(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        _fill(mem)
        prefix = mem.collection_prefix
    with store_factory.open() as mem:
        expected = _seen(mem)
    assert (
        expected[ALICE]
        and expected[ERIN]
        and not expected[Scope(user_id="stranger")] - (expected[ERIN])
    )
    _as_older_store(store_factory, prefix)
    for _ in range(2):  # the first open reads by equality and writes each partition's base
        with store_factory.open() as mem:
            assert _seen(mem) == expected
    with store_factory.open() as mem:  # a write to the older store is listed with the rest
        new = mem.remember("alice private note: the budget review needs slides", scope=ALICE)
    with store_factory.open() as mem:
        assert _seen(mem)[ALICE] == expected[ALICE] | {new}


def test_a_backfill_lists_every_memory(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        _fill(mem)
        prefix = mem.collection_prefix
        assert mem.build_partition_directory() == 0  # a new store lists every memory already
    with store_factory.open() as mem:
        expected = _seen(mem)
    _as_older_store(store_factory, prefix)
    with store_factory.open() as mem:
        written: list[int] = []
        # public, alice's, bob's, erin's is public only, apollo's team
        assert mem.build_partition_directory(written.append) == 4
        assert sum(written) == len(_directory_records(store_factory, prefix))
        assert mem.build_partition_directory() == 0  # complete now: nothing to do
    listed = [i for ids in _directory_records(store_factory, prefix) for i in ids]
    assert len(set(listed)) == 8 + 4 + 8 + 3
    with store_factory.open() as mem:
        assert _seen(mem) == expected


def test_a_read_only_store_refuses_a_backfill_and_stays_as_it_was(
    tmp_path: Path, embedder: Embedder
) -> None:
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        _fill(mem)
        expected = _seen(mem)
    with Memento.open(tmp_path / "store", embedder=embedder, read_only=True) as mem:
        with pytest.raises(ReadOnlyStore, match="read-only"):
            mem.build_partition_directory()
        assert _seen(mem) == expected


def test_many_small_writes_are_merged_and_recall_stays_exact(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write starts a record that is sealed at once; the next load of the partition
    merges them."""
    monkeypatch.setattr("memento_core._storage._directory.SEAL_AFTER_US", 0)
    monkeypatch.setattr("memento_core._storage._directory.FOLD_AT", 1)  # each write listed
    with store_factory.open() as mem:
        prefix = mem.collection_prefix
        kept = {mem.remember(d.content, scope=ALICE) for d in _drafts(ALICE, 30)}
        forgotten = mem.remember("alice private note: an old budget figure", scope=ALICE)
        mem.forget(forgotten, hard=True)
    before = len(_directory_records(store_factory, prefix))
    assert before == 31
    with store_factory.open() as mem:
        assert _seen(mem)[ALICE] == kept
    after = _directory_records(store_factory, prefix)
    assert len(after) == 1
    assert set(after[0]) == kept  # a merge drops what left the partition
    with store_factory.open() as mem:
        assert _seen(mem)[ALICE] == kept


def test_erasing_a_user_leaves_none_of_their_ids_in_the_directory(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:
        _fill(mem)
        prefix = mem.collection_prefix
        report = mem.erase_user("alice")
        assert len(report.memories) == 12
        listed = {i for ids in _directory_records(store_factory, prefix) for i in ids}
        assert not listed & set(report.memories)
        assert not _seen(mem)[BOB] & set(report.memories)
    # An embedded writer folds its newest writes into the directory at close: the erased
    # ones, gone from the feed too, are not among them.
    listed = {i for ids in _directory_records(store_factory, prefix) for i in ids}
    assert len(listed) == 11 and not listed & set(report.memories)


def test_the_command_line_backfills_an_older_store(
    tmp_path: Path,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(memento_module, "default_embedder", lambda: embedder)
    path = tmp_path / "main"
    with Memento.open(path, embedder=embedder) as mem:
        _fill(mem)
        prefix = mem.collection_prefix
    client = chromadb.PersistentClient(path=str(path))
    client.delete_collection(f"{prefix}_partitions")
    client.get_collection(f"{prefix}_meta").delete(ids=["partition_directory"])
    assert main(["build-directory", "--path", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == "listed 4 partitions; recalls now read them by id"


def test_memories_written_one_at_a_time_are_listed_and_found_after_a_reopen(
    store_factory: StoreFactory,
) -> None:
    """The sole writer of an embedded store collects its appends in one record per partition
    (kept in memory, not read back); a writer of a server store others write too writes a
    record per write and never rewrites one (no append can undo an erasure). Nothing is lost
    at a reopen."""
    with store_factory.open() as mem:
        prefix = mem.collection_prefix
        written = {mem.remember(d.content, scope=ALICE) for d in _drafts(ALICE, 12)}
    records = _directory_records(store_factory, prefix)
    assert {i for r in records for i in r} == written
    assert len(records) == (1 if store_factory.mode == "embedded" else 12)
    with store_factory.open() as mem:
        assert _seen(mem)[ALICE] == written
        later = mem.remember("alice private note: the budget review is at noon", scope=ALICE)
        assert _seen(mem)[ALICE] == written | {later}


def test_writes_after_an_erasure_do_not_list_the_erased_ids_again(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob's team writes append to the record that listed Alice's team memories; after she
    is erased, his next write must not put her ids back."""
    monkeypatch.setattr("memento_core._storage._directory.FOLD_AT", 1)  # each write listed
    with store_factory.open() as mem:
        prefix = mem.collection_prefix
        for draft in _drafts(ALICE, 3, "team") + _drafts(BOB, 3, "team"):
            mem.remember(draft.content, scope=draft.scope, privacy="team")
        erased = set(mem.erase_user("alice").memories)
        bobs = mem.remember(
            "bob team note: the deploy cache warms at six", scope=BOB, privacy="team"
        )
        listed = {i for ids in _directory_records(store_factory, prefix) for i in ids}
        assert len(erased) == 3 and bobs in listed and not listed & erased
        assert bobs in _seen(mem)[BOB]


def test_an_open_record_takes_a_bounded_number_of_single_writes(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each append of the sole writer rewrites its record whole, so single writes fill small
    records (a server store's writer writes a record each); a large write still goes in one
    record."""
    monkeypatch.setattr("memento_core._storage._directory.APPEND_AT_MOST", 4)
    monkeypatch.setattr("memento_core._storage._directory.FOLD_AT", 1)  # each write listed
    with store_factory.open() as mem:
        prefix = mem.collection_prefix
        singles = {mem.remember(d.content, scope=ALICE) for d in _drafts(ALICE, 10)}
        batch = set(mem.remember_many(_drafts(BOB, 9)))
    sizes = sorted(len(ids) for ids in _directory_records(store_factory, prefix))
    assert sizes == ([2, 4, 4, 9] if store_factory.mode == "embedded" else [1] * 10 + [9])
    with store_factory.open() as mem:
        seen = _seen(mem)
        assert seen[ALICE] == singles and seen[BOB] == batch


def test_an_embedded_writer_lists_its_writes_in_the_directory_later_and_loses_none(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An embedded store's writer lets the change feed list its newest writes and folds them
    into the directory's records every FOLD_AT memories and at close. Meanwhile, and if it
    never folds (killed), every load still finds them; pruning the feed keeps what is not
    folded."""
    if store_factory.mode != "embedded":
        pytest.skip("a server store's writers list each write at once")
    monkeypatch.setattr("memento_core._storage._directory.FOLD_AT", 5)
    with store_factory.open() as mem:
        prefix = mem.collection_prefix
        first = {mem.remember(d.content, scope=ALICE) for d in _drafts(ALICE, 7)}
        listed = {i for ids in _directory_records(store_factory, prefix) for i in ids}
        assert len(listed) == 5 and listed < first  # folded at the fifth write
    with store_factory.open() as mem:
        assert _seen(mem)[ALICE] == first  # folded at close
        assert {i for ids in _directory_records(store_factory, prefix) for i in ids} == first
    # A writer that never folds (killed), and a feed pruned of everything it may prune.
    monkeypatch.setattr(
        "memento_core._storage._repository.Repository.fold_directory", lambda self: None
    )
    monkeypatch.setattr("memento_core._engine.FEED_RETENTION_US", 0)
    monkeypatch.setattr("memento_core._engine.PRUNE_EVERY", 0.0)
    with store_factory.open() as mem:
        later = {mem.remember(d.content, scope=ERIN) for d in _drafts(ERIN, 3)}
    with store_factory.open() as mem:
        assert _seen(mem)[ERIN] == later and _seen(mem)[ALICE] == first
    listed = {i for ids in _directory_records(store_factory, prefix) for i in ids}
    assert not listed & later  # still listed by the feed alone


def test_a_store_older_than_the_directory_mirrors_its_large_partitions(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:
        _fill(mem)
        prefix = mem.collection_prefix
    with store_factory.open() as mem:
        expected = _seen(mem)
    _as_older_store(store_factory, prefix)
    with store_factory.open(partition_load_limit=5) as mem:
        # alice's 12 and bob's 8 are past the limit; apollo's 4 team and erin's 3 are not.
        # The first writable open mirrors them in the background; this waits for that.
        mem.mirror_large_partitions()
        assert mem.index_status().searched_in_store == 2
    with store_factory.open(partition_load_limit=5) as mem:
        assert _seen(mem) == expected
        assert mem.index_status().searched_in_store == 2
