"""``Memento.census`` and ``Memento.browse``: counts and pages of what a viewer may see, for
front ends that show a store; and the change feed's age in ``index_status``."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta, timezone

import pytest
from conftest import StoreFactory

from memento_core import InvalidFilter, InvalidInput, Memento, MemoryDraft, Scope

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


def test_browse_pages_through_the_matches(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        ids = seed(mem)
        first = mem.browse(limit=2)
        assert first.total == 5 and [i.id for i in first.items] == [ids[4], ids[3]]
        rest = mem.browse(limit=2, offset=2)
        assert [i.id for i in rest.items] == [ids[2], ids[1]]
        oldest = mem.browse(newest_first=False, limit=1)
        assert oldest.items[0].id == ids[0]
        assert [i.id for i in mem.browse(state="expired").items] == [ids[5]]
        assert mem.browse(state="all").total == 6
        assert [i.id for i in mem.browse(pinned=True).items] == [ids[1]]
        assert {i.id for i in mem.browse(filter={"tags": ["a"]}).items} == {ids[0], ids[4]}
        assert mem.browse(user_id="bob").total == 2
        mem.forget(ids[0])
        assert [i.id for i in mem.browse(state="forgotten").items] == [ids[0]]


def test_browse_keeps_to_what_a_viewer_may_see(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        ids = seed(mem)
        seen = {i.id for i in mem.browse(scope=ALICE, state="all").items}
        assert seen == {ids[0], ids[1], ids[2], ids[4]}
        assert mem.browse(scope=ALICE, user_id="bob").total == 1  # only his public one
        assert mem.browse(scope=Scope(user_id="carol"), filter={"types": "semantic"}).total == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"state": "gone"},
        {"offset": -1},
        {"limit": 0},
        {"limit": 10_000},
        {"limit": True},
        {"pinned": "yes"},
        {"filter": {"types": "dream"}},
        {"filter": {"colour": "red"}},
        {"user_id": {"$ne": ""}},
    ],
)
def test_bad_browse_arguments_are_refused(store_factory: StoreFactory, bad: dict) -> None:  # type: ignore[type-arg]
    with store_factory.open() as mem:
        seed(mem)
        before = list(mem.export())
        with pytest.raises(InvalidInput) as caught:
            mem.browse(**bad)
        assert isinstance(caught.value, InvalidFilter) or "user_id" in str(caught.value)
        assert list(mem.export()) == before


def test_index_status_says_when_the_feed_was_read(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        seed(mem)
        mem.recall("alice", scope=ALICE)
        age = mem.index_status().feed_read_seconds_ago
        assert age is not None and age >= 0


async def test_async_twins(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        seed(mem)
        assert (await mem.acensus()) == mem.census()
        assert (await mem.abrowse(limit=3)).items == mem.browse(limit=3).items
        for name in ("census", "browse"):
            sync, twin = getattr(Memento, name), getattr(Memento, "a" + name)
            assert inspect.signature(sync) == inspect.signature(twin)
