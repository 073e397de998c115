"""Multi-hop recall: ``expansion`` spreads from the first hits along the rare terms they share
with other memories (see ``RankingWeights.expansion``), within what the viewer may see."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

import pytest

from memento_core import InvalidInput, Memento, MemoryDraft, Privacy, Scope

if TYPE_CHECKING:
    from collections.abc import Iterator

    from conftest import StoreFactory

ANN = Scope(user_id="ann")
BOB = Scope(user_id="bob")
TRIP = "Caroline spent the first week of June on a trip to Lisbon."
WITH_WHOM = "The tram ride up to the Alfama in Lisbon was the best part, and Melanie came along."
AROUND = [
    "Caroline is thinking about adopting a dog next spring.",
    "Caroline's trip to the dentist went fine.",
    "Caroline wants to take a pottery class with her mother.",
    "Caroline said the June weather was too hot for a trip.",
    "Melanie painted a sunrise over the lake last weekend.",
    "Melanie runs every morning before work.",
    "The office moved to a new building downtown.",
    "Caroline went to a support group meeting on Tuesday.",
    "Caroline's friend recommended a book about travel.",
    "A trip to the mountains is planned for autumn by the hiking club.",
    "Caroline likes to travel by train rather than plane.",
    "Caroline bought new running shoes.",
]
QUESTION = "Who went with Caroline on her June trip?"
SPREAD = {"expansion": 0.3}


@pytest.fixture
def story(store_factory: StoreFactory) -> Iterator[tuple[Memento, list[str]]]:
    with store_factory.open() as mem:
        ids = mem.remember_many(
            [MemoryDraft(content=t, scope=ANN) for t in [TRIP, *AROUND, WITH_WHOM]]
        )
        yield mem, ids


def test_two_pieces_that_share_only_a_place_both_come_back(
    story: tuple[Memento, list[str]],
) -> None:
    """The answer ("Melanie came along") shares no word with the question, only "Lisbon" with
    the question's best match: expansion brings it into the top five, and says why."""
    mem, ids = story
    trip, with_whom = ids[0], ids[-1]
    plain = [r.item.id for r in mem.recall(QUESTION, scope=ANN, limit=5)]
    spread = mem.recall(QUESTION, scope=ANN, limit=5, weights=SPREAD)
    assert trip in plain and with_whom not in plain
    assert spread[0].item.id == trip
    found = next(r for r in spread if r.item.id == with_whom)
    assert found.reason.via == ("lisbon",)
    assert "expansion 0.3×1.000 (via: lisbon)" in str(found.reason)


def test_weight_zero_is_the_ranking_without_expansion(story: tuple[Memento, list[str]]) -> None:
    """At 0 every score is the sum of the other terms (nothing of expansion enters), and the
    same question ranks otherwise with it on."""
    mem, _ = story
    now = datetime.now(timezone.utc)
    zero = mem.recall(QUESTION, scope=ANN, limit=14, now=now, weights={"expansion": 0.0})
    spread = mem.recall(QUESTION, scope=ANN, limit=14, now=now, weights=SPREAD)
    assert [r.item.id for r in zero] != [r.item.id for r in spread]
    for r in zero:
        why, w = r.reason, r.reason.weights
        assert why.expansion == 0 and why.via == ()
        assert r.score == pytest.approx(
            w.relevance * why.relevance
            + w.recency * why.recency
            + w.importance * why.importance
            + w.usage * why.usage
            + w.context * why.context
            - w.duplication * why.duplication,
            abs=1e-12,
        )


def test_expansion_never_reaches_or_names_what_the_viewer_may_not_see(
    story: tuple[Memento, list[str]],
) -> None:
    """Bob's private memory shares "Lisbon" with Ann's first hit and would rank high for her if
    expansion crossed users; it stays out of her results, and its words out of every reason."""
    mem, ids = story
    secret = mem.remember(
        "Lisbon is where I keep the quinta deed and the Caroline trip receipts.",
        scope=BOB,
        privacy=Privacy.PRIVATE,
    )
    results = mem.recall(QUESTION, scope=ANN, limit=20, weights=SPREAD)
    assert secret not in {r.item.id for r in results}
    assert {r.item.id for r in results} <= set(ids)
    assert not any("quinta" in str(r.reason) or "deed" in str(r.reason) for r in results)
    # Bob, for his part, is expanded from his own memories only.
    assert {r.item.id for r in mem.recall(QUESTION, scope=BOB, limit=20, weights=SPREAD)} == {
        secret
    }


def test_a_hard_forget_removes_the_memory_from_every_path(
    story: tuple[Memento, list[str]],
) -> None:
    mem, ids = story
    with_whom = ids[-1]
    mem.forget(with_whom, hard=True)
    results = mem.recall(QUESTION, scope=ANN, limit=20, weights=SPREAD)
    assert with_whom not in {r.item.id for r in results}
    assert not any("alfama" in str(r.reason) or "tram" in str(r.reason) for r in results)
    # Nor does it spread as a first hit: its words lead nowhere.
    for r in mem.recall("Alfama tram", scope=ANN, limit=20, weights=SPREAD):
        assert "alfama" not in r.item.content.lower() and "alfama" not in str(r.reason)


def test_a_negative_expansion_weight_is_refused_and_nothing_changes(
    story: tuple[Memento, list[str]],
) -> None:
    mem, ids = story
    with pytest.raises(InvalidInput, match=r"^ranking weight expansion must be a number ≥ 0"):
        mem.recall(QUESTION, scope=ANN, weights={"expansion": -0.1})
    assert len(mem.recall(QUESTION, scope=ANN, limit=20)) == len(ids)
