"""The partition directory: which memories each partition holds, kept beside them, so loading a
partition reads its memories by id.

Chroma answers an equality ``where`` over the memories in time that grows with the whole
collection (about 0.2 µs a memory: 0.25 s at 1M), so a user with ten memories would wait as
long as one with ten thousand. The directory is a side collection (``<prefix>_partitions``) of
small records, each listing ids of one partition (named by its digest, ``_partitions.digest``);
a load reads the partition's records, an equality over this far smaller collection, then its
memories by id.

No two writers write one record. A writer (one process's repository) appends only to its own
records, ``<digest>:<writer>:<n>``. The sole writer of an embedded store extends its open record
until it is full or older than ``SEAL_AFTER_US``; a writer of a store others write too writes a
new record each time and never rewrites one, so no append can put back an id an erasure took
out meanwhile. Only erasures and ``merge`` rewrite records, and each first leaves a tombstone
(``erased:<hash of the id>``, never the id) for every id it erases, and after each rewrite reads
the record and the tombstones again until none is left in it: of two rewrites racing, the later
one sees the other's tombstone. A record may list ids that
left the partition (erased, or moved by a change of privacy): the load reads each memory as
stored and keeps what belongs. So the directory may list too much, but misses no id written
since the store had it.

On an embedded store (one writing process at a time, which holds its lock), a write is not
listed at once: the change-feed entry logged with it already names its memories and their
partitions, durably, so the directory is the records plus the feed's ``put`` entries since the
``FOLDED_ID`` mark, and the writer folds those entries into records every ``FOLD_AT`` memories
and when it closes. That saves each memory written on its own one durable Chroma write (7 ms
of 24 ms, ``benchmarks/results/write_profile.md``). A writer killed before folding loses
nothing: its entries are in the feed, which keeps everything after the mark, and the next
writer folds them. A Chroma server has many writers, and each lists its writes at once.

A store written before the directory has no ``complete`` mark. Its partitions gain a directory
one at a time: the first load reads the partition by equality and writes what it found as the
partition's ``base``; ``backfill`` does every partition in one pass, then sets the mark.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memento_core._storage._side import SideRecords

CHUNK = 500
"""Ids per record at most (~20 KB): merged records, bases and a large write's new records."""
APPEND_AT_MOST = 64
"""Ids a writer's open record takes before the next append starts a new one. An append
rewrites the record whole, and Chroma's write grows with the record's text: rewriting one of
500 ids took 2.5 times as long as one of 64, a cost a memory written on its own pays every
time. Loads merge the small records once sealed (``MERGE_AT``)."""
SEAL_AFTER_US = 5 * 60 * 1_000_000
"""A writer stops appending to a record this old (µs); ``merge`` waits twice as long."""
MERGE_AT = 16
"""A partition spread over more sealed records than this is merged by its next load."""
OPEN_RECORDS = 10_000
"""A writer remembers its open records for this many partitions; past that, the least recently
written partition's next append starts a new record."""
COMPLETE_ID = "partition_directory"
"""The meta record that says every memory of the store is listed in the directory."""
FOLDED_ID = "partition_directory_folded"
"""The meta record whose ``at`` (µs) is the folding mark: every change-feed entry stamped
before it is in the directory's records; later ``put`` entries belong to the directory too."""
FOLD_AT = 64
"""Memories written since the last fold after which the writer folds the feed into records."""
MARK_MARGIN_US = 1_000_000
"""A first mark is set this far in the past: an entry stamped by a clock a little behind
still falls after it (listing a memory twice is harmless; missing one is not)."""

FeedPuts = Callable[[int], Sequence[tuple[int, Sequence[str], Sequence[Sequence[str]]]]]
"""Reads the change feed's ``put`` entries stamped at or after a time (µs), oldest first:
each entry's stamp, memory ids and each memory's partition digests."""
WRITE_BATCH = 1_000
ERASED = "~erased"
"""The partition tombstones are filed under: no partition's digest."""
CLEAN_ROUNDS = 20


@dataclass(frozen=True)
class Members:
    """What the directory lists for one partition: memory ids (some may have left it) and
    the records a merge may rewrite."""

    ids: list[str]
    sealed: list[str] = field(default_factory=list)


@dataclass
class _Record:
    """One of this writer's records. On a store other processes write to, its ids are read
    back before each append, so an erasure that rewrote the record meanwhile is not undone;
    the sole writer of a store (an embedded one: its process holds the write lock) keeps
    them in ``ids`` instead, since only its own ``forget`` can rewrite them."""

    id: str
    opened: int
    size: int = 0
    ids: list[str] | None = None


