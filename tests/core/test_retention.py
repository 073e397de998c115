"""Retention: per-type defaults, tag and item overrides, pinning, and expiry that hides at once.

Expiry needs no cleanup job: an expired memory leaves recall, ``get``, listings and hotwords the
moment its time is up, and ``purge`` only reclaims the space later (see ``test_forgetting``).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    FOREVER,
    InvalidInput,
    Memento,
    MemoryNotFound,
    MemoryType,
    RetentionPolicy,
    Scope,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann")
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def lifetime(mem: Memento, memory_id: str) -> timedelta | None:
    """How long the memory lives unused: its expiry minus when it was stored."""
    item = mem.get(memory_id)
    return None if item.expires_at is None else item.expires_at - item.created_at


def recalled_ids(mem: Memento, query: str, *, now: datetime | None = None) -> list[str]:
    return [r.item.id for r in mem.recall(query, scope=ANN, limit=10, now=now)]


def test_each_type_has_its_default_retention(mem: Memento) -> None:
    expected = {
        MemoryType.WORKING: timedelta(hours=48),
        MemoryType.EPISODIC: timedelta(days=90),
        MemoryType.SEMANTIC: None,
        MemoryType.PROCEDURAL: None,
    }
    for memory_type, retention in expected.items():
        memory_id = mem.remember(
            f"A {memory_type.value} memory of Ann", scope=ANN, type=memory_type
        )
        assert lifetime(mem, memory_id) == retention, memory_type
        assert mem.get(memory_id).retention == retention


def test_an_expired_memory_leaves_recall_at_once_and_use_restarts_its_clock(mem: Memento) -> None:
    working = mem.remember("Ann parked the car on level 3, spot B12", scope=ANN, type="working")
    episode = mem.remember("Ann parked on level 3 at the airport in March", scope=ANN)
    expires = mem.get(working).expires_at
    assert expires is not None
    query = "where did Ann park the car"

    # No purge in between: the expired memory is simply not a candidate any more.
    after = recalled_ids(mem, query, now=expires + timedelta(minutes=1))
    assert working not in after and episode in after
    before = recalled_ids(mem, query, now=expires - timedelta(minutes=1))
    assert working in before

    # That recall used it a minute before expiry: its 48 hours start again from then.
    renewed = expires - timedelta(minutes=1) + timedelta(hours=48)
    assert mem.get(working).expires_at == renewed
    assert working not in recalled_ids(mem, query, now=renewed + timedelta(minutes=1))
    assert working in recalled_ids(mem, query, now=expires + timedelta(minutes=1))


def test_an_expired_memory_is_hidden_everywhere_before_any_cleanup(mem: Memento) -> None:
    short = mem.remember(
        "Ann's one-time door code is 4471",
        scope=ANN,
        retention=timedelta(seconds=1),
        hotwords=["door code"],
    )
    kept = mem.remember("Ann's flat is on the fourth floor", scope=ANN, hotwords=["fourth floor"])
    assert short in {e.uid for e in mem.hotword_set()}
    time.sleep(1.2)  # let the one-second retention run out on the real clock

    with pytest.raises(MemoryNotFound):
        mem.get(short)
    assert short not in recalled_ids(mem, "door code for Ann")
    assert [i.id for i in mem.items(scope=ANN, include_deleted=False)] == [kept]
    assert {e.uid for e in mem.hotword_set()} == {kept}
    # Hidden, not yet erased: that is purge's job, after a grace period.
    assert mem.get(short, include_deleted=True).content == "Ann's one-time door code is 4471"


def test_tag_rules_override_the_type_and_the_longest_tag_wins(store_factory: StoreFactory) -> None:
    policy = RetentionPolicy(
        by_tag={"scratch": HOUR, "week": 7 * DAY, "keep": None},
        by_type={MemoryType.EPISODIC: 30 * DAY},
    )
    mem = store_factory.open(retention=policy)
    cases: list[tuple[str, list[str], str, timedelta | None]] = [
        ("episodic", [], "plain episode", 30 * DAY),  # the type rule, overridden
        ("working", [], "plain working note", 48 * HOUR),  # other defaults stay
        ("episodic", ["scratch"], "scratch episode", HOUR),
        ("semantic", ["scratch"], "scratch fact", HOUR),  # a tag beats "semantic is kept"
        ("episodic", ["scratch", "week"], "scratch and week", 7 * DAY),
        ("working", ["scratch", "keep"], "scratch but keep", None),
        ("episodic", ["unrelated"], "unruled tag", 30 * DAY),
    ]
    for memory_type, tags, text, expected in cases:
        memory_id = mem.remember(text, scope=ANN, type=memory_type, tags=tags)
        assert lifetime(mem, memory_id) == expected, text


def test_an_item_retention_beats_every_rule(store_factory: StoreFactory) -> None:
    mem = store_factory.open(retention=RetentionPolicy(by_tag={"scratch": HOUR}))
    forever = mem.remember("scratch kept forever", scope=ANN, type="working", retention=FOREVER)
    two_days = mem.remember("a fact for two days", scope=ANN, type="semantic", retention=2 * DAY)
    tagged = mem.remember("tagged, but a week", scope=ANN, tags=["scratch"], retention=7 * DAY)
    assert lifetime(mem, forever) is None
    assert lifetime(mem, two_days) == 2 * DAY
    assert lifetime(mem, tagged) == 7 * DAY


def test_pinned_memories_never_expire(mem: Memento) -> None:
    pinned = mem.remember("Ann's blood type is O negative", scope=ANN, type="working", pinned=True)
    past = datetime.now(timezone.utc) - DAY
    expired = mem.remember("Ann's old gym locker was 17", scope=ANN, expires_at=past)
    far_future = datetime.now(timezone.utc) + timedelta(days=3650)

    assert pinned in recalled_ids(mem, "Ann's blood type", now=far_future)
    with pytest.raises(MemoryNotFound):
        mem.get(expired)
    mem.pin(expired)  # pinning an expired memory brings it back, for as long as it is pinned
    assert mem.get(expired).pinned
    mem.unpin(expired)
    with pytest.raises(MemoryNotFound):
        mem.get(expired)
    mem.pin(expired)
    assert expired in recalled_ids(mem, "Ann's gym locker", now=far_future)


BAD_DURATIONS: list[Any] = [
    timedelta(days=-1),
    timedelta(0),
    timedelta(days=10**8),  # no expiry date can be computed; FOREVER says "keep"
    "90 days",
    90,
    3.5,
    True,
    "forever!",
]


@pytest.mark.parametrize("bad", BAD_DURATIONS, ids=repr)
def test_bad_retention_values_are_refused_in_every_place(
    store_factory: StoreFactory, bad: Any
) -> None:
    with pytest.raises(InvalidInput, match="retention"):
        RetentionPolicy(by_type={"episodic": bad})
    with pytest.raises(InvalidInput, match="retention"):
        RetentionPolicy(by_tag={"scratch": bad})
    mem = store_factory.open()
    with pytest.raises(InvalidInput, match="retention"):
        mem.remember("never stored", scope=ANN, retention=bad)
    assert list(mem.export()) == []


@pytest.mark.parametrize(
    "options",
    [
        {"by_type": {"eternal": DAY}},
        {"by_type": ["episodic"]},
        {"by_tag": ["scratch"]},
        {"by_tag": "scratch"},
    ],
    ids=repr,
)
def test_malformed_policies_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        RetentionPolicy(**options)
