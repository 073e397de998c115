"""A filter that refuses most keyword matches still finds the ones it admits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memento_core import MemoryDraft, Scope

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann")


def test_a_filter_refusing_the_best_keyword_matches_still_finds_the_admitted_one(
    store_factory: StoreFactory,
) -> None:
    """Eighty memories tagged "trip" say "Zanzibar" again and again; among two hundred tagged
    "notes" about islands and spices, one mentions it once. Recall filtered to "notes" finds
    it by the word, though the keyword cut over all memories holds only "trip" ones."""
    loud = [
        MemoryDraft(content=f"Zanzibar Zanzibar Zanzibar ferry {n}", scope=ANN, tags=["trip"])
        for n in range(80)
    ]
    islands = ["Mauritius", "Madagascar", "Seychelles", "Comoros", "Reunion", "Pemba", "Mafia"]
    spices = ["cloves", "nutmeg", "cinnamon", "cardamom", "vanilla", "pepper", "turmeric"]
    quiet = [
        MemoryDraft(
            content=f"Spice island holiday off Tanzania: {islands[n % 7]}, "
            f"{spices[n % 7]}, day {n}",
            scope=ANN,
            tags=["notes"],
        )
        for n in range(200)
    ]
    needle = MemoryDraft(
        content="Receipt 4471 for the kitchen plumber: replaced the sink trap and two valves, "
        "paid 180 in cash on Tuesday; a kind man who once lived in Zanzibar.",
        scope=ANN,
        tags=["notes"],
    )
    with store_factory.open() as mem:
        ids = mem.remember_many([*loud, *quiet, needle])
        hits = mem.recall("Zanzibar", scope=ANN, limit=5, filter={"tags": ["notes"]})
    assert ids[-1] in [h.item.id for h in hits]
    assert all("notes" in h.item.tags for h in hits)
