"""Forgetting: the candidate queue, soft delete and restore, purge after a grace period, hard
forget, and the right to erasure (``erase_user``) checked through every read path."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memento_core import (
    Embedder,
    InvalidInput,
    LinkType,
    Memento,
    MemoryNotFound,
    Message,
    Scope,
)
from memento_core.plugins import adapters
from memento_core.testing import ConformanceDriver, CoreDriver

ANN = Scope(user_id="ann", project_id="apollo")
BEN = Scope(user_id="ben", project_id="apollo")
TEAM = Scope(project_id="apollo")
DAY = timedelta(days=1)
LONG_AGO = datetime.now(timezone.utc) - 200 * DAY
LATER = datetime.now(timezone.utc) + 400 * DAY

PET = (
    "Ann adopted a beagle puppy called Biscuit from the animal shelter.",
    "Biscuit, Ann's beagle puppy, chews her slippers every morning.",
    "Ann takes her beagle Biscuit to puppy training class on Sundays.",
)
SECRET = "Ann's passport number is X1234567 and it expires in 2031."


def export_records(mem: Memento) -> list[dict[str, Any]]:
    return [json.loads(line) for line in mem.export()]


def drivers(mem: Memento) -> list[ConformanceDriver]:
    """Core's own driver and every installed adapter's: each reads through its own API."""
    found: list[ConformanceDriver] = [CoreDriver(mem)]
    for info in adapters().values():
        if info.conformance_driver:
            found.append(info.load_driver()(mem))
    return found


# ------------------------------------------------------------------------ candidates


def test_candidates_are_old_unused_unpinned_and_lowest_standing_first(mem: Memento) -> None:
    def old(text: str, importance: float, **options: Any) -> str:
        return mem.remember(text, scope=ANN, importance=importance, created_at=LONG_AGO, **options)

    low = old("Ann once mentioned the canteen had soup", 0.1)
    mid = old("Ann bought printer paper for the office", 0.5)
    high = old("Ann signed the apollo supplier contract", 0.9)
    old("Ann's emergency contact is her sister Jo", 0.1, pinned=True)
    used = old("Ann asked where the stapler lives", 0.1)
    mem.feedback(used, "used")
    mem.remember("Ann is at the dentist today", scope=ANN, importance=0.1)  # too recent
    mem.remember("Ben's old bike lock code", scope=BEN, importance=0.0, created_at=LONG_AGO)
    before = list(mem.export())

    candidates = mem.forget_candidates(ANN, limit=10)
    assert [c.item.id for c in candidates] == [low, mid, high]
    assert [c.standing for c in candidates] == sorted(c.standing for c in candidates)
    assert [c.item.id for c in mem.forget_candidates(ANN, limit=2)] == [low, mid]
    assert mem.forget_candidates(ANN, unused_for=timedelta(days=365)) == []
    assert list(mem.export()) == before  # a queue to look at: nothing was changed


@pytest.mark.parametrize(
    "options",
    [{"limit": 0}, {"limit": -3}, {"limit": 2.5}, {"unused_for": timedelta(days=-1)},
     {"unused_for": 30}],
    ids=repr,
)  # fmt: skip
def test_bad_candidate_queries_are_refused(mem: Memento, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        mem.forget_candidates(ANN, **options)


# ------------------------------------------------------------- soft delete and purge


def test_soft_forget_hides_and_restore_brings_back(mem: Memento) -> None:
    memory_id = mem.remember(
        "Ann keeps the spare office key in the blue drawer",
        scope=ANN,
        tags=["office"],
        hotwords=["blue drawer"],
        created_at=LONG_AGO,
    )
    other = mem.remember("Ann's desk is by the window", scope=ANN)
    mem.link(memory_id, LinkType.CAUSE_OF, other)
    original = mem.get(memory_id)

    mem.forget(memory_id)
    with pytest.raises(MemoryNotFound):
        mem.get(memory_id)
    assert mem.get(memory_id, include_deleted=True).is_deleted
    assert memory_id not in [r.item.id for r in mem.recall("spare office key", scope=ANN)]
    assert memory_id not in mem.hotword_set()
    assert memory_id not in [c.item.id for c in mem.forget_candidates(ANN)]
    assert [i.id for i in mem.items(scope=ANN, include_deleted=False)] == [other]

    restored = mem.restore(memory_id)
    assert restored == original
    assert mem.get(memory_id) == original
    assert memory_id in [r.item.id for r in mem.recall("spare office key", scope=ANN)]
    assert memory_id in mem.hotword_set()
    assert [link.target_id for link in mem.links(memory_id)] == [other]


def test_purge_erases_soft_deleted_memories_only_after_the_grace_period(mem: Memento) -> None:
    forgotten = mem.remember("Ann's old wifi password was hunter2", scope=ANN)
    mem.feedback(forgotten, "helpful")
    kept = mem.remember("Ann's new wifi network is called apollo-5g", scope=ANN)
    mem.link(kept, LinkType.CAUSE_OF, forgotten)
    mem.forget(forgotten)

    assert mem.purge(grace=timedelta(days=30)).erased == ()
    assert mem.restore(forgotten).deleted_at is None  # inside the grace period: restorable
    mem.forget(forgotten)

    assert mem.purge(grace=timedelta(0)).erased == (forgotten,)
    with pytest.raises(MemoryNotFound):
        mem.get(forgotten, include_deleted=True)
    with pytest.raises(MemoryNotFound):
        mem.restore(forgotten)
    assert mem.links(kept) == []
    assert mem.feedback_events(forgotten) == []
    assert forgotten not in "".join(mem.export())
    assert mem.get(kept).content == "Ann's new wifi network is called apollo-5g"


def test_purge_erases_expired_memories_past_the_grace_period_unless_pinned(mem: Memento) -> None:
    now = datetime.now(timezone.utc)
    long_expired = mem.remember("a boarding pass from last spring", expires_at=now - timedelta(40))
    recently_expired = mem.remember("yesterday's parking ticket", expires_at=now - timedelta(10))
    pinned = mem.remember("a pinned note", expires_at=now - timedelta(40), pinned=True)
    live = mem.remember("a note that lives on")

    assert mem.purge(grace=timedelta(days=30)).erased == (long_expired,)
    assert {i.id for i in mem.items(include_deleted=True)} == {recently_expired, pinned, live}


@pytest.mark.parametrize("grace", [timedelta(days=-1), 30, "30 days", None], ids=repr)
def test_purge_refuses_a_bad_grace_period(mem: Memento, grace: Any) -> None:
    memory_id = mem.remember("soft-deleted, and it must stay so")
    mem.forget(memory_id)
    with pytest.raises(InvalidInput, match="grace"):
        mem.purge(grace=grace)
    assert mem.get(memory_id, include_deleted=True).is_deleted


# ------------------------------------------------------------------------ hard forget


def test_hard_forget_leaves_nothing_behind(mem: Memento) -> None:
    secret = mem.remember(SECRET, scope=ANN, hotwords=["X1234567"], tags=["travel"])
    note = mem.remember("Ann renews her documents every ten years", scope=ANN)
    mem.link(secret, LinkType.CAUSE_OF, note)
    mem.link(note, LinkType.CAUSE_OF, secret)
    mem.feedback(secret, "helpful")
    mem.recall("passport number", scope=ANN)  # counted as a use

    mem.forget(secret, hard=True)
    with pytest.raises(MemoryNotFound):
        mem.get(secret, include_deleted=True)
    assert secret not in [r.item.id for r in mem.recall(SECRET, scope=ANN)]
    assert mem.links(note) == [] and mem.all_links() == []
    assert mem.feedback_events(secret) == [] and mem.all_feedback() == []
    assert secret not in mem.hotword_set()
    exported = "".join(mem.export())
    assert secret not in exported and "X1234567" not in exported
    assert mem.stats().memories == 1

    # Remembering the same text again starts from nothing: no old vector, use or feedback.
    again = mem.get(mem.remember(SECRET, scope=ANN))
    assert again.id == secret and again.access_count == 0 and again.feedback == {}
    assert again.hotwords == () and again.tags == ()


def test_hard_forget_erases_facts_derived_only_from_it(mem: Memento) -> None:
    first = mem.remember("Ann moved to Berlin in May", scope=ANN)
    second = mem.remember("Ann works at the Berlin office", scope=ANN)
    only_first = mem.remember("Ann lives in Berlin", scope=TEAM, type="semantic", privacy="team")
    both = mem.remember("The team has a Berlin presence", scope=TEAM, type="semantic")
    mem.link(only_first, LinkType.DERIVED_FROM, first)
    mem.link(both, LinkType.DERIVED_FROM, first)
    mem.link(both, LinkType.DERIVED_FROM, second)

    mem.forget(first, hard=True)
    with pytest.raises(MemoryNotFound):
        mem.get(only_first, include_deleted=True)
    assert [(x.type, x.target_id) for x in mem.links(both)] == [(LinkType.DERIVED_FROM, second)]


# ------------------------------------------------------------------- right to erasure


def test_erase_user_removes_every_trace_through_every_read_path(mem: Memento) -> None:
    # Ann's memories: a secret with a hotword and feedback, episodes that sleep consolidates,
    # a soft-deleted one, and the archive of a chat.
    secret = mem.remember(SECRET, scope=ANN, type="semantic", hotwords=["X1234567"])
    mem.feedback(secret, "helpful")
    episodes = [mem.remember(text, scope=ANN) for text in PET]
    deleted = mem.remember("Ann's previous address was 4 Elm Row", scope=ANN)
    mem.forget(deleted)
    chat = mem.chat("ann-chat", scope=Scope(user_id="ann"))
    chat.append(Message.user("My passport number is X1234567, please remember it."))
    chat.append(Message.assistant("Noted: your passport number is X1234567."))
    archive = chat.archive()
    turns = {x.target_id for x in mem.links(archive)}  # the archive's memory of each turn
    assert len(turns) == 2
    facts = mem.sleep(Scope(user_id="ann")).written
    assert facts

    # Ben's memories, linked both ways to Ann's.
    ben_note = mem.remember("Ben looks after Biscuit when Ann travels", scope=BEN)
    ben_public = mem.remember(
        "Ben runs the apollo book club", scope=BEN, privacy="public", hotwords=["book club"]
    )
    mem.link(ben_note, LinkType.CAUSE_OF, episodes[0])
    mem.link(secret, LinkType.CAUSE_OF, ben_note)
    mem.feedback(ben_note, "used")

    # Team facts: one derived only from Ann's memories (and one derived from that one), one
    # derived from Ann's and Ben's.
    ann_only = mem.remember(
        "The team dog-sits a beagle", scope=TEAM, type="semantic", privacy="team"
    )
    mem.link(ann_only, LinkType.DERIVED_FROM, episodes[0])
    mem.link(ann_only, LinkType.DERIVED_FROM, episodes[1])
    chained = mem.remember("The team likes dogs", scope=TEAM, type="semantic", privacy="team")
    mem.link(chained, LinkType.DERIVED_FROM, ann_only)
    mixed = mem.remember(
        "The team shares pet-sitting duties", scope=TEAM, type="semantic", privacy="team"
    )
    mem.link(mixed, LinkType.DERIVED_FROM, episodes[2])
    mem.link(mixed, LinkType.DERIVED_FROM, ben_note)
    stream = ["show X12", "34567 now"]
    events = CoreDriver(mem).hotword_events(stream, connection_id="before")
    assert [e["hotword_uid"] for e in events] == [secret]

    owned = {secret, *episodes, deleted, archive, *turns, *facts}
    report = mem.erase_user("ann")

    assert set(report.memories) == owned
    assert report.messages == 2 and mem.history("ann-chat") == []
    assert set(report.derived) == {ann_only, chained}
    assert report.unlinked == (mixed,)
    erased = owned | {ann_only, chained}
    for memory_id in erased:
        with pytest.raises(MemoryNotFound):
            mem.get(memory_id, include_deleted=True)

    records = export_records(mem)
    assert {r["id"] for r in records if r["kind"] == "memory"} == {ben_note, ben_public, mixed}
    for fmt in ("ndjson", "markdown", "csv"):
        exported = "".join(mem.export(fmt))
        assert "X1234567" not in exported and "Biscuit, Ann" not in exported, fmt
        assert not any(memory_id in exported for memory_id in erased), fmt
    assert all(
        r["source_id"] not in erased and r["target_id"] not in erased
        for r in records
        if r["kind"] == "link"
    )
    assert {r["memory_id"] for r in records if r["kind"] == "feedback"} == {ben_note}
    assert [(x.type, x.target_id) for x in mem.links(mixed)] == [(LinkType.DERIVED_FROM, ben_note)]

    queries = ["passport number", "beagle puppy Biscuit", "previous address", "team dog"]
    for query in queries:
        for driver in drivers(mem):
            for user in ("ann", "ben"):
                hits = driver.recall(query, user_id=user, limit=20)
                assert not erased & {h.memory_id for h in hits}, (driver.name, user, query)
        for viewer in (Scope(user_id="ann"), ANN, TEAM, Scope()):
            found = {r.item.id for r in mem.recall(query, scope=viewer, limit=20)}
            assert not erased & found, (viewer, query)
    for viewer in (ANN, TEAM):
        assert not erased & {i.id for i in mem.review_due(viewer, now=LATER)}
        assert not erased & {c.item.id for c in mem.forget_candidates(viewer, unused_for=0 * DAY)}
    assert {e.uid for e in mem.hotword_set()} == {ben_public}
    assert CoreDriver(mem).hotword_events(stream, connection_id="after") == []
    assert mem.stats().users == 1

    # Ben's side is intact.
    assert mem.get(ben_note).content == "Ben looks after Biscuit when Ann travels"
    assert [e.kind.value for e in mem.feedback_events(ben_note)] == ["used"]


def test_erase_user_removes_the_users_chat_history(mem: Memento) -> None:
    ann_chat = mem.chat("ann-session", scope=Scope(user_id="ann"))
    ben_chat = mem.chat("ben-session", scope=Scope(user_id="ben"))
    ann_chat.extend([Message.user("My PIN is 9931"), Message.assistant("I will not repeat it.")])
    ben_chat.append(Message.user("Remind me to water the plants"))

    report = mem.erase_user("ann")
    assert report.messages == 2
    assert mem.history("ann-session") == []
    assert ann_chat.window() == []
    assert [m.content for m in mem.history("ben-session")] == ["Remind me to water the plants"]


def test_erasing_an_unknown_user_is_a_no_op_with_a_report(mem: Memento) -> None:
    mem.remember("Ben runs the apollo book club", scope=BEN, hotwords=["book club"])
    before = list(mem.export())
    report = mem.erase_user("nobody")
    assert report.user_id == "nobody"
    assert (report.memories, report.derived, report.unlinked, report.messages) == ((), (), (), 0)
    assert list(mem.export()) == before


@pytest.mark.parametrize(
    "user_id", ["", "   ", None, {"$ne": "x"}, 7, "a" * 300, "ann\x00"], ids=repr
)
def test_erase_user_refuses_a_malformed_user_id(mem: Memento, user_id: Any) -> None:
    mem.remember("Ann's memory must survive a malformed erasure", scope=ANN)
    before = list(mem.export())
    with pytest.raises(InvalidInput):
        mem.erase_user(user_id)
    assert list(mem.export()) == before


async def test_async_twins_forget_and_erase(mem: Memento) -> None:
    old = await mem.aremember("Ann once lost an umbrella", scope=ANN, created_at=LONG_AGO)
    assert [c.item.id for c in await mem.aforget_candidates(ANN)] == [old]
    await mem.aforget(old)
    assert (await mem.apurge(grace=timedelta(0))).erased == (old,)
    kept = await mem.aremember("Ann likes umbrellas with ducks", scope=ANN)
    assert (await mem.aerase_user("ann")).memories == (kept,)
    assert await mem.aitems() == []


def test_erase_user_deletes_side_records_naming_the_user_from_any_instance(
    tmp_path: Path, embedder: Embedder
) -> None:
    """An adapter's side records carry their user (``user_id``); a fresh instance that never
    opened the collection erases them (issue 21)."""
    path = tmp_path / "store"
    with Memento.open(path, embedder=embedder) as mem:
        notes = mem.side_records("app_notes")
        notes.put(
            ["n1", "n2", "n3"],
            ["alice's note", "alice's other note", "bob's note"],
            [{"user_id": "alice"}, {"user_id": "alice", "kind": "x"}, {"user_id": "bob"}],
        )
    with Memento.open(path, embedder=embedder) as mem:
        report = mem.erase_user("alice")
        assert report.extra["app_notes"] == 2
        assert [r.document for r in mem.side_records("app_notes").find()] == ["bob's note"]
        assert mem.erase_user("carol").extra == {"erase_user_messages": 0, "app_notes": 0}
