"""Scoring recall candidates.

S = α·relevance + β·recency + γ·importance + δ·usage + ζ·context − ε·duplication

``context`` is temporal contiguity, as in human episodic memory: recalling a moment brings back
the moments next to it. A memory's context is the relevance of its neighbours in its scope's
timeline (``MemoryItem.follows``: the memory stored just before it, and the one stored just
after) when they are candidates too — so the reply to a relevant question, whose own words may
say little ("yes, last Tuesday"), comes back with it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memento_core._model import MemoryItem, MemoryType, finite_number
from memento_core.errors import InvalidInput

# How fast recency fades, as a half-life per memory type: a chat turn is stale in a day,
# an episode in a month, a fact or a procedure lasts.
DEFAULT_HALF_LIFE_DAYS: Mapping[MemoryType, float] = {
    MemoryType.WORKING: 1.0,
    MemoryType.EPISODIC: 30.0,
    MemoryType.SEMANTIC: 180.0,
    MemoryType.PROCEDURAL: 365.0,
}


@dataclass(frozen=True)
class RankingWeights:
    """The weights of the score and of relevance's two halves. Defaults follow the design."""

    relevance: float = 0.5
    recency: float = 0.2
    importance: float = 0.2
    usage: float = 0.1
    context: float = 0.15
    """Weight of the best neighbour's relevance (temporal contiguity; see the module)."""
    duplication: float = 0.5
    superseded: float = 0.2
    """Subtracted from a memory that a newer one contradicts (see consolidation)."""
    dense_share: float = 0.6
    """Share of relevance from embedding similarity; the rest comes from BM25. The keyword half
    is divided by the best candidate's score (the top keyword hit counts 1) while sentence
    embeddings' cosines rarely pass 0.7, so the dense half gets the larger share."""
    calibrate: float = 1.0
    """How far relevance is calibrated to the query when the query's words are weak evidence
    (0 = never: today's ranking exactly; 1 = fully). When the best keyword match covers less
    than half of the query's idf mass (fully below a quarter, see ``LEXICAL_EVIDENCE``), the
    dense half becomes the candidate's place between the candidates' mean cosine and the best
    one (an embedder whose cosines sit in a narrow band, as multilingual-e5's 0.81–0.86, then
    ranks by its own order, not by a keyword match worth more than its whole spread); the
    keyword half becomes the share of the query's idf mass the memory matches (a lone common
    word or verb ending matches little of a question, however well it beats the others); and
    a neighbour lends context only what it is more relevant than the memory itself."""
    baseline: float = 1.0
    """How far the dense half is measured from the query's baseline — its mean cosine over the
    memories the viewer may see, what an unrelated memory scores in this embedding space — as
    ``(cosine − baseline) / (1 − baseline)`` (0 = the raw cosine: today's ranking exactly; 1 =
    fully). Embedders differ in where unrelated text sits: all-MiniLM-L6-v2 around 0.1–0.3,
    multilingual-e5 around 0.75–0.8, so e5's relevant memories stood only 0.05 above the rest and
    any keyword match outweighed them (LoCoMo R@5 through recall 59.3 with e5 against 62.2 with
    the baseline; MiniLM 64.4 against 64.0)."""
    expansion: float = 0.1
    """Weight of what a memory shares with the first hits (spreading activation): the rare
    terms — names, places, things — of the question's best matches that are not the question's
    own, summed by idf, so the other pieces of a story the question needs (another session
    about the same trip, the same person's other plans) come up beside its best match. Derived
    at recall from the candidate index (what the viewer may see, nothing stored); shown in
    ``reason`` as "via: …". 0 is today's ranking exactly."""
    duplicate_threshold: float = 0.9
    """Cosine similarity above which a result counts as a near-duplicate of a higher one."""
    usage_saturation: int = 50
    """Uses at which the usage signal reaches 1 (it grows with the log of the count)."""
    half_life_days: Mapping[MemoryType, float] = field(
        default_factory=lambda: dict(DEFAULT_HALF_LIFE_DAYS)
    )

    def __post_init__(self) -> None:
        for name in (
            "relevance",
            "recency",
            "importance",
            "usage",
            "context",
            "duplication",
            "superseded",
            "expansion",
        ):
            value = getattr(self, name)
            number = finite_number(value)
            if number is None or number < 0:
                raise InvalidInput(f"ranking weight {name} must be a number ≥ 0, got {value!r}")
        for name in ("dense_share", "duplicate_threshold", "calibrate", "baseline"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value <= 1
            ):
                raise InvalidInput(f"{name} must be from 0 to 1, got {value!r}")
        if not isinstance(self.half_life_days, Mapping) or any(
            finite_number(days) is None or days <= 0 for days in self.half_life_days.values()
        ):
            raise InvalidInput("every half-life must be a positive number of days")

    def replace(self, **changes: Any) -> RankingWeights:
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise InvalidInput(f"unknown ranking weight(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Reason:
    """Why a memory came back: each weighted component of its score and the matched words."""

    relevance: float
    dense: float
    """The embedding's cosine similarity (calibrated relevance uses its place among the
    candidates instead; see ``RankingWeights.calibrate``)."""
    keyword: float
    """The keyword half of relevance as used, 0..1."""
    recency: float
    importance: float
    usage: float
    duplication: float
    matched_terms: tuple[str, ...]
    weights: RankingWeights = field(repr=False)
    notes: tuple[str, ...] = ()
    context: float = 0.0
    """The relevance of the memory's most relevant timeline neighbour among the candidates."""
    expansion: float = 0.0
    """How much the memory shares with the first hits: rare terms, by idf (0..1)."""
    via: tuple[str, ...] = ()
    """The words it shares with the first hits (stems, as indexed)."""

    def __str__(self) -> str:
        w = self.weights
        parts = [
            f"relevance {w.relevance:g}×{self.relevance:.3f} "
            f"(dense {self.dense:.3f}, keyword {self.keyword:.3f})",
            f"recency {w.recency:g}×{self.recency:.3f}",
            f"importance {w.importance:g}×{self.importance:.3f}",
            f"usage {w.usage:g}×{self.usage:.3f}",
        ]
        if self.context:
            parts.append(f"context {w.context:g}×{self.context:.3f}")
        if self.expansion and w.expansion:
            via = f" (via: {', '.join(self.via)})" if self.via else ""
            parts.append(f"expansion {w.expansion:g}×{self.expansion:.3f}{via}")
        if self.duplication:
            parts.append(f"duplication −{w.duplication:g}×{self.duplication:.3f}")
        if self.matched_terms:
            parts.append("matched: " + ", ".join(self.matched_terms))
        parts.extend(self.notes)
        return "; ".join(parts)


@dataclass(frozen=True)
class Recalled:
    """One recall result."""

    item: MemoryItem
    score: float
    reason: Reason


@dataclass
class Candidate:
    item: MemoryItem
    dense: float
    keyword: float
    vector: Any
    association: float = 0.0
    """How much the memory shares with the first hits (``expansion``), 0..1."""
    via: tuple[str, ...] = ()
    """The rare terms it shares with them."""


def recency(item: MemoryItem, now: datetime, weights: RankingWeights) -> float:
    half_life = weights.half_life_days.get(item.type, 30.0)
    age_days = max(0.0, (now - item.created_at).total_seconds() / 86_400)
    return math.exp(-math.log(2) * age_days / half_life)


def usage(item: MemoryItem, weights: RankingWeights) -> float:
    fb = item.feedback
    uses = (
        item.access_count
        + fb.get("used", 0)
        + fb.get("edited", 0)
        + 2 * fb.get("helpful", 0)
        - 2 * fb.get("not_helpful", 0)
        - fb.get("neglected", 0)
    )
    return min(1.0, math.log1p(max(0, uses)) / math.log1p(weights.usage_saturation))


def rank(
    candidates: Sequence[Candidate],
    *,
    limit: int,
    now: datetime,
    weights: RankingWeights,
    min_relevance: float = 0.0,
    as_of: datetime | None = None,
    keyword_mass: float = 0.0,
    baseline: float | None = None,
    associate: Callable[[Sequence[Candidate], Sequence[Candidate]], None] | None = None,
) -> list[Recalled]:
    """Score every candidate, then pick the top ``limit`` greedily with the duplication penalty.
    A superseded or no longer valid memory loses ``weights.superseded``, unless recall is
    ``as_of`` a moment: its candidates were all valid then.

    Keyword scores are divided by the best one among the candidates, so both halves of
    relevance lie in 0..1 whatever the corpus.
    """
    import numpy as np

    if not candidates or limit <= 0:
        return []
    calibrate = weights.calibrate * _weak_lexical_evidence(candidates, keyword_mass)
    # Cosines are measured from the query's baseline (see ``RankingWeights.baseline``): what
    # unrelated text scores in this embedder's space counts 0, in relevance and duplication.
    floor = min(0.99, weights.baseline * baseline) if baseline is not None else 0.0
    denses, keywords = _halves(candidates, keyword_mass, calibrate, floor)
    relevances = [
        weights.dense_share * dense + (1 - weights.dense_share) * keyword
        for dense, keyword in zip(denses, keywords)
    ]
    # ``min_relevance`` is an absolute bar (cosine and keyword share, as uncalibrated): a
    # calibrated place among the candidates would let the best of unrelated memories pass it.
    absolute = relevances
    if calibrate and min_relevance > 0:
        absolute = [
            weights.dense_share * dense + (1 - weights.dense_share) * keyword
            for dense, keyword in zip(*_halves(candidates, keyword_mass, 0.0))
        ]
    contexts = _contexts(candidates, relevances)
    if calibrate:
        # A neighbour lends context only what it is more relevant than the memory itself: a
        # memory is lifted toward a relevant neighbour, never past it, and a near-tie gains none.
        contexts = [
            (1 - calibrate) * c + calibrate * max(0.0, c - r) for c, r in zip(contexts, relevances)
        ]
    base: list[tuple[float, Reason]] = []
    kept: list[Candidate] = []
    for c, relevance, bar, context, keyword in zip(
        candidates, relevances, absolute, contexts, keywords
    ):
        reason = Reason(
            relevance=relevance,
            dense=min(1.0, max(0.0, c.dense)),  # the embedding's own cosine, to explain
            keyword=keyword,
            recency=recency(c.item, now, weights),
            importance=c.item.importance,
            usage=usage(c.item, weights),
            duplication=0.0,
            matched_terms=(),  # filled in for the returned results only
            weights=weights,
            notes=() if as_of else _notes(c.item, now),
            context=context,
        )
        if bar < min_relevance:
            continue
        score = (
            weights.relevance * relevance
            + weights.recency * reason.recency
            + weights.importance * reason.importance
            + weights.usage * reason.usage
            + weights.context * context
            - (weights.superseded if not as_of and _outdated(c.item, now) else 0.0)
        )
        base.append((score, reason))
        kept.append(c)
    candidates = kept
    if not candidates:
        return []
    if associate is not None and weights.expansion:
        # Spreading from the first hits (see ``RankingWeights.expansion``): they are the best
        # by the score so far; every candidate then gains by what it shares with them.
        order = sorted(range(len(candidates)), key=lambda i: (-base[i][0], candidates[i].item.id))
        associate([candidates[i] for i in order[:EXPANSION_SEEDS]], candidates)
        for n, c in enumerate(candidates):
            if c.association:
                score, reason = base[n]
                base[n] = (
                    score + weights.expansion * c.association,
                    dataclasses.replace(reason, expansion=c.association, via=c.via),
                )
    if not as_of:
        _below_superseders(candidates, base)

    vectors = np.stack([np.asarray(c.vector, dtype=np.float32) for c in candidates])
    remaining = sorted(range(len(candidates)), key=lambda i: (-base[i][0], candidates[i].item.id))
    # Each candidate's highest similarity to a chosen one, updated once per pick (one
    # matrix-vector product) instead of recomputed for every candidate the scan looks at.
    closest = np.full(len(candidates), -np.inf, dtype=np.float32)
    chosen = False
    results: list[Recalled] = []
    threshold = weights.duplicate_threshold
    while remaining and len(results) < limit:
        best_index, best_score, best_dup = remaining[0], -math.inf, 0.0
        # A candidate's penalty can only grow as more are chosen, so scanning in base order
        # can stop once no later candidate could win even with no penalty.
        for i in remaining:
            if base[i][0] <= best_score:
                break
            duplication = 0.0
            if chosen and weights.duplication:
                similarity = (float(closest[i]) - floor) / (1.0 - floor)
                duplication = max(0.0, (similarity - threshold) / (1.0 - threshold or 1.0))
            score = base[i][0] - weights.duplication * duplication
            if score > best_score:
                best_index, best_score, best_dup = i, score, duplication
        remaining.remove(best_index)
        if weights.duplication and remaining and len(results) + 1 < limit:
            np.maximum(closest, vectors @ vectors[best_index], out=closest)
        chosen = True
        reason = dataclasses.replace(base[best_index][1], duplication=best_dup)
        results.append(Recalled(candidates[best_index].item, best_score, reason))
    return results


EXPANSION_SEEDS = 3
"""The first hits whose rare terms ``expansion`` spreads from."""

LEXICAL_EVIDENCE = (0.25, 0.5)
"""Shares of the query's idf mass that the best keyword match covers, below which the query is
calibrated fully and above which not at all (linear between): below a quarter the words shared
are incidental (an ending, a common word) and the embedding's own order should decide; from half
on they are evidence and the keyword half keeps today's scale."""


def _weak_lexical_evidence(candidates: Sequence[Candidate], keyword_mass: float) -> float:
    """1 when no candidate matches much of the query's words, 0 when one matches most (see
    ``LEXICAL_EVIDENCE``)."""
    if keyword_mass <= 0:
        return 1.0
    covered = max(c.keyword for c in candidates) / keyword_mass
    low, high = LEXICAL_EVIDENCE
    return min(1.0, max(0.0, (high - covered) / (high - low)))


def _halves(
    candidates: Sequence[Candidate],
    keyword_mass: float,
    calibrate: float,
    floor: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Each candidate's dense and keyword halves of relevance, in 0..1.

    Uncalibrated: the cosine, and the BM25 score over the best candidate's. Calibrated (see
    ``RankingWeights.calibrate``): the cosine's place from the candidates' mean (0) to the
    best (1), and the BM25 score over ``keyword_mass``, the score of a memory holding every
    query term once."""
    cosines = [min(1.0, max(0.0, (c.dense - floor) / (1.0 - floor))) for c in candidates]
    best_keyword = max(c.keyword for c in candidates) or 1.0
    keywords = [c.keyword / best_keyword for c in candidates]
    if not calibrate:
        return cosines, keywords
    mean = sum(cosines) / len(cosines)
    spread = max(cosines) - mean
    placed = [1.0 if spread <= 1e-9 else min(1.0, max(0.0, (x - mean) / spread)) for x in cosines]
    shares = (
        [min(1.0, c.keyword / keyword_mass) for c in candidates] if keyword_mass > 0 else keywords
    )
    keep = 1 - calibrate
    return (
        [keep * x + calibrate * p for x, p in zip(cosines, placed)],
        [keep * k + calibrate * q for k, q in zip(keywords, shares)],
    )


def _outdated(item: MemoryItem, now: datetime) -> bool:
    """Superseded by a newer memory, or no longer valid (``valid_to`` passed)."""
    return bool(item.superseded_by) or (item.valid_to is not None and item.valid_to <= now)


def _notes(item: MemoryItem, now: datetime) -> tuple[str, ...]:
    if item.superseded_by:  # its validity ended where the newer one's began (sleep)
        return (f"superseded by newer memory {item.superseded_by}",)
    if item.valid_to is not None and item.valid_to <= now:
        return (f"no longer valid since {item.valid_to.isoformat()}",)
    return ()


def _contexts(candidates: Sequence[Candidate], relevances: Sequence[float]) -> list[float]:
    """Each candidate's best timeline neighbour's relevance (0 when no neighbour is a candidate)."""
    position = {c.item.id: n for n, c in enumerate(candidates)}
    contexts = [0.0] * len(candidates)
    for n, c in enumerate(candidates):
        before = position.get(c.item.follows or "")
        if before is not None and before != n:
            contexts[n] = max(contexts[n], relevances[before])
            contexts[before] = max(contexts[before], relevances[n])
    return contexts


def _below_superseders(candidates: Sequence[Candidate], base: list[tuple[float, Reason]]) -> None:
    """A memory contradicted by a newer one that is also a candidate ranks just below it,
    however well its words match: the newer statement wins (chains settle in a few passes)."""
    position = {c.item.id: n for n, c in enumerate(candidates)}
    for _ in range(len(candidates)):
        changed = False
        for n, c in enumerate(candidates):
            newer = position.get(c.item.superseded_by or "")
            if newer is not None and base[n][0] >= base[newer][0]:
                base[n] = (base[newer][0] - 1e-6, base[n][1])
                changed = True
        if not changed:
            return
