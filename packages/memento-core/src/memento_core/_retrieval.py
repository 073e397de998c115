"""Recall's candidates: the nearest and the best keyword matches a viewer may see, read by id.

Each process keeps an in-memory candidate index (``CandidateIndex``: BM25 postings and unit
vectors, with each memory's owner, project and privacy), loaded in partitions by who may see a
memory as viewers need them (``_partitions``). Recall searches it exactly, then reads
the candidates from Chroma by id and decides visibility and the filter on the records read.
A partition too large to load is searched in its own collection instead (``_storage._mirrors``):
its nearest memories join the exact ones, and its keyword postings (``_storage._postings``) are
scored with the index's, statistics over both; every candidate is then scored for keywords on
the text read, with those statistics, so all are scored alike.
Chroma's own filtered vector query evaluates the ``where`` over the whole collection (~0.5 s at
100k memories), so it is not used here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from memento_core import _history as history
from memento_core._candidate_index import Elsewhere, matched_terms, tokenize
from memento_core._filters import RecallFilter
from memento_core._model import MemoryItem, Scope, as_utc, check_text, utcnow
from memento_core._partitions import PUBLIC, TEAM, USER, digest, partition_where
from memento_core._ranking import Candidate, RankingWeights, Recalled, rank
from memento_core._visibility import check_viewer, is_visible
from memento_core.errors import InvalidInput, StoreUnavailable

if TYPE_CHECKING:
    from memento_core._engine import Engine

MAX_RECALL_LIMIT = 1_000


def recall(
    engine: Engine,
    query: str,
    *,
    scope: Scope | None,
    limit: int,
    filter: RecallFilter | Mapping[str, Any] | None,
    weights: RankingWeights | Mapping[str, Any] | None,
    min_relevance: float,
    now: datetime | None,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
) -> list[Recalled]:
    """Check the arguments, gather candidates, rank them, note the uses (see ``Memento.recall``)."""
    check_text(query, "query")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        raise InvalidInput(
            f"limit must be a whole number from 1 to {MAX_RECALL_LIMIT}, got {limit!r}"
        )
    if (
        isinstance(min_relevance, bool)
        or not isinstance(min_relevance, (int, float))
        or not (0.0 <= min_relevance <= 1.0)
    ):
        raise InvalidInput(f"min_relevance must be from 0 to 1, got {min_relevance!r}")
    viewer = check_viewer(scope or Scope())  # refuses anything but a Scope, before any work
    recall_filter = filter if isinstance(filter, RecallFilter) else RecallFilter.build(filter)
    if weights is None:
        chosen = engine.weights
    elif isinstance(weights, RankingWeights):
        chosen = weights
    elif isinstance(weights, Mapping):
        chosen = engine.weights.replace(**weights)
    else:
        raise InvalidInput(
            f"weights must be RankingWeights or a mapping of weights, got {type(weights).__name__}"
        )
    moment = as_utc(now, "now") if now else utcnow()
    valid_at = None if as_of is None else as_utc(as_of, "as_of")
    stored_by = None if known_at is None else as_utc(known_at, "known_at")
    depth = max(engine.candidates, limit * 3)
    query_vector = engine.embedder.embed_query(query)
    with engine.usage.recalling():  # no usage write competes with recall's reads
        found, stored, mass, elsewhere, baseline = candidates(
            engine,
            query,
            query_vector,
            viewer,
            recall_filter,
            moment,
            depth,
            as_of=valid_at,
            known_at=stored_by,
        )
    results = rank(
        found,
        keyword_mass=mass,
        baseline=baseline,
        associate=_associate(engine, query, viewer, elsewhere) if chosen.expansion else None,
        limit=limit,
        now=moment,
        weights=chosen,
        min_relevance=min_relevance,
        as_of=valid_at,
    )
    # Matched words only for what is returned: tokenising every candidate costs more.
    results = [
        dataclasses.replace(
            r,
            reason=dataclasses.replace(
                r.reason, matched_terms=tuple(matched_terms(query, r.item.content))
            ),
        )
        for r in results
    ]
    if engine.track_usage and results and stored_by is None:  # looking back is no use
        # An access, not a use: being recalled must not raise a memory's next rank.
        engine.usage.record([stored[r.item.id] for r in results], moment, uses=0)
    engine.recalled(query, viewer, results)
    return results


@lru_cache(maxsize=1024)
def _term_set(text: str) -> frozenset[str]:
    """A text's distinct BM25 terms: expansion reads those of every candidate at each recall,
    and tokenising a long memory (thousands of words) each time cost more than ranking it
    (a test's 300 recalls of 2,000-word memories: 27 s without this cache, 3.6 s with it).
    1,024 texts: a few recalls' candidates, at most ~40 MB of the longest memories."""
    return frozenset(tokenize(text))


def _associate(
    engine: Engine, query: str, viewer: Scope, elsewhere: Elsewhere | None
) -> Callable[[Sequence[Candidate], Sequence[Candidate]], None]:
    """What sets each candidate's ``association`` with the first hits (spreading activation):
    the summed idf of the rare terms it shares with them, those not in the question, over the
    best candidate's. Only candidates take part — memories the viewer may see and the filter
    admits — so nothing else is reached, and the terms named come from memories the viewer
    may see. The first hits themselves count fully: they keep their places."""

    def associate(seeds: Sequence[Candidate], found: Sequence[Candidate]) -> None:
        first = {c.item.id for c in seeds}
        spread = set().union(*(_term_set(c.item.content) for c in seeds)) - _term_set(query)
        rare = engine.index.rare_terms(
            spread,
            elsewhere=elsewhere,
            viewer_user=viewer.user_id,
            viewer_project=viewer.project_id,
        )
        if not rare:
            return
        shared: dict[str, tuple[str, ...]] = {}
        for candidate in found:
            if candidate.item.id not in first:
                terms = _term_set(candidate.item.content) & rare.keys()
                if terms:
                    shared[candidate.item.id] = tuple(sorted(terms, key=lambda t: (-rare[t], t)))
        strength = {i: sum(rare[t] for t in terms) for i, terms in shared.items()}
        strongest = max(strength.values(), default=0.0) or 1.0
        for candidate in found:
            if candidate.item.id in first:
                candidate.association = 1.0
            elif candidate.item.id in shared:
                candidate.association = strength[candidate.item.id] / strongest
                candidate.via = shared[candidate.item.id][:3]

    return associate


def candidates(
    engine: Engine,
    query: str,
    query_vector: Any,
    viewer: Scope,
    recall_filter: RecallFilter,
    moment: datetime,
    depth: int,
    *,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
) -> tuple[list[Candidate], dict[str, MemoryItem], float, Elsewhere | None, float | None]:
    """Up to ``depth`` nearest and ``depth`` best keyword candidates ``viewer`` may see that
    ``recall_filter`` admits, scored for relevance; and every memory read, as stored with the
    noted uses folded in. With ``as_of``, only memories valid then; with ``known_at``, the
    memories as stored then (``_history.states_at``), live at that moment."""
    import numpy as np  # not at import time: ``import memento_core`` stays light

    # Partitions searched in the store: in their mirrors (``_mirrors``), or, too large to
    # load and not mirrored yet, by a filtered query (vector side only, bounded).
    far, filtered = engine.ready_for_recall(viewer)
    index = engine.index
    visible_to: dict[str, Any] = {
        "viewer_user": viewer.user_id,
        "viewer_project": viewer.project_id,
    }
    elsewhere: Elsewhere | None = None  # the keyword statistics of those
    stored = None
    if far:  # their postings (``_postings``), scored with what is held here
        # What this process holds of them is counted once, here, whichever other partitions
        # it holds: left out of their postings and out of their statistics.
        lists = {
            "public": digest(PUBLIC),
            "user": digest(USER + (viewer.user_id or "")),
            "team": digest(TEAM + (viewer.project_id or "")),
        }
        in_far = {name: d in far for name, d in lists.items()}
        held = {
            i: (length, tuple(lists[name] for name in names))
            for i, (length, names) in index.held_in(
                viewer.user_id, viewer.project_id, **in_far
            ).items()
        }
        followed = engine.partitions.followed()
        terms = list(dict.fromkeys(tokenize(query)))
        stored = engine.store.mirrors.keyword_postings(far, terms, held=held, followed=followed)
        if stored is None:  # dropped meanwhile (its user erased): nothing of it is found
            stored = engine.store.mirrors.keyword_postings((), terms, held=held)
    if stored is not None:
        elsewhere = Elsewhere(stored.memories, stored.frequency, stored.total_length)

    def keyword_search(limit: int) -> list[tuple[str, float]]:
        return index.search(query, limit=limit, stored=stored, **visible_to)

    keyword_fetch = depth
    keyword_hits = keyword_search(keyword_fetch)
    # The nearest memories the viewer may see, read from the store by id; visibility and
    # the filter are decided on the records read (``is_visible``, ``admits``). A ``where``
    # on this read would cost 50 ms at 100k memories: Chroma evaluates it over the whole
    # collection. More are read while the filter leaves fewer than ``depth``.
    admitted: dict[str, MemoryItem] = {}
    rejected: set[str] = set()
    current: dict[str, MemoryItem] = {}  # with ``known_at``: as stored now

    def read(ids: Sequence[str]) -> None:
        wanted = [i for i in dict.fromkeys(ids) if i not in admitted and i not in rejected]
        if not wanted:
            return
        # Noted uses folded in: one may have restarted an expiry clock the store has not seen.
        found = engine.usage.read_fresh(lambda: engine.store.cached_items(wanted))
        if len(found) < len(wanted):  # erased elsewhere: the feed named no ids
            engine.dropped(set(wanted) - {item.id for item in found})
        if known_at is not None:
            current.update((item.id, item) for item in found)
            found = history.states_at(engine, found, known_at)
        for item in found:
            if (
                is_visible(item, viewer)
                and recall_filter.admits(item, moment if known_at is None else known_at)
                and (as_of is None or item.valid_at(as_of))
            ):
                admitted[item.id] = item
        rejected.update(i for i in wanted if i not in admitted)

    far_vectors: dict[str, Any] = {}  # vectors of what the mirrors found

    baseline: list[float] = []  # the query's mean cosine over the memories held here

    def nearest_of(limit: int) -> list[tuple[str, float]]:
        found, mean = index.nearest_and_baseline(query_vector, limit=limit, **visible_to)
        if mean is not None and not baseline:
            baseline.append(mean)
        if not far and not filtered:
            return found
        best = dict(found)
        hits = engine.store.mirrors.nearest(far, query_vector, limit)
        for key in filtered:
            where, privacies = partition_where(key)
            try:
                hits += engine.store.nearest_in(where, privacies, query_vector, limit)
            except StoreUnavailable:
                raise
            except Exception:  # a read-only embedded reader lacks a vector written since
                continue
        for memory_id, cosine, vector in hits:
            if memory_id not in best:
                best[memory_id] = cosine
                far_vectors[memory_id] = vector
        return sorted(best.items(), key=lambda hit: -hit[1])[:limit]

    fetch = depth
    nearest = nearest_of(fetch)
    read([i for i, _ in nearest] + [i for i, _ in keyword_hits])  # one store read
    while True:
        dense = [(i, s) for i, s in nearest if i in admitted][:depth]
        if len(dense) >= depth or len(nearest) < fetch:
            break
        fetch *= 4
        nearest = nearest_of(fetch)
        read([i for i, _ in nearest])
    # Likewise the keyword matches: when the filter (a LangGraph namespace's tag, a type)
    # leaves fewer than ``depth`` of them, look further down rather than rank on what is left
    # of a cut taken over memories the filter refuses.
    while len(keyword_hits) == keyword_fetch and (
        sum(1 for i, _ in keyword_hits if i in admitted) < depth
    ):
        keyword_fetch *= 4
        keyword_hits = keyword_search(keyword_fetch)
        read([i for i, _ in keyword_hits])
    keyword_cut = len(keyword_hits) == keyword_fetch  # more memories match than were taken
    keyword_hits = [(i, score) for i, score in keyword_hits if i in admitted][:depth]
    keyword_scores = dict(keyword_hits)
    similarity = dict(dense)
    unseen = [i for i in keyword_scores if i in admitted and index.vector(i) is None]
    unseen = [i for i in unseen if i not in far_vectors]
    if unseen:  # keyword matches of a mirror: their vectors, for the dense half
        far_vectors.update(engine.store.mirrors.vectors(far, unseen))
    query_unit = np.asarray(query_vector, dtype=np.float32).ravel()
    query_unit = query_unit / (float(np.linalg.norm(query_unit)) or 1.0)
    scored: dict[str, Candidate] = {}
    for memory_id in [*similarity, *keyword_scores]:
        if memory_id in admitted and memory_id not in scored:
            vector = index.vector(memory_id)
            if vector is None and memory_id in far_vectors:
                vector = np.asarray(far_vectors[memory_id], dtype=np.float32).ravel()
                vector = vector / (float(np.linalg.norm(vector)) or 1.0)
            if vector is None:  # left the index since it was found (forgotten meanwhile)
                continue
            cosine = similarity.get(memory_id)
            if cosine is None:  # a keyword hit beyond the nearest ones
                cosine = float(vector @ query_unit)
            scored[memory_id] = Candidate(admitted[memory_id], cosine, 0.0, vector)
    reworded = [i for i in scored if i in current and current[i].content != admitted[i].content]
    if reworded:  # ranked on the text stored then, which the index no longer holds
        vectors = engine.embedder.embed_documents([admitted[i].content for i in reworded])
        for memory_id, vector in zip(reworded, vectors):
            unit = np.asarray(vector, dtype=np.float32).ravel()
            unit = unit / (float(np.linalg.norm(unit)) or 1.0)
            scored[memory_id] = Candidate(admitted[memory_id], float(unit @ query_unit), 0.0, unit)
    for memory_id, candidate in scored.items():
        candidate.keyword = keyword_scores.get(memory_id, 0.0)
    if keyword_cut or len(keyword_hits) == depth:
        # Vector candidates below the keyword cut-off still deserve their keyword score.
        for memory_id, score in index.scores_for(
            query, [i for i in scored if i not in keyword_scores], **visible_to
        ).items():
            scored[memory_id].keyword = score
    if elsewhere is not None:
        # Some partitions searched in the store: every candidate is scored on the text read,
        # with statistics over what is held here and there (``scores_of_texts``), so all are
        # scored alike.
        texts = {i: admitted[i].content for i in scored}
        keyword = index.scores_of_texts(query, texts, elsewhere=elsewhere, **visible_to)
        for memory_id, candidate in scored.items():
            candidate.keyword = keyword.get(memory_id, 0.0)
    for memory_id in reworded:  # the index's keyword score is for the text of now
        scored[memory_id].keyword = 0.0
    mass = index.query_mass(query, elsewhere=elsewhere, **visible_to)
    return list(scored.values()), admitted, mass, elsewhere, (baseline[0] if baseline else None)
