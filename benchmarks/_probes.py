"""Probes of recall for ``scale.py``: a clock for each stage of ``Memento.recall``, the raw
Chroma query and the keyword index timed alone, and a cProfile of recall."""

from __future__ import annotations

import cProfile
import pstats
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from _common import latency_summary

import memento_core._retrieval as retrieval_module
import memento_core._storage._repository as repository_module
from memento_core import Memento, RecallFilter
from memento_core._filters import where_clause
from memento_core._visibility import visibility_clause

if TYPE_CHECKING:
    from scale import Query

Vectors = npt.NDArray[np.float32]
CANDIDATES = 60
"""``Memento.candidates``: the depth of both candidate searches for a limit-10 recall."""
LIMIT = 10


def timed_calls(call: Callable[[Query], Any], queries: Sequence[Query]) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        call(query)
        samples.append(1000 * (time.perf_counter() - started))
    return samples


class StageClock:
    """Times the stages of ``Memento.recall`` in place, by wrapping what it calls: the Chroma
    collection, the keyword index, the embedder, the usage recorder, and the module functions
    ``recall`` looks up at call time. Only calls from this thread count (the usage writer
    thread uses the same collection)."""

    def __init__(self, memento: Memento) -> None:
        self.memento = memento
        self.thread = threading.get_ident()
        self.current: dict[str, float] = defaultdict(float)
        self.samples: list[dict[str, float]] = []
        self._undo: list[Callable[[], None]] = []

    def _wrap(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self.thread:
                return function(*args, **kwargs)
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.current[stage] += 1000 * (time.perf_counter() - started)

        return timed

    def _patch(self, owner: Any, name: str, stage: str) -> None:
        original = getattr(owner, name)
        in_dict = name in getattr(owner, "__dict__", {})
        setattr(owner, name, self._wrap(stage, original))
        if in_dict:
            self._undo.append(lambda: setattr(owner, name, original))
        else:
            self._undo.append(lambda: delattr(owner, name))

    @contextmanager
    def installed(self) -> Iterator[StageClock]:
        # Probes reach into the engine on purpose: they time its stages.
        store = self.memento._engine.store
        collection = store._items
        clock = self

        class TimedCollection:
            def __getattr__(self, name: str) -> Any:
                value = getattr(collection, name)
                stages = {
                    "query": "chroma query (vector, filtered)",
                    "get": "chroma get (candidates by id)",
                    "count": "chroma count (index sync)",
                }
                return clock._wrap(stages[name], value) if name in stages else value

        store._items = TimedCollection()
        self._undo.append(lambda: setattr(store, "_items", collection))
        self._patch(self.memento.embedder, "embed_query", "query vector (cache lookup)")
        self._patch(self.memento._engine.index, "search", "keyword search (BM25)")
        self._patch(self.memento._engine.index, "scores_for", "keyword scores_for")
        self._patch(self.memento._engine.index, "nearest", "vector search (in memory)")
        self._patch(self.memento._engine.usage, "record", "usage record")
        for name, stage in (
            ("check_viewer", "viewer check"),
            ("rank", "rank"),
            ("matched_terms", "matched_terms"),
        ):
            self._patch(retrieval_module, name, stage)
        # Candidates are read and turned into items by the repository.
        self._patch(repository_module, "item_from_record", "records → MemoryItem")
        try:
            yield self
        finally:
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()

    def recall(self, query: Query) -> None:
        self.current = defaultdict(float)
        started = time.perf_counter()
        self.memento.recall(query.text, scope=query.viewer, limit=LIMIT)
        total = 1000 * (time.perf_counter() - started)
        sample = dict(self.current)
        sample["other (recall's own Python)"] = total - sum(sample.values())
        sample["total"] = total
        self.samples.append(sample)

    def summary(self) -> dict[str, dict[str, float]]:
        stages = sorted({s for sample in self.samples for s in sample})
        total = float(np.mean([s["total"] for s in self.samples]))
        result = {}
        for stage in stages:
            values = [s.get(stage, 0.0) for s in self.samples]
            mean = float(np.mean(values))
            result[stage] = {
                "mean_ms": round(mean, 2),
                "p50_ms": round(float(np.percentile(values, 50)), 2),
                "p95_ms": round(float(np.percentile(values, 95)), 2),
                "share": round(mean / total, 3) if total else 0.0,
            }
        return dict(sorted(result.items(), key=lambda kv: -kv[1]["mean_ms"]))


def chroma_probes(memento: Memento, queries: Sequence[Query], vectors: dict[str, Vectors]) -> Any:
    """The raw Chroma query as recall makes it, and with less filtering or payload."""
    items = memento._engine.store._items
    now = datetime.now(timezone.utc)
    no_filter = RecallFilter()

    def run(where: Callable[[Query], Any], include: list[str]) -> dict[str, float]:
        def call(query: Query) -> None:
            items.query(
                query_embeddings=[vectors[query.text]],
                n_results=CANDIDATES,
                where=where(query),
                include=include,
            )

        return latency_summary(timed_calls(call, queries))

    full = ["metadatas", "documents", "distances", "embeddings"]
    return {
        "full where (as recall), full payload": run(
            lambda q: where_clause(q.viewer, no_filter, now), full
        ),
        "full where, distances only": run(
            lambda q: where_clause(q.viewer, no_filter, now), ["distances"]
        ),
        "visibility clause only, full payload": run(lambda q: visibility_clause(q.viewer), full),
        "user_id equality only, full payload": run(
            lambda q: {"user_id": q.viewer.user_id or ""}, full
        ),
        "no where, full payload": run(lambda q: None, full),
    }


def keyword_probe(memento: Memento, queries: Sequence[Query]) -> dict[str, float]:
    index = memento._engine.index

    def call(query: Query) -> None:
        index.search(
            query.text,
            limit=CANDIDATES,
            viewer_user=query.viewer.user_id,
            viewer_project=query.viewer.project_id,
        )

    return latency_summary(timed_calls(call, queries))


def profile_recall(memento: Memento, queries: Sequence[Query], top: int = 20) -> dict[str, Any]:
    """cProfile of recall: the functions with the most own time and the most cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        memento.recall(query.text, scope=query.viewer, limit=LIMIT)
    profiler.disable()
    table: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profiler).stats
    rows = []
    for (file, line, function), (_, calls, own, cumulative, _) in table.items():
        where = file if file == "~" else f"{shorten(file)}:{line}"
        rows.append(
            {
                "function": f"{where}({function})",
                "calls_per_recall": round(calls / len(queries), 1),
                "own_ms_per_recall": round(1000 * own / len(queries), 2),
                "cumulative_ms_per_recall": round(1000 * cumulative / len(queries), 2),
            }
        )
    return {
        "recalls": len(queries),
        "by_own_time": sorted(rows, key=lambda r: -r["own_ms_per_recall"])[:top],
        "by_cumulative_time": sorted(rows, key=lambda r: -r["cumulative_ms_per_recall"])[:top],
    }


def shorten(file: str) -> str:
    for marker in ("site-packages/", "src/", "lib/python"):
        if marker in file:
            return file.split(marker, 1)[1]
    return file
