""" "Sleep": consolidating episodes into semantic facts, with provenance, duplicates and conflicts.

Nothing is deleted silently: sources stay (marked consolidated), near-duplicate facts are merged
into the older one behind a ``duplicates`` link, and conflicting facts are both kept behind a
``contradicts`` link, the older marked ``superseded_by`` the newer so recall ranks it lower.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memento_core import _history, _links, _writing
from memento_core._drafts import MemoryDraft
from memento_core._model import (
    Link,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
    as_utc,
    content_key,
    utcnow,
)
from memento_core._storage import Repository, to_micros
from memento_core._visibility import live_clause
from memento_core.errors import InvalidInput, InvalidScope

if TYPE_CHECKING:
    from memento_core._engine import Engine
    from memento_core._summarize import Summarizer

CLUSTER_SIMILARITY = 0.6
"""Cosine similarity to a cluster's centre above which an episode joins it."""
TAG_BONUS = 0.1
DUPLICATE_SIMILARITY = 0.92
CONFLICT_SIMILARITY = 0.75
CONSOLIDATION_SOURCE = "consolidation"
"""The ``source`` of the facts sleep writes."""
MERGE_CHAIN = 16
"""Merges followed from a hidden fact to the live one it ended in."""
WRITE_CHUNK = 64
"""Clusters whose facts, links and marks are written together: a round trip to Chroma costs
tens of milliseconds, so writing per source would dominate a sleep."""

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
    from memento_core._candidate_index import tokenize

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
    """Greedy single pass in time order: each episode joins the closest centre, if close enough
    (a shared tag adds ``TAG_BONUS``); on a tie, the newer cluster. A centre is the normalised
    mean of its members."""
    import numpy as np

    clusters: list[list[int]] = []
    sums = np.zeros_like(vectors)
    centres = np.zeros_like(vectors)
    clusters_with_tag: dict[str, set[int]] = {}
    for n, item in enumerate(items):
        best = -1
        if clusters:
            scores = centres[: len(clusters)] @ vectors[n]
            tagged = set().union(*(clusters_with_tag.get(t, set()) for t in item.tags))
            if tagged:
                scores[sorted(tagged)] += TAG_BONUS
            top = float(scores.max())
            if top >= CLUSTER_SIMILARITY:
                best = int(np.flatnonzero(scores == top)[-1])
        if best < 0:
            best = len(clusters)
            clusters.append([])
        clusters[best].append(n)
        for tag in item.tags:
            clusters_with_tag.setdefault(tag, set()).add(best)
        sums[best] += vectors[n]
        centres[best] = sums[best] / (np.linalg.norm(sums[best]) or 1.0)
    return clusters


def _common(values: Sequence[str | None]) -> str | None:
    return values[0] if len(set(values)) == 1 else None


def fact_key(text: str, scope: Scope) -> str:
    """A fact's id: its text and scope, apart from episodes with the same text."""
    return hashlib.sha256(f"fact\x1e{content_key(text, scope)}".encode()).hexdigest()[:32]


def _fact_for(sources: Sequence[MemoryItem], text: str) -> MemoryDraft:
    privacy_order = [Privacy.PRIVATE, Privacy.TEAM, Privacy.PUBLIC]
    tags = list(dict.fromkeys(t for s in sources for t in s.tags))[:64]
    scope = Scope(
        user_id=_common([s.scope.user_id for s in sources]),
        agent_id=_common([s.scope.agent_id for s in sources]),
        project_id=_common([s.scope.project_id for s in sources]),
    )
    return MemoryDraft(
        # Its own id, from its text: an extractive summary may be one source's sentence word
        # for word, and the fact must not be taken for that episode.
        id=fact_key(text, scope),
        content=text,
        type=MemoryType.SEMANTIC,
        scope=scope,
        source=CONSOLIDATION_SOURCE,
        privacy=min((s.privacy for s in sources), key=privacy_order.index),
        importance=max(s.importance for s in sources),
        tags=tags,
        created_at=max(s.created_at for s in sources),
        origin_trace={"derived_from": [s.id for s in sources]},
    )


