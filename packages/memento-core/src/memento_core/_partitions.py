"""The candidate index in partitions: what a viewer may see, loaded when first needed.

A viewer (user ``u``, project ``p``) sees public memories, ``u``'s own memories and ``p``'s team
memories (``_visibility``), so memories fall into partitions by who may see them:

- ``public``: every public memory;
- ``user:<u>``: ``u``'s memories that are not public (private and team);
- ``team:<p>``: project ``p``'s team memories.

A team memory belongs to its owner's partition and to its project's; the index holds it once,
while either is loaded. A recall needs at most three partitions (``needed_by``); one not loaded
yet is read from the store by id, the ids taken from the store's partition directory
(``_storage._directory``; an equality read, ``partition_where``, where a store older than the
directory has none for it yet). Opening a store reads nothing. When the index grows past its
budget, the partitions used least recently are evicted (never the ones being asked for) and the
index is compacted.

The statistics BM25 ranks with are taken over what the viewer may see (``CandidateIndex``), so
a viewer's results do not depend on which other partitions happen to be loaded.

Past the load limit (``partition_load_limit``, ``DEFAULT_LOAD_LIMIT`` unless the store is opened
with another or None), a partition listing more is not loaded: the first process that loads it
copies it into a collection of its own (``_storage._mirrors``), and from
then on recall searches it there (``Engine.searched_in_store``). That is where recall becomes
approximate: Chroma's HNSW finds the nearest memories (``ef_search`` 200). The keyword side is
exact: the partition's postings for the query's terms (``_storage._postings``) are scored with
what the index holds, statistics over both — but for the former length of a memory reworded
since the postings were folded, which is estimated. ``benchmarks/results/scale.md`` measures
the agreement with exact search.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from memento_core._candidate_index import CandidateIndex
from memento_core._model import Privacy, Scope
from memento_core._visibility import Visibility

PUBLIC = "public"
USER = "user:"
TEAM = "team:"

DEFAULT_BUDGET_MB = 1024
"""The default index budget: a whole store of about 500,000 memories stays loaded."""

DEFAULT_LOAD_LIMIT = 500
"""Partitions listing more memories are searched where they live (``Memento.open``'s
``partition_load_limit``): a cold user loads its own and its project's partitions at about
0.3 ms a memory, so two of 500 stay within a quarter second, and a larger one answers from its
mirror (``_storage._mirrors``): at 1M memories on a server, 0.9965 of the exact top 10
(``benchmarks/results/scale.md``)."""
HOLD_FACTOR = 20
"""A partition this process holds whole — it wrote every memory of it (``Engine.holding``), or
loaded it before it crossed the load limit — stays in its index, searched here exactly and
without a store round trip, until it lists this many times the load limit (10,000 memories by
default); then, once mirrored, it is dropped and searched in its mirror like any process does.
The load limit bounds what a *cold* process pays to load (0.3 ms a memory); holding costs
nothing to load, only memory (about 1.7 KB a memory: 17 MB at the bound) and an exact scan that
grows with the partition (at 10,000 memories a few ms, where HNSW in the store costs 1–4 ms
plus the round trip). The index budget bounds the total as for any loaded partition."""
NOT_PUBLIC = frozenset([Privacy.PRIVATE.value, Privacy.TEAM.value])
FILL_CHUNK = 1_000
EVICT_TO = 0.8
"""Eviction frees a fifth of the budget at once, so the next loads do not each evict again."""

Entry = tuple[str, str, Visibility, Any]
"""What the index keeps of one memory: id, text, who may see it, vector."""


@dataclass(frozen=True)
class IndexStatus:
    """What this process's candidate index of a store holds (``Memento.index_status``)."""

    partitions: int
    """Partitions loaded: ``public``, one per user and one per project seen by a recall."""
    memories: int
    """Memories held (a team memory whose user's and project's partitions are both loaded
    counts once)."""
    bytes: int
    """About how much memory the index takes: vectors, postings and per-memory entries."""
    budget_bytes: int
    loads: int
    """Partitions read from the store since the store was opened in this process."""
    evictions: int
    """Partitions dropped to stay within the budget since then."""
    searched_in_store: int = 0
    """Partitions too large to load, each searched in a collection of its own (``_mirrors``);
    every process of the store shares them."""
    feed_read_seconds_ago: float | None = None
    """How long ago this process last read the store's change feed (what other processes
    wrote); None before its first read (``Memento.index_status`` fills it in)."""
    searched_by_filter: int = 0
    """Partitions too large to load that have no mirror yet (a writer makes it in the
    background): their recent recalls searched them in the store by a filtered vector query,
    bounded, without their keyword side, instead of copying them while a user waits."""
    held_past_limit: int = 0
    """Partitions listing more than the load limit that this process holds whole all the
    same (it wrote them from empty, or loaded them before they crossed the limit): its
    recalls search them here, exactly, while other processes search their mirrors
    (``HOLD_FACTOR`` bounds how large one may grow so)."""


