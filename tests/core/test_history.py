"""A memory's history (``changes``) and time on facts (validity, recall ``as_of``, ``known_at``)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    ChangeKind,
    InvalidInput,
    LinkType,
    Memento,
    MemoryChange,
    MemoryNotFound,
    Scope,
)
from memento_core.testing import raw_traces

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann-5c1d", project_id="apollo")
BEN = Scope(user_id="ben-7f3e", project_id="apollo")
T0 = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
DAY = timedelta(days=1)


def kinds(changes: list[MemoryChange]) -> list[str]:
    return [change.kind.value for change in changes]


# ---------------------------------------------------------------------------- the log


def test_each_event_kind_appears_once_in_order_with_its_actor(mem: Memento) -> None:
    memory_id = mem.remember("The deploy freeze starts on Monday.", scope=ANN, importance=0.9)
    other = mem.remember("Releases are tagged by the on-call engineer.", scope=ANN)
    mem.update(memory_id, content="The deploy freeze starts on Tuesday.", scope=ANN)
    mem.pin(memory_id)  # the application itself: the owner
    mem.unpin(memory_id, scope=ANN)
    mem.feedback(memory_id, "helpful", scope=ANN)
    mem.review(memory_id, 4, scope=ANN)
    mem.link(memory_id, LinkType.CAUSE_OF, other, scope=ANN)
    mem.unlink(memory_id, LinkType.CAUSE_OF, other, scope=ANN)
    mem.forget(memory_id, scope=ANN)
    mem.restore(memory_id, scope=ANN)

    changes = mem.changes(memory_id, scope=ANN)
    assert kinds(changes) == [
        "created", "updated", "pinned", "unpinned", "feedback", "reviewed", "linked",
        "unlinked", "forgotten", "restored",
    ]  # fmt: skip
    # Feedback and links keep only who gave or made them: the caller's user.
    ann = Scope(user_id=ANN.user_id)
    assert [c.actor for c in changes] == [ANN, ANN, "owner", ANN, ann, ANN, ann, ANN, ANN, ANN]
    assert [c.at for c in changes] == sorted(c.at for c in changes)
    created, updated = changes[0], changes[1]
    assert created.after["content"] == "The deploy freeze starts on Monday."
    assert created.after["scope"]["user_id"] == ANN.user_id
    assert updated.before == {"content": "The deploy freeze starts on Monday."}
    assert updated.after == {"content": "The deploy freeze starts on Tuesday."}
    assert changes[2].after == {"pinned": True} and changes[3].after == {"pinned": False}
    assert changes[4].after["feedback"] == "helpful"
    assert changes[5].after["grade"] == 4
    assert changes[6].related == other and changes[7].related == other
    assert changes[8].after["deleted_at"] is not None and changes[9].after == {"deleted_at": None}
    # The other end of the link sees it too; a no-op change logs nothing.
    assert kinds(mem.changes(other)) == ["created", "linked", "unlinked"]
    mem.restore(memory_id)
    assert len(mem.changes(memory_id)) == len(changes)


def test_expiry_and_sleep_events_are_the_workers(mem: Memento) -> None:
    past = datetime.now(timezone.utc) - timedelta(minutes=1)
    gone = mem.remember("Parking pass valid this week.", scope=ANN, created_at=past - DAY,
                        expires_at=past)  # fmt: skip
    expired = mem.changes(gone)
    assert kinds(expired) == ["created", "expired"]
    assert expired[1].actor == "worker" and expired[1].at == past

    def fact(text: str, city: str, day: int) -> str:
        data = {"subject": "ann", "city": city}
        return mem.remember(text, scope=ANN, type="semantic", data=data, created_at=T0 + day * DAY)

    paris = fact("Ann lives in Paris.", "Paris", 0)
    berlin = fact("Ann lives in Berlin.", "Berlin", 3)
    for n, text in enumerate(("Ann's dog is a beagle named Biscuit.",
                              "Ann's dog is a beagle named Biscuit, two years old.")):  # fmt: skip
        mem.remember(text, scope=ANN, created_at=T0 + 5 * DAY + n * timedelta(hours=1))
    report = mem.sleep(ANN)
    assert report.contradictions == [(berlin, paris)]

    superseded = mem.changes(paris)
    assert kinds(superseded) == ["created", "linked", "superseded"]
    assert superseded[2].actor == "worker" and superseded[2].related == berlin
    assert superseded[2].after["valid_to"] == (T0 + 3 * DAY).isoformat()
    assert mem.get(paris).valid_to == T0 + 3 * DAY  # closed, never deleted
    derived = mem.changes(report.written[0])
    assert derived[0].kind is ChangeKind.DERIVED and derived[0].actor == "worker"

    # A near-duplicate fact is merged into the older one: hidden, with a ``merged`` event.
    older = report.written[0]
    for n, text in enumerate(("Ann's dog is a beagle called Biscuit.",
                              "Ann's dog is a beagle called Biscuit, two years old.")):  # fmt: skip
        mem.remember(text, scope=ANN, created_at=T0 + 9 * DAY + n * timedelta(hours=1))
    again = mem.sleep(ANN)
    newer = again.written[0]
    assert again.merged == [(newer, older)]
    merged = mem.changes(newer)
    assert kinds(merged)[-1] == "merged" and merged[-1].related == older


def test_remembering_a_forgotten_memory_again_restores_it_with_its_caller(mem: Memento) -> None:
    memory_id = mem.remember("The spare key is with the neighbour.", scope=ANN)
    mem.forget(memory_id)
    assert mem.remember("The spare key is with the neighbour.", scope=ANN) == memory_id
    changes = mem.changes(memory_id, scope=ANN)
    assert kinds(changes) == ["created", "forgotten", "restored"]
    assert [c.actor for c in changes] == [ANN, "owner", ANN]


async def test_async_twins(mem: Memento) -> None:
    memory_id = await mem.aremember("Lunch is at noon.", scope=ANN)
    other = await mem.aremember("The canteen is on floor two.", scope=ANN)
    await mem.alink(memory_id, "cause_of", other)
    await mem.aunlink(memory_id, "cause_of", other)
    assert kinds(await mem.achanges(memory_id, scope=ANN)) == ["created", "linked", "unlinked"]


def test_a_viewer_who_may_not_see_the_memory_gets_the_unknown_id_error(mem: Memento) -> None:
    private = mem.remember("Ann's salary review is in June.", scope=ANN)
    team = mem.remember("The apollo retro is on Friday.", scope=ANN, privacy="team")
    mem.update(private, content="Ann's salary review moved to July.")
    with pytest.raises(MemoryNotFound) as hidden:
        mem.changes(private, scope=BEN)
    with pytest.raises(MemoryNotFound) as unknown:
        mem.changes("f" * 32, scope=BEN)
    assert str(hidden.value).replace(private, "ID") == str(unknown.value).replace("f" * 32, "ID")
    assert kinds(mem.changes(team, scope=BEN)) == ["created"]  # a teammate may read it
    with pytest.raises(InvalidInput):
        mem.changes(42, scope=ANN)  # type: ignore[arg-type]


def test_updates_undone_give_the_first_content_and_fields(mem: Memento) -> None:
    memory_id = mem.remember("v0", scope=ANN, tags=["a"], importance=0.2)
    for n in range(1, 4):
        mem.update(memory_id, content=f"v{n}", tags=[f"t{n}"], importance=n / 10, scope=ANN)
    changes = mem.changes(memory_id)
    assert kinds(changes) == ["created", "updated", "updated", "updated"]
    assert (changes[0].after["content"], changes[0].after["tags"]) == ("v0", ["a"])
    assert changes[0].after["importance"] == 0.2
    assert [c.after["content"] for c in changes[1:]] == ["v1", "v2", "v3"]
    assert [c.before["content"] for c in changes[1:]] == ["v0", "v1", "v2"]
    assert [c.seq for c in changes] == [0, 1, 2, 3]


# ----------------------------------------------------------------------------- erasure


def test_hard_forget_and_erase_user_leave_no_history(store_factory: StoreFactory) -> None:
    if store_factory.mode != "embedded":
        pytest.skip("reads the embedded store's files past the API")
    with store_factory.open("erase") as mem:
        path = mem.location
        mine = mem.remember("quokka-old wording", scope=ANN)
        mem.update(mine, content="quokka-new wording", scope=ANN)
        mem.pin(mine)
        bens = mem.remember("wombat-notes of Ben", scope=BEN, privacy="public")
        mem.update(bens, content="wombat-notes of Ben, edited", scope=BEN)
        shared = mem.remember("Apollo's public roadmap.", scope=ANN, privacy="public")
        mem.link(bens, LinkType.CAUSE_OF, shared, scope=BEN)
        mem.link(shared, LinkType.CAUSE_OF, bens, scope=BEN)
        mem.unlink(shared, LinkType.CAUSE_OF, bens, scope=BEN)
        assert raw_traces(path, "quokka-old", "wombat-notes", BEN.user_id)  # the check can fail

        mem.forget(mine, hard=True, scope=ANN)
        assert raw_traces(path, "quokka-old", "quokka-new") == []
        with pytest.raises(MemoryNotFound):
            mem.changes(mine)

        mem.erase_user(BEN.user_id)
        assert raw_traces(path, "wombat-notes", BEN.user_id) == []
        # Ann's memory keeps its history, minus Ben: who he was and which memory was his.
        left = mem.changes(shared)
        assert "unlinked" in kinds(left)
        assert all(c.actor != BEN and c.related != bens for c in left)
        assert "erased" in [c.actor for c in left]


# ------------------------------------------------------------------------ export/import


def test_export_import_export_is_byte_identical_with_history(store_factory: StoreFactory) -> None:
    with store_factory.open("source") as source, store_factory.open("copy") as copy:
        memory_id = source.remember("The office opens at eight.", scope=ANN, valid_from=T0)
        source.update(memory_id, content="The office opens at half past eight.", scope=ANN)
        source.pin(memory_id)
        source.forget(memory_id, scope=ANN)
        source.feedback(memory_id, "used", scope=ANN)
        exported = "".join(source.export())
        assert exported.count('"kind":"change"') == 3
        counts = copy.import_ndjson(exported.splitlines())
        assert counts["changes"] == 3
        assert "".join(copy.export()) == exported
        assert copy.changes(memory_id) == source.changes(memory_id)
        mine = "".join(source.export(user_id=ANN.user_id))
        assert mine.count('"kind":"change"') == 3


def test_an_import_with_a_bad_change_line_writes_nothing(store_factory: StoreFactory) -> None:
    with store_factory.open("source") as source, store_factory.open("fresh") as fresh:
        memory_id = source.remember("Coffee machine on floor three.", scope=ANN)
        source.update(memory_id, content="Coffee machine on floor four.")
        lines = "".join(source.export()).splitlines()
        at = next(n for n, line in enumerate(lines) if '"kind":"change"' in line)
        for bad in (
            lines[at].replace('"seq":1', '"seq":0'),
            lines[at].replace('"actor":"owner"', '"actor":"somebody"'),
            lines[at].replace(memory_id, "0" * 32),
            lines[at] + "\n" + lines[at],  # the same change twice
        ):
            with pytest.raises(InvalidInput, match=f"line {at + 1}|line {at + 2}"):
                fresh.import_ndjson([*lines[:at], *bad.split("\n"), *lines[at + 1 :]])
            assert fresh.items(include_deleted=True) == []
        fresh.import_ndjson(lines)
        assert fresh.changes(memory_id) == source.changes(memory_id)


# --------------------------------------------------------------------------- validity


def test_as_of_answers_with_the_fact_valid_then(mem: Memento) -> None:
    def lead(name: str, since: datetime, day: int) -> str:
        return mem.remember(f"The apollo team lead is {name}.", scope=ANN, type="semantic",
                            data={"subject": "apollo lead", "name": name},
                            valid_from=since, created_at=T0 + day * DAY)  # fmt: skip

    carol = lead("Carol", datetime(2022, 1, 1, tzinfo=timezone.utc), 0)
    dave = lead("Dave", datetime(2023, 7, 1, tzinfo=timezone.utc), 1)
    assert mem.sleep(ANN).contradictions == [(dave, carol)]
    assert mem.get(carol).valid_to == datetime(2023, 7, 1, tzinfo=timezone.utc)

    def top(**when: Any) -> list[str]:
        found = mem.recall("Who is the apollo team lead?", scope=ANN, limit=5, **when)
        return [r.item.id for r in found if r.item.id in (carol, dave)]

    assert top(as_of=datetime(2022, 6, 1, tzinfo=timezone.utc)) == [carol]
    assert top(as_of=datetime(2024, 1, 1, tzinfo=timezone.utc)) == [dave]
    assert top(as_of=datetime(2021, 1, 1, tzinfo=timezone.utc)) == []
    assert top(as_of=datetime(2022, 6, 1)) == [carol]  # naive: taken as UTC, as everywhere
    now = mem.recall("Who is the apollo team lead?", scope=ANN, limit=5)
    ranked = [r for r in now if r.item.id in (carol, dave)]
    assert [r.item.id for r in ranked] == [dave, carol]
    assert ranked[1].reason.notes == (f"superseded by newer memory {dave}",)
    ended = mem.remember("The apollo team lead was Erin.", scope=ANN, valid_to=T0)
    hits = mem.recall("Who was the apollo team lead?", scope=ANN, limit=5)
    why = next(r.reason for r in hits if r.item.id == ended)
    assert why.notes == (f"no longer valid since {T0.isoformat()}",)
    assert f"no longer valid since {T0.isoformat()}" in str(why)


def test_a_superseding_update_keeps_the_old_fact_and_closes_it(mem: Memento) -> None:
    since = datetime(2024, 3, 1, tzinfo=timezone.utc)
    old = mem.remember("Ann's desk is in room 101.", scope=ANN, valid_from=T0 - 365 * DAY)
    new = mem.update(old, content="Ann's desk is in room 204.", supersede=True,
                     valid_from=since, scope=ANN)  # fmt: skip
    assert new.id != old and new.valid_from == since
    kept = mem.get(old)
    assert kept.content == "Ann's desk is in room 101." and kept.valid_to == since
    assert kept.superseded_by == new.id
    assert kinds(mem.changes(old))[-1] == "superseded"
    earlier = mem.recall("Where is Ann's desk?", scope=ANN, as_of=since - DAY)
    assert [r.item.id for r in earlier] == [old]


def test_known_at_recalls_what_was_stored_then(mem: Memento) -> None:
    edited = mem.remember("The wifi password is heron-11.", scope=ANN)
    forgotten = mem.remember("The wifi in the lab is called labnet.", scope=ANN)
    then = datetime.now(timezone.utc)
    mem.update(edited, content="Badge readers were replaced in the lobby.", scope=ANN)
    mem.forget(forgotten, scope=ANN)
    later = mem.remember("The guest wifi password is swan-22.", scope=ANN)

    now = {r.item.id: r.item for r in mem.recall("wifi password", scope=ANN, limit=10)}
    assert later in now and forgotten not in now
    past = {r.item.id: r for r in mem.recall("wifi password", scope=ANN, limit=10, known_at=then)}
    assert later not in past  # stored later
    assert forgotten in past  # forgotten since: believed then
    assert past[edited].item.content == "The wifi password is heron-11."  # the text of then
    assert past[edited].reason.dense > 0.3  # ranked on that text, not on the lobby's
    both = mem.recall("wifi password", scope=ANN, known_at=then, as_of=then)
    assert {r.item.id for r in both} <= set(past)


def test_bad_time_values_are_refused_and_change_nothing(mem: Memento) -> None:
    memory_id = mem.remember("The boiler is serviced in autumn.", scope=ANN, valid_from=T0)
    before, history = mem.get(memory_id), mem.changes(memory_id)
    count = len(mem.items(include_deleted=True))
    with pytest.raises(InvalidInput, match="valid_to"):
        mem.remember("Never valid.", scope=ANN, valid_from=T0, valid_to=T0 - DAY)
    with pytest.raises(InvalidInput, match="valid_to"):
        mem.update(memory_id, valid_to=T0)  # at its start: never valid
    with pytest.raises(InvalidInput, match="valid_from"):
        mem.remember("Far future.", scope=ANN, valid_from=datetime(9999, 1, 1))
    with pytest.raises(InvalidInput, match="valid_from"):
        mem.update(memory_id, valid_from="2024-01-01")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="supersede"):
        mem.update(memory_id, content="x", supersede="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="new content"):
        mem.update(memory_id, supersede=True)
    for bad in (math.nan, "2024-01-01", 1714550400, datetime(9999, 12, 31)):
        with pytest.raises(InvalidInput, match="as_of"):
            mem.recall("boiler", scope=ANN, as_of=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="known_at"):
            mem.recall("boiler", scope=ANN, known_at=bad)  # type: ignore[arg-type]
    assert mem.get(memory_id) == before
    assert mem.changes(memory_id) == history
    assert len(mem.items(include_deleted=True)) == count