def sleep(
    engine: Engine,
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

    if not isinstance(scope, Scope):
        raise InvalidScope(f"scope must be a Scope, got {type(scope).__name__}: {scope!r}")
    if isinstance(min_cluster, bool) or not isinstance(min_cluster, int) or min_cluster < 1:
        raise InvalidInput(f"min_cluster must be a whole number ≥ 1, got {min_cluster!r}")
    if summarizer is None:
        from memento_core._summarize import ExtractiveSummarizer

        summarizer = ExtractiveSummarizer()
    moment = as_utc(now, "now") if now else utcnow()
    engine.check_writable()
    clauses: list[dict[str, Any]] = [
        {"type": MemoryType.EPISODIC.value},
        {"consolidated_at": 0},
        {"user_id": scope.user_id or ""},
        *live_clause(moment),
    ]
    if since is not None:
        clauses.append({"created_at": {"$gte": to_micros(as_utc(since, "since"))}})
    records = engine.store.find_items_with_vectors({"$and": clauses})
    records.sort(key=lambda r: (r[0].created_at, r[0].id))
    items = [item for item, _ in records]
    report = SleepReport(considered=len(items))
    if items:
        vectors = np.asarray([vector for _, vector in records], dtype=np.float32)
        clusters = _clusters(items, vectors)
        groups = [g for g in clusters if len(g) >= min_cluster]
        report.clusters = len(groups)
        for start in range(0, len(groups), WRITE_CHUNK):
            chunk = [[items[i] for i in group] for group in groups[start : start + WRITE_CHUNK]]
            _write_facts(engine, chunk, summarizer, moment, report)
            if on_progress:
                on_progress(start + len(chunk), len(groups))
        left = sorted(i for g in clusters if len(g) < min_cluster for i in g)
        if left:
            _join_facts(engine, [items[i] for i in left], vectors[left], moment, report)
    _check_facts(engine, scope, report, moment)
    return report


def _join_facts(
    engine: Engine,
    episodes: Sequence[MemoryItem],
    vectors: Any,
    moment: datetime,
    report: SleepReport,
) -> None:
    """Episodes that formed no cluster join a fact an earlier sleep made for their topic, by
    the clustering rule (the closest centre of the fact's sources, a shared tag adding
    ``TAG_BONUS``, at least ``CLUSTER_SIMILARITY``): an episode written after its topic's last
    sleep would otherwise find no partner, and stay unconsolidated for good. Only a fact whose
    scope holds the episode's and who is no more visible than it may take it.

    Reads the user's live sleep facts, their sources and those sources' vectors: it grows with
    what the user has consolidated, and runs only when episodes are left over."""
    import numpy as np

    store = engine.store
    where = {
        "$and": [
            {"type": MemoryType.SEMANTIC.value},
            {"user_id": episodes[0].scope.user_id or ""},
            *live_clause(moment),
        ]
    }
    facts = [f for f in store.find_items(where) if f.source == CONSOLIDATION_SOURCE]
    if not facts:
        return
    derived = store.links_of_type(LinkType.DERIVED_FROM, sources=[f.id for f in facts])
    source_vectors = {
        item.id: vector
        for item, vector in store.items_with_vectors_by_id(
            list(dict.fromkeys(link.target_id for link in derived))
        )
    }
    sums = np.zeros((len(facts), vectors.shape[1]), dtype=np.float32)
    index_of = {fact.id: n for n, fact in enumerate(facts)}
    for link in derived:
        if link.target_id in source_vectors:
            sums[index_of[link.source_id]] += np.asarray(source_vectors[link.target_id])
    joined: dict[str, list[str]] = {}
    for episode, vector in zip(episodes, vectors):
        norms = np.linalg.norm(sums, axis=1)
        scores = (sums @ vector) / np.where(norms > 0, norms, 1.0)
        scores += [TAG_BONUS if set(f.tags) & set(episode.tags) else 0.0 for f in facts]
        scores[[not _may_take(f, episode) or norms[n] == 0 for n, f in enumerate(facts)]] = -2
        best = int(np.argmax(scores))
        if scores[best] >= CLUSTER_SIMILARITY:
            joined.setdefault(facts[best].id, []).append(episode.id)
            sums[best] += vector
    links = [
        Link(fact_id, LinkType.DERIVED_FROM, episode_id, created_at=moment)
        for fact_id, episode_ids in joined.items()
        for episode_id in episode_ids
    ]
    if links:
        store.add_links(links)
        ids = [link.target_id for link in links]
        store.set_fields(ids, {"consolidated_at": to_micros(moment)})
        report.derived_links += len(links)
        report.consolidated.extend(ids)


def _may_take(fact: MemoryItem, episode: MemoryItem) -> bool:
    """A fact may derive from an episode of its scope that is at least as visible as it."""
    order = [Privacy.PRIVATE, Privacy.TEAM, Privacy.PUBLIC]
    return (
        fact.scope.agent_id in (None, episode.scope.agent_id)
        and fact.scope.project_id in (None, episode.scope.project_id)
        and order.index(fact.privacy) <= order.index(episode.privacy)
    )


def _write_facts(
    engine: Engine,
    clusters: Sequence[Sequence[MemoryItem]],
    summarizer: Summarizer,
    moment: datetime,
    report: SleepReport,
) -> None:
    """One fact per cluster, then its ``derived_from`` links, then the sources' consolidated
    marks: in that order, so a run cut short is finished by the next (each step is idempotent)."""
    drafts = [
        _fact_for(sources, summarizer.summarize([s.content for s in sources]))
        for sources in clusters
    ]
    # A fact stored by an earlier (cut short) run stays as it is: only new ones are written.
    stored = engine.store.existing_ids([d.id for d in drafts if d.id is not None])
    _writing.remember_many(engine, [d for d in drafts if d.id not in stored])
    merged_into = _merged_into(engine.store, stored)
    fact_ids = [merged_into.get(d.id, d.id) for d in drafts if d.id is not None]
    links = [
        Link(fact_id, LinkType.DERIVED_FROM, source.id, created_at=moment)
        for fact_id, sources in zip(fact_ids, clusters)
        for source in sources
    ]
    engine.store.add_links(links)
    ids = [source.id for sources in clusters for source in sources]
    engine.store.set_fields(ids, {"consolidated_at": to_micros(moment)})
    report.written.extend(fact_ids)
    report.derived_links += len(links)
    report.consolidated.extend(ids)


def _merged_into(store: Repository, ids: Collection[str]) -> dict[str, str]:
    """Where each of these stored facts that a sleep merged away now lives: a cluster that
    summarises to a hidden fact's text feeds the fact it was merged into, not the hidden one."""
    now_at = {fact_id: fact_id for fact_id in ids}
    for _ in range(MERGE_CHAIN):
        places = sorted(set(now_at.values()))
        hidden = [item.id for item in store.items_by_id(places) if item.deleted_at is not None]
        if not hidden:
            break
        into = {
            link.source_id: link.target_id
            for link in store.links_of_type(LinkType.DUPLICATES, sources=hidden)
        }
        if not into:
            break
        now_at = {fact_id: into.get(place, place) for fact_id, place in now_at.items()}
    return {fact_id: place for fact_id, place in now_at.items() if place != fact_id}


def _check_facts(engine: Engine, scope: Scope, report: SleepReport, moment: datetime) -> None:
    """Link each live fact of the user to its older neighbours: a duplicate is merged into the
    oldest it duplicates, conflicts are linked and the older fact is marked superseded by the
    newest fact contradicting it. Links already stored and marks already right are left alone,
    so a second run writes nothing."""
    import numpy as np

    store = engine.store
    where = {
        "$and": [
            {"type": MemoryType.SEMANTIC.value},
            {"user_id": scope.user_id or ""},
            *live_clause(moment),
        ]
    }
    records = store.find_items_with_vectors(where)
    if len(records) < 2:
        return
    records.sort(key=lambda r: (r[0].created_at, r[0].id))
    facts = [item for item, _ in records]
    vectors = np.asarray([vector for _, vector in records], dtype=np.float32)
    with_data = np.asarray([bool(f.data) for f in facts])
    contradicting = _contradicts_links(store, [f.id for f in facts])
    merged: set[str] = set()
    newest_conflict: dict[int, int] = {}
    for newer_index, newer in enumerate(facts):
        similarities = vectors[:newer_index] @ vectors[newer_index]
        # Only pairs close enough to be duplicates or conflicting sentences, or two dictionary
        # memories (which conflict by key whatever their texts' similarity), need a closer look.
        close = similarities >= CONFLICT_SIMILARITY
        if newer.data:
            close |= with_data[:newer_index]
        olders = [int(i) for i in np.flatnonzero(close) if facts[i].id not in merged]
        conflicts = {i: conflicting(newer, facts[i], float(similarities[i])) for i in olders}
        duplicate = next(
            (i for i in olders if similarities[i] >= DUPLICATE_SIMILARITY and not conflicts[i]),
            None,
        )
        if duplicate is not None:
            _merge(engine, newer, facts[duplicate], moment)
            merged.add(newer.id)
            report.merged.append((newer.id, facts[duplicate].id))
            continue
        for older_index in (i for i in olders if conflicts[i]):
            older = facts[older_index]
            if (newer.id, older.id) not in contradicting:
                _links.link(engine, newer.id, LinkType.CONTRADICTS, older.id, note=None)
                report.contradictions.append((newer.id, older.id))
            newest_conflict[older_index] = newer_index
    superseded = []
    for older_index, newer_index in newest_conflict.items():
        older, newer = facts[older_index], facts[newer_index]
        if older.id not in merged and older.superseded_by != newer.id:
            superseded.append(_superseding(older, newer))
    _history.set_fields(engine, superseded, _history.WORKER)  # logged now, after the links


def _superseding(older: MemoryItem, newer: MemoryItem) -> tuple[_history.Entry, dict[str, Any]]:
    """The older fact marked superseded by the newer; its validity ends where the newer's
    begins (never deleted), unless it ended already or would end before it began."""
    after: dict[str, Any] = {"superseded_by": newer.id}
    if older.valid_to is None and newer.valid_since > older.valid_since:
        after["valid_to"] = newer.valid_since
    entry = _history.Entry(
        older.id,
        _history.ChangeKind.SUPERSEDED,
        _history.fields_of(older, after),
        {k: _history.as_json(v) for k, v in after.items()},
        related=newer.id,
    )
    stored = {k: to_micros(v) if k == "valid_to" else v for k, v in after.items()}
    return entry, stored


def _contradicts_links(store: Repository, ids: Sequence[str]) -> set[tuple[str, str]]:
    found = store.links_of_type(LinkType.CONTRADICTS, sources=ids)
    return {(link.source_id, link.target_id) for link in found}


def _merge(engine: Engine, newer: MemoryItem, older: MemoryItem, moment: datetime) -> None:
    """Fold ``newer`` into ``older``: the older inherits its provenance, the newer is hidden
    (soft-deleted, so ``restore`` can undo the merge) behind a ``duplicates`` link."""
    _links.link(engine, newer.id, LinkType.DUPLICATES, older.id, note=None)
    inherited = [
        Link(older.id, LinkType.DERIVED_FROM, link.target_id, created_at=moment)
        for link in _links.links(engine, newer.id)
        if link.type is LinkType.DERIVED_FROM and link.source_id == newer.id
    ]
    engine.store.add_links(inherited)
    engine.hotwords_changed()
    entry = _history.Entry(
        newer.id,
        _history.ChangeKind.MERGED,
        {"deleted_at": _history.as_json(newer.deleted_at)},
        {"deleted_at": moment.isoformat()},
        related=older.id,
    )
    _history.set_fields(engine, [(entry, {"deleted_at": to_micros(moment)})], _history.WORKER)
