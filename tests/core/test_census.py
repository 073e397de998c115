"""``Memento.census`` (counts and a listing of what a viewer may see) and ``Memento.get_many``
(a page of it read by id), for front ends that show a store; and the change feed's age in
``index_status``."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

from memento_core import InvalidInput, Memento, MemoryDraft, Scope

if TYPE_CHECKING:
    from conftest import StoreFactory

ALICE = Scope(user_id="alice", project_id="apollo")
BOB = Scope(user_id="bob", project_id="apollo")
NOW = datetime.now(timezone.utc)


def seed(mem: Memento) -> list[str]:
    """Six memories, written one at a time: a page is in the order written (the order of a
    batch's memories is core's to choose)."""
    drafts = [
        MemoryDraft("alice one", scope=ALICE, tags=["a"], created_at=NOW - timedelta(days=3)),
        MemoryDraft("alice two", scope=ALICE, type="semantic", pinned=True),
        MemoryDraft("alice team", scope=ALICE, privacy="team"),
        MemoryDraft("bob private", scope=BOB, expires_at=NOW + timedelta(days=2)),
        MemoryDraft("bob public", scope=BOB, privacy="public", tags=["a"]),
        MemoryDraft("bob gone", scope=BOB, expires_at=NOW - timedelta(days=1)),
    ]
    return [mem.remember_many([draft])[0] for draft in drafts]


def test_census_counts_what_a_viewer_sees(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        ids = seed(mem)
        mem.forget(ids[0])
        whole = mem.census()
        assert whole.memories == 4 and whole.forgotten == 1 and whole.expired == 1
        assert whole.by_user == {"bob": 2, "alice": 2}
        assert whole.by_type == {"episodic": 3, "semantic": 1}
        assert whole.by_privacy == {"private": 2, "public": 1, "team": 1}
        assert whole.pinned == 1 and whole.expiring_within == 1
        assert sum(whole.written_per_day.values()) == 6
        assert whole.written_per_day[(NOW - timedelta(days=3)).date()] == 1
        alice = mem.census(ALICE)
        assert alice.by_user == {"alice": 2, "bob": 1}  # bob's public one, not his private
        assert alice.expiring_within == 0 and alice.expired == 0
        stranger = mem.census(Scope(user_id="carol"))
        assert stranger.memories == 1 and stranger.forgotten == 0


def test_the_listing_holds_every_memory_counted(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        ids = seed(mem)
        mem.forget(ids[2])
        census = mem.census()
        listing = census.listing
        assert listing[0].id == ids[0]  # oldest first: created three days ago
        assert {one.id for one in listing} == set(ids)
        states = {one.id: census.state_of(one) for one in listing}
        assert states == {
            ids[0]: "live", ids[1]: "live", ids[2]: "forgotten",
            ids[3]: "live", ids[4]: "live", ids[5]: "expired",
        }  # fmt: skip
        first = next(one for one in listing if one.id == ids[0])
        assert first.user_id == "alice" and first.project_id == "apollo" and first.tags == ("a",)
        assert first.type.value == "episodic" and first.privacy.value == "private"
        pinned = next(one for one in listing if one.id == ids[1])
        assert pinned.pinned and pinned.type.value == "semantic"
        seen = {one.id for one in mem.census(ALICE).listing}
        assert seen == {ids[0], ids[1], ids[2], ids[4]}  # not Bob's private ones


def test_get_many_reads_a_page_by_id(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        ids = seed(mem)
        mem.forget(ids[0])
        wanted = [ids[4], ids[0], "no-such-id", ids[3], ids[4]]
        assert [i.id for i in mem.get_many(wanted)] == [ids[4], ids[3]]
        assert [i.id for i in mem.get_many(wanted, include_deleted=True)] == [
            ids[4], ids[0], ids[3],
        ]  # fmt: skip
        as_alice = mem.get_many(wanted, scope=ALICE, include_deleted=True)
        assert [i.id for i in as_alice] == [ids[4], ids[0]]  # Bob's private one left out
        assert mem.get_many([]) == []


@pytest.mark.parametrize("bad", ["one-id", [""], [{"$ne": 1}], None, [1]])
def test_bad_ids_are_refused(store_factory: StoreFactory, bad: object) -> None:
    with store_factory.open() as mem:
        seed(mem)
        with pytest.raises(InvalidInput):
            mem.get_many(bad)  # type: ignore[arg-type]


def test_get_many_takes_a_viewer_scope_only(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        ids = seed(mem)
        with pytest.raises(InvalidInput):
            mem.get_many(ids, scope={"user_id": "alice"})  # type: ignore[arg-type]


def test_index_status_says_when_the_feed_was_read(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        seed(mem)
        mem.recall("alice", scope=ALICE)
        age = mem.index_status().feed_read_seconds_ago
        assert age is not None and age >= 0


async def test_async_twins(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        seed(mem)
        assert (await mem.acensus(now=NOW)) == mem.census(now=NOW)
        assert (await mem.aget_many(ids := [i.id for i in mem.census().listing])) == (
            mem.get_many(ids)
        )
        for name in ("census", "get_many"):
            sync, twin = getattr(Memento, name), getattr(Memento, "a" + name)
            assert inspect.signature(sync) == inspect.signature(twin)
