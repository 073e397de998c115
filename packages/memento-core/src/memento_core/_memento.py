"""``Memento``: the memory engine's public API, sync with async twins."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memento_core import _census as counting
from memento_core import _consolidation as consolidation
from memento_core import _history as history
from memento_core import _lifecycle as lifecycle
from memento_core import _links as links
from memento_core import _reembed as reembedding
from memento_core import _retrieval as retrieval
from memento_core import _transfer as transfer
from memento_core import _worker as worker
from memento_core import _writing as writing
from memento_core import plugins
from memento_core._census import Census
from memento_core._chat import ChatMemory, FromSession, WindowPolicy
from memento_core._chat_archive import summarize_thread as archive_thread
from memento_core._chat_records import erase_user_messages
from memento_core._chat_records import history as chat_history
from memento_core._consolidation import SleepReport
from memento_core._drafts import MemoryDraft
from memento_core._engine import Engine, close_shared, open_shared
from memento_core._filters import RecallFilter
from memento_core._history import MemoryChange
from memento_core._injection import Injection
from memento_core._injection import memory_injection as inject
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
    utcnow,
)
from memento_core._partitions import DEFAULT_BUDGET_MB, DEFAULT_LOAD_LIMIT, IndexStatus
from memento_core._paths import default_store_path, store_exists
from memento_core._policies import Retention, RetentionPolicy, ReviewPolicy
from memento_core._ranking import RankingWeights, Recalled
from memento_core._reembed import ReembedReport
from memento_core._storage import (
    ChromaStore,
    SideRecords,
    StoreInfo,
    link_id,
)
from memento_core._summarize import Summarizer
from memento_core._tokens import TokenCounter
from memento_core._twins import async_twin
from memento_core._visibility import check_viewer, is_live, live_clause, visibility_clause
from memento_core._worker import MaintenanceReport
from memento_core.embedding import CachingEmbedder, Embedder, default_embedder
from memento_core.errors import EmbedderMismatch, InvalidInput, StoreNotFound
from memento_core.hotwords import HotwordDetector, HotwordSet

MAX_RECALL_LIMIT = retrieval.MAX_RECALL_LIMIT
DETECTORS_KEPT = 256
"""Hotword detectors a store keeps built, one per scope, the most recently used."""


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

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.embedder = engine.embedder
        self.info: StoreInfo = engine.store.info
        engine.user_erasers.append(erase_user_messages)  # erase_user also deletes chat messages
        engine.on_written.append(lambda items: plugins.notify_remember(self, items))
        engine.on_recalled.append(
            lambda q, viewer, got: plugins.notify_recall(self, q, viewer, got)
        )
        self.hotword_refresh = 5.0
        # The detectors of the scopes used most recently (a server serves many users).
        self._detectors: OrderedDict[
            tuple[Scope | None, bool], tuple[HotwordDetector, int, float]
        ] = OrderedDict()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        embedder: Embedder | str | None = None,
        weights: RankingWeights | None = None,
        collection_prefix: str = "memento",
        track_usage: bool = True,
        retention: RetentionPolicy | None = None,
        review: ReviewPolicy | None = None,
        read_only: bool = False,
        index_budget_mb: float = DEFAULT_BUDGET_MB,
        partition_load_limit: int | None = DEFAULT_LOAD_LIMIT,
    ) -> Memento:
        """Open (or create) a store: embedded in ``path`` by default, or on a Chroma server.

        ``path`` defaults to ``$MEMENTO_PATH``, else the per-user data directory
        (``~/.local/share/memento`` on Linux; ``default_store_path()``). ``url``
        (``http://host:port``) selects a Chroma server started with ``chroma run``; then ``path``
        must be left out. ``embedder`` is an ``Embedder`` or the name of a registered one
        (``"multilingual"`` with ``pip install "memento-core[multilingual]"``; the names:
        ``memento-core plugins``). A store records its embedder's space and refuses another
        (``EmbedderMismatch``); left out, an existing store opens with the registered embedder
        of its recorded space, and a new one gets all-MiniLM-L6-v2 on ONNX Runtime.
        One process at a time writes to an embedded store; another gets ``StoreLocked`` unless
        it opens ``read_only`` (writes then raise ``ReadOnlyStore``). A read-only open of a path
        that holds no store raises ``StoreNotFound`` and creates nothing.

        Opening reads no memories: recall loads the candidate index in partitions (a user's
        memories, a project's team memories, the public ones) as viewers first need them, and
        evicts those used least recently when the index passes ``index_budget_mb``. With a
        ``partition_load_limit`` (500 by default), a partition listing more memories is not
        loaded: the first process to find it so copies it into a collection of its own, which
        recall then searches where it lives — a fast first recall at any size; its keyword side
        is exact, its nearest neighbours HNSW's (at 1M memories 0.9965 of the exact top 10,
        ``benchmarks/results/scale.md``). A process that holds a partition whole already (it
        wrote it from its first memory, or loaded it before it crossed the limit) keeps
        searching it in memory, exactly, up to 20 times the limit (``index_status().
        held_past_limit``). With None every partition is loaded whole.
        """
        if path is not None and url is not None:
            raise InvalidInput("give either a path (embedded store) or a url (Chroma server)")
        if (
            isinstance(index_budget_mb, bool)
            or not isinstance(index_budget_mb, (int, float))
            or not math.isfinite(index_budget_mb)
            or index_budget_mb <= 0
        ):
            raise InvalidInput(
                f"index_budget_mb must be a positive number of megabytes, got {index_budget_mb!r}"
            )
        if partition_load_limit is not None and (
            isinstance(partition_load_limit, bool)
            or not isinstance(partition_load_limit, int)
            or partition_load_limit < 1
        ):
            raise InvalidInput(
                "partition_load_limit must be a whole number of memories, 1 or more, "
                f"got {partition_load_limit!r}"
            )
        if url is not None:
            key = (url.rstrip("/"), collection_prefix)

            def connect() -> ChromaStore:
                return ChromaStore.open_server(url, prefix=collection_prefix)
        else:
            location = path if path is not None else default_store_path()
            if read_only and not store_exists(location):  # a reader creates nothing
                where = Path(location).expanduser()
                raise StoreNotFound(
                    f"no Memento store at {where} to open read-only; open it for writing once "
                    "to create it, or give the path of an existing store",
                    path=str(where),
                )
            key = (str(Path(location).expanduser().resolve()), collection_prefix)

            def connect() -> ChromaStore:
                return ChromaStore.open_embedded(
                    location, prefix=collection_prefix, lock=not read_only
                )

        if isinstance(embedder, str):
            embedder = plugins.named_embedder(embedder)
        chosen = embedder or default_embedder()
        caching = chosen if isinstance(chosen, CachingEmbedder) else CachingEmbedder(chosen)
        try:
            shared = open_shared(
                key,
                connect,
                caching,
                writer=url is None and not read_only,
                budget_bytes=int(index_budget_mb * 2**20),
            )
        except EmbedderMismatch as mismatch:
            # No embedder given: the store's own space, when an installed plugin provides it.
            recorded = None
            if embedder is None:
                recorded = plugins.registered_for(mismatch.stored, mismatch.stored_dimension)
            if recorded is None:
                raise
            caching = CachingEmbedder(recorded)
            shared = open_shared(
                key,
                connect,
                caching,
                writer=url is None and not read_only,
                budget_bytes=int(index_budget_mb * 2**20),
            )
        try:
            engine = Engine(
                shared,
                caching,
                read_only=read_only,
                weights=weights or RankingWeights(),
                candidates=60,
                track_usage=track_usage,
                retention=retention or RetentionPolicy(),
                review=review or ReviewPolicy(),
                load_limit=partition_load_limit,
            )
        except BaseException:
            close_shared(shared, writer=url is None and not read_only)
            raise
        return cls(engine)

    @staticmethod
    def reembed(
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        collection_prefix: str = "memento",
        embedder: Embedder | str,
        to: str | os.PathLike[str] | None = None,
        in_place: bool = False,
        read_only: bool = False,
        restart: bool = False,
        batch_size: int = reembedding.BATCH_SIZE,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> ReembedReport:
        """Re-embed a store (not open in this process) into ``embedder``'s space (an
        ``Embedder``, or a name: ``"onnx"``, ``"openai-compatible"``, a plugin's, or an ONNX
        model's), keeping every record as it is: ids, links, feedback, history, chat records,
        usage counts, adapters' records.

        ``to``: into a new directory (an embedded store), the source left as it is (opened
        ``read_only`` if another process holds it; what that process writes meanwhile is
        caught up by running this again). ``in_place``: the new space is built beside the old
        one and switched to in one write — a reader opening before the switch sees the old
        space whole, one after it the new one — then the old one is dropped; other processes
        that had the store open must open it again, with the new embedder. On a Chroma server,
        stop other writers first (an embedded store's write lock keeps them out).

        A run cut short (a crash, SIGKILL) continues when run again with the same arguments:
        memories copied already are not embedded again. A target half built by another run
        is refused (``StoreError``); in place, ``restart`` discards it instead.
        ``on_progress(done, total)`` counts memories. The old embedder is not needed."""
        return reembedding.reembed(
            path,
            url=url,
            collection_prefix=collection_prefix,
            embedder=embedder,
            to=to,
            in_place=in_place,
            read_only=read_only,
            restart=restart,
            batch_size=batch_size,
            on_progress=on_progress,
        )

    @staticmethod
    async def areembed(
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        collection_prefix: str = "memento",
        embedder: Embedder | str,
        to: str | os.PathLike[str] | None = None,
        in_place: bool = False,
        read_only: bool = False,
        restart: bool = False,
        batch_size: int = reembedding.BATCH_SIZE,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> ReembedReport:
        return await asyncio.to_thread(
            reembedding.reembed,
            path,
            url=url,
            collection_prefix=collection_prefix,
            embedder=embedder,
            to=to,
            in_place=in_place,
            read_only=read_only,
            restart=restart,
            batch_size=batch_size,
            on_progress=on_progress,
        )

    # The twin runs in a worker thread: the event loop never waits on the store or embedder.
    areembed.__func__.__doc__ = reembed.__func__.__doc__  # type: ignore[attr-defined]  # staticmethod objects here

    @property
    def weights(self) -> RankingWeights:
        return self._engine.weights

    @weights.setter
    def weights(self, value: RankingWeights) -> None:
        self._engine.weights = value

    @property
    def candidates(self) -> int:
        return self._engine.candidates

    @candidates.setter
    def candidates(self, value: int) -> None:
        self._engine.candidates = value

    @property
    def track_usage(self) -> bool:
        return self._engine.track_usage

    @track_usage.setter
    def track_usage(self, value: bool) -> None:
        self._engine.track_usage = value and not self._engine.read_only

    @property
    def retention(self) -> RetentionPolicy:
        return self._engine.retention

    @property
    def review_policy(self) -> ReviewPolicy:
        return self._engine.review_policy

    def index_status(self) -> IndexStatus:
        """What this process holds in memory for recall: partitions loaded, memories, bytes
        against the budget (``index_budget_mb``), loads and evictions so far. Every instance of
        one store in a process shares it."""
        return dataclasses.replace(
            self._engine.partitions.status(),
            searched_in_store=len(self._engine.store.mirrors.ready()),
            feed_read_seconds_ago=self._engine.feed_read_seconds_ago(),
            searched_by_filter=self._engine.searched_by_filter(),
            held_past_limit=self._engine.held_past_limit(),
        )

    def preload(self, scope: Scope | None = None) -> IndexStatus:
        """Load into this process's index now what recall for ``scope`` will need: the public
        memories and the scope's user's and project's (without a scope, those stored without
        a user). Opening a store loads nothing, and a partition past ``partition_load_limit``
        is searched in the store; a long-running server that wants all of it in memory, and
        searched exactly, calls this once at start. The load counts against
        ``index_budget_mb`` like any other. Returns ``index_status()`` after it."""
        self._engine.ready_for(check_viewer(scope or Scope()), load_all=True)
        return self.index_status()

    def build_partition_directory(self, on_progress: Callable[[int], None] | None = None) -> int:
        """List every stored memory in the store's partition directory, which lets a recall
        read a user's memories by id. A store created by this version has it; one written by
        an older Memento gains it partition by partition on first use, or all at once here
        (safe beside other writers). ``on_progress`` gets the directory records written.
        Returns the partitions listed: 0 when the directory was complete already."""
        return self._engine.build_partition_directory(on_progress)

    def mirror_large_partitions(
        self, on_progress: Callable[[int], None] | None = None, *, limit: int | None = None
    ) -> int:
        """Copy every partition holding more than ``limit`` (by default the store's
        ``partition_load_limit``) memories that is not searched in the store yet into a
        collection of its own, so processes with a load limit search it there (safe beside
        other writers). A writing process does this anyway, in the background: from its
        first open of a store with partitions past the limit, and when a write makes one cross
        it (a batch write waits for it); this waits for that, then copies what is left.
        ``on_progress`` gets the memories this call copies. Each mirror's keyword postings are
        brought up to date as well (what was written since they were folded is folded in).
        Returns the partitions this call copied."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise InvalidInput(
                f"limit must be a whole number of memories, 1 or more, got {limit!r}"
            )
        self._engine.wait_for_mirrors()
        return self._engine.mirror_large_partitions(on_progress, limit=limit)

    def warm(self) -> int:
        """Make the Chroma server load the indexes of the partitions searched in the store
        (a query each), so no user's first recall waits while it does: after a server
        restart its first query of a large mirror waits seconds. Opening a store on a server
        does this in the background; a server front end may call it again after the Chroma
        server restarts. Returns the mirrors warmed (0 without a load limit)."""
        return self._engine.warm()

    @property
    def read_only(self) -> bool:
        return self._engine.read_only

    @property
    def collection_prefix(self) -> str:
        """The prefix of the store's collections (``Memento.open(collection_prefix=...)``)."""
        return self._engine.collection_prefix

    @property
    def location(self) -> str:
        return self._engine.store.location

    def close(self) -> None:
        """Write pending usage counts, stop the usage writer and let go of the store's write
        lock (an embedded store). Closing twice is harmless."""
        self._engine.close()

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
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> str:
        """Store one memory and return its id.

        Identical content in the same scope is stored once: remembering it again returns the
        existing id and changes nothing (a soft-deleted copy is restored). ``retention`` (None:
        the store's policy; ``FOREVER``; or a timedelta) is how long it lives without use.
        ``valid_from`` / ``valid_to``: when what it says was true (valid time; by default from
        when it is stored, with no end); recall's ``as_of`` reads them.
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
            valid_from=valid_from,
            valid_to=valid_to,
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
        return writing.remember_many(
            self._engine, list(drafts), on_progress=on_progress, batch_size=batch_size
        )

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
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        supersede: bool = False,
        scope: Scope | None = None,
    ) -> MemoryItem:
        """Change fields of a stored memory in place and return it as now stored.

        Fields left as None keep their value. A new ``content`` is embedded again; the id,
        scope, creation time, usage, review state, links and ``origin_trace`` (provenance)
        stay. A soft-deleted memory can be updated and stays hidden until ``restore``. With
        ``scope`` (the caller), only a memory of its own user (``NotOwner`` otherwise). The
        fields before and after go to the memory's history (``changes``).

        With ``supersede=True`` the memory is kept as the older fact instead: a new memory
        with the new content (and fields) is stored, valid from ``valid_from`` (default now),
        and the old one's ``valid_to`` is set to that moment and it is marked superseded by
        the new one, which is returned.
        """
        changes = {
            "content": content, "title": title, "data": data, "tags": tags,
            "hotwords": hotwords, "importance": importance, "privacy": privacy, "type": type,
            "expires_at": expires_at, "valid_from": valid_from, "valid_to": valid_to,
        }  # fmt: skip
        return writing.update(self._engine, memory_id, changes, supersede=supersede, caller=scope)

    def changes(self, memory_id: str, *, scope: Scope | None = None) -> list[MemoryChange]:
        """The memory's history, oldest first: created (with its first content), updated
        (fields before and after), pinned/unpinned, forgotten/restored, expired, feedback,
        reviewed, superseded/merged/derived by sleep, linked/unlinked — each with its actor
        and time (see ``MemoryChange``). With ``scope``, only of a memory it may see; an id
        it may not see raises ``MemoryNotFound`` as an unknown id does. A soft-deleted
        memory's history is readable; an erased memory has none."""
        engine = self._engine
        item = engine.get(memory_id, scope=scope, include_deleted=True)
        return history.changes(engine, item, utcnow())

    # ----------------------------------------------------------------- reading

    def get(
        self, memory_id: str, *, scope: Scope | None = None, include_deleted: bool = False
    ) -> MemoryItem:
        """The memory with this id. With ``scope``, only if that scope may see it.

        Raises ``MemoryNotFound`` for an unknown id, a hidden (soft-deleted or expired) memory,
        or one the scope may not see — the same error for all, so ids leak nothing.
        """
        return self._engine.get(memory_id, scope=scope, include_deleted=include_deleted)

    def get_many(
        self,
        memory_ids: Sequence[str],
        *,
        scope: Scope | None = None,
        include_deleted: bool = False,
    ) -> list[MemoryItem]:
        """The memories with these ids, in the order given, leaving out (as ``get`` refuses)
        unknown ones, hidden ones (unless ``include_deleted``) and those ``scope`` may not
        see. One read by id, however many: for a page of a list."""
        return self._engine.get_many(memory_ids, scope=scope, include_deleted=include_deleted)

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
        as_of: datetime | None = None,
        known_at: datetime | None = None,
    ) -> list[Recalled]:
        """The ``limit`` best memories for ``query`` that ``scope`` may see, best first.

        Candidates come from the vector index and from BM25 keyword search; each is scored
        ``α·relevance + β·recency + γ·importance + δ·usage − ε·duplication`` (see
        ``RankingWeights``), and ``reason`` on each result shows the parts. Candidates whose
        relevance is below ``min_relevance`` (0..1) are dropped, so weak matches don't fill the
        list; the bar is absolute (cosine and keyword share, before any calibration to the
        query), so the best of unrelated memories does not pass it. A memory whose validity
        has ended (``valid_to``) ranks like a superseded one.

        ``as_of`` (valid time) keeps only memories whose validity held at that moment.
        ``known_at`` (transaction time) recalls what was stored then: memories stored later
        are left out, and each candidate is taken as it stood (edits since undone, a memory
        forgotten since brought back, ranked on its text of then). Only ``known_at`` reads
        history. Both together: what was believed then about then.
        """
        return retrieval.recall(
            self._engine,
            query,
            scope=scope,
            limit=limit,
            filter=filter,
            weights=weights,
            min_relevance=min_relevance,
            now=now,
            as_of=as_of,
            known_at=known_at,
        )

    # --------------------------------------------------------------- lifecycle

    # Every method that changes a memory takes ``scope``: the caller. With it, the memory must
    # be the caller's own (``NotOwner``; ``MemoryNotFound`` if it may not even see it); see
    # ``memento_core._ownership``. Without it, the application acts as the store's owner.

    def pin(self, memory_id: str, *, scope: Scope | None = None) -> MemoryItem:
        """Pin a memory: it never expires and is never offered for forgetting."""
        return lifecycle.change(self._engine, memory_id, history.ChangeKind.PINNED, scope)

    def unpin(self, memory_id: str, *, scope: Scope | None = None) -> MemoryItem:
        return lifecycle.change(self._engine, memory_id, history.ChangeKind.UNPINNED, scope)

    def forget(self, memory_id: str, *, hard: bool = False, scope: Scope | None = None) -> None:
        """Hide a memory (soft: ``restore`` brings it back) or erase it (hard).

        A hard forget removes the memory, its vector, every link that touches it, its
        feedback events, and facts of the same owner derived only from it (another user's
        memory only loses its link). Chroma may keep freed bytes in its files until
        compaction (see the README).
        """
        lifecycle.forget(self._engine, memory_id, hard=hard, caller=scope)

    def restore(self, memory_id: str, *, scope: Scope | None = None) -> MemoryItem:
        """Undo a soft forget."""
        return lifecycle.change(self._engine, memory_id, history.ChangeKind.RESTORED, scope)

    def link(
        self,
        source_id: str,
        type: LinkType | str,
        target_id: str,
        *,
        note: str | None = None,
        scope: Scope | None = None,
    ) -> Link:
        """Record a typed link between two existing memories (idempotent). With ``scope``,
        both must be visible to it and the link records its user (``made_by``); a link never
        lets an erasure reach another user's memory."""
        return links.link(self._engine, source_id, type, target_id, note=note, caller=scope)

    def unlink(
        self,
        source_id: str,
        type: LinkType | str,
        target_id: str,
        *,
        scope: Scope | None = None,
    ) -> None:
        """Remove a link; both memories' histories say when and who (``unlinked``). With
        ``scope``, only a link it made or one from a memory it owns (``NotOwner``)."""
        links.unlink(self._engine, source_id, type, target_id, caller=scope)

    def links(self, memory_id: str) -> list[Link]:
        """Every link from or to this memory, oldest first."""
        return links.links(self._engine, memory_id)

    def feedback(
        self,
        memory_id: str,
        kind: FeedbackKind | str,
        *,
        score: float = 1.0,
        note: str | None = None,
        scope: Scope | None = None,
    ) -> FeedbackEvent:
        """Record how a memory served: ``used``, ``helpful``, ``not_helpful``, … (feeds ranking).
        With ``scope``, only on the caller's own memories."""
        return links.feedback(self._engine, memory_id, kind, score=score, note=note, caller=scope)

    def feedback_events(self, memory_id: str) -> list[FeedbackEvent]:
        return links.feedback_events(self._engine, memory_id)

    # ------------------------------------------------------------------- bulk

    def items(
        self, *, scope: Scope | None = None, include_deleted: bool = False
    ) -> list[MemoryItem]:
        """Every live memory (that ``scope`` may see, if given), oldest first; with
        ``include_deleted``, soft-deleted and expired ones too."""
        engine = self._engine
        engine.usage.flush()
        where = visibility_clause(scope) if scope is not None else None
        now = utcnow()
        found = engine.store.find_items(where)
        if not include_deleted:
            found = [i for i in found if is_live(i, now)]
        return sorted(found, key=lambda i: (i.created_at, i.id))

    def census(
        self,
        scope: Scope | None = None,
        *,
        now: datetime | None = None,
        horizon: timedelta = timedelta(days=7),
    ) -> Census:
        """Counts over the memories ``scope`` may see (all, without it): by user, type and
        privacy, written per day, pinned, forgotten, expired, review cards due, and memories
        expiring within ``horizon``; and ``listing``, every one of them by its flat fields,
        oldest first, to filter and page over (then ``get_many`` the page). Reads the
        memories' flat fields only, never their text: seconds at 100,000 memories."""
        return counting.census(self._engine, scope, now=now, horizon=horizon)

    def all_links(self) -> list[Link]:
        return sorted(self._engine.store.find_links(), key=link_id)

    def all_feedback(self) -> list[FeedbackEvent]:
        return sorted(
            self._engine.store.find_events(), key=lambda e: (e.memory_id, e.at, e.kind.value)
        )

    def stats(self) -> StoreStats:
        engine = self._engine
        engine.usage.flush()
        by_type: dict[str, int] = {}
        by_privacy: dict[str, int] = {}
        users: set[str] = set()
        deleted = live = 0
        for meta in engine.store.item_fields():
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
            links=engine.store.count_links(),
            feedback_events=engine.store.count_events(),
        )

    def side_records(self, name: str) -> SideRecords:
        """A side collection of this store for records without vectors (an adapter's own
        records, say LangGraph checkpoints). ``name``: letters, digits and ``_``; the names
        Memento uses itself (``messages``, ``changes``, ``history``) are refused.

        A record whose metadata ``user_id`` names a user belongs to that user: ``erase_user``
        deletes it, from whatever instance or process erases (the store lists the side
        collections made here), so an adapter need not be built for its records to go."""
        if not isinstance(name, str) or not name.replace("_", "").isalnum() or len(name) > 64:
            raise InvalidInput(f"a side-record name is letters, digits and _, got {name!r}")
        if name in ("messages", "changes", "history", "items", "links", "events", "meta"):
            raise InvalidInput(f"the side-record name {name!r} is Memento's own")
        store = self._engine.store
        if not self._engine.read_only:
            store.register_side_records(name)
        return store.side_records(name)

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
            self._engine,
            session_id,
            scope=scope,
            policy=policy,
            initial=initial,
            counter=counter,
            summarizer=summarizer,
        )

    def history(self, session_id: str, *, scope: Scope | None = None) -> list[Message]:
        """Every message of a chat session, evicted ones included, oldest first. With
        ``scope``, only the session's owner may read it (``NotOwner``)."""
        return chat_history(self._engine, session_id, scope=scope)

    def summarize_thread(
        self, session_id: str, *, summarizer: Summarizer | None = None, scope: Scope | None = None
    ) -> str:
        """Archive a chat session as one episodic memory; returns its id. ``origin_trace``
        names the messages summarised; an unchanged session archives to the same memory."""
        return archive_thread(self._engine, session_id, summarizer=summarizer, scope=scope)

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
        system message and as items (see ``memento_core._injection``). Each memory injected
        counts as a use (``access_count``; ranking's usage signal) unless ``track_usage`` is off."""
        return inject(
            self._engine,
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
        clauses = [{"has_hotwords": True}, *live_clause(utcnow())]
        if scope is not None:
            clauses.append(visibility_clause(scope))
        found = self._engine.store.find_items({"$and": clauses})
        return HotwordSet.from_items(sorted(found, key=lambda item: (item.created_at, item.id)))

    def hotword_detector(
        self, scope: Scope | None = None, *, word_boundary: bool = False
    ) -> HotwordDetector:
        """A detector over the current hotwords, shared by every conversation.

        The automaton is rebuilt only when the hotword set changed: at once after a change
        through this object, and within ``hotword_refresh`` seconds after one by another
        process (server mode). Start a conversation with ``.conversation(connection_id)``.
        """
        key = (scope, word_boundary)
        engine = self._engine
        engine.catch_up()
        with engine.store.lock:
            cached = self._detectors.get(key)
            fresh = (
                cached is not None
                and cached[1] == engine.hotword_generation
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
            self._detectors[key] = (detector, engine.hotword_generation, time.monotonic())
            self._detectors.move_to_end(key)
            while len(self._detectors) > DETECTORS_KEPT:
                self._detectors.popitem(last=False)
            return detector

    # ------------------------------------------------------ forgetting and review

    def forget_candidates(
        self, scope: Scope, *, limit: int = 20, unused_for: timedelta = DEFAULT_UNUSED
    ) -> list[ForgetCandidate]:
        """The soft-delete queue: live, unpinned, long-unused memories, lowest standing first."""
        return lifecycle.forget_candidates(self._engine, scope, limit=limit, unused_for=unused_for)

    def purge(self, *, grace: timedelta = DEFAULT_GRACE) -> PurgeReport:
        """Erase memories soft-deleted or expired longer than ``grace`` ago."""
        return lifecycle.purge(self._engine, grace=grace)

    def erase_user(self, user_id: str) -> ErasureReport:
        """Right to erasure: every memory, vector, link, feedback event and chat message of a
        user, facts derived only from them, and adapters' side records of the user (see
        ``side_records``; ``ErasureReport.extra`` counts them by collection). An unknown user
        is a no-op."""
        return lifecycle.erase_user(self._engine, user_id, extra_erasers=self._engine.user_erasers)

    def on_erase_user(self, eraser: Callable[[str], int], *, name: str) -> None:
        """Have ``erase_user`` also erase a user's records an adapter keeps beside memories
        (say, LangGraph checkpoints): ``eraser(user_id)`` deletes them and returns how many.
        ``name`` keys the count in ``ErasureReport.extra``; registering a name again replaces
        the earlier eraser. Erasers run on this instance's ``erase_user`` only: records kept
        in ``side_records`` with their ``user_id`` need no eraser, any instance erases them."""
        if not callable(eraser):
            raise InvalidInput(f"an eraser must be callable, got {type(eraser).__name__}")
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            raise InvalidInput(f"an eraser name is letters, digits and _, got {name!r}")

        def erase(engine: Engine, user_id: str) -> int:
            return eraser(user_id)

        erase.__name__ = name
        erasers = self._engine.user_erasers
        erasers[:] = [e for e in erasers if e.__name__ != name] + [erase]

    def review_due(self, scope: Scope, *, now: datetime | None = None) -> list[MemoryItem]:
        """Memories whose spaced-review card is due, most overdue first."""
        return lifecycle.review_due(self._engine, scope, now=now)

    def review(
        self,
        memory_id: str,
        grade: int,
        *,
        now: datetime | None = None,
        scope: Scope | None = None,
    ) -> MemoryItem:
        """Grade a review 0..5; the card moves on (grade ≥ 3) or starts over. Counts as a use.
        With ``scope``, only the caller's own memories."""
        return lifecycle.review(self._engine, memory_id, grade, now=now, caller=scope)

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
            self._engine, scope, since=since, summarizer=summarizer, on_progress=on_progress
        )

    def export(self, fmt: str = "ndjson", *, user_id: str | None = None) -> Iterator[str]:
        """The whole store as lines of ``ndjson`` (lossless), ``markdown`` or ``csv``; with
        ``user_id``, only that user's memories (soft-deleted ones too), the links between them
        and their feedback events — never other users' memories, even public ones."""
        return transfer.export_lines(self._engine, fmt, user_id=user_id)

    def import_ndjson(
        self, lines: Iterable[str], *, on_progress: Callable[[int], None] | None = None
    ) -> dict[str, int]:
        """Load an NDJSON export; every line is checked before anything is written."""
        return transfer.import_ndjson(self._engine, lines, on_progress=on_progress)

    def maintain(
        self, *, grace: timedelta = DEFAULT_GRACE, now: datetime | None = None
    ) -> MaintenanceReport:
        """One maintenance pass: purge what is past its grace period, give due review cards,
        archive the chat sessions left idle past their window's ttl, and consolidate every
        user's new episodes (what ``memento worker`` runs)."""
        return worker.run_maintenance(self._engine, grace=grace, now=now)

    def run_worker(
        self,
        *,
        interval: float = 300.0,
        stop: threading.Event | None = None,
        passes: int | None = None,
        on_report: Callable[[MaintenanceReport], None] | None = None,
    ) -> int:
        """Run ``maintain`` every ``interval`` seconds until ``stop`` is set or ``passes``
        passes are done; returns the number of passes."""
        return worker.run_worker(
            self._engine, interval=interval, stop=stop, passes=passes, on_report=on_report
        )

    aremember = async_twin(remember)
    aremember_many = async_twin(remember_many)
    aupdate = async_twin(update)
    aget = async_twin(get)
    arecall = async_twin(recall)
    apreload = async_twin(preload)
    amirror_large_partitions = async_twin(mirror_large_partitions)
    awarm = async_twin(warm)
    apin = async_twin(pin)
    aunpin = async_twin(unpin)
    aforget = async_twin(forget)
    arestore = async_twin(restore)
    alink = async_twin(link)
    aunlink = async_twin(unlink)
    achanges = async_twin(changes)
    alinks = async_twin(links)
    afeedback = async_twin(feedback)
    afeedback_events = async_twin(feedback_events)
    aitems = async_twin(items)
    astats = async_twin(stats)
    acensus = async_twin(census)
    aget_many = async_twin(get_many)
    aimport_ndjson = async_twin(import_ndjson)
    amaintain = async_twin(maintain)
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

    async def aexport(self, fmt: str = "ndjson", *, user_id: str | None = None) -> list[str]:
        """The async twin of ``export``; returns the lines as a list."""
        return await asyncio.to_thread(lambda: list(self.export(fmt, user_id=user_id)))
