"""The engine: what the work modules share, behind the ``Memento`` façade.

It holds the store repository, the embedder, the in-memory candidate index (in partitions by
who may see a memory, loaded when a viewer first needs them: ``_partitions``), the usage
recorder, the timeline (each scope's last memory) and the hotword generation. The work modules
(writing, retrieval, lifecycle, consolidation, transfer, chat) receive it; none of them sees the
façade. Opening a store reads no memories, and a partition too large to load is searched in a
collection of its own instead (``_storage._mirrors``).

**Every instance sees every write.** The candidate index is derived state, shared by every
instance of one store in a process (``_Shared``), so a write through one instance is in the
next recall of any other at once. Other processes' writes reach it through the store's change
feed: before a recall the engine reads the feed entries it has not applied (at most every
``FRESHNESS`` seconds) and re-reads the memories they name that belong in a loaded partition.
An embedded store has one writing process (``_storage._lock``): once the process holding its lock
has read the feed, it stops reading it (every later entry is its own). A read-only process cannot
read vectors another process wrote after it opened, so it embeds their text again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar, cast

from memento_core._candidate_index import CandidateIndex, tokenize
from memento_core._drafts import check_id
from memento_core._model import MemoryItem, Scope, utcnow
from memento_core._partitions import (
    EVICT_TO,
    HOLD_FACTOR,
    PUBLIC,
    TEAM,
    USER,
    Entry,
    PartitionedIndex,
    digest,
    load_partitions,
    needed_by,
    partition_digests,
    partition_where,
    partitions_of,
)
from memento_core._policies import RetentionPolicy, ReviewPolicy
from memento_core._ranking import RankingWeights, Recalled
from memento_core._storage import (
    MERGE_AT,
    Change,
    ChromaStore,
    IndexRecord,
    Repository,
    _postings,
    acquire_write_lock,
    release_write_lock,
    to_micros,
)
from memento_core._usage import UsageRecorder, used_fields
from memento_core._visibility import (
    Visibility,
    check_viewer,
    is_live,
    is_visible,
    visibility_clause,
    visibility_of,
)
from memento_core.embedding import CachingEmbedder
from memento_core.errors import EmbedderMismatch, InvalidInput, MemoryNotFound, ReadOnlyStore

T = TypeVar("T")

FRESHNESS = 0.25
"""Seconds between two reads of the change feed: the bound on how late another process's
write shows in recall (plus the time its write takes to commit)."""
OVERLAP_US = 30_000_000
"""Feed entries are re-read this far back (µs): an entry stamped just before a reader's last
read may commit just after it. Entries already applied are skipped by id."""
FEED_RETENTION_US = 24 * 3600 * 1_000_000
"""Feed entries older than this are pruned; a reader idle longer reloads the index."""
PRUNE_EVERY = 600.0
NOT_NEW_AT_MOST = 100_000
"""Partitions this process remembers having found stored already when it first wrote to
them (``Engine.holding``); past that it forgets them all and looks again."""


class _Shared:
    """One store in this process, shared by all its open instances: the Chroma client and
    repository, and the derived state (the candidate index, the timeline, …)."""

    def __init__(
        self,
        key: tuple[str, str],
        chroma: ChromaStore,
        repository: Repository,
        budget_bytes: int,
    ) -> None:
        self.key = key
        self.chroma = chroma
        self.repository = repository
        self.engines = 0  # open instances; the last to close closes the client
        self.writers = 0  # open writing instances of an embedded store: they hold its lock
        self.writable = 0  # open writing instances, of any store
        self.alone = False  # the feed has been read since the lock was taken: no one else writes
        self.lock = threading.RLock()
        self.partitions = PartitionedIndex(budget_bytes)
        self.started = False
        self.timeline: dict[Scope, tuple[str, datetime]] = {}
        self.hotword_generation = 0
        self.since = 0  # feed entries stamped from here on (µs) may be unseen
        self.applied: dict[str, int] = {}  # feed entry id → its stamp, within the overlap
        self.polled = 0.0
        self.pruned = 0.0
        self.attached: dict[str, Any] = {}  # other modules' per-store state (chat logs)
        self.keeper: threading.Thread | None = None  # mirrors large partitions, background
        self.keeper_again = False
        self.closing = False
        self.sizes: dict[str, int] = {}  # partition digest → memories, as a writer counts
        self.unmirrored: dict[str, float] = {}  # digest → when a recall searched it filtered
        self.unfolded = 0  # memories written to mirrors since the writer last had them folded
        self.not_new: set[str] = set()  # partitions found stored already when first written


_SHARED: dict[tuple[str, str], _Shared] = {}
_SHARED_GUARD = threading.Lock()


def open_shared(
    key: tuple[str, str],
    connect: Callable[[], ChromaStore],
    embedder: CachingEmbedder,
    *,
    writer: bool,
    budget_bytes: int,
) -> _Shared:
    """The store ``key`` (location, collection prefix) as open in this process, connecting on
    the first open. A writer of an embedded store holds its write lock (``connect`` takes it on
    the first open; later ones take it here): ``StoreLocked`` when another process holds it.
    The instances share one index; its budget is the largest any of them asked for."""
    with _SHARED_GUARD:
        shared = _SHARED.get(key)
        if shared is None:
            chroma = connect()
            try:
                info = chroma.attach(embedder.name, embedder.dimension)
            except BaseException:
                chroma.close()
                if writer and chroma.directory is not None:
                    release_write_lock(chroma.directory)
                raise
            repository = Repository(chroma, info, digests_of=_digests_of, terms_of=tokenize)
            shared = _SHARED[key] = _Shared(key, chroma, repository, budget_bytes)
        else:
            info = shared.repository.info
            if (info.embedder, info.dimension) != (embedder.name, embedder.dimension):
                raise EmbedderMismatch(
                    stored=info.embedder,
                    stored_dimension=info.dimension,
                    given=embedder.name,
                    given_dimension=embedder.dimension,
                )
            if writer and shared.chroma.directory is not None:
                acquire_write_lock(shared.chroma.directory)
            partitions = shared.partitions
            partitions.budget_bytes = max(partitions.budget_bytes, budget_bytes)
        shared.engines += 1
        if writer and shared.chroma.directory is not None:
            shared.writers += 1
        shared.repository.mirrors.sole_writer = shared.writers > 0
        return shared


def _digests_of(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """A stored memory's partitions (digests), from its metadata."""
    return partition_digests(Visibility(meta["user_id"], meta["project_id"], meta["privacy"]))


