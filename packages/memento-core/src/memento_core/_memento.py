"""``Memento``: the memory engine's public API, sync with async twins."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memento_core import _consolidation as consolidation
from memento_core import _lifecycle as lifecycle
from memento_core import _retrieval as retrieval
from memento_core import _writing as writing
from memento_core import plugins
from memento_core._candidate_index import CandidateIndex, Visibility, matched_terms
from memento_core._chat import ChatMemory, FromSession, WindowPolicy, erase_user_messages
from memento_core._chat import history as chat_history
from memento_core._chat import summarize_thread as archive_thread
from memento_core._consolidation import SleepReport
from memento_core._drafts import (
    MAX_TITLE_CHARS,
    MemoryDraft,
    check_id,
    is_live,
    used_fields,
    validate_draft,
)
from memento_core._filters import RecallFilter, live_clause, visibility_clause
from memento_core._injection import Injection, memory_injection
from memento_core._lifecycle import (
    DEFAULT_GRACE,
    DEFAULT_UNUSED,
    ErasureReport,
    ForgetCandidate,
    PurgeReport,
)
from memento_core._messages import Message
from memento_core._model import (
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
    as_utc,
    check_text,
    parse_enum,
    utcnow,
)
from memento_core._policies import (
    FOREVER,
    Retention,
    RetentionPolicy,
    ReviewPolicy,
)
from memento_core._ranking import RankingWeights, Recalled, rank
from memento_core._storage import (
    PLACEHOLDER_VECTOR,
    ChromaStore,
    StoreInfo,
    event_from_record,
    event_metadata,
    item_from_record,
    link_from_record,
    link_id,
    link_metadata,
    to_micros,
)
from memento_core._summarize import Summarizer
from memento_core._tokens import TokenCounter
from memento_core._twins import async_twin
from memento_core._usage import UsageRecorder
from memento_core.embedding import CachingEmbedder, Embedder, SentenceTransformerEmbedder
from memento_core.errors import InvalidInput, MemoryNotFound
from memento_core.hotwords import HotwordDetector, HotwordSet

DEFAULT_PATH = Path(".memento")
"""Where ``Memento.open()`` keeps an embedded store when no path is given (or ``$MEMENTO_PATH``)."""
MAX_RECALL_LIMIT = 1_000


@dataclass(frozen=True)
class StoreStats:
    location: str
    embedder: str
    dimension: int
    memories: int
    deleted: int
    by_type: Mapping[str, int]
    by_privacy: Mapping[str, int]
    users: int
    links: int
    feedback_events: int


class Memento:
    """A memory store. Open one with ``Memento.open(path)`` or ``Memento.open(url=...)``."""

    def __init__(
        self,
        store: ChromaStore,
        embedder: Embedder,
        *,
        weights: RankingWeights | None = None,
        candidates: int = 60,
        track_usage: bool = True,
        retention: RetentionPolicy | None = None,
        review: ReviewPolicy | None = None,
    ) -> None:
        self._store = store
        self.embedder = (
            embedder if isinstance(embedder, CachingEmbedder) else CachingEmbedder(embedder)
        )
        self.info: StoreInfo = store.attach(self.embedder.name, self.embedder.dimension)
        self.weights = weights or RankingWeights()
        self.candidates = candidates
        self.track_usage = track_usage
        self._usage = UsageRecorder(
            self._write_usage, lambda item, moment, uses: used_fields(item, moment, uses=uses)
        )
        self.retention = retention or RetentionPolicy()
        self.review_policy = review or ReviewPolicy()
        # erase_user also deletes the user's chat messages
        self._user_erasers: tuple[Callable[[Memento, str], int], ...] = (erase_user_messages,)
        self.hotword_refresh = 5.0
        self._hotword_generation = 0
        self._detectors: dict[tuple[Scope | None, bool], tuple[HotwordDetector, int, float]] = {}
        self._keywords = CandidateIndex()
        self._keyword_count = -1
        self._timeline: dict[Scope, tuple[str, datetime]] = {}
        self._shared = "://" in store.location
        self._sync_keywords(force=True)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        embedder: Embedder | None = None,
        weights: RankingWeights | None = None,
        collection_prefix: str = "memento",
        track_usage: bool = True,
        retention: RetentionPolicy | None = None,
        review: ReviewPolicy | None = None,
    ) -> Memento:
        """Open (or create) a store: embedded in ``path`` by default, or on a Chroma server.

        ``path`` defaults to ``$MEMENTO_PATH`` or ``./.memento``. ``url`` (``http://host:port``)
        selects a Chroma server started with ``chroma run``; then ``path`` must be left out.
        """
        if path is not None and url is not None:
            raise InvalidInput("give either a path (embedded store) or a url (Chroma server)")
        if url is not None:
            store = ChromaStore.open_server(url, prefix=collection_prefix)
        else:
            location = path if path is not None else os.environ.get("MEMENTO_PATH", DEFAULT_PATH)
            store = ChromaStore.open_embedded(location, prefix=collection_prefix)
        return cls(
            store,
            embedder or SentenceTransformerEmbedder(),
            weights=weights,
            track_usage=track_usage,
            retention=retention,
            review=review,
        )

    @property
    def location(self) -> str:
        return self._store.location

    def close(self) -> None:
        """Write pending usage counts and stop the usage writer. Chroma itself holds no
        handles that need closing."""
        self._usage.close()

    def __enter__(self) -> Memento:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- writing

    def remember(
        self,
        content: str,
        *,
        scope: Scope | None = None,
        type: MemoryType | str = MemoryType.EPISODIC,
        title: str | None = None,
        data: Mapping[str, Any] | None = None,
        source: str = "chat",
        privacy: Privacy | str = Privacy.PRIVATE,
        importance: float = 0.5,
        pinned: bool = False,
        tags: Sequence[str] = (),
        hotwords: Sequence[str] = (),
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        origin_trace: Any = None,
        retention: Retention = None,
    ) -> str:
        """Store one memory and return its id.

        Identical content in the same scope is stored once: remembering it again returns the
        existing id and changes nothing (a soft-deleted copy is restored). ``retention`` (None:
        the store's policy; ``FOREVER``; or a timedelta) is how long it lives without use.
        """
        draft = MemoryDraft(
            content=content,
            scope=scope or Scope(),
            type=type,
            title=title,
            data=data,
            source=source,
            privacy=privacy,
            importance=importance,
            pinned=pinned,
            tags=tags,
            hotwords=hotwords,
            created_at=created_at,
            expires_at=expires_at,
            origin_trace=origin_trace,
            retention=retention,
        )
        return self.remember_many([draft])[0]

    def remember_many(
        self,
        drafts: Iterable[MemoryDraft],
        *,
        on_progress: Callable[[int], None] | None = None,
        batch_size: int = writing.BATCH_SIZE,
    ) -> list[str]:
        """Store many memories in batches; returns their ids in order.

        Every draft is validated before anything is written, so one bad draft stores nothing.
        ``on_progress`` is called with the number of drafts finished after each batch.
        """
        now = utcnow()
        drafts = list(drafts)
        items = [validate_draft(d, now, self.retention, self.review_policy) for d in drafts]
        replacing = {d.id for d in drafts if d.id is not None}
        for start in range(0, len(items), writing.WINDOW):
            window = items[start : start + writing.WINDOW]
            writing.write(
                self, window, replacing, now, batch_size=batch_size, on_progress=on_progress
            )
        return [item.id for item in items]

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        title: str | None = None,
        data: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        hotwords: Sequence[str] | None = None,
        importance: float | None = None,
        privacy: Privacy | str | None = None,
        type: MemoryType | str | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryItem:
        """Change fields of a stored memory in place and return it as now stored.

        Fields left as None keep their value. A new ``content`` is embedded again; the id,
        scope, creation time, usage, review state, links and ``origin_trace`` (provenance)
        stay. A soft-deleted memory can be updated and stays hidden until ``restore``.
        """
        old = self.get(memory_id, include_deleted=True)
        draft = MemoryDraft(
            id=memory_id,
            content=old.content if content is None else content,
            scope=old.scope,
            type=old.type if type is None else type,
            title=old.title if title is None else title,
            data=old.data if data is None else data,
            source=old.source,
            privacy=old.privacy if privacy is None else privacy,
            importance=old.importance if importance is None else importance,
            pinned=old.pinned,
            tags=old.tags if tags is None else tags,
            hotwords=old.hotwords if hotwords is None else hotwords,
            created_at=old.created_at,
            expires_at=old.expires_at if expires_at is None else expires_at,
            origin_trace=old.origin_trace,
            retention=FOREVER if old.retention is None else old.retention,
        )
        self.remember_many([draft])
        if old.deleted_at is not None:
            self._store.items.update(
                ids=[memory_id], metadatas=[{"deleted_at": to_micros(old.deleted_at)}]
            )
        return self.get(memory_id, include_deleted=True)

    # ----------------------------------------------------------------- reading

    def get(
        self, memory_id: str, *, scope: Scope | None = None, include_deleted: bool = False
    ) -> MemoryItem:
        """The memory with this id. With ``scope``, only if that scope may see it.

        Raises ``MemoryNotFound`` for an unknown id, a hidden (soft-deleted or expired) memory,
        or one the scope may not see — the same error for all, so ids leak nothing.
        """
        self._usage.flush()
        check_id(memory_id)
        where = None
        if scope is not None:
            where = visibility_clause(scope)
        found = self._store.items.get(
            ids=[memory_id], where=where, include=["metadatas", "documents"]
        )
        if not found["ids"]:
            raise MemoryNotFound(memory_id)
        item = item_from_record(memory_id, found["documents"][0], found["metadatas"][0])
        if not include_deleted and not is_live(item, utcnow()):
            raise MemoryNotFound(memory_id)
        return item

    def recall(
        self,
        query: str,
        *,
        scope: Scope | None = None,
        limit: int = 10,
        filter: RecallFilter | Mapping[str, Any] | None = None,
        weights: RankingWeights | Mapping[str, Any] | None = None,
        min_relevance: float = 0.0,
        now: datetime | None = None,
    ) -> list[Recalled]:
        """The ``limit`` best memories for ``query`` that ``scope`` may see, best first.

        Candidates come from the vector index and from BM25 keyword search; each is scored
        ``α·relevance + β·recency + γ·importance + δ·usage − ε·duplication`` (see
        ``RankingWeights``), and ``reason`` on each result shows the parts. Candidates whose
        relevance is below ``min_relevance`` (0..1) are dropped, so weak matches don't fill the
        list.
        """
        check_text(query, "query")
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_RECALL_LIMIT
        ):
            raise InvalidInput(
                f"limit must be a whole number from 1 to {MAX_RECALL_LIMIT}, got {limit!r}"
            )
        if (
            isinstance(min_relevance, bool)
            or not isinstance(min_relevance, (int, float))
            or not (0.0 <= min_relevance <= 1.0)
        ):
            raise InvalidInput(f"min_relevance must be from 0 to 1, got {min_relevance!r}")
        viewer = scope or Scope()
        recall_filter = filter if isinstance(filter, RecallFilter) else RecallFilter.build(filter)
        if weights is None:
            chosen = self.weights
        elif isinstance(weights, RankingWeights):
            chosen = weights
        else:
            chosen = self.weights.replace(**weights)
        moment = as_utc(now, "now") if now else utcnow()
        visibility_clause(viewer)  # refuses anything but a Scope, before any work
        self._usage.note_activity()
        depth = max(self.candidates, limit * 3)
        query_vector = self.embedder.embed_query(query)

        candidates, stored = retrieval.candidates(
            self, query, query_vector, viewer, recall_filter, moment, depth
        )
        results = rank(
            candidates,
            limit=limit,
            now=moment,
            weights=chosen,
            min_relevance=min_relevance,
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
        if self.track_usage and results:
            self._usage.record([stored[r.item.id] for r in results], moment)
        plugins.notify_recall(self, query, viewer, results)
        return results

    def _write_usage(self, ids: Sequence[str], fields: Sequence[dict[str, Any]]) -> None:
        # Read-modify-write: under concurrent writers a count may be lost; usage is a soft signal.
        # No store lock here: callers holding it flush usage, and the writer thread must not
        # wait for them (Chroma serialises its own writes).
        live = set(self._store.items.get(ids=list(ids), include=[])["ids"])
        keep = [n for n, memory_id in enumerate(ids) if memory_id in live]
        if keep:
            self._store.items.update(
                ids=[ids[n] for n in keep], metadatas=[fields[n] for n in keep]
            )

    def _sync_keywords(self, *, force: bool = False) -> None:
        """Bring the in-memory keyword index in step with the store.

        An embedded store has one writer (this process), so the index is always current after
        the first load. On a server other processes write too; a changed count says so.
        """
        if not force and not self._shared:
            return
        count = self._store.items.count()
        if not force and count == self._keyword_count:
            return
        with self._store.lock:
            known = self._keywords.ids()
            items, full = self._store.items, ["metadatas", "documents", "embeddings"]
            if known:
                # List the ids alone and read only the new records: at 100k memories reading
                # everything takes half a minute.
                seen = self._store.all_ids(items)
                records = self._store.records_by_id(items, list(seen - known), include=full)
            else:
                seen = set()
                records = self._store.iter_records(items, include=full)
            for memory_id, meta, document, vector in records:
                seen.add(memory_id)
                if memory_id not in known:
                    item_scope = Visibility(meta["user_id"], meta["project_id"], meta["privacy"])
                    self._keywords.add(memory_id, document or "", item_scope, vector)
            for gone in known - seen:
                self._keywords.remove(gone)
            self._keyword_count = len(seen)

    # --------------------------------------------------------------- lifecycle

    def pin(self, memory_id: str) -> MemoryItem:
        """Pin a memory: it never expires and is never offered for forgetting."""
        return self._set(memory_id, pinned=True)

    def unpin(self, memory_id: str) -> MemoryItem:
        return self._set(memory_id, pinned=False)

    def _set(self, memory_id: str, **fields: Any) -> MemoryItem:
        self._hotwords_changed()
        item = self.get(memory_id, include_deleted=True)
        self._store.items.update(ids=[memory_id], metadatas=[fields])
        return dataclasses.replace(item, **fields)

    def forget(self, memory_id: str, *, hard: bool = False) -> None:
        """Hide a memory (soft: ``restore`` brings it back) or erase it (hard).

        A hard forget removes the memory, its vector, every link that touches it, its
        feedback events, and facts derived only from it. Chroma may keep freed bytes in its
        files until compaction (see the README).
        """
        self.get(memory_id, include_deleted=True)
        self._hotwords_changed()
        if not hard:
            self._store.items.update(
                ids=[memory_id], metadatas=[{"deleted_at": to_micros(utcnow())}]
            )
            return
        lifecycle.erase(self, [memory_id])

    def _erase(self, memory_ids: Sequence[str]) -> None:
        """Hard-delete memories with every link that touches them and their feedback events."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return
        self._hotwords_changed()
        self._usage.discard(ids)
        with self._store.lock:
            touching = {"$or": [{"source_id": {"$in": ids}}, {"target_id": {"$in": ids}}]}
            self._store.links.delete(where=touching)
            self._store.events.delete(where={"memory_id": {"$in": ids}})
            self._close_timeline_gaps(ids)
            self._store.items.delete(ids=ids)
            for memory_id in ids:
                if memory_id in self._keywords:
                    self._keywords.remove(memory_id)
                    self._keyword_count -= 1

    def _close_timeline_gaps(self, erased: Sequence[str]) -> None:
        """Memories that followed an erased one follow its predecessor instead: no erased id
        stays behind in ``follows`` (erasure leaves no trace), and the timeline stays whole."""
        gone = set(erased)
        leaving = self._store.items.get(ids=list(gone), include=["metadatas"])
        before = {i: m.get("follows") or "" for i, m in zip(leaving["ids"], leaving["metadatas"])}
        successors = self._store.items.get(
            where={"follows": {"$in": list(gone)}}, include=["metadatas"]
        )
        ids, updates = [], []
        for memory_id, meta in zip(successors["ids"], successors["metadatas"]):
            if memory_id in gone:
                continue
            predecessor = meta.get("follows") or ""
            for _ in range(len(gone)):  # the chain only points back in time; bounded anyway
                if predecessor not in gone:
                    break
                predecessor = before.get(predecessor, "")
            ids.append(memory_id)
            updates.append({"follows": "" if predecessor in gone else predecessor})
        if ids:
            self._store.items.update(ids=ids, metadatas=updates)
        self._timeline = {s: last for s, last in self._timeline.items() if last[0] not in gone}

    def restore(self, memory_id: str) -> MemoryItem:
        """Undo a soft forget."""
        # The store keeps 0 for "not deleted"; the item says None.
        return dataclasses.replace(self._set(memory_id, deleted_at=0), deleted_at=None)

    def link(
        self, source_id: str, type: LinkType | str, target_id: str, *, note: str | None = None
    ) -> Link:
        """Record a typed link between two existing memories (idempotent)."""
        link_type = parse_enum(LinkType, type, "link type")
        if source_id == target_id:
            raise InvalidInput("a memory cannot link to itself")
        if note is not None:
            check_text(note, "note", max_chars=MAX_TITLE_CHARS)
        self.get(source_id, include_deleted=True)
        self.get(target_id, include_deleted=True)
        created = Link(source_id, link_type, target_id, note=note)
        with self._store.lock:
            # Linking again returns the first link unchanged (its time and note included).
            existing = self._store.links.get(
                ids=[link_id(created)], include=["metadatas", "documents"]
            )
            if existing["ids"]:
                return link_from_record(existing["metadatas"][0], existing["documents"][0] or "")
            self._store.links.add(
                ids=[link_id(created)],
                embeddings=[PLACEHOLDER_VECTOR],
                documents=[note or ""],
                metadatas=[link_metadata(created)],
            )
        return created

    def links(self, memory_id: str) -> list[Link]:
        """Every link from or to this memory, oldest first."""
        check_id(memory_id)
        found = self._store.links.get(
            where={"$or": [{"source_id": memory_id}, {"target_id": memory_id}]},
            include=["metadatas", "documents"],
        )
        links = [link_from_record(m, d) for m, d in zip(found["metadatas"], found["documents"])]
        return sorted(links, key=lambda link: (link.created_at, link_id(link)))

    def feedback(
        self,
        memory_id: str,
        kind: FeedbackKind | str,
        *,
        score: float = 1.0,
        note: str | None = None,
    ) -> FeedbackEvent:
        """Record how a memory served: ``used``, ``helpful``, ``not_helpful``, … (feeds ranking)."""
        feedback_kind = parse_enum(FeedbackKind, kind, "feedback kind")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or score != score:
            raise InvalidInput(f"score must be a number, got {score!r}")
        if note is not None:
            check_text(note, "note", max_chars=MAX_TITLE_CHARS)
        with self._store.lock:
            item = self.get(memory_id, include_deleted=True)
            event = FeedbackEvent(memory_id, feedback_kind, float(score), note=note)
            self._store.events.add(
                ids=[f"{memory_id}:{to_micros(event.at)}:{os.urandom(4).hex()}"],
                embeddings=[PLACEHOLDER_VECTOR],
                documents=[note or ""],
                metadatas=[event_metadata(event)],
            )
            key = f"fb_{feedback_kind.value}"
            self._store.items.update(
                ids=[memory_id],
                metadatas=[
                    {
                        **used_fields(item, event.at, uses=0),
                        key: item.feedback.get(feedback_kind.value, 0) + 1,
                    }
                ],
            )
        return event

    def feedback_events(self, memory_id: str) -> list[FeedbackEvent]:
        check_id(memory_id)
        found = self._store.events.get(
            where={"memory_id": memory_id}, include=["metadatas", "documents"]
        )
        events = [event_from_record(m, d) for m, d in zip(found["metadatas"], found["documents"])]
        return sorted(events, key=lambda e: (e.at, e.kind.value))

    # ------------------------------------------------------------------- bulk

    def items(
        self, *, scope: Scope | None = None, include_deleted: bool = False
    ) -> list[MemoryItem]:
        """Every live memory (that ``scope`` may see, if given), oldest first; with
        ``include_deleted``, soft-deleted and expired ones too."""
        self._usage.flush()
        where = visibility_clause(scope) if scope is not None else None
        now = utcnow()
        items = [
            item_from_record(i, d or "", m)
            for i, m, d, _ in self._store.iter_records(
                self._store.items, where=where, include=["metadatas", "documents"]
            )
        ]
        if not include_deleted:
            items = [i for i in items if is_live(i, now)]
        return sorted(items, key=lambda i: (i.created_at, i.id))

    def all_links(self) -> list[Link]:
        records = self._store.iter_records(self._store.links, include=["metadatas", "documents"])
        return sorted((link_from_record(m, d or "") for _, m, d, _ in records), key=link_id)

    def all_feedback(self) -> list[FeedbackEvent]:
        records = self._store.iter_records(self._store.events, include=["metadatas", "documents"])
        return sorted(
            (event_from_record(m, d or "") for _, m, d, _ in records),
            key=lambda e: (e.memory_id, e.at, e.kind.value),
        )

    def stats(self) -> StoreStats:
        self._usage.flush()
        by_type: dict[str, int] = {}
        by_privacy: dict[str, int] = {}
        users: set[str] = set()
        deleted = live = 0
        for _, meta, _, _ in self._store.iter_records(self._store.items, include=["metadatas"]):
            if meta["deleted_at"]:
                deleted += 1
                continue
            live += 1
            by_type[meta["type"]] = by_type.get(meta["type"], 0) + 1
            by_privacy[meta["privacy"]] = by_privacy.get(meta["privacy"], 0) + 1
            if meta["user_id"]:
                users.add(meta["user_id"])
        return StoreStats(
            location=self.location,
            embedder=self.info.embedder,
            dimension=self.info.dimension,
            memories=live,
            deleted=deleted,
            by_type=dict(sorted(by_type.items())),
            by_privacy=dict(sorted(by_privacy.items())),
            users=len(users),
            links=self._store.links.count(),
            feedback_events=self._store.events.count(),
        )

    # --------------------------------------------------------- working memory

    def chat(
        self,
        session_id: str,
        *,
        scope: Scope | None = None,
        policy: WindowPolicy | None = None,
        initial: FromSession | Iterable[Message | Mapping[str, Any]] | None = None,
        counter: TokenCounter | None = None,
        summarizer: Summarizer | None = None,
    ) -> ChatMemory:
        """The working memory of one chat session: a message or token window over its durable
        history (see ``memento_core._chat``). Building it reads nothing — the store is read on
        first use — so it has no async twin; the ``ChatMemory`` has ``aappend``, ``awindow``, …
        """
        return ChatMemory(
            self,
            session_id,
            scope=scope,
            policy=policy,
            initial=initial,
            counter=counter,
            summarizer=summarizer,
        )

    def history(self, session_id: str) -> list[Message]:
        """Every message of a chat session, evicted ones included, oldest first."""
        return chat_history(self, session_id)

    def summarize_thread(
        self, session_id: str, *, summarizer: Summarizer | None = None, scope: Scope | None = None
    ) -> str:
        """Archive a chat session as one episodic memory; returns its id. ``origin_trace``
        names the messages summarised; an unchanged session archives to the same memory."""
        return archive_thread(self, session_id, summarizer=summarizer, scope=scope)

    def memory_injection(
        self,
        query: str,
        *,
        token_budget: int = 1200,
        scope: Scope | None = None,
        counter: TokenCounter | None = None,
        limit: int = 10,
        filter: RecallFilter | Mapping[str, Any] | None = None,
    ) -> Injection:
        """The best memories for ``query`` packed into ``token_budget`` tokens, as the text of a
        system message and as items (see ``memento_core._injection``)."""
        return memory_injection(
            self,
            query,
            token_budget=token_budget,
            scope=scope,
            counter=counter,
            limit=limit,
            filter=filter,
        )

    # --------------------------------------------------------------- hotwords

    def hotword_set(self, scope: Scope | None = None) -> HotwordSet:
        """The hotwords of every live memory (that ``scope`` may see), uid = memory id."""
        moment = utcnow()
        clauses = [{"has_hotwords": True}, *live_clause(moment)]
        if scope is not None:
            clauses.append(visibility_clause(scope))
        records = self._store.iter_records(
            self._store.items, where={"$and": clauses}, include=["metadatas", "documents"]
        )
        items = sorted(
            (item_from_record(i, d or "", m) for i, m, d, _ in records),
            key=lambda item: (item.created_at, item.id),
        )
        return HotwordSet.from_items(items)

    def hotword_detector(
        self, scope: Scope | None = None, *, word_boundary: bool = False
    ) -> HotwordDetector:
        """A detector over the current hotwords, shared by every conversation.

        The automaton is rebuilt only when the hotword set changed: at once after a change
        through this object, and within ``hotword_refresh`` seconds after one by another
        process (server mode). Start a conversation with ``.conversation(connection_id)``.
        """
        key = (scope, word_boundary)
        with self._store.lock:
            cached = self._detectors.get(key)
            fresh = (
                cached is not None
                and cached[1] == self._hotword_generation
                and time.monotonic() - cached[2] < self.hotword_refresh
            )
            if cached is not None and fresh:
                return cached[0]
            hotword_set = self.hotword_set(scope)
            if cached is not None and cached[0].fingerprint == hotword_set.fingerprint:
                detector = cached[0]
            else:
                detector = HotwordDetector(
                    hotword_set, word_boundary=word_boundary, on_event=plugins.notify_hotword
                )
            self._detectors[key] = (detector, self._hotword_generation, time.monotonic())
            return detector

    def _hotwords_changed(self) -> None:
        self._hotword_generation += 1

    # ------------------------------------------------------ forgetting and review

    def forget_candidates(
        self, scope: Scope, *, limit: int = 20, unused_for: timedelta = DEFAULT_UNUSED
    ) -> list[ForgetCandidate]:
        """The soft-delete queue: live, unpinned, long-unused memories, lowest standing first."""
        return lifecycle.forget_candidates(self, scope, limit=limit, unused_for=unused_for)

    def purge(self, *, grace: timedelta = DEFAULT_GRACE) -> PurgeReport:
        """Erase memories soft-deleted or expired longer than ``grace`` ago."""
        return lifecycle.purge(self, grace=grace)

    def erase_user(self, user_id: str) -> ErasureReport:
        """Right to erasure: every memory, vector, link, feedback event and chat message of a
        user, and facts derived only from them. An unknown user is a no-op."""
        return lifecycle.erase_user(self, user_id, extra_erasers=self._user_erasers)

    def review_due(self, scope: Scope, *, now: datetime | None = None) -> list[MemoryItem]:
        """Memories whose spaced-review card is due, most overdue first."""
        return lifecycle.review_due(self, scope, now=now)

    def review(self, memory_id: str, grade: int, *, now: datetime | None = None) -> MemoryItem:
        """Grade a review 0..5; the card moves on (grade ≥ 3) or starts over. Counts as a use."""
        return lifecycle.review(self, memory_id, grade, now=now)

    def sleep(
        self,
        scope: Scope,
        *,
        since: datetime | None = None,
        summarizer: Summarizer | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> SleepReport:
        """Consolidate a user's episodes into facts (see ``memento_core._consolidation``)."""
        return consolidation.sleep(
            self, scope, since=since, summarizer=summarizer, on_progress=on_progress
        )

    def export(self, fmt: str = "ndjson") -> Iterator[str]:
        """The whole store as lines of ``ndjson`` (lossless), ``markdown`` or ``csv``."""
        from memento_core._transfer import export_lines

        return export_lines(self, fmt)

    def import_ndjson(
        self, lines: Iterable[str], *, on_progress: Callable[[int], None] | None = None
    ) -> dict[str, int]:
        """Load an NDJSON export; every line is checked before anything is written."""
        from memento_core._transfer import import_ndjson

        return import_ndjson(self, lines, on_progress=on_progress)

    aremember = async_twin(remember)
    aremember_many = async_twin(remember_many)
    aupdate = async_twin(update)
    aget = async_twin(get)
    arecall = async_twin(recall)
    apin = async_twin(pin)
    aunpin = async_twin(unpin)
    aforget = async_twin(forget)
    arestore = async_twin(restore)
    alink = async_twin(link)
    alinks = async_twin(links)
    afeedback = async_twin(feedback)
    afeedback_events = async_twin(feedback_events)
    aitems = async_twin(items)
    astats = async_twin(stats)
    aimport_ndjson = async_twin(import_ndjson)
    aforget_candidates = async_twin(forget_candidates)
    apurge = async_twin(purge)
    aerase_user = async_twin(erase_user)
    areview_due = async_twin(review_due)
    areview = async_twin(review)
    asleep = async_twin(sleep)
    ahistory = async_twin(history)
    asummarize_thread = async_twin(summarize_thread)
    amemory_injection = async_twin(memory_injection)
    ahotword_set = async_twin(hotword_set)
    ahotword_detector = async_twin(hotword_detector)

    async def aexport(self, fmt: str = "ndjson") -> list[str]:
        """The async twin of ``export``; returns the lines as a list."""
        return await asyncio.to_thread(lambda: list(self.export(fmt)))
