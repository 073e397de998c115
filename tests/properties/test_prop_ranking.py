"""Scoring monotonicity through ``Memento.recall``: more relevant, newer, more important or more
used never ranks lower, all else equal.

"All else equal", as ``ranking.py`` needs it: the same type and retention, no usage tracking on
recall (the store is opened with ``track_usage=False``), each memory in a session of its own (so
no two are neighbours in a timeline, and temporal context adds nothing to either), and for the
non-relevance signals the same content, so the two memories get the same relevance and the
same duplication penalty from anything ranked above them (only the second of the two is
penalised for duplicating the first, which is ranked first for its higher score). The hash
embedder makes relevance controllable.

The comparison is on the score before the duplication penalty: two memories whose signals
differ by less than a float can resolve tie, and ties are broken by id; the property is
that the one with the better signal is never placed after the other on a strictly better score.

Run longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/properties``.
"""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

from _prop_support import budget
from hypothesis import event, given, settings
from hypothesis import strategies as st

from memento_core import FOREVER, Memento, MemoryDraft, Recalled, Scope
from memento_core._candidate_index import tokenize
from memento_core._model import utcnow

words = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=3, max_size=9)
texts = st.lists(words, min_size=1, max_size=6).map(" ".join)
TYPES = ["working", "episodic", "semantic", "procedural"]


@st.composite
def signals(draw: st.DrawFn) -> tuple[float, timedelta, int]:
    """(importance, age, uses) of one memory."""
    return (
        draw(st.floats(0, 1)),
        timedelta(seconds=draw(st.integers(0, 3 * 365 * 86_400))),
        draw(st.integers(0, 4)),
    )


def base(result: Recalled, mem: Memento) -> float:
    """The score before the duplication penalty, which only the later of the two gets."""
    return result.score + mem.weights.duplication * result.reason.duplication


def position(results: list[Recalled], memory_id: str) -> int:
    return next(n for n, r in enumerate(results) if r.item.id == memory_id)


@settings(max_examples=budget(40, share=0.005))
@given(
    content=texts,
    better=signals(),
    worse=signals(),
    memory_type=st.sampled_from(TYPES),
    distractors=st.lists(st.tuples(texts, signals()), max_size=3),
    better_id_first=st.booleans(),
)
def test_better_importance_recency_and_usage_never_rank_lower(
    hash_store: Memento,
    content: str,
    better: tuple[float, timedelta, int],
    worse: tuple[float, timedelta, int],
    memory_type: str,
    distractors: list[tuple[str, tuple[float, timedelta, int]]],
    better_id_first: bool,
) -> None:
    # Make ``better`` dominate ``worse`` in every signal.
    better = (max(better[0], worse[0]), min(better[1], worse[1]), max(better[2], worse[2]))
    mem, now = hash_store, utcnow()
    user = f"u{uuid4().hex}"
    scope = Scope(user_id=user)
    tag = uuid4().hex
    ids = (f"{tag}-a", f"{tag}-b") if better_id_first else (f"{tag}-b", f"{tag}-a")
    entries = [(ids[0], content, better), (ids[1], content, worse)]
    entries += [(f"{tag}-d{n}", text, s) for n, (text, s) in enumerate(distractors)]
    mem.remember_many(
        MemoryDraft(
            text, id=memory_id, scope=Scope(user_id=user, session_id=memory_id),
            type=memory_type, importance=importance, created_at=now - age, retention=FOREVER,
        )
        for memory_id, text, (importance, age, _) in entries
    )  # fmt: skip
    for memory_id, _, (_, _, uses) in entries:
        for _ in range(uses):
            mem.feedback(memory_id, "used")

    results = mem.recall(content, scope=scope, limit=10, now=now)

    assert len(results) == len(entries)
    first, second = (results[position(results, i)] for i in ids)
    assert base(first, mem) >= base(second, mem)
    if base(first, mem) > base(second, mem):
        event("strictly better")
        assert position(results, ids[0]) < position(results, ids[1])
    else:
        event("tied")


@settings(max_examples=budget(40, share=0.005))
@given(
    near=st.lists(words, min_size=1, max_size=6),
    far=st.lists(words, min_size=1, max_size=6),
    shuffled=st.randoms(use_true_random=False),
    shared=signals(),
    memory_type=st.sampled_from(TYPES),
)
def test_the_memory_the_query_matches_never_ranks_below_one_it_does_not(
    hash_store: Memento,
    near: list[str],
    far: list[str],
    shuffled: object,
    shared: tuple[float, timedelta, int],
    memory_type: str,
) -> None:
    """The query holds exactly the words of one memory (in any order) and none of the other's."""
    far = [w for w in far if not set(tokenize(w)) & set(tokenize(" ".join(near)))]
    if not far or not tokenize(" ".join(near)):
        return
    mem, now = hash_store, utcnow()
    user = f"u{uuid4().hex}"
    scope = Scope(user_id=user)
    importance, age, _ = shared
    near_id, far_id = mem.remember_many(
        MemoryDraft(
            " ".join(text), scope=Scope(user_id=user, session_id=session), type=memory_type,
            importance=importance, created_at=now - age, retention=FOREVER,
        )
        for text, session in ((near, "near"), (far, "far"))
    )  # fmt: skip
    query = list(near)
    shuffled.shuffle(query)  # type: ignore[attr-defined]

    results = mem.recall(" ".join(query), scope=scope, limit=10, now=now)

    near_hit, far_hit = (results[position(results, i)] for i in (near_id, far_id))
    assert near_hit.reason.relevance >= far_hit.reason.relevance
    assert base(near_hit, mem) >= base(far_hit, mem)
    if base(near_hit, mem) > base(far_hit, mem):
        assert position(results, near_id) < position(results, far_id)
