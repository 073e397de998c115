""" "Sleep": consolidating episodes into semantic facts, with provenance, duplicates and conflicts.

Nothing is deleted silently: sources stay (marked consolidated), near-duplicate facts are merged
into the older one behind a ``duplicates`` link, and conflicting facts are both kept behind a
``contradicts`` link, the older marked ``superseded_by`` the newer so recall ranks it lower.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memento_core.filters import live_clause
from memento_core.model import LinkType, MemoryItem, MemoryType, Privacy, Scope, as_utc, utcnow
from memento_core.storage import item_from_record, to_micros

if TYPE_CHECKING:
    from memento_core.memento import Memento
    from memento_core.summarize import Summarizer

CLUSTER_SIMILARITY = 0.6
"""Cosine similarity to a cluster's centre above which an episode joins it."""
TAG_BONUS = 0.1
DUPLICATE_SIMILARITY = 0.92
CONFLICT_SIMILARITY = 0.75

_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|none|nobody|nothing|neither|nor|no longer)\b|n't|"
    r"않|안\s|못|없|不|没|沒|ない|ません",
    re.IGNORECASE,
)


@dataclass
class SleepReport:
    considered: int = 0
    clusters: int = 0
    written: list[str] = field(default_factory=list)
    consolidated: list[str] = field(default_factory=list)
    derived_links: int = 0
    merged: list[tuple[str, str]] = field(default_factory=list)
    """(newer, older) near-duplicate pairs; the newer was folded into the older."""
    contradictions: list[tuple[str, str]] = field(default_factory=list)
    """(newer, older) conflicting pairs; both kept, the older superseded."""


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(unicodedata.normalize("NFC", text)))


def _words(text: str) -> set[str]:
    from memento_core.keyword import tokenize

    return set(tokenize(_NEGATION.sub(" ", text)))


def conflicting(a: MemoryItem, b: MemoryItem, similarity: float) -> bool:
    """Incompatible statements about one subject: a different value for the same key in two
    dictionary memories about the same subject, or one of two very similar sentences negated."""
    if a.data and b.data:
        subject_a = a.data.get("subject", a.title)
        subject_b = b.data.get("subject", b.title)
        if subject_a is not None and subject_a == subject_b:
            shared = (set(a.data) & set(b.data)) - {"subject"}
            return any(a.data[k] != b.data[k] for k in shared)
    if similarity < CONFLICT_SIMILARITY or _negated(a.content) == _negated(b.content):
        return False
    words_a, words_b = _words(a.content), _words(b.content)
    overlap = len(words_a & words_b) / max(1, len(words_a | words_b))
    return overlap >= 0.5


def _clusters(items: Sequence[MemoryItem], vectors: Any) -> list[list[int]]:
    """Greedy single pass in time order: each episode joins the closest centre, if close enough."""
    import numpy as np

    clusters: list[list[int]] = []
    centres: list[Any] = []
    for n, item in enumerate(items):
        best, best_score = -1, CLUSTER_SIMILARITY
        for c, centre in enumerate(centres):
            score = float(centre @ vectors[n])
            if set(item.tags) & {t for i in clusters[c] for t in items[i].tags}:
                score += TAG_BONUS
            if score >= best_score:
                best, best_score = c, score
        if best < 0:
            clusters.append([n])
            centres.append(vectors[n])
        else:
            clusters[best].append(n)
            centre = np.mean([vectors[i] for i in clusters[best]], axis=0)
            centres[best] = centre / (np.linalg.norm(centre) or 1.0)
    return clusters


def _common(values: Sequence[str | None]) -> str | None:
    return values[0] if len(set(values)) == 1 else None


def _fact_for(sources: Sequence[MemoryItem], text: str) -> Any:
    from memento_core.memento import MemoryDraft

    privacy_order = [Privacy.PRIVATE, Privacy.TEAM, Privacy.PUBLIC]
    tags = list(dict.fromkeys(t for s in sources for t in s.tags))[:64]
    return MemoryDraft(
        content=text,
        type=MemoryType.SEMANTIC,
        scope=Scope(
            user_id=_common([s.scope.user_id for s in sources]),
            agent_id=_common([s.scope.agent_id for s in sources]),
            project_id=_common([s.scope.project_id for s in sources]),
        ),
        source="consolidation",
        privacy=min((s.privacy for s in sources), key=privacy_order.index),
        importance=max(s.importance for s in sources),
        tags=tags,
        created_at=max(s.created_at for s in sources),
        origin_trace={"derived_from": [s.id for s in sources]},
    )