def _now_us() -> int:
    return time.time_ns() // 1000


def _by_digest(ids: Sequence[str], digests: Sequence[Sequence[str]]) -> dict[str, list[str]]:
    """Memory ids grouped by partition: ``ids[n]`` is in the partitions ``digests[n]``."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for memory_id, memory_digests in zip(ids, digests):
        for d in memory_digests:
            grouped[d].append(memory_id)
    return grouped


def _tomb(memory_id: str) -> str:
    """A tombstone's id: a hash of the erased id, so it keeps no trace of it."""
    return "erased:" + hashlib.blake2b(memory_id.encode("utf-8"), digest_size=16).hexdigest()


def _chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[start : start + CHUNK] for start in range(0, len(ids), CHUNK)]


class PartitionDirectory:
    """The directory of one store, as one writer (this process) sees and extends it."""

    def __init__(
        self,
        records: SideRecords,
        meta: Any,
        *,
        sole_writer: bool = False,
        feed: FeedPuts | None = None,
    ) -> None:
        self._records = records
        self._meta = meta
        self._sole_writer = sole_writer
        """No other process writes this store (embedded): appends need not read back."""
        self._feed = feed if sole_writer else None
        """Where writes not folded yet are listed (an embedded store's change feed)."""
        self._unfolded = 0
        """Memories this writer logged since its last fold."""
        self._marked = False
        self._writer = os.urandom(6).hex()
        self._open: OrderedDict[str, _Record] = OrderedDict()
        self._lock = threading.Lock()
        self._complete = False

    # ------------------------------------------------------------------ reads

    def complete(self) -> bool:
        """Whether every memory of the store is listed (a store created with the directory, or
        one backfilled); asked of the store again until it is."""
        if not self._complete:
            self._complete = bool(self._meta.get(ids=[COMPLETE_ID], include=[])["ids"])
        return self._complete

    def members(self, digest: str) -> Members | None:
        """The ids listed for partition ``digest``; None when the listing may miss some (a
        store older than the directory, whose partition has no whole base yet)."""
        ids: list[str] = []
        sealed: list[str] = []
        bases: dict[str, list[int]] = defaultdict(list)
        horizon = _now_us() - 2 * SEAL_AFTER_US
        # The feed first: a fold between the two reads lists its entries in records, read next.
        unfolded = self._unfolded_members(digest)
        for record in self._records.find({"partition": digest}):
            ids += json.loads(record.document)
            if int(record.metadata["opened"]) < horizon or not self._sole_writer:
                sealed.append(record.id)  # written once (``append``): merged when many
            if "base" in record.metadata:
                bases[str(record.metadata["base"])].append(int(record.metadata["base_of"]))
        whole_base = any(len(sizes) == sizes[0] for sizes in bases.values())
        if not whole_base and not self.complete():
            return None
        return Members(list(dict.fromkeys(ids + unfolded)), sealed)

    def sizes(self) -> dict[str, int] | None:
        """How many memories the directory lists for each partition (digest → count; a count
        may include memories that left it); None when the listing may miss some (a store
        older than the directory, not backfilled)."""
        if not self.complete():
            return None
        listed: dict[str, set[str]] = defaultdict(set)
        for record in self._records.find({"partition": {"$ne": ERASED}}):
            listed[str(record.metadata["partition"])].update(json.loads(record.document))
        mark = self.folded_up_to()
        if mark is not None and self._feed is not None:
            for _, ids, digests in self._feed(mark):
                for memory_id, memory_digests in zip(ids, digests):
                    for d in memory_digests:
                        listed[d].add(memory_id)
        return {d: len(ids) for d, ids in listed.items()}

    def folded_up_to(self) -> int | None:
        """The folding mark (µs): feed entries from it on are not in the records yet; None
        where no writer ever deferred (a server store, or an embedded one written before)."""
        if self._feed is None:
            return None
        found = self._meta.get(ids=[FOLDED_ID], include=["metadatas"])
        return int(found["metadatas"][0]["at"]) if found["ids"] else None

    def _unfolded_members(self, digest: str) -> list[str]:
        mark = self.folded_up_to()
        if mark is None or self._feed is None:
            return []
        return [
            memory_id
            for _, ids, digests in self._feed(mark)
            for memory_id, memory_digests in zip(ids, digests)
            if digest in memory_digests
        ]

    # ------------------------------------------------------------------ writes

    def mark_complete(self) -> None:
        """Every memory is listed from now on: the store was just created, or backfilled."""
        self._meta.upsert(
            ids=[COMPLETE_ID],
            embeddings=[[1.0]],
            documents=["every memory is listed in the partition directory"],
            metadatas=[{"kind": "partition_directory", "at": _now_us()}],
        )
        self._complete = True

    @property
    def defers(self) -> bool:
        """Whether writes are listed by their feed entries and folded later (embedded)."""
        return self._feed is not None

    def before_deferring(self) -> None:
        """Set the folding mark if no writer ever did, before the first write it covers is
        logged: every entry stamped before it was listed as written."""
        if self._marked or self._feed is None:
            return
        if self.folded_up_to() is None:
            self._set_mark(_now_us() - MARK_MARGIN_US)
        self._marked = True

    def deferred(self, count: int) -> bool:
        """Note ``count`` memories logged in the feed and not listed; True when it is time to
        fold (``FOLD_AT``)."""
        self._unfolded += count
        return self._unfolded >= FOLD_AT

    def fold(self) -> None:
        """List the feed's ``put`` entries since the mark in records, then move the mark past
        them. The caller keeps new entries from being logged meanwhile (one that landed
        after the read but was stamped before the new mark would be left out)."""
        mark = self.folded_up_to()
        if mark is None or self._feed is None:
            return
        entries = self._feed(mark)
        if entries:
            self.append(
                [i for _, ids, _ in entries for i in ids],
                [d for _, _, digests in entries for d in digests],
            )
            self._set_mark(max(at for at, _, _ in entries) + 1)
        self._unfolded = 0

    def _set_mark(self, at: int) -> None:
        self._meta.upsert(
            ids=[FOLDED_ID],
            embeddings=[[1.0]],
            documents=["change-feed entries before this time are listed in the directory"],
            metadatas=[{"kind": "partition_directory", "at": at}],
        )

    def append(self, ids: Sequence[str], digests: Sequence[Sequence[str]]) -> None:
        """List memory ``ids[n]`` in its partitions ``digests[n]``, in this writer's records."""
        by_digest = _by_digest(ids, digests)
        with self._lock:
            now = _now_us()
            touched: dict[str, tuple[str, _Record, list[str]]] = {}
            for d, new in by_digest.items():
                for chunk in _chunks(new):
                    record = self._open_record(d, len(chunk), now)
                    record.size += len(chunk)
                    touched.setdefault(record.id, (d, record, []))[2].extend(chunk)
            unknown = [
                i for i, (_, r, new) in touched.items() if r.size > len(new) and r.ids is None
            ]
            stored = {r.id: json.loads(r.document) for r in self._records.get(unknown)}
            written = []
            for d, r, new in touched.values():
                listed = (r.ids if r.ids is not None else stored.get(r.id, [])) + new
                written.append((d, r, listed))
            try:
                self._write(self._records.put, written)
            except BaseException:  # what a record holds now is read back next time
                for _, r, _ in written:
                    r.ids = None
                raise
            for _, r, listed in written:
                r.ids = listed if self._sole_writer else None

    def _open_record(self, digest: str, adding: int, now: int) -> _Record:
        record = self._open.pop(digest, None)
        full = record is not None and record.size + adding > APPEND_AT_MOST
        stale = record is not None and now - record.opened > SEAL_AFTER_US
        if record is None or full or stale or not self._sole_writer:
            record = _Record(f"{digest}:{self._writer}:{os.urandom(4).hex()}", now)
        self._open[digest] = record
        if len(self._open) > OPEN_RECORDS:
            self._open.popitem(last=False)
        return record

    def write_base(self, digest: str, ids: Sequence[str]) -> None:
        """Record what an equality read found in a partition of a store older than the
        directory: with this whole base, its listing is complete (later writes add their own
        records)."""
        self._clean(self._write_group(digest, ids, f"base{os.urandom(4).hex()}"))

    def merge(self, digest: str, sealed: Sequence[str], belonging: Sequence[str]) -> None:
        """Replace a partition's ``sealed`` records by few records of the ids that still
        belong to it (as just read). No writer appends to a sealed record, so nothing can be
        lost between the read and the rewrite; the new records are a base (they cover what
        the sealed ones did, a base among them)."""
        self._clean(self._write_group(digest, belonging, f"merge{os.urandom(4).hex()}"))
        self._records.delete(ids=list(sealed))

    def _write_group(self, digest: str, ids: Sequence[str], group: str) -> list[str]:
        chunks = _chunks(ids) or [[]]
        records = [
            (digest, _Record(f"{digest}:{group}:{n}", 0), list(c)) for n, c in enumerate(chunks)
        ]
        # One call: the group is whole or absent.
        self._write(self._records.add, records, base=group, base_of=len(records), one_call=True)
        return [r.id for _, r, _ in records]

    def _mark_erased(self, erased: Sequence[str]) -> None:
        ids = [_tomb(i) for i in dict.fromkeys(erased)]
        for start in range(0, len(ids), WRITE_BATCH):
            page = ids[start : start + WRITE_BATCH]
            self._records.put(
                page, ["[]"] * len(page), [{"partition": ERASED, "opened": 0}] * len(page)
            )

    def _clean(self, record_ids: Sequence[str]) -> None:
        """Rewrite these records without any id that has a tombstone (read after the
        record), and read them again, until none is left (a record left empty stays: a
        base counts its records)."""
        for _ in range(CLEAN_ROUNDS):
            dirty = False
            for start in range(0, len(record_ids), WRITE_BATCH):
                found = self._records.get(record_ids[start : start + WRITE_BATCH])
                listed = {r.id: json.loads(r.document) for r in found}
                named = list({i for ids in listed.values() for i in ids})
                struck = {r.id for r in self._records.get([_tomb(i) for i in named])}
                for record in found:
                    kept = [i for i in listed[record.id] if _tomb(i) not in struck]
                    if len(kept) < len(listed[record.id]):
                        self._records.put([record.id], [json.dumps(kept)], [record.metadata])
                        dirty = True
            if not dirty:
                return

    def backfill(
        self,
        ids: Sequence[str],
        digests: Sequence[Sequence[str]],
        on_progress: Callable[[int], None] | None = None,
    ) -> int:
        """List every stored memory (``ids`` with their partitions' ``digests``), then mark
        the directory complete; returns how many partitions were listed. Safe to run again
        (the records have fixed ids) and beside writers (they list their own writes)."""
        by_digest = _by_digest(ids, digests)
        records = [
            (d, _Record(f"{d}:fill:{n}", 0), list(chunk))
            for d, members in by_digest.items()
            for n, chunk in enumerate(_chunks(members))
        ]
        self._write(self._records.put, records, on_progress=on_progress)
        self.mark_complete()
        return len(by_digest)

    def forget(self, user_digest: str, erased: Sequence[str], team_digests: Iterable[str]) -> None:
        """An erased user: drop their partition's records, and their ``erased`` memories'
        ids from the records of ``team_digests`` (a memory id is a hash of its text and
        owner, so it must not outlive the memory)."""
        gone = set(erased)
        with self._lock:
            self._open.clear()  # the records below may be rewritten: later appends start anew
            self._mark_erased(sorted(gone))
            self._records.delete(where={"partition": user_digest})
            naming = [
                record.id
                for team in set(team_digests)
                for record in self._records.find({"partition": team})
                if gone.intersection(json.loads(record.document))
            ]
            self._clean(naming)

    def scrub(self, erased: Sequence[str]) -> None:
        """Take erased memories' ids out of every record that lists them, whatever its
        partition (a memory id is a hash of its text and owner, so it must not outlive the
        memory). A record left empty stays: a base counts its records."""
        gone = set(erased)
        with self._lock:
            self._open.clear()  # the records below may be rewritten: later appends start anew
            self._mark_erased(sorted(gone))
            self._clean([r.id for r in self._records.naming([json.dumps(i) for i in gone])])

    def _write(
        self,
        write: Callable[..., None],
        records: Sequence[tuple[str, _Record, list[str]]],
        *,
        one_call: bool = False,
        on_progress: Callable[[int], None] | None = None,
        **extra: Any,
    ) -> None:
        step = max(len(records), 1) if one_call else WRITE_BATCH
        for start in range(0, len(records), step):
            batch = records[start : start + step]
            write(
                [r.id for _, r, _ in batch],
                [json.dumps(ids) for _, _, ids in batch],
                [{"partition": d, "opened": r.opened, **extra} for d, r, _ in batch],
            )
            if on_progress:
                on_progress(len(batch))
