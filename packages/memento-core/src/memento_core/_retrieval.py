"""Recall's candidates: the nearest and the best keyword matches a viewer may see, read by id.

Each process keeps an in-memory candidate index (``keyword.CandidateIndex``: BM25 postings and unit
vectors, with each memory's owner, project and privacy). Recall searches it exactly, then reads
the candidates from Chroma by id and decides visibility and the filter on the records read.
Chroma's own filtered vector query evaluates the ``where`` over the whole collection (~0.5 s at
100k memories), so it is not used here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memento_core._filters import RecallFilter, is_visible
from memento_core._model import MemoryItem, Scope
from memento_core._ranking import Candidate
from memento_core._storage import item_from_record

if TYPE_CHECKING:
    from memento_core._memento import Memento


def candidates(
    mem: Memento,
    query: str,
    query_vector: Any,
    viewer: Scope,
    recall_filter: RecallFilter,
    moment: datetime,
    depth: int,
) -> tuple[list[Candidate], dict[str, MemoryItem]]:
    """Up to ``depth`` nearest and ``depth`` best keyword candidates ``viewer`` may see that
    ``recall_filter`` admits, scored for relevance; and every memory read, as stored."""
    import numpy as np  # not at import time: ``import memento_core`` stays light

    mem._sync_keywords()
    visible_to = {"viewer_user": viewer.user_id, "viewer_project": viewer.project_id}
    keyword_hits = mem._keywords.search(query, limit=depth, **visible_to)
    keyword_scores = dict(keyword_hits)
    # The nearest memories the viewer may see, read from the store by id; visibility and
    # the filter are decided on the records read (``is_visible``, ``admits``). A ``where``
    # on this read would cost 50 ms at 100k memories: Chroma evaluates it over the whole
    # collection. More are read while the filter leaves fewer than ``depth``.
    admitted: dict[str, MemoryItem] = {}
    rejected: set[str] = set()

    def read(ids: Sequence[str]) -> None:
        wanted = [i for i in dict.fromkeys(ids) if i not in admitted and i not in rejected]
        if not wanted:
            return
        found = mem._store.items.get(ids=wanted, include=["metadatas", "documents"])
        for memory_id, meta, document in zip(found["ids"], found["metadatas"], found["documents"]):
            item = item_from_record(memory_id, document or "", meta)
            if is_visible(item, viewer) and recall_filter.admits(item, moment):
                admitted[memory_id] = item
        rejected.update(i for i in wanted if i not in admitted)

    fetch = depth
    nearest = mem._keywords.nearest(query_vector, limit=fetch, **visible_to)
    read([i for i, _ in nearest] + [i for i, _ in keyword_hits])  # one store read
    while True:
        dense = [(i, s) for i, s in nearest if i in admitted][:depth]
        if len(dense) >= depth or len(nearest) < fetch:
            break
        fetch *= 4
        nearest = mem._keywords.nearest(query_vector, limit=fetch, **visible_to)
        read([i for i, _ in nearest])
    similarity = dict(dense)
    query_unit = np.asarray(query_vector, dtype=np.float32).ravel()
    query_unit = query_unit / (float(np.linalg.norm(query_unit)) or 1.0)
    scored: dict[str, Candidate] = {}
    for memory_id in [*similarity, *keyword_scores]:
        if memory_id in admitted and memory_id not in scored:
            vector = mem._keywords.vector(memory_id)
            cosine = similarity.get(memory_id)
            if cosine is None:  # a keyword hit beyond the nearest ones
                cosine = float(vector @ query_unit)
            item = mem._usage.with_pending(admitted[memory_id])
            scored[memory_id] = Candidate(item, cosine, 0.0, vector)
    for memory_id, candidate in scored.items():
        candidate.keyword = keyword_scores.get(memory_id, 0.0)
    if len(keyword_hits) == depth:
        # Vector candidates below the keyword cut-off still deserve their keyword score.
        for memory_id, score in mem._keywords.scores_for(
            query, [i for i in scored if i not in keyword_scores]
        ).items():
            scored[memory_id].keyword = score
    return list(scored.values()), admitted