def partitions_of(visibility: Visibility) -> tuple[str, ...]:
    """The partitions a memory belongs to."""
    if visibility.privacy == Privacy.PUBLIC.value:
        return (PUBLIC,)
    if visibility.privacy == Privacy.TEAM.value and visibility.project_id:
        return (USER + visibility.user_id, TEAM + visibility.project_id)
    return (USER + visibility.user_id,)


def digest(key: str) -> str:
    """A partition's name in the change feed: a user's or project's id is not written there,
    so erasing a user leaves no trace of it in the feed."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def partition_digests(visibility: Visibility) -> tuple[str, ...]:
    return tuple(digest(key) for key in partitions_of(visibility))


def needed_by(viewer: Scope) -> tuple[str, ...]:
    """The partitions holding everything ``viewer`` may see."""
    keys = (PUBLIC, USER + (viewer.user_id or ""))
    return (*keys, TEAM + viewer.project_id) if viewer.project_id else keys


def partition_where(key: str) -> tuple[dict[str, Any], frozenset[str]]:
    """One partition as a store read: an equality on one field, and the privacies to keep of
    what it returns. One field, because Chroma answers a ``where`` of two about 2.5 times
    slower (measured at 200k memories: 105 against 43 ms); the rest is sorted here."""
    if key == PUBLIC:
        return {"privacy": Privacy.PUBLIC.value}, frozenset([Privacy.PUBLIC.value])
    if key.startswith(USER):
        return {"user_id": key[len(USER) :]}, NOT_PUBLIC
    if key.startswith(TEAM):
        return {"project_id": key[len(TEAM) :]}, frozenset([Privacy.TEAM.value])
    raise ValueError(f"not a partition: {key!r}")


class PartitionedIndex:
    """A ``CandidateIndex`` over the loaded partitions, with their bookkeeping.

    ``loading`` serialises partition loads with this process's own writes (the engine holds it
    around both): a write that lands while a partition is read is then either in the read or
    put into the index after it, never lost between the two.
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.index = CandidateIndex()
        self.loading = threading.RLock()
        self._lock = threading.RLock()
        # Partition → its memories, least recently used first; one being read is also in
        # ``_filling`` and counts as missing until it is whole.
        self._members: OrderedDict[str, set[str]] = OrderedDict()
        self._filling: set[str] = set()
        # Partitions searched in the store that this process follows: what is written to them
        # from now on is indexed here (members of ``_members`` too), but they count as missing.
        self._following: dict[str, int] = {}  # key → followed from (µs)
        self._followed_since: dict[str, int] = {}  # key → first followed (µs), kept
        self._pinned: set[str] = set()  # loaded by ``preload``: never released (``release``)
        self._keys_of: dict[str, tuple[str, ...]] = {}
        self._by_digest: dict[str, str] = {}
        self.loads = 0
        self.evictions = 0

    # ------------------------------------------------------------------ state

    def missing(self, keys: Sequence[str]) -> list[str]:
        """Which of ``keys`` are not loaded; the loaded ones count as just used."""
        with self._lock:
            absent = []
            for key in keys:
                if key in self._members and key not in self._filling | self._following.keys():
                    self._members.move_to_end(key)
                else:
                    absent.append(key)
            return absent

    def wants(self, digests: Iterable[str], at: int | None = None) -> bool:
        """Whether a memory in the partitions with these digests, logged at ``at`` (µs),
        belongs in a loaded one, or in a followed one that began following before then (what
        was written before is in the store's copy the process searches)."""
        with self._lock:
            for d in digests:
                key = self._by_digest.get(d)
                if key in self._members and (
                    key not in self._following or at is None or at >= self._following[key]
                ):
                    return True
            return False

    def follow(self, keys: Iterable[str]) -> None:
        """Index from now on what is written to these partitions, which are searched in the
        store (a process may not see there what others write after it opened the store:
        ``Engine.searched_in_store``). They stay missing: a load replaces what was followed."""
        with self._lock:
            # A feed entry is stamped after its mirror write committed, by this machine's
            # clock (an embedded store): one stamped before the first follow is in the copy
            # this process searches, which it reads only after following.
            now = time.time_ns() // 1000
            for key in keys:
                if key not in self._members:
                    self._members[key] = set()
                    self._following[key] = self._followed_since.setdefault(key, now)
                    self._by_digest[digest(key)] = key

    def held_for(self, keys: Iterable[str]) -> set[str]:
        """What this index holds of these partitions that a partition searched in the store
        may list too: the memories of loaded user and team partitions (a team memory is in
        its owner's and its project's) and those followed (``follow``)."""
        with self._lock:
            held: set[str] = set()
            for key in keys:
                if key in self._members and (key != PUBLIC or key in self._following):
                    held |= self._members[key]
            return held

    def followed(self) -> set[str]:
        """The memories indexed here because a partition searched in the store is followed
        (``follow``): not in what this process reads of that partition's postings."""
        with self._lock:
            return {i for key in self._following for i in self._members.get(key, ())}

    def holds(self, memory_id: str) -> bool:
        return memory_id in self._keys_of

    def sizes(self, keys: Iterable[str] | None = None) -> dict[str, int]:
        """How many memories each loaded partition (of ``keys``, else all) holds; those
        being read or followed are not loaded."""
        with self._lock:
            skip = self._filling | self._following.keys()
            wanted = self._members.keys() if keys is None else keys
            return {
                key: len(self._members[key])
                for key in wanted
                if key in self._members and key not in skip
            }

    def status(self) -> IndexStatus:
        with self._lock:
            return IndexStatus(
                partitions=len(self._members) - len(self._filling | self._following.keys()),
                memories=len(self._keys_of),
                bytes=self.index.nbytes(),
                budget_bytes=self.budget_bytes,
                loads=self.loads,
                evictions=self.evictions,
            )

    # ------------------------------------------------------------------ changes

    def hold(self, key: str) -> None:
        """Load a partition known to be empty (this process is about to write its first
        memories): what it writes to it from now on is indexed here, and the partition is
        whole here without ever being read."""
        with self._lock:
            if key not in self._members:
                self._members[key] = set()
                self._by_digest[digest(key)] = key

    def pin(self, keys: Iterable[str]) -> None:
        """Keep these loaded partitions however large they grow (``release`` skips them);
        only eviction drops them."""
        with self._lock:
            self._pinned.update(k for k in keys if k in self._members)

    def release(self, key: str) -> None:
        """Drop a loaded partition that grew too large to keep (``HOLD_FACTOR``), unless
        pinned."""
        with self._lock:
            if key in self._members and key not in self._filling | self._pinned:
                self._drop(key)

    def add_partition(self, key: str, entries: Iterable[Entry]) -> None:
        """A partition read from the store: index its memories and mark it loaded. The read
        is consumed in chunks, so recalls that need other partitions do not wait for it."""
        with self._lock:
            if key in self._following:  # what was followed is in the read
                self._drop(key)
            self._members[key] = set()
            self._filling.add(key)
            self._by_digest[digest(key)] = key
        try:
            chunk: list[Entry] = []
            for entry in entries:
                chunk.append(entry)
                if len(chunk) == FILL_CHUNK:
                    self._put_all(chunk)
                    chunk = []
            self._put_all(chunk)
        except BaseException:
            with self._lock:
                self._drop(key)
            raise
        finally:
            with self._lock:
                self._filling.discard(key)
        self.loads += 1

    def _put_all(self, entries: Sequence[Entry]) -> None:
        with self._lock:
            indexed = []
            for entry in entries:
                memory_id, _, visibility, _ = entry
                for key in self._keys_of.pop(memory_id, ()):
                    self._members[key].discard(memory_id)
                keys = tuple(k for k in partitions_of(visibility) if k in self._members)
                if keys:
                    indexed.append(entry)
                    self._keys_of[memory_id] = keys
                    for key in keys:
                        self._members[key].add(memory_id)
                else:
                    self.index.remove(memory_id)
            # One that stays is replaced in one step: a recall never finds it missing.
            self.index.add_many(indexed)

    def put(self, entry: Entry) -> None:
        """A memory as stored now: indexed when one of its partitions is loaded, else
        dropped (it may have moved out of a loaded partition)."""
        self._put_all([entry])

    def put_many(self, entries: Sequence[Entry]) -> None:
        """``put`` for many memories, indexed in one step."""
        self._put_all(entries)

    def remove(self, memory_ids: Iterable[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._remove(memory_id)

    def _remove(self, memory_id: str) -> None:
        keys = self._keys_of.pop(memory_id, None)
        if keys is None:
            return
        for key in keys:
            self._members[key].discard(memory_id)
        self.index.remove(memory_id)

    def clear(self) -> None:
        with self._lock:
            self._members.clear()
            self._filling.clear()
            self._following.clear()
            self._pinned.clear()
            self._keys_of.clear()
            self.index = CandidateIndex()

    def evict(self, keep: Sequence[str]) -> None:
        """Over the budget, drop the partitions used least recently (not ``keep``) until the
        index is back under ``EVICT_TO`` of it, then compact it once."""
        with self._lock:
            if self.index.nbytes() <= self.budget_bytes:
                return
            target = EVICT_TO * self.budget_bytes
            evictable = [k for k in self._members if k not in keep and k not in self._filling]
            for key in evictable:
                if self.index.nbytes(live=True) <= target:
                    break
                self._drop(key)
                self.evictions += 1
            self.index.compact(force=True)

    def _drop(self, key: str) -> None:
        self._following.pop(key, None)
        self._pinned.discard(key)
        for memory_id in self._members.pop(key, ()):
            others = tuple(k for k in self._keys_of[memory_id] if k != key)
            if others:
                self._keys_of[memory_id] = others
            else:
                del self._keys_of[memory_id]
                self.index.remove(memory_id)


def load_partitions(
    partitions: PartitionedIndex,
    keys: Sequence[str],
    read: Callable[[str], Iterator[Entry]],
) -> None:
    """Load the partitions of ``keys`` that are missing (reading each with ``read``; several
    at once, since each read waits mostly on the store, then indexed here: indexing them in
    the reading threads made cold users slower, the threads contending for the interpreter),
    then keep the index within its budget. One partition is indexed as it is read."""
    if not partitions.missing(keys):
        return
    with partitions.loading:
        absent = partitions.missing(keys)
        if len(absent) == 1:
            partitions.add_partition(absent[0], read(absent[0]))
        elif absent:
            with ThreadPoolExecutor(len(absent), thread_name_prefix="memento-load") as pool:
                read_all = list(pool.map(lambda key: list(read(key)), absent))
            for key, entries in zip(absent, read_all):
                partitions.add_partition(key, entries)
        partitions.evict(keep=keys)