def close_shared(shared: _Shared, *, writer: bool) -> None:
    with _SHARED_GUARD:
        if writer and shared.chroma.directory is not None:
            release_write_lock(shared.chroma.directory)
            with shared.lock:  # a catch-up in flight must not find the lock still held
                shared.writers -= 1
                shared.alone = shared.alone and shared.writers > 0
                shared.repository.mirrors.sole_writer = shared.writers > 0
        shared.engines -= 1
        if shared.engines == 0:
            keeper = shared.keeper
            shared.closing = True
        else:
            keeper = None
    if keeper is not None:  # its pass finishes: a build cut short would wait to go stale
        keeper.join()
    with _SHARED_GUARD:
        if shared.engines == 0:
            shared.repository.mirrors.close()
            shared.chroma.close()
            if _SHARED.get(shared.key) is shared:
                del _SHARED[shared.key]


class Engine:
    def __init__(
        self,
        shared: _Shared,
        embedder: CachingEmbedder,
        *,
        read_only: bool,
        weights: RankingWeights,
        candidates: int,
        track_usage: bool,
        retention: RetentionPolicy,
        review: ReviewPolicy,
        load_limit: int | None = None,
    ) -> None:
        self._shared = shared
        self.load_limit = load_limit
        """Partitions holding more memories are searched in the store (``_mirrors``); with
        None, every partition is loaded, and searched exactly."""
        self.store = shared.repository
        self.embedder = embedder
        self.read_only = read_only
        self.weights = weights
        self.candidates = candidates
        self.track_usage = track_usage and not read_only
        self.retention = retention
        self.review_policy = review
        self.user_erasers: list[Callable[[Engine, str], int]] = []
        """Erase a user's records kept beside memories (chat messages, adapters' records)."""
        self.on_written: list[Callable[[list[MemoryItem]], None]] = []
        """Called with the memories each write stored (the façade's plugin hook)."""
        self.on_recalled: list[Callable[[str, Scope, list[Recalled]], None]] = []
        """Called with each recall's query, viewer and results (the façade's plugin hook)."""
        self.usage = UsageRecorder(
            self._write_usage,
            lambda item, moment, uses: used_fields(item, moment, uses=uses),
            gone=lambda: self._closed or self.store.gone(),
        )
        self._closed = False
        self._writable(+1)
        self._start()
        if self._keeps_mirrors() and self.store.count_items() > (self.load_limit or 0):
            self.keep_mirrors()  # a store written before mirrors, or by a writer without them
        if self.store.shared and self.load_limit is not None:  # no first query waits on it
            threading.Thread(target=self._warm_quietly, name="memento-warm", daemon=True).start()

    def warm(self) -> int:
        """Have the Chroma server load every mirror's index now (``_mirrors.warm``)."""
        if self.load_limit is None:
            return 0
        return self.store.mirrors.warm(sorted(self.store.mirrors.ready()), self.embedder.dimension)

    def _warm_quietly(self) -> None:
        with contextlib.suppress(Exception):  # closed meanwhile; the first query loads it
            self.warm()

    # ------------------------------------------------------------------ mirrors kept

    def _keeps_mirrors(self) -> bool:
        return not self.read_only and self.load_limit is not None

    def keep_mirrors(self, *, wait: bool = False) -> None:
        """Mirror every partition past the load limit that has none, with its postings, and
        fold the tails, in the background (one pass at a time per store and process): a
        writer does it, never a recall while a user waits. ``wait``: until that pass is
        done (a batch write that made a partition cross the limit)."""
        if not self._keeps_mirrors():
            return
        shared = self._shared
        with shared.lock:
            if shared.closing:
                return
            if shared.keeper is not None:
                shared.keeper_again = True
            else:
                shared.keeper = threading.Thread(
                    target=self._keep, name="memento-mirrors", daemon=True
                )
                shared.keeper.start()
        if wait:
            self.wait_for_mirrors()

    def _tail_due(self, name: str, due_only: bool) -> bool:
        """Whether a mirror's tail is to be folded now: any tail when asked to, one past the
        fold size (``_postings.FOLD_AT``, or a share of the base) in the background."""
        postings = self.store.mirrors.postings
        size = postings.tail_size(name)
        if not due_only or not size:
            return bool(size)
        head = postings.head(name)
        base = head.memories if head is not None else 0
        return size >= max(_postings.FOLD_AT, _postings.FOLD_SHARE * base)

    def wait_for_mirrors(self) -> None:
        """Let the background pass in flight, if any, finish (``keep_mirrors``)."""
        while True:
            with self._shared.lock:
                keeper = self._shared.keeper
            if keeper is None or keeper is threading.current_thread():
                return
            keeper.join()

    def _keep(self) -> None:
        shared = self._shared
        while True:
            with contextlib.suppress(Exception):  # the next write or open tries again
                self.mirror_large_partitions(due_only=True)
            with shared.lock:
                if not shared.keeper_again or shared.closing:
                    shared.keeper = None
                    return
                shared.keeper_again = False

    def _grown(self, items: Sequence[MemoryItem]) -> None:
        """Count what a write added to its partitions; a partition crossing the load limit
        without a mirror gets one from this writer, in the background."""
        if not self._keeps_mirrors() or not items:
            return
        limit = self.load_limit or 0
        crossed = False
        ready = self.store.mirrors.ready()
        with self._shared.lock:
            sizes = self._shared.sizes
            for item in items:
                for d in partition_digests(visibility_of(item)):
                    sizes[d] = sizes.get(d, 0) + 1
                    crossed = crossed or sizes[d] == limit + 1
                    self._shared.unfolded += d in ready
            # Tails written with no recall to fold them (a bulk import): folded by the writer.
            folding = self._shared.unfolded >= _postings.FOLD_AT
            if folding:
                self._shared.unfolded = 0
        if crossed:  # a batch waits: its next recall finds the partition mirrored
            self.keep_mirrors(wait=len(items) > 1)
        elif folding:
            self.keep_mirrors()

    def _writable(self, change: int) -> None:
        """Count this process's writing instances of the store: while it has one, it folds
        the tails of mirrored partitions' postings (``_postings``)."""
        if not self.read_only:
            with self._shared.lock:
                self._shared.writable += change
                self.store.mirrors.postings.may_fold = self._shared.writable > 0
            if not self.store.mirrors.postings.may_fold:
                self.store.mirrors.postings.wait_folds()

    # ------------------------------------------------------------------ state

    @property
    def index(self) -> CandidateIndex:
        return self._shared.partitions.index

    @property
    def partitions(self) -> PartitionedIndex:
        return self._shared.partitions

    @property
    def timeline(self) -> dict[Scope, tuple[str, datetime]]:
        return self._shared.timeline

    @property
    def hotword_generation(self) -> int:
        return self._shared.hotword_generation

    @property
    def collection_prefix(self) -> str:
        return self._shared.key[1]

    def shared_state(self, name: str, make: Callable[[], T]) -> T:
        """Per-store state another module keeps (made on first use), shared like the index."""
        with self._shared.lock:
            found = self._shared.attached.get(name)
            if found is None:
                found = self._shared.attached[name] = make()
            return cast(T, found)

    def hotwords_changed(self) -> None:
        self._shared.hotword_generation += 1

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyStore(
                f"the store {self.store.location} was opened read-only; nothing was changed"
            )

    def close(self) -> None:
        """Write pending usage; the last instance of the store in this process closes it."""
        if self._closed:
            return
        self._closed = True
        self.usage.close()
        if not self.read_only:
            with contextlib.suppress(Exception):  # unfolded writes stay listed by the feed
                self.store.fold_directory()
        self._writable(-1)
        close_shared(self._shared, writer=not self.read_only)

    def written(self, items: list[MemoryItem]) -> None:
        self._grown(items)
        for observer in self.on_written:
            observer(items)

    def recalled(self, query: str, viewer: Scope, results: list[Recalled]) -> None:
        for observer in self.on_recalled:
            observer(query, viewer, results)

    # ------------------------------------------------------------------ reads

    def get(
        self, memory_id: str, *, scope: Scope | None = None, include_deleted: bool = False
    ) -> MemoryItem:
        """The memory with this id, as stored; ``MemoryNotFound`` for an unknown id, a hidden
        one (unless ``include_deleted``) or one ``scope`` may not see — one error for all.
        Noted usage is counted in, not written first (see ``_usage``)."""
        check_id(memory_id)
        where = visibility_clause(scope) if scope is not None else None
        found = self.usage.read_fresh(lambda: self.store.items_by_id([memory_id], where=where))
        if not found or (not include_deleted and not is_live(found[0], utcnow())):
            raise MemoryNotFound(memory_id)
        return found[0]

    def get_many(
        self, memory_ids: Sequence[str], *, scope: Scope | None, include_deleted: bool
    ) -> list[MemoryItem]:
        """``get`` for many ids in one read by id, leaving out what ``get`` would refuse.
        Visibility is decided on the memories read: a ``where`` beside ids makes Chroma
        evaluate it over the whole collection."""
        if isinstance(memory_ids, str) or not isinstance(memory_ids, Sequence):
            raise InvalidInput(f"memory_ids must be a list of ids, got {memory_ids!r}")
        for memory_id in memory_ids:
            check_id(memory_id)
        if scope is not None:
            check_viewer(scope)
        wanted = list(dict.fromkeys(memory_ids))
        found = self.usage.read_fresh(lambda: self.store.items_by_id(wanted))
        now = utcnow()
        by_id = {
            item.id: item
            for item in found
            if (scope is None or is_visible(item, scope))
            and (include_deleted or is_live(item, now))
        }
        return [by_id[i] for i in wanted if i in by_id]

    # ------------------------------------------------------- candidate index

    def _start(self) -> None:
        """Start following the change feed from now, once per process and store: nothing is
        read until a viewer needs its partitions."""
        shared = self._shared
        with shared.lock:
            if shared.started:
                return
            shared.since = to_micros(utcnow()) - OVERLAP_US
            shared.polled = time.monotonic()
            shared.started = True

    def ready_for(self, viewer: Scope, *, load_all: bool = False) -> tuple[str, ...]:
        """Make the index hold what ``viewer`` may see: apply what other processes wrote,
        then load the viewer's partitions that are not loaded yet — but those searched in the
        store (mirrored, ``_mirrors``), unless ``load_all``. Returns the digests of those."""
        return self.ready_for_recall(viewer, load_all=load_all)[0]

    def ready_for_recall(
        self, viewer: Scope, *, load_all: bool = False
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``ready_for``, and the keys of the viewer's partitions too large to load that have
        no mirror yet: a recall searches those in the store, bounded (``nearest_in``)."""
        keys = needed_by(viewer)
        partitions = self._shared.partitions
        far, filtered = ((), ()) if load_all else self._in_store(keys)
        near = [k for k in keys if digest(k) not in far and k not in filtered]
        # Before a load, every feed entry visible now is taken as applied (the load reads what
        # they describe), so none of them is read a second time afterwards.
        self.catch_up(force=bool(partitions.missing(near)))
        load_partitions(partitions, near, self._read_partition)
        if load_all:  # kept whole, however large they grow (``preload``)
            partitions.pin(keys)
        return far, filtered

    def searched_in_store(self, keys: Sequence[str]) -> tuple[str, ...]:
        """The digests of the partitions of ``keys`` a recall searches in their mirrors: those
        mirrored whole and not loaded here."""
        return self._in_store(keys)[0]

    def _in_store(self, keys: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The digests of the partitions of ``keys`` a recall searches in their mirrors (those
        mirrored whole, with postings, and not loaded here), and the keys of those too large
        to load that have none yet. A read-only embedded process cannot read vectors
        written after it opened the store, so it follows the mirrored ones (``follow``): what
        the change feed says is written to them from then on is indexed here as well."""
        if self.load_limit is None:
            return (), ()
        self._release_oversized(keys)
        missing = self._shared.partitions.missing(keys)
        if not missing:
            return (), ()
        mirrors = self.store.mirrors
        ready = mirrors.ready()
        far = [
            key
            for key in missing
            if digest(key) in ready and mirrors.has_postings(digest(key), fresh=False)
        ]
        if self.read_only and not self.store.shared:
            self._shared.partitions.follow(far)
        filtered = tuple(k for k in missing if k not in far and self._too_large(k))
        with self._shared.lock:
            for key in missing:  # mirrored, or small enough to load, since
                if key not in filtered:
                    self._shared.unmirrored.pop(digest(key), None)
            for key in filtered:
                self._shared.unmirrored[digest(key)] = time.monotonic()
        if filtered:
            self.keep_mirrors()
        return tuple(map(digest, far)), filtered

    def _too_large(self, key: str) -> bool:
        """Whether a partition lists more memories than the load limit (as this process
        counted them, else as the directory lists them; a store older than the directory:
        no, it is loaded)."""
        name = digest(key)
        with self._shared.lock:
            size = self._shared.sizes.get(name)
        if size is None:
            listed = self.store.directory.members(name)
            if listed is None:
                return False
            size = len(listed.ids)
            with self._shared.lock:
                self._shared.sizes.setdefault(name, size)
        return size > (self.load_limit or 0)

    def searched_by_filter(self) -> int:
        """Partitions recalls searched by a filtered query, not found mirrored since."""
        with self._shared.lock:
            return len(self._shared.unmirrored)

    def _read_partition(self, key: str) -> Iterator[Entry]:
        """A partition's memories as stored: the ids the directory lists, read by id (an
        equality read where the store is older than the directory and the partition has no
        base yet, which this read then writes)."""
        directory = self.store.directory
        name = digest(key)
        listed = directory.members(name)
        if listed is None:
            where, privacies = partition_where(key)
            ids = self.store.item_ids_where(where, privacies=privacies)
            if not self.read_only:
                directory.write_base(name, ids)
        else:
            ids = listed.ids
        # Never copied into a mirror here, while a user waits: a writer does that in the
        # background (``keep_mirrors``); a partition too large to load is searched in the
        # store meanwhile (``_in_store``).
        records = self._read_records(key, ids)
        # Yielded as read, so the caller indexes a page while the next ones are read.
        if listed is None or len(listed.sealed) <= MERGE_AT or self.read_only:
            yield from self._entries(records)
            return
        held = []
        for entry in self._entries(records):
            if key in partitions_of(entry[2]):
                held.append(entry[0])
            yield entry
        directory.merge(name, listed.sealed, held)

    def _read_records(self, key: str, ids: Sequence[str]) -> Iterable[IndexRecord]:
        # A user's or a project's memories are what its recall reads next: cached as read.
        records: Iterable[IndexRecord] = self.store.index_records(ids, cache=key != PUBLIC)
        if self.read_only and not self.store.shared:
            # A read-only embedded process cannot read vectors written after its client
            # opened; such a read fails as a whole, so the partition's text is embedded again.
            try:
                records = list(records)
            except Exception:  # Chroma raises a plain error for a vector it lacks
                records = self._embedded_again(
                    list(self.store.index_records(ids, with_vectors=False))
                )
        return records

    def _collected(
        self, key: str, records: Iterable[IndexRecord], into: list[Entry]
    ) -> Iterator[Entry]:
        """The partition's entries as read; those still in it collected ``into`` (the
        directory may list some that left)."""
        for entry in self._entries(records):
            if key in partitions_of(entry[2]):
                into.append(entry)
            yield entry

    def mirror_large_partitions(
        self,
        on_progress: Callable[[int], None] | None = None,
        *,
        limit: int | None = None,
        due_only: bool = False,
    ) -> int:
        """Copy every partition past ``limit`` (else the load limit) that has no mirror into
        one now (a store written before mirrors, or one whose large partitions no process has
        loaded since); returns how many were copied. ``on_progress`` gets the memories copied.
        Every mirror's keyword postings are brought up to date too: written for a mirror
        copied before they existed, the tail folded into them otherwise (``_postings``)."""
        self.check_writable()
        limit = limit if limit is not None else self.load_limit
        if limit is None:
            raise InvalidInput(
                "no partition_load_limit: open the store with one (Memento.open("
                "partition_load_limit=500)) or pass limit=; nothing was copied"
            )
        sizes = self.store.directory.sizes()
        if sizes is None:  # a store older than the directory: count every memory's partitions
            sizes = {}
            for _, digests in self.store.item_partitions(_digests_of):
                for d in digests:
                    sizes[d] = sizes.get(d, 0) + 1
        with self._shared.lock:
            self._shared.sizes = dict(sizes)
        ready = self.store.mirrors.ready()
        copied = 0
        for name in sorted(ready):  # their keyword side: written, or its tail folded
            if not self.store.mirrors.has_postings(name):  # copied before postings existed
                read_at = to_micros(utcnow())
                held = self.store.mirrors.held(name)
                texts = {i.id: i.content for i in self.store.items_by_id(held)}
                found = [i for i in held if i in texts]
                self.store.mirrors.index_postings(
                    name, found, [texts[i] for i in found], read_at=read_at
                )
                if on_progress:
                    on_progress(len(found))
            elif self._tail_due(name, due_only):
                self.store.mirrors.postings.fold(name)
        for name, size in sizes.items():
            if size <= limit or name in ready or not self.store.mirrors.start(name):
                continue
            listed = self.store.directory.members(name)  # after the listing: nothing missed
            if listed is None:  # a store older than the directory: its partition, by equality
                ids = [memory_id for memory_id, digests in self.store.item_partitions(_digests_of)
                       if name in digests]  # fmt: skip
            else:
                ids = listed.ids
            kept = [
                r
                for r in self.store.index_records(ids)
                if name in partition_digests(Visibility(r.user_id, r.project_id, r.privacy))
            ]
            self.store.mirrors.copy(
                name, [r.id for r in kept], [r.vector for r in kept], [r.content for r in kept]
            )
            self.store.mirrors.finish(name)
            copied += 1
            if on_progress:
                on_progress(len(kept))
        return copied

    def build_partition_directory(self, on_progress: Callable[[int], None] | None = None) -> int:
        """List every stored memory in the partition directory (a store written before it had
        one); returns the partitions listed, 0 when the directory was complete already."""
        self.check_writable()
        if self.store.directory.complete():
            return 0
        listed = list(
            self.store.item_partitions(
                lambda meta: partition_digests(
                    Visibility(meta["user_id"], meta["project_id"], meta["privacy"])
                )
            )
        )
        return self.store.directory.backfill(
            [memory_id for memory_id, _ in listed],
            [digests for _, digests in listed],
            on_progress,
        )

    def forget_user_partition(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Take a user about to be erased, and their memories, out of the directory."""
        teams = [
            digest(key)
            for item in self.store.items_by_id(memory_ids)
            for key in partitions_of(visibility_of(item))
            if key.startswith(TEAM)
        ]
        self.store.directory.forget(digest(USER + user_id), memory_ids, teams)
        self.store.mirrors.drop(digest(USER + user_id))

    def _embedded_again(self, records: list[IndexRecord]) -> list[IndexRecord]:
        vectors = self.embedder.embed_documents([r.content for r in records])
        return [dataclasses.replace(r, vector=v) for r, v in zip(records, vectors)]

    @staticmethod
    def _entries(records: Iterable[IndexRecord]) -> Iterator[Entry]:
        for record in records:
            yield (
                record.id,
                record.content,
                Visibility(record.user_id, record.project_id, record.privacy),
                record.vector,
            )

    def feed_read_seconds_ago(self) -> float | None:
        """Seconds since this process last read the change feed; None if it never did."""
        polled = self._shared.polled
        return None if not polled else max(0.0, time.monotonic() - polled)

    def catch_up(self, *, force: bool = False) -> None:
        """Apply the change-feed entries written by other processes since the last look."""
        shared = self._shared
        if not force and time.monotonic() - shared.polled < FRESHNESS:
            return
        with shared.lock, shared.partitions.loading:
            if not force and time.monotonic() - shared.polled < FRESHNESS:
                return
            now = to_micros(utcnow())
            if shared.alone:
                pass  # this process holds the embedded store's lock: every entry is its own
            elif now - shared.since > FEED_RETENTION_US // 2:
                # Idle past the feed's retention: entries may be gone; start again from empty.
                shared.partitions.clear()
                self.store.forget_cached()
                shared.applied.clear()
                shared.since = now - OVERLAP_US
                self.hotwords_changed()
            else:
                # Read (under the lock, if this process holds it) what others wrote before.
                writers = shared.writers
                self._apply_changes(
                    self.store.changes_since(shared.since - OVERLAP_US, known=shared.applied)
                )
                shared.alone = writers > 0 and shared.writers > 0
            shared.polled = time.monotonic()
            if not self.read_only and time.monotonic() - shared.pruned > PRUNE_EVERY:
                shared.pruned = time.monotonic()
                self.store.prune_changes(now - FEED_RETENTION_US)

    def _apply_changes(self, changes: Sequence[Change]) -> None:
        shared = self._shared
        partitions = shared.partitions
        fresh = [c for c in changes if c.id not in shared.applied]
        if any(c.op == "erase" and not c.ids for c in fresh):
            # An erasure names no ids (none may outlive it): drop every cached record; the
            # index drops the erased ids when a recall finds them gone (``dropped``).
            self.store.forget_cached()
            self.hotwords_changed()
        if fresh:
            self.store.forget_cached(i for change in fresh for i in change.ids)
        indexed = [c for c in fresh if c.op != "touch"]  # a touch changes no index
        if indexed:
            latest: dict[str, tuple[str, tuple[str, ...] | None, int]] = {}
            for change in indexed:  # oldest first: the last word on an id wins
                for n, memory_id in enumerate(change.ids):
                    digests = change.partitions[n] if change.partitions else None
                    latest[memory_id] = (change.op, digests, change.at)
            partitions.remove([i for i, (op, _, _) in latest.items() if op != "put"])
            # Re-read only what the index holds or a loaded partition wants (an entry from an
            # older writer names no partitions: read it to find out).
            self._apply(
                [
                    memory_id
                    for memory_id, (op, digests, at) in latest.items()
                    if op == "put"
                    and (
                        digests is None
                        or partitions.holds(memory_id)
                        or partitions.wants(digests, at)
                    )
                ]
            )
            self.hotwords_changed()
        for change in fresh:
            shared.applied[change.id] = change.at
            shared.since = max(shared.since, change.at)
        horizon = shared.since - OVERLAP_US
        for change_id in [i for i, at in shared.applied.items() if at < horizon]:
            del shared.applied[change_id]

    def _apply(self, ids: Sequence[str]) -> None:
        """Re-index these memories as stored now; ids no longer stored leave the index."""
        if not ids:
            return
        # A read-only embedded process cannot read vectors written after it opened.
        with_vectors = not self.read_only or self.store.shared
        records = list(self.store.index_records(ids, with_vectors=with_vectors))
        if not with_vectors:
            records = self._embedded_again(records)
        partitions = self._shared.partitions
        partitions.put_many(list(self._entries(records)))
        partitions.remove(set(ids) - {r.id for r in records})

    def holding(self, items: Sequence[MemoryItem]) -> None:
        """Before this process writes ``items``: hold in its index, from now on, the
        partitions they are the first memories of (an empty partition, loaded). What it
        writes to them is then indexed as written, and its recalls search them here, exactly,
        even once they pass the load limit (up to ``HOLD_FACTOR`` times it), while other
        processes search the mirror it makes: a batch writer that recalls what it wrote (a
        conversation archived, then asked about) neither reads it back nor searches it in the
        store. Each partition not loaded is looked up in the directory once per process; a
        partition stored already is left to recall's loads. None is held once the index is
        near its budget, so a process that only writes stops growing there."""
        partitions = self._shared.partitions
        if self.read_only or partitions.index.nbytes() >= EVICT_TO * partitions.budget_bytes:
            return
        keys = dict.fromkeys(k for item in items for k in partitions_of(visibility_of(item)))
        with self._shared.lock:
            unknown = [k for k in keys if k not in self._shared.not_new]
        unknown = partitions.missing(unknown)
        if not unknown or not self.store.directory.complete():
            return
        # As before a load: every feed entry visible now is applied, so none naming one of
        # these partitions is skipped as applied once it is held.
        self.catch_up(force=True)
        with partitions.loading:
            for key in partitions.missing(unknown):
                listed = self.store.directory.members(digest(key))
                if listed is not None and not listed.ids:
                    partitions.hold(key)
                    continue
                with self._shared.lock:
                    if len(self._shared.not_new) >= NOT_NEW_AT_MOST:
                        self._shared.not_new.clear()
                    self._shared.not_new.add(key)

    def _release_oversized(self, keys: Iterable[str]) -> None:
        """Drop the loaded partitions of ``keys`` past ``HOLD_FACTOR`` times the load limit
        that are mirrored (with postings): searched in the mirror from now on."""
        if self.load_limit is None:
            return
        partitions = self._shared.partitions
        oversized = [
            k for k, n in partitions.sizes(keys).items() if n > HOLD_FACTOR * self.load_limit
        ]
        if not oversized:
            return
        mirrors = self.store.mirrors
        ready = mirrors.ready()
        for key in oversized:
            name = digest(key)
            if name in ready and mirrors.has_postings(name, fresh=False):
                partitions.release(key)

    def held_past_limit(self) -> int:
        """Loaded partitions listing more than the load limit (``IndexStatus``)."""
        if self.load_limit is None:
            return 0
        limit = self.load_limit
        return sum(1 for n in self._shared.partitions.sizes().values() if n > limit)

    def indexed(self, items: Sequence[MemoryItem], vectors: Any) -> None:
        """Put memories this process just wrote into the index (where a loaded partition
        wants them), and keep the index within its budget."""
        partitions = self._shared.partitions
        with partitions.loading:  # at once: the index normalises a batch's vectors together
            partitions.put_many(
                [
                    (item.id, item.content, visibility_of(item), vector)
                    for item, vector in zip(items, vectors)
                ]
            )
        keys = list(dict.fromkeys(k for item in items for k in partitions_of(visibility_of(item))))
        self._release_oversized(keys)
        partitions.evict(keep=keys)

    def dropped(self, memory_ids: Iterable[str]) -> None:
        """Memories a read found gone from the store (erased by another process, whose feed
        entry names no ids): out of the index."""
        self._shared.partitions.remove(memory_ids)

    def unindexed(self, memory_ids: Sequence[str]) -> None:
        """Take memories this process just erased out of the index and the timeline."""
        self._shared.partitions.remove(memory_ids)
        gone = set(memory_ids)
        timeline = self._shared.timeline
        for scope in [s for s, last in timeline.items() if last[0] in gone]:
            del timeline[scope]

    def noted(self, change: Change | None) -> None:
        """A feed entry this process wrote: its effect is in the index already."""
        if change is not None:
            self._shared.applied[change.id] = change.at

    # ------------------------------------------------------------------ usage

    def _write_usage(self, ids: Sequence[str], fields: Sequence[dict[str, Any]]) -> None:
        # Read-modify-write: under concurrent writers a count may be lost; usage is a soft
        # signal. No store lock here: callers holding it flush usage, and the writer thread
        # must not wait for them (Chroma serialises its own writes).
        live = self.store.existing_ids(ids)
        keep = [n for n, memory_id in enumerate(ids) if memory_id in live]
        if keep:
            self.store.set_fields([ids[n] for n in keep], [fields[n] for n in keep])
