"""Spaced review: cards for important memories, a growing schedule, and reviews as usage."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    InvalidInput,
    InvalidScope,
    Memento,
    MemoryNotFound,
    ReviewPolicy,
    Scope,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann")
BEN = Scope(user_id="ben")
DAY = timedelta(days=1)


def test_memories_at_or_above_the_threshold_get_a_card_due_in_a_day(mem: Memento) -> None:
    important = mem.get(
        mem.remember("Ann's visa interview is on 9 June", scope=ANN, importance=0.9)
    )
    at_threshold = mem.get(mem.remember("Ann's badge number is 4410", scope=ANN, importance=0.7))
    below = mem.get(mem.remember("Ann had toast for breakfast", scope=ANN, importance=0.69))
    assert important.review_due_at == important.created_at + DAY
    assert at_threshold.review_due_at == at_threshold.created_at + DAY
    assert below.review_due_at is None
    assert important.review_step == 0


def test_review_due_lists_due_cards_most_overdue_first_for_the_scope(mem: Memento) -> None:
    first = mem.remember("Ann's visa interview is on 9 June", scope=ANN, importance=0.9)
    second = mem.remember("Ann's flight to Osaka is on 12 June", scope=ANN, importance=0.8)
    public = mem.remember("The office closes on 1 July", privacy="public", importance=0.95)
    mem.remember("Ben's insurance renews in August", scope=BEN, importance=0.9)
    hidden = mem.remember("Ann's old visa number", scope=ANN, importance=0.9)
    mem.forget(hidden)
    created = mem.get(first).created_at

    assert mem.review_due(ANN, now=created + timedelta(hours=12)) == []
    due = mem.review_due(ANN, now=created + 2 * DAY)
    assert [i.id for i in due] == [first, second, public]  # stored, hence due, in that order
    mem.review(first, 5, now=created + 2 * DAY)  # next due in 3 days: now the least overdue
    later = created + 6 * DAY
    assert [i.id for i in mem.review_due(ANN, now=later)] == [second, public, first]


def test_passing_reviews_grow_the_interval_along_the_schedule(mem: Memento) -> None:
    memory_id = mem.remember("Ann's German verb list", scope=ANN, importance=0.9)
    when = mem.get(memory_id).review_due_at
    assert when is not None
    intervals = []
    for grade in (3, 4, 5, 5, 4, 5, 5):
        item = mem.review(memory_id, grade, now=when)
        assert item.review_due_at is not None
        intervals.append((item.review_due_at - when) / DAY)
        when = item.review_due_at
    assert intervals == [3, 7, 14, 30, 60, 120, 120]


def test_a_failed_review_starts_the_card_over(mem: Memento) -> None:
    memory_id = mem.remember("Ann's German verb list", scope=ANN, importance=0.9)
    now = datetime.now(timezone.utc)
    for _ in range(3):
        mem.review(memory_id, 5, now=now)
    assert mem.get(memory_id).review_step == 3
    failed = mem.review(memory_id, 2, now=now)
    assert (failed.review_step, failed.review_due_at) == (0, now + DAY)
    assert mem.review(memory_id, 3, now=now).review_due_at == now + 3 * DAY


def test_a_review_counts_as_use_and_restarts_the_retention_clock(mem: Memento) -> None:
    memory_id = mem.remember("Ann's locker code is 2209", scope=ANN, importance=0.9)
    stored = mem.get(memory_id)
    later = stored.created_at + 20 * DAY
    reviewed = mem.review(memory_id, 4, now=later)
    assert reviewed.access_count == stored.access_count + 1
    assert reviewed.last_accessed_at == later
    assert reviewed.expires_at == later + timedelta(days=90)  # episodic retention, from the use
    assert mem.review(memory_id, 1, now=later).access_count == stored.access_count + 2


def test_reviewing_a_memory_without_a_card_starts_one(mem: Memento) -> None:
    memory_id = mem.remember("Ann's cousin is called Theo", scope=ANN, importance=0.2)
    now = datetime.now(timezone.utc)
    item = mem.review(memory_id, 5, now=now)
    assert (item.review_step, item.review_due_at) == (0, now + DAY)
    assert [i.id for i in mem.review_due(ANN, now=now + 2 * DAY)] == [memory_id]


def test_the_worker_gives_cards_once_the_threshold_covers_a_memory(
    store_factory: StoreFactory,
) -> None:
    strict = store_factory.open(review=ReviewPolicy(threshold=0.95))
    memory_id = strict.remember("Ann's tax return is due in April", scope=ANN, importance=0.8)
    assert strict.get(memory_id).review_due_at is None

    relaxed = store_factory.open(review=ReviewPolicy(threshold=0.75))
    report = relaxed.maintain()
    assert report.review_cards == 1
    due = relaxed.get(memory_id).review_due_at
    assert due is not None and report.started_at + DAY == due
    assert relaxed.maintain().review_cards == 0


@pytest.mark.parametrize("grade", [6, -1, 2.5, True, "5", None], ids=repr)
def test_a_grade_out_of_range_is_refused_and_changes_nothing(mem: Memento, grade: Any) -> None:
    memory_id = mem.remember("Ann's German verb list", scope=ANN, importance=0.9)
    before = mem.get(memory_id)
    with pytest.raises(InvalidInput, match="grade"):
        mem.review(memory_id, grade)
    assert mem.get(memory_id) == before


def test_reviews_of_unknown_or_forgotten_memories_are_not_found(mem: Memento) -> None:
    with pytest.raises(MemoryNotFound):
        mem.review("0" * 32, 4)
    memory_id = mem.remember("Ann's old phone PIN", scope=ANN, importance=0.9)
    mem.forget(memory_id)
    with pytest.raises(MemoryNotFound):
        mem.review(memory_id, 4)


def test_bad_review_due_queries_are_refused(mem: Memento) -> None:
    with pytest.raises(InvalidScope):
        mem.review_due({"user_id": "ann"})  # type: ignore[arg-type]  # a dict is not a Scope
    with pytest.raises(InvalidInput):
        mem.review_due(ANN, now="tomorrow")  # type: ignore[arg-type]  # deliberately wrong


@pytest.mark.parametrize(
    "options",
    [
        {"threshold": 1.5},
        {"threshold": "high"},
        {"intervals_days": ()},
        {"intervals_days": (1, -3)},
        {"intervals_days": ("1", "3")},
        {"intervals_days": (1, float("nan"))},
        {"intervals_days": "137"},
        {"pass_grade": 9},
    ],
    ids=repr,
)
def test_malformed_review_policies_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        ReviewPolicy(**options)


async def test_async_twins_review(mem: Memento) -> None:
    memory_id = await mem.aremember("Ann's visa interview is on 9 June", scope=ANN, importance=1)
    later = datetime.now(timezone.utc) + 2 * DAY
    assert [i.id for i in await mem.areview_due(ANN, now=later)] == [memory_id]
    item = await mem.areview(memory_id, 5, now=later)
    assert item.review_due_at == later + 3 * DAY
