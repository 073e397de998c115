"""``memory_injection``: recalled memories packed into a token budget, as a system message."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core import Embedder, InvalidInput, Memento, Privacy, Scope
from memento_core._injection import HEADER
from memento_core._messages import Role
from memento_core._tokens import count_message, default_counter

ANN = Scope(user_id="ann")
BEN = Scope(user_id="ben")
FACTS = [
    "Ann is allergic to peanuts and always carries an epipen.",
    "Ann prefers window seats on long flights.",
    "Ann's cat is called Miso and is twelve years old.",
    "Ann works as a structural engineer in Lisbon.",
    (
        "Ann's kitchen notes: she cooks Thai curry every Sunday. The curry never has peanuts in "
        "it because of her allergy. She buys lemongrass at the Ribeira market. Her oven is "
        "broken, so she only uses the stove. She likes jasmine rice with everything."
    ),
]


def fill(mem: Memento) -> None:
    for fact in FACTS:
        mem.remember(fact, scope=ANN)
    mem.remember("Ben is allergic to shellfish.", scope=BEN)
    mem.remember("The office is closed on public holidays.", privacy=Privacy.PUBLIC)


def test_it_injects_the_top_memories_as_a_system_message(mem: Memento) -> None:
    fill(mem)
    injection = mem.memory_injection("what is Ann allergic to?", scope=ANN, limit=3)
    message = injection.message()
    assert message is not None and message.role is Role.SYSTEM
    assert message.content == injection.text and injection.text.startswith(HEADER)
    assert len(injection.items) == 3 and "peanuts" in injection.items[0].content
    assert [i.score for i in injection.items] == sorted((i.score for i in injection.items),
                                                         reverse=True)  # fmt: skip
    for item in injection.items:
        assert item.content in injection.text and not item.compressed
    assert "shellfish" not in injection.text  # Ben's private memory is not Ann's to see
    assert injection.tokens == count_message(message) <= injection.budget == 1200


def test_a_tight_budget_compresses_to_the_relevant_sentences(mem: Memento) -> None:
    fill(mem)
    full = mem.memory_injection("Thai curry Sunday cooking", scope=ANN, limit=1)
    assert full.items[0].content.startswith("Ann's kitchen notes")
    tight = mem.memory_injection(
        "Thai curry Sunday cooking", scope=ANN, limit=1, token_budget=full.tokens - 15
    )
    [item] = tight.items
    assert item.compressed and "Thai curry every Sunday" in item.content
    assert "oven" not in item.content and "…" in item.content
    assert tight.tokens <= full.tokens - 15


def test_nothing_to_inject(mem: Memento) -> None:
    injection = mem.memory_injection("anything at all", scope=ANN)
    assert injection.text == "" and injection.items == () and injection.message() is None
    fill(mem)
    too_small = mem.memory_injection("Ann", scope=ANN, token_budget=5)
    assert too_small.text == "" and too_small.tokens == 0


@pytest.mark.parametrize("budget", [0, -1, 2.5, True, "100"])
def test_a_bad_budget_is_refused(mem: Memento, budget: Any) -> None:
    with pytest.raises(InvalidInput, match="token_budget"):
        mem.memory_injection("Ann", token_budget=budget)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Memento]:
    path: Path = tmp_path_factory.mktemp("injection") / "store"
    with Memento.open(path, embedder=embedder, track_usage=False) as mem:
        fill(mem)
        for n in range(20):
            mem.remember(f"Note {n}: Ann mentioned topic {n} " + "detail " * (n * 7), scope=ANN)
        yield mem


class Characters:
    def count(self, text: str) -> int:
        return len(text)


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(1, 700),
    query=st.sampled_from(["allergy", "Ann topic 7 detail", "cooking at home", "cats", "flights"]),
    limit=st.integers(1, 25),
    counting=st.sampled_from(["characters", "wordpiece given", "default"]),
)
def test_injection_never_exceeds_its_budget(
    filled: Memento, budget: int, query: str, limit: int, counting: str
) -> None:
    """Also without a counter: the default one counts line by line (its count is additive
    over lines), and the result must be what counting the whole text gives."""
    given_counter = {"characters": Characters(), "wordpiece given": default_counter()}
    counter = given_counter.get(counting, default_counter())
    injection = filled.memory_injection(
        query, token_budget=budget, scope=ANN, limit=limit, counter=given_counter.get(counting)
    )
    message = injection.message()
    if message is None:
        assert injection.items == () and injection.tokens == 0
        return
    assert injection.tokens == count_message(message, counter) <= budget
    ranked = [r.item.id for r in filled.recall(query, scope=ANN, limit=limit)]
    assert [i.id for i in injection.items] == ranked[: len(injection.items)]
    assert not any(i.compressed for i in injection.items[:-1])  # only the last one is ever cut