def sleep(
    mem: Memento,
    scope: Scope,
    *,
    since: datetime | None = None,
    summarizer: Summarizer | None = None,
    min_cluster: int = 2,
    now: datetime | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> SleepReport:
    """Consolidate ``scope.user_id``'s unconsolidated episodes (since ``since``) into facts.

    Idempotent: sources are marked consolidated and facts get content-derived ids, so a second
    run writes nothing and two concurrent runs write each fact once. Episodes that join no
    cluster stay unconsolidated and may join one in a later sleep.
    """
    import numpy as np

    if summarizer is None:
        from memento_core.summarize import ExtractiveSummarizer

        summarizer = ExtractiveSummarizer()
    moment = as_utc(now, "now") if now else utcnow()
    store = mem._store
    clauses: list[dict[str, Any]] = [
        {"type": MemoryType.EPISODIC.value},
        {"consolidated_at": 0},
        {"user_id": scope.user_id or ""},
        *live_clause(moment),
    ]
    if since is not None:
        clauses.append({"created_at": {"$gte": to_micros(as_utc(since, "since"))}})
    records = list(
        store.iter_records(
            store.items, where={"$and": clauses}, include=["metadatas", "documents", "embeddings"]
        )
    )
    records.sort(key=lambda r: (r[1]["created_at"], r[0]))
    items = [item_from_record(i, d or "", m) for i, m, d, _ in records]
    report = SleepReport(considered=len(items))
    if items:
        vectors = np.asarray([r[3] for r in records], dtype=np.float32)
        groups = [g for g in _clusters(items, vectors) if len(g) >= min_cluster]
        report.clusters = len(groups)
        for done, group in enumerate(groups, 1):
            sources = [items[i] for i in group]
            text = summarizer.summarize([s.content for s in sources])
            fact_id = mem.remember_many([_fact_for(sources, text)])[0]
            report.written.append(fact_id)
            for source in sources:
                mem.link(fact_id, LinkType.DERIVED_FROM, source.id)
            report.derived_links += len(sources)
            ids = [s.id for s in sources]
            store.items.update(
                ids=ids, metadatas=[{"consolidated_at": to_micros(moment)}] * len(ids)
            )
            report.consolidated.extend(ids)
            if on_progress:
                on_progress(done, len(groups))
    _check_facts(mem, scope, report, moment)
    return report


def _check_facts(mem: Memento, scope: Scope, report: SleepReport, moment: datetime) -> None:
    """Link each live fact of the user to its nearest older neighbours: duplicates are merged,
    conflicts marked. Pairs already linked are skipped, so a second run writes nothing."""
    store = mem._store
    where = {
        "$and": [
            {"type": MemoryType.SEMANTIC.value},
            {"user_id": scope.user_id or ""},
            *live_clause(moment),
        ]
    }
    records = list(
        store.iter_records(
            store.items, where=where, include=["metadatas", "documents", "embeddings"]
        )
    )
    facts = [item_from_record(i, d or "", m) for i, m, d, _ in records]
    if len(facts) < 2:
        return
    import numpy as np

    vectors = np.asarray([r[3] for r in records], dtype=np.float32)
    order = sorted(range(len(facts)), key=lambda n: (facts[n].created_at, facts[n].id))
    merged: set[str] = set()
    for position, newer_index in enumerate(order):
        newer = facts[newer_index]
        if newer.id in merged:
            continue
        for older_index in order[:position]:
            older = facts[older_index]
            if older.id in merged:
                continue
            similarity = float(vectors[newer_index] @ vectors[older_index])
            if similarity >= DUPLICATE_SIMILARITY and not conflicting(newer, older, similarity):
                _merge(mem, newer, older)
                merged.add(newer.id)
                report.merged.append((newer.id, older.id))
                break
            if conflicting(newer, older, similarity) and older.superseded_by != newer.id:
                mem.link(newer.id, LinkType.CONTRADICTS, older.id)
                store.items.update(ids=[older.id], metadatas=[{"superseded_by": newer.id}])
                report.contradictions.append((newer.id, older.id))


def _merge(mem: Memento, newer: MemoryItem, older: MemoryItem) -> None:
    """Fold ``newer`` into ``older``: the older inherits its provenance, the newer is hidden."""
    mem.link(newer.id, LinkType.DUPLICATES, older.id)
    for link in mem.links(newer.id):
        if link.type is LinkType.DERIVED_FROM and link.source_id == newer.id:
            mem.link(older.id, LinkType.DERIVED_FROM, link.target_id)
    mem.forget(newer.id)
