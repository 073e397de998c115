"""The keyword side of the mirrored partitions: their BM25 postings, kept in the store.

A mirrored partition (``_mirrors``) is searched where it lives; for its vectors that is the
mirror's HNSW, for its keywords these postings. They sit in ``<prefix>_postings`` in two parts:

- the **base**, written in one go (a *generation*): a record a term, ``<digest>:<gen>:<term>:
  <part>``, listing every memory of the partition holding the term with the term's count there
  and the memory's length in terms (parts of ``PART`` memories), and a head, ``head:<digest>``,
  naming the generation, its *mark* (µs), and how many memories and terms it holds in all;
  a fold's generation is a *delta* on the ones before it (the head's ``chain``): for each term
  its tail touched, the tail's memories holding it, and (``out``) those reworded so that they
  no longer do; a term's postings are the chain's records merged, the newest mention of a
  memory winning (``_merged``), so a fold writes what its tail holds, whatever the partition
  holds. Every ``CHAIN_AT_MOST``-th fold writes every term whole again;
- the **tail**: the memories written to the mirror since the mark. A writer stamps each memory it
  puts into a mirror with ``at`` and its terms' counts (``_mirrors``), so a reader reads the tail
  from the mirror (``at`` at or after the mark; then only what is newer) and lets its entries
  replace the base's.

So BM25 over a mirrored partition is exact, with statistics over the whole partition, and a
write costs nothing more than its mirror write. When a tail grows past ``FOLD_AT`` memories (or
a tenth of the base), a process that may write folds it into a new generation in the background
(the previous one stays until the next fold, for readers holding its head). A memory erased,
or leaving the partition (a change of privacy), is taken out of every generation at once,
found under its terms and those of the texts it replaced (the mirror keeps both): nothing
erased stays mentioned. Whatever recall finds here it reads by id, and keeps only what the
viewer may see.

Records are metadata (a term's ids as JSON, counts and lengths as base64 ``uint16``), not
documents: Chroma indexes documents for full-text search, which made writing 20 MB of them ten
times slower (16.5 s against 1.5 s, measured embedded).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memento_core._storage._chroma import PLACEHOLDER_VECTOR
from memento_core.errors import StoreUnavailable

if TYPE_CHECKING:
    import numpy as np

PART = 20_000
"""Memories a term record lists at most; a term held by more takes several parts."""
FOLD_AT = 1_000
FOLD_SHARE = 0.1
"""A process that may write folds a tail into a new generation once it holds ``FOLD_AT``
memories put since the last fold, or a tenth of the base if more: every ``CHAIN_AT_MOST``-th
fold rewrites the base whole, so folding in proportion to it keeps that cost a constant share
of each write (the folds between write deltas, which cost what their tail holds)."""
OVERLAP_US = 10_000_000
"""A mark lies this far before the fold's read (µs): a write stamped before its mirror write
commits is in the tail at least this long, so no fold misses it."""
HEAD_TTL = 0.25
"""Seconds a process trusts its copy of a head, and of a tail (the feed's freshness bound)."""
CACHE_ENTRIES = 1_500_000
"""Term postings (memories listed) a process keeps decoded: a generation never changes."""
WRITE_PAGE = 200
FOLD_CLAIM_US = 120 * 1_000_000
"""A fold claimed this long ago without a new generation was cut short: another may start."""
FORMAT = 3
"""Records name terms by a hash (format 1 named the word) and a fold's generation holds
deltas (format 2 held each touched term whole); a head of another format is not read: a
writer writes the partition's postings again."""
MEMBERS = "~members"
"""A pseudo-term every memory of a generation is listed under (count 1, with its length),
which no text tokenises to: a fold finds which of its tail's memories the head counts, and
their former lengths, by reading it, not the postings of every term its tail touched."""
KINDS = ("term", "head", "tomb", "claim", "gone")
SETTLE_ROUNDS = 20
"""Rounds of re-reading after a rewrite, at most, before a writer lets the next one finish."""
CHAIN_AT_MOST = 8
"""Generations a head builds on at most: the fold after rewrites every term (compacts)."""
STALE_PARTS = 64
"""Parts a rewritten term may have had beyond those it fills now (``PART`` memories each)."""

TermPostings = tuple[list[str], "np.ndarray", "np.ndarray", "np.ndarray"]
"""One term's postings: memory ids, their codes (``PartitionPostings.code``), the term's count
in each, each memory's length."""
MAX_CODES = 4_000_000
"""Memory ids a process numbers before it starts numbering afresh (``code``)."""


@dataclass(frozen=True)
class Head:
    digest: str
    gen: str
    mark: int
    memories: int
    total_length: int
    chain: tuple[str, ...] = ()
    """Older generations it builds on, newest first: a fold writes only the terms its tail
    touched, and a term's postings are those of the newest generation holding it."""

    @property
    def gens(self) -> tuple[str, ...]:
        return (self.gen, *self.chain)


@dataclass
class StoredPostings:
    """What the mirrored partitions of a recall hold for its terms: each term's postings, and
    the statistics BM25 weighs terms with over them (memories, their summed length)."""

    memories: int
    total_length: float
    postings: dict[str, TermPostings] = field(default_factory=dict)
    ids: Sequence[str] = ()
    """Memory id by code: scores are summed by code (``np.bincount``), not by id."""

    @property
    def frequency(self) -> dict[str, int]:
        return {term: len(found[0]) for term, found in self.postings.items()}


@dataclass
class _Tail:
    """A partition's tail as this process read it, indexed by term as it comes in."""

    mark: int
    since: int  # the next read asks for ``at`` from here on
    polled: float
    entries: dict[str, tuple[dict[str, int], int, int]] = field(default_factory=dict)
    """Memory id → its term counts, its length, when it was put (µs)."""
    by_term: dict[str, dict[str, int]] = field(default_factory=dict)
    """Term → memory id → the term's count there."""
    total_length: int = 0
    since_fold: int = 0
    """Entries put since the fold that set the mark read the tail (``FOLD_AT``)."""

    def put(self, memory_id: str, counts: dict[str, int], length: int, at: int) -> None:
        self.drop(memory_id)
        self.entries[memory_id] = (counts, length, at)
        self.total_length += length
        self.since_fold += at >= self.mark + OVERLAP_US
        for term, tf in counts.items():
            self.by_term.setdefault(term, {})[memory_id] = tf

    def drop(self, memory_id: str) -> None:
        found = self.entries.pop(memory_id, None)
        if found is None:
            return
        counts, length, at = found
        self.total_length -= length
        self.since_fold -= at >= self.mark + OVERLAP_US
        for term in counts:
            holders = self.by_term.get(term)
            if holders is not None:
                holders.pop(memory_id, None)
                if not holders:
                    del self.by_term[term]


@dataclass(frozen=True)
class _TailView:
    """What a recall takes of a tail: its ids, their summed length, its postings of the
    query's terms (id, the term's count, the memory's length), and the lengths of those of
    its memories the recall has seen elsewhere."""

    ids: frozenset[str]
    total_length: int
    since_fold: int
    postings: dict[str, list[tuple[str, int, int]]]
    lengths: dict[str, int]


@dataclass
class _Built:
    """A generation as a writer builds it: each term's postings (ids, counts, lengths),
    its memories' lengths, when a tail entry was put, and the tombstones already applied."""

    postings: dict[str, tuple[list[str], list[int], list[int]]] = field(default_factory=dict)
    members: dict[str, int] = field(default_factory=dict)
    born: dict[str, int] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    struck: dict[str, int] = field(default_factory=dict)
    """Memories taken out after the build (``_settle``), with their lengths."""
    outs: dict[str, list[str]] = field(default_factory=dict)
    """Term → memories a delta takes out of it: listed under it by an older generation, no
    longer holding it (reworded)."""

    @property
    def total_length(self) -> int:
        return sum(self.members.values())

    def add(
        self, memory_id: str, counts: Mapping[str, int], length: int, *, at: int | None = None
    ) -> None:
        if memory_id not in self.members:
            counts = {**counts, MEMBERS: 1}
        self.members[memory_id] = length
        if at is not None:
            self.born[memory_id] = at
        for term, tf in counts.items():
            ids, tfs, lengths = self.postings.setdefault(term, ([], [], []))
            ids.append(memory_id)
            tfs.append(tf)
            lengths.append(length)

    def out(self, term: str, memory_id: str) -> None:
        self.postings.setdefault(term, ([], [], []))
        self.outs.setdefault(term, []).append(memory_id)

    def without(self, struck: Set[str]) -> dict[str, tuple[list[str], list[int], list[int]]]:
        """Take these memories out; returns the terms that listed them, as they are now."""
        touched = {}
        for term, outs in self.outs.items():
            if not struck.isdisjoint(outs):
                self.outs[term] = [i for i in outs if i not in struck]
                touched[term] = self.postings[term]
        for term, (ids, tfs, lengths) in self.postings.items():
            if not struck.isdisjoint(ids):
                keep = [n for n, i in enumerate(ids) if i not in struck]
                self.postings[term] = touched[term] = (
                    [ids[n] for n in keep],
                    [tfs[n] for n in keep],
                    [lengths[n] for n in keep],
                )
        for memory_id in struck:
            if memory_id in self.members:
                self.struck[memory_id] = self.members.pop(memory_id)
        return touched


def _now_us() -> int:
    return time.time_ns() // 1000


READ_PAGE = 2_000
"""Records a read asks for at most: Chroma's SQLite refuses a read of tens of thousands at
once (too many SQL variables), as a tail written in bulk can hold."""


def _paged_get(collection: Any, *, where: Mapping[str, Any] | None = None,
               include: Sequence[str] = ()) -> dict[str, list[Any]]:  # fmt: skip
    """``collection.get(where=...)`` in pages of ``READ_PAGE``, as one result."""
    ids: list[str] = []
    metadatas: list[Any] = []
    offset = 0
    while True:
        page = collection.get(
            where=dict(where) if where else None,
            include=list(include),
            limit=READ_PAGE,
            offset=offset,
        )
        ids += page["ids"]
        metadatas += page.get("metadatas") or [None] * len(page["ids"])
        if len(page["ids"]) < READ_PAGE:
            return {"ids": ids, "metadatas": metadatas}
        offset += len(page["ids"])


def _get_ids(collection: Any, ids: Sequence[str]) -> dict[str, list[Any]]:
    """``collection.get(ids=...)`` with metadata, in pages of ``READ_PAGE`` ids."""
    found: dict[str, list[Any]] = {"ids": [], "metadatas": []}
    for start in range(0, len(ids), READ_PAGE):
        page = collection.get(ids=list(ids[start : start + READ_PAGE]), include=["metadatas"])
        found["ids"] += page["ids"]
        found["metadatas"] += page["metadatas"]
    return found


def _key(term: str) -> str:
    """A term as a record id names it: a hash, so no id keeps a word once its record is gone."""
    return hashlib.blake2b(term.encode("utf-8"), digest_size=8).hexdigest()


def _hid(memory_id: str) -> str:
    """A memory id as a tombstone names it: a hash, so the tombstone keeps no trace of it."""
    return hashlib.blake2b(memory_id.encode("utf-8"), digest_size=16).hexdigest()


def _pack(values: Sequence[int]) -> str:
    import numpy as np

    clipped = np.minimum(np.asarray(values, dtype=np.int64), 65_535).astype("<u2")
    return base64.b64encode(clipped.tobytes()).decode("ascii")


def _unpack(text: str) -> np.ndarray:
    import numpy as np

    return np.frombuffer(base64.b64decode(text), dtype="<u2").astype(np.float32)


def _merged(
    by_gen: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """One term's postings over a chain of generations (newest first): a memory as the newest
    one mentioning it lists it, or not at all if that one takes it out (``out``)."""
    import numpy as np

    ids: list[str] = []
    tfs: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    seen: set[str] = set()
    for _, metas in by_gen:
        listed: list[str] = []
        for meta in metas:
            part = json.loads(meta["ids"])
            if not part:
                continue
            tf, size = _unpack(meta["tf"]), _unpack(meta["length"])
            if seen:  # a newer generation mentions some: those are taken from it
                keep = [n for n, memory_id in enumerate(part) if memory_id not in seen]
                if len(keep) < len(part):
                    tf, size = tf[keep], size[keep]
                    ids += [part[n] for n in keep]
                else:
                    ids += part
            else:
                ids += part
            tfs.append(tf)
            lengths.append(size)
            listed += part
        if len(by_gen) > 1:
            seen.update(listed)
            if metas:
                seen.update(json.loads(str(metas[0].get("out") or "[]")))
    empty = np.zeros(0, dtype=np.float32)
    return (
        ids,
        np.concatenate(tfs) if tfs else empty,
        np.concatenate(lengths) if lengths else empty,
    )


class PartitionPostings:
    """The postings of every mirrored partition of one store, as this process sees them."""

    def __init__(
        self,
        chroma: Any,
        *,
        mirror: Callable[[str], Any],
        counts_in: Callable[[Mapping[str, Any]], dict[str, int]],
    ) -> None:
        self._chroma = chroma
        self._mirror = mirror
        self._counts_in = counts_in
        """A mirrored memory's term counts, from its metadata (``_mirrors``)."""
        self._lock = threading.RLock()
        self._records: Any = None
        self._heads: dict[str, tuple[Head | None, float]] = {}
        self._tails: dict[str, _Tail] = {}
        self._cache: OrderedDict[tuple[str, str, str], TermPostings] = OrderedDict()
        self._cached_entries = 0
        self._folding: set[str] = set()
        self._folds: list[threading.Thread] = []
        self._codes: dict[str, int] = {}
        self._ids: list[str] = []
        self._counts: dict[str, tuple[int, float]] = {}  # digest → (mirror's count, when)
        self.may_fold = False
        """Whether this process may write the store (set by the engine): only then it folds."""
        self.sole_writer = False

    def _collection(self) -> Any:
        with self._lock:
            if self._records is None:
                self._records = self._chroma.collection("postings")
            return self._records

    def _code(self, ids: Sequence[str]) -> np.ndarray:
        """Number memory ids (once a process): a query's scores are summed by number. Past
        ``MAX_CODES`` numbering starts afresh, and the cached postings with it."""
        import numpy as np

        with self._lock:
            if len(self._ids) + len(ids) > MAX_CODES:
                self._codes, self._ids = {}, []
                self._cache.clear()
                self._cached_entries = 0
            codes, known = self._codes, self._ids
            numbers = []
            for memory_id in ids:
                number = codes.get(memory_id)
                if number is None:
                    number = codes[memory_id] = len(known)
                    known.append(memory_id)
                numbers.append(number)
            return np.asarray(numbers, dtype=np.int64)

    # ------------------------------------------------------------------ heads

    def head(self, digest: str, *, fresh: bool = False) -> Head | None:
        """The partition's head (None: it has no postings yet, or only an older format's),
        read again when this process's copy is older than ``HEAD_TTL``. Its statistics leave
        out the memories erased from its generation since (their tombstones say which)."""
        with self._lock:
            known = self._heads.get(digest)
        if (
            known is not None
            and not fresh
            and (self.sole_writer or time.monotonic() - known[1] < HEAD_TTL)
        ):
            return known[0]
        records = self._collection()
        found = records.get(ids=[f"head:{digest}"], include=["metadatas"])
        head = None
        if found["ids"] and found["metadatas"][0].get("format") == FORMAT:
            m = found["metadatas"][0]
            chain = tuple(str(m.get("chain") or "").split())
            head = Head(digest, str(m["gen"]), int(m["mark"]), int(m["memories"]),
                        int(m["total_length"]), chain)  # fmt: skip
            erased = _paged_get(
                records,
                where={"$and": [{"kind": "tomb"}, {"digest": digest}, {"tgen": head.gen}]},
                include=["metadatas"],
            )
            if erased["ids"]:
                removed = sum(int(e.get("length", 0)) for e in erased["metadatas"])
                head = Head(
                    digest,
                    head.gen,
                    head.mark,
                    max(0, head.memories - len(erased["ids"])),
                    max(0, head.total_length - removed),
                    head.chain,
                )
        with self._lock:
            self._heads[digest] = (head, time.monotonic())
        return head

    def _write_head(self, head: Head) -> None:
        """Publish a generation. Only the process that wrote it does (a fold or a base): a
        scrub never rewrites the head, so no fold's generation is ever orphaned by one."""
        self._collection().upsert(
            ids=[f"head:{head.digest}"],
            embeddings=[PLACEHOLDER_VECTOR],
            metadatas=[
                {
                    "kind": "head",
                    "format": FORMAT,
                    "digest": head.digest,
                    "gen": head.gen,
                    "mark": head.mark,
                    "memories": head.memories,
                    "total_length": head.total_length,
                    "chain": " ".join(head.chain),
                }
            ],
        )
        with self._lock:
            self._heads[head.digest] = (head, time.monotonic())

    # ------------------------------------------------------------------ tombstones

    def _tombs(self, digest: str) -> dict[str, int]:
        """The partition's tombstones: hashed memory id → when it was taken out (µs)."""
        found = _paged_get(
            self._collection(),
            where={"$and": [{"kind": "tomb"}, {"digest": digest}]},
            include=["metadatas"],
        )
        return {str(m["hid"]): int(m["at"]) for m in found["metadatas"]}

    def _gone_since(self, digest: str, started: int) -> bool:
        """Whether the partition's postings were dropped (its user erased) at or after
        ``started``: a generation written from reads before then must go too."""
        found = self._collection().get(ids=[f"gone:{digest}"], include=["metadatas"])
        return bool(found["ids"]) and int(found["metadatas"][0]["at"]) >= started

    def _settle(self, digest: str, gen: str, built: _Built, started: int) -> bool:
        """Make a generation this process wrote agree with every tombstone: read them after
        the write, take out what they name, write again, until a read finds none new. A scrub
        writes its tombstone before it reads any record, so either this read sees it or that
        scrub reads this generation as written. False: the partition was dropped meanwhile,
        and so is the generation."""
        for _ in range(SETTLE_ROUNDS):
            if self._gone_since(digest, started):
                self._delete_generation(digest, gen)
                return False
            tombs = self._tombs(digest)
            new = {h: at for h, at in tombs.items() if built.seen.get(h) != at}
            built.seen.update(tombs)
            hit = {
                i for i in built.members if (h := _hid(i)) in new and built.born.get(i, 0) <= new[h]
            }
            if not hit:
                return True
            self._write_terms(digest, gen, built.without(hit), rewrite=True, outs=built.outs)
        return True

    def _delete_generation(self, digest: str, gen: str) -> None:
        records = self._collection()
        records.delete(where={"$and": [{"kind": "term"}, {"digest": digest}, {"gen": gen}]})
        found = records.get(ids=[f"head:{digest}"], include=["metadatas"])
        if found["ids"] and found["metadatas"][0].get("gen") == gen:
            records.delete(ids=[f"head:{digest}"])
        with self._lock:
            self._heads.pop(digest, None)

    # ------------------------------------------------------------------ writing

    def write_base(
        self, digest: str, memories: Iterable[tuple[str, Mapping[str, int]]], mark: int
    ) -> None:
        """Write a new generation holding these memories (id, term counts), as read from the
        store after ``mark``: the tail is what the mirror was given from then on. A memory
        taken out since the mark (a tombstone) is left out."""
        started = mark  # what it holds was read after the mark: a drop since voids it
        listed = list(memories)
        tombs = self._tombs(digest)
        built = _Built(seen=dict(tombs))
        for memory_id, counts in listed:
            if tombs.get(_hid(memory_id), -1) >= mark:
                continue
            built.add(memory_id, counts, sum(counts.values()))
        self._publish(
            digest,
            built,
            mark,
            started,
            previous=self.head(digest, fresh=True),
            memories=len(built.members),
            total=built.total_length,
        )

    def _publish(
        self,
        digest: str,
        built: _Built,
        mark: int,
        started: int,
        *,
        previous: Head | None,
        memories: int,
        total: int,
        chain: tuple[str, ...] = (),
    ) -> bool:
        """Write a generation (on ``chain``: only the terms it changes), settle it against
        the tombstones, publish its head, settle again (a scrub may have begun between), then
        drop generations neither it nor the head it replaces builds on (readers holding that
        head keep it until the next)."""
        gen = f"{_now_us():x}{uuid.uuid4().hex[:6]}"
        self._write_terms(digest, gen, built.postings, shadow=bool(chain), outs=built.outs)

        def head() -> Head:
            struck = built.struck
            return Head(digest, gen, mark, max(0, memories - len(struck)),
                        max(0, total - sum(struck.values())), chain)  # fmt: skip

        if not self._settle(digest, gen, built, started):
            return False
        self._write_head(head())
        if not self._settle(digest, gen, built, started):
            return False
        self._write_head(head())
        keep = [gen, *chain] + ([] if previous is None else list(previous.gens))
        records = self._collection()
        records.delete(
            where={"$and": [{"kind": "term"}, {"digest": digest}, {"gen": {"$nin": keep}}]}
        )
        # Records of an older format (terms in their ids) go with the generation they held.
        records.delete(where={"$and": [{"digest": digest}, {"kind": {"$nin": list(KINDS)}}]})
        return True

    def _write_terms(
        self,
        digest: str,
        gen: str,
        postings: Mapping[str, tuple[list[str], list[int], list[int]]],
        *,
        rewrite: bool = False,
        shadow: bool = False,
        outs: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Write these terms' records in a generation; ``rewrite``: they had records there,
        and parts they no longer fill are deleted. A term left with no memory keeps one empty
        record, naming no word (its id holds a hash of it, as every record id does), so what
        it takes out of older generations stays out (``rewrite`` or ``shadow``). ``outs``:
        each term's memories the generation takes out of older ones (a delta's, in part 0)."""
        outs = outs or {}
        ids: list[str] = []
        metadatas: list[dict[str, Any]] = []
        gone: list[str] = []
        records = self._collection()

        def flush() -> None:
            if ids:
                records.upsert(
                    ids=list(ids),
                    embeddings=[PLACEHOLDER_VECTOR] * len(ids),
                    metadatas=list(metadatas),
                )
                ids.clear()
                metadatas.clear()

        for term, (memory_ids, tfs, lengths) in postings.items():
            parts = -(-len(memory_ids) // PART)
            key = _key(term)
            if rewrite:
                gone += [
                    f"{digest}:{gen}:{key}:{p}" for p in range(max(parts, 1), parts + STALE_PARTS)
                ]
            if not memory_ids and (rewrite or shadow):
                ids.append(f"{digest}:{gen}:{key}:0")
                metadatas.append(  # an upsert keeps keys it is not given: None drops the word
                    {
                        "kind": "term",
                        "digest": digest,
                        "gen": gen,
                        "parts": 1,
                        "term": None,
                        "ids": "[]",
                        "tf": "",
                        "length": "",
                        "out": json.dumps(list(outs.get(term, ())), ensure_ascii=False),
                    }
                )
            for part in range(parts):
                window = slice(part * PART, (part + 1) * PART)
                ids.append(f"{digest}:{gen}:{key}:{part}")
                metadatas.append(
                    {
                        "kind": "term",
                        "digest": digest,
                        "gen": gen,
                        "term": term,
                        "parts": parts,
                        "ids": json.dumps(memory_ids[window], ensure_ascii=False),
                        "tf": _pack(tfs[window]),
                        "length": _pack(lengths[window]),
                        "out": json.dumps(
                            list(outs.get(term, ())) if part == 0 else [], ensure_ascii=False
                        ),
                    }
                )
                if len(ids) >= WRITE_PAGE:
                    flush()
        flush()
        for start in range(0, len(gone), WRITE_PAGE * 10):
            records.delete(ids=gone[start : start + WRITE_PAGE * 10])

    def noted(
        self, digest: str, memories: Sequence[tuple[str, Mapping[str, int]]], at: int
    ) -> None:
        """Memories this process just put into the mirror (at ``at``): in its tail at once."""
        with self._lock:
            self._counts.pop(digest, None)
            tail = self._tails.get(digest)
            if tail is not None:
                for memory_id, counts in memories:
                    tail.put(memory_id, dict(counts), sum(counts.values()), at)

    def struck_since(self, digest: str, ids: Sequence[str], since: int) -> list[str]:
        """Which of ``ids`` were taken out of the partition at or after ``since`` (µs)."""
        tombs = self._tombs(digest)
        return [i for i in ids if tombs.get(_hid(i), -1) >= since]

    def gone_since(self, digest: str, since: int) -> bool:
        return self._gone_since(digest, since)

    def scrub(
        self, digest: str, held: Mapping[str, Sequence[str]], *, struck: Sequence[str] = ()
    ) -> None:
        """Take memories about to be erased, or leaving the partition (id → the terms the
        mirror lists for it), out of every generation of the partition's postings: nothing
        erased stays mentioned. First a tombstone each (a hash of the id, never the id), which
        every fold checks after writing its generation (``_settle``); then each record naming
        them is rewritten without every tombstoned id, and read again until none is left, so
        a concurrent rewrite of the same record cannot put one back. ``struck``: more ids to
        tombstone (a mirror being built may be given them yet)."""
        if not held and not struck:
            return
        terms = sorted({term for found in held.values() for term in found} | {MEMBERS})
        head = self.head(digest, fresh=True)
        lengths: dict[str, int] = {}  # in the current generation: its statistics drop them
        if head is not None:
            for by_gen in self._term_records(digest, head.gens, terms).values():
                listed, _, sizes = _merged(by_gen)
                lengths.update({i: int(sizes[n]) for n, i in enumerate(listed) if i in held})
        at = _now_us()
        every = list(dict.fromkeys([*held, *struck]))
        marks = [f"tomb:{digest}:{_hid(i)}" for i in every]
        metadatas = [
            {
                "kind": "tomb",
                "digest": digest,
                "hid": _hid(i),
                "at": at,
                "tgen": head.gen if head is not None and i in lengths else "",
                "length": lengths.get(i, 0),
            }
            for i in every
        ]
        for start in range(0, len(marks), READ_PAGE):
            self._collection().upsert(
                ids=marks[start : start + READ_PAGE],
                embeddings=[PLACEHOLDER_VECTOR] * len(marks[start : start + READ_PAGE]),
                metadatas=metadatas[start : start + READ_PAGE],
            )
        if not held:
            return
        with self._lock:
            self._heads.pop(digest, None)
            self._cache.clear()
            self._cached_entries = 0
            for tail in self._tails.values():
                for memory_id in held:
                    tail.drop(memory_id)
        for _ in range(SETTLE_ROUNDS):
            if not any(self._clean(digest, gen, terms) for gen in self._generations(digest)):
                break

    def _generations(self, digest: str) -> set[str]:
        found = _paged_get(
            self._collection(), where={"$and": [{"kind": "term"}, {"digest": digest}]}
        )
        return {i.split(":")[1] for i in found["ids"]}

    def _clean(self, digest: str, gen: str, terms: Sequence[str]) -> bool:
        """Rewrite the records of ``terms`` in a generation without any tombstoned memory
        (tombstones read after the records); returns whether any had one."""
        found = self._term_records(digest, (gen,), terms)
        tombs = self._tombs(digest)
        rewrite: dict[str, tuple[list[str], list[int], list[int]]] = {}
        outs: dict[str, list[str]] = {}
        for term, by_gen in found.items():
            parts = [meta for _, metas in by_gen for meta in metas]
            listed = [i for meta in parts for i in json.loads(meta["ids"])]
            out = json.loads(str(parts[0].get("out") or "[]")) if parts else []
            if not any(_hid(i) in tombs for i in [*listed, *out]):
                continue
            tfs = [int(v) for meta in parts for v in _unpack(meta["tf"])]
            sizes = [int(v) for meta in parts for v in _unpack(meta["length"])]
            keep = [n for n, i in enumerate(listed) if _hid(i) not in tombs]
            rewrite[term] = (
                [listed[n] for n in keep],
                [tfs[n] for n in keep],
                [sizes[n] for n in keep],
            )
            outs[term] = [i for i in out if _hid(i) not in tombs]
        if rewrite:
            self._write_terms(digest, gen, rewrite, rewrite=True, outs=outs)
        return bool(rewrite)

    def drop(self, digest: str) -> None:
        """Delete the partition's postings (its user was erased): first a mark that it was
        dropped, which a fold in flight checks after writing (``_settle``), then every record."""
        records = self._collection()
        records.upsert(
            ids=[f"gone:{digest}"],
            embeddings=[PLACEHOLDER_VECTOR],
            metadatas=[{"kind": "gone", "of": digest, "at": _now_us()}],
        )
        records.delete(where={"digest": digest})
        with self._lock:
            self._heads.pop(digest, None)
            self._tails.pop(digest, None)
            self._cache.clear()
            self._cached_entries = 0

    # ------------------------------------------------------------------ reading

    def gather(
        self,
        digests: Sequence[str],
        terms: Sequence[str],
        *,
        held: Mapping[str, tuple[float, Sequence[str]]] | None = None,
        followed: Set[str] = frozenset(),
    ) -> StoredPostings | None:
        """The postings of ``terms`` over these partitions, each memory listed once, and
        those in ``held`` (which the caller scores itself: id → its length and which of these
        partitions list it) left out, of the postings and of the statistics alike, so each
        memory counts once whatever else the caller holds (``followed`` ones it holds but
        does not read here: in no statistics of these); None when one of them has no
        postings (a mirror written before them, which is not searched here)."""
        held = held or {}
        for _ in range(2):
            with self._lock:
                numbering = self._ids
            result = self._gather(digests, terms, held, followed)
            if result is None or result.ids is numbering:
                return result
        return result  # numbered afresh twice over: 4 million memories in one recall

    def _gather(
        self,
        digests: Sequence[str],
        terms: Sequence[str],
        held: Mapping[str, tuple[float, Sequence[str]]],
        followed: Set[str],
    ) -> StoredPostings | None:
        import numpy as np

        heads = [self.head(d) for d in digests]
        if any(h is None for h in heads):
            return None
        result = StoredPostings(0, 0.0)
        per_term: dict[str, list[TermPostings]] = {t: [] for t in terms}
        seen: set[str] = set(held)
        for listed in heads:
            assert listed is not None
            read = self._read(listed, terms, seen)
            if read is None:
                return None
            head, tail, base = read
            # A memory reworded since the mark is in the base and the tail: the mirror's
            # count is exact, the length of the version the base held is estimated.
            overlap = seen.intersection(tail.ids) if seen else set()
            # Held memories this partition lists in its base: counted by the caller.
            in_base = [
                length
                for i, (length, lists) in held.items()
                if head.digest in lists and i not in tail.ids and i not in followed
            ]
            memories = max(0, head.memories - len(in_base))
            fresh = len(tail.ids) - len(overlap)
            counted = memories + fresh
            count = memories
            if fresh:
                count = min(counted, max(0, self._count(head.digest) - len(in_base) - len(overlap)))
            total = head.total_length - sum(in_base) + tail.total_length
            total -= sum(tail.lengths.get(i, 0) for i in overlap)
            result.memories += count
            result.total_length += max(0.0, total) * count / counted if counted else 0.0
            left_out = seen | tail.ids
            for term in terms:
                ids, codes, tfs, lengths = base[term]
                dropped = left_out.intersection(ids)
                if dropped:
                    keep = np.asarray(
                        [n for n, i in enumerate(ids) if i not in dropped], dtype=np.int64
                    )
                    ids = [ids[n] for n in keep]
                    codes, tfs, lengths = codes[keep], tfs[keep], lengths[keep]
                if ids:
                    per_term[term].append((ids, codes, tfs, lengths))
                found = [hit for hit in tail.postings.get(term, ()) if hit[0] not in seen]
                if found:
                    found_ids = [i for i, _, _ in found]
                    per_term[term].append(
                        (
                            found_ids,
                            self._code(found_ids),
                            np.asarray([tf for _, tf, _ in found], dtype=np.float32),
                            np.asarray([n for _, _, n in found], dtype=np.float32),
                        )
                    )
            if len(heads) > 1:  # a memory in two of them (a team memory) is listed once
                seen.update(tail.ids)
                for term in terms:
                    seen.update(base[term][0])
            if self.may_fold and tail.since_fold >= max(FOLD_AT, FOLD_SHARE * head.memories):
                self._fold_soon(head.digest)
        for term, parts in per_term.items():
            if parts:
                result.postings[term] = (
                    [i for part in parts for i in part[0]],
                    np.concatenate([part[1] for part in parts]),
                    np.concatenate([part[2] for part in parts]),
                    np.concatenate([part[3] for part in parts]),
                )
        with self._lock:
            result.ids = self._ids
        return result

    def _read(
        self, head: Head, terms: Sequence[str], seen: Set[str] = frozenset()
    ) -> tuple[Head, _TailView, dict[str, TermPostings]] | None:
        """A partition's tail and its base postings of ``terms``: with the head read again
        when a fold replaced its generation meanwhile."""
        for again in (False, True):
            if again:
                found = self.head(head.digest, fresh=True)
                if found is None:
                    return None
                head = found
            tail = self._tail(head, terms, seen)
            base = self._terms(head, terms)
            if base is not None:
                return head, tail, base
        return None

    def _count(self, digest: str) -> int:
        """How many memories the partition's mirror holds (counted at most every
        ``HEAD_TTL`` seconds, and again after this process put some there)."""
        with self._lock:
            counted = self._counts.get(digest)
        if counted is not None and time.monotonic() - counted[1] < HEAD_TTL:
            return counted[0]
        try:
            count = int(self._mirror(digest).count())
        except StoreUnavailable:
            raise
        except Exception:  # chromadb's NotFoundError: the mirror was dropped
            count = 0
        with self._lock:
            self._counts[digest] = (count, time.monotonic())
        return count

    def _term_records(
        self, digest: str, gens: Sequence[str], terms: Sequence[str]
    ) -> dict[str, list[tuple[str, list[dict[str, Any]]]]]:
        """The records of these terms in each of ``gens`` that holds them: term → (gen, its
        parts in order), newest generation first (absent terms: none)."""
        records = self._collection()
        keys = {_key(t): t for t in terms}
        wanted = [f"{digest}:{g}:{k}:0" for g in gens for k in keys]
        got = _get_ids(records, wanted)
        parts: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
        more: list[str] = []
        for record_id, meta in zip(got["ids"], got.get("metadatas") or []):
            _, gen, key, _ = record_id.split(":")
            parts[(key, gen)] = {0: meta}
            more += [f"{digest}:{gen}:{key}:{p}" for p in range(1, int(meta["parts"]))]
        if more:
            extra = _get_ids(records, more)
            for record_id, meta in zip(extra["ids"], extra["metadatas"]):
                _, gen, key, part = record_id.split(":")
                parts[(key, gen)][int(part)] = meta
        order = {g: n for n, g in enumerate(gens)}
        found: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {t: [] for t in terms}
        for (key, gen), held in sorted(parts.items(), key=lambda kv: order[kv[0][1]]):
            found[keys[key]].append((gen, [held[p] for p in sorted(held)]))
        return found

    def _terms(self, head: Head, terms: Sequence[str]) -> dict[str, TermPostings] | None:
        """The base postings of ``terms`` in this generation (cached: it never changes);
        None when the generation is gone."""

        found: dict[str, TermPostings] = {}
        with self._lock:
            for term in terms:
                cached = self._cache.get((head.digest, head.gen, term))
                if cached is not None:
                    self._cache.move_to_end((head.digest, head.gen, term))
                    found[term] = cached
        wanted = [t for t in terms if t not in found]
        if wanted:
            parts = self._term_records(head.digest, head.gens, wanted)
            if head.memories and not any(parts.values()) and not self._generation_exists(head):
                return None
            for term in wanted:
                ids, tfs, lengths = _merged(parts[term])
                postings: TermPostings = (ids, self._code(ids), tfs, lengths)
                found[term] = postings
                self._remember((head.digest, head.gen, term), postings)
        return found

    def _generation_exists(self, head: Head) -> bool:
        got = self._collection().get(where={"gen": {"$in": list(head.gens)}}, limit=1, include=[])
        return bool(got["ids"])

    def _remember(self, key: tuple[str, str, str], postings: TermPostings) -> None:
        with self._lock:
            self._cache[key] = postings
            self._cached_entries += len(postings[0])
            while self._cached_entries > CACHE_ENTRIES and len(self._cache) > 1:
                _, dropped = self._cache.popitem(last=False)
                self._cached_entries -= len(dropped[0])

    def _tail(self, head: Head, terms: Sequence[str], seen: Set[str] = frozenset()) -> _TailView:
        """The memories put into the partition's mirror since the head's mark, as far as
        ``terms`` go; read again from the mirror when older than ``HEAD_TTL`` (only what
        was put since the last read, and a little before: ``OVERLAP_US``)."""
        with self._lock:
            tail = self._tails.get(head.digest)
            if tail is None or tail.mark != head.mark:
                tail = self._tails[head.digest] = _Tail(head.mark, head.mark, -1.0)
            due = tail.polled < 0 or (
                not self.sole_writer and time.monotonic() - tail.polled >= HEAD_TTL
            )
            since = tail.since
        if due:
            polled = time.monotonic()
            started = _now_us()
            try:
                got = _paged_get(
                    self._mirror(head.digest), where={"at": {"$gte": since}}, include=["metadatas"]
                )
            except StoreUnavailable:
                raise
            except Exception:  # chromadb's NotFoundError: the mirror was dropped
                got = {"ids": [], "metadatas": []}
            with self._lock:
                for memory_id, meta in zip(got["ids"], got["metadatas"]):
                    counts = self._counts_in(meta)
                    tail.put(memory_id, counts, int(meta.get("length", 0)), int(meta.get("at", 0)))
                tail.polled = polled
                tail.since = max(tail.mark, started - OVERLAP_US)
        with self._lock:
            postings = {
                term: [(i, tf, tail.entries[i][1]) for i, tf in tail.by_term[term].items()]
                for term in terms
                if term in tail.by_term
            }
            return _TailView(
                frozenset(tail.entries),
                tail.total_length,
                tail.since_fold,
                postings,
                {i: tail.entries[i][1] for i in tail.entries.keys() & seen},
            )

    # ------------------------------------------------------------------ folding

    def _fold_soon(self, digest: str) -> None:
        with self._lock:
            if digest in self._folding:
                return
            self._folding.add(digest)

        def run() -> None:
            try:
                self.fold(digest)
            except Exception:  # the next recall tries again; the tail stays correct
                pass
            finally:
                with self._lock:
                    self._folding.discard(digest)

        thread = threading.Thread(target=run, name="memento-fold", daemon=True)
        with self._lock:
            self._folds = [t for t in self._folds if t.is_alive()] + [thread]
        thread.start()

    def wait_folds(self, timeout: float = 60.0) -> None:
        """Let the folds in flight finish (this process stops writing the store)."""
        with self._lock:
            folds = list(self._folds)
        for thread in folds:
            thread.join(timeout)

    def tail_size(self, digest: str) -> int:
        """How many memories were put into the partition's mirror since its postings were
        last folded (read from the mirror; the tail holds ``OVERLAP_US`` more)."""
        head = self.head(digest, fresh=True)
        if head is None:
            return 0
        try:
            got = _paged_get(self._mirror(digest), where={"at": {"$gte": head.mark + OVERLAP_US}})
        except StoreUnavailable:
            raise
        except Exception:  # chromadb's NotFoundError: the mirror was dropped
            return 0
        return len(got["ids"])

    def fold(self, digest: str) -> bool:
        """Fold the partition's tail into a new generation (unless another process is at it);
        returns whether it did. The generation is a delta on the current one: the tail's
        postings, and its reworded memories taken out of the terms they left; it reads of the
        head only its members (``MEMBERS``: which of the tail it counts, and their former
        lengths), so a fold costs what its tail does; every ``CHAIN_AT_MOST`` folds, one
        rewrites every term. A memory taken out of the partition (a tombstone) is left out, whenever
        the scrub that took it out ran (``_settle``)."""
        head = self.head(digest, fresh=True)
        if head is None or self._claimed(digest):
            return False
        started = _now_us()
        self._claim(digest, started)
        try:
            mirror = self._mirror(digest)
            got = _paged_get(mirror, where={"at": {"$gte": head.mark}}, include=["metadatas"])
            tail = {
                i: (self._counts_in(m), int(m.get("length", 0)), int(m.get("at", 0)))
                for i, m in zip(got["ids"], got["metadatas"])
            }
            earlier: dict[str, list[str]] = {}
            if len(head.chain) + 1 >= CHAIN_AT_MOST:
                present = set(_paged_get(mirror)["ids"])  # some left the partition
                base = self._base(head)
                chain: tuple[str, ...] = ()
            else:
                # A delta: the tail's postings, and its reworded memories taken out of the
                # terms they no longer hold; what the head lists stays where it is. Which of
                # the tail the head counts, and their former lengths: its members.
                earlier = {
                    i: str(m.get("earlier") or "").split()
                    for i, m in zip(got["ids"], got["metadatas"])
                }
                base = self._base(head, [MEMBERS])
                present = None
                chain = head.gens
            tombs = self._tombs(digest)  # read after what they may strike out
            built = _Built(seen=dict(tombs))
            in_base: dict[str, int] = {}
            for term, ids, tfs, lengths in base:
                for n, memory_id in enumerate(ids):
                    if memory_id in tail:
                        in_base[memory_id] = lengths[n]
                        continue
                    if chain:  # a delta copies nothing of the head
                        continue
                    if (present is not None and memory_id not in present) or (
                        tombs and _hid(memory_id) in tombs
                    ):
                        continue
                    # Its membership (``MEMBERS``) comes with its first term.
                    built.add(memory_id, {} if term == MEMBERS else {term: tfs[n]}, lengths[n])
            returned = []  # back in the partition after it was taken out
            folded: dict[str, int] = {}
            for memory_id, (counts, length, at) in tail.items():
                struck = tombs.get(_hid(memory_id))
                if struck is not None and at <= struck:
                    continue
                if struck is not None:
                    returned.append(memory_id)
                built.add(memory_id, counts, length, at=at)
                folded[memory_id] = length
                for term in earlier.get(memory_id, ()):
                    if term not in counts:
                        built.out(term, memory_id)
            if chain:  # what the head counted, the tail's new memories, the reworded ones
                memories = head.memories + len(folded.keys() - in_base.keys())
                total = head.total_length + sum(folded.values())
                total -= sum(n for i, n in in_base.items() if i in folded)
            else:
                memories, total = len(built.members), built.total_length
            current = self.head(digest, fresh=True)
            if current is None or current.gen != head.gen:
                return False  # dropped, or another fold published meanwhile
            if not self._publish(
                digest,
                built,
                started - OVERLAP_US,
                started,
                previous=head,
                memories=memories,
                total=total,
                chain=chain,
            ):
                return False
            if returned:
                self._collection().delete(ids=[f"tomb:{digest}:{_hid(i)}" for i in returned])
            return True
        finally:
            self._release(digest, started)

    def _base(
        self, head: Head, terms: Sequence[str] | None = None
    ) -> list[tuple[str, list[str], list[int], list[int]]]:
        """The postings the head holds of ``terms`` (all, without): term, ids, counts,
        lengths, each term merged over the generations it builds on (``_merged``)."""
        import numpy as np

        if terms is not None:
            found = self._term_records(head.digest, head.gens, terms)
            by_term = {t: by_gen for t, by_gen in found.items() if by_gen}
        else:
            every: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
            records = self._collection()
            offset = 0
            while True:
                page = records.get(
                    where={
                        "$and": [
                            {"kind": "term"},
                            {"digest": head.digest},
                            {"gen": {"$in": list(head.gens)}},
                        ]
                    },
                    include=["metadatas"],
                    limit=WRITE_PAGE,
                    offset=offset,
                )
                if not page["ids"]:
                    break
                offset += len(page["ids"])
                for record_id, meta in zip(page["ids"], page["metadatas"]):
                    _, gen, key, part = record_id.split(":")
                    every.setdefault(key, {}).setdefault(gen, {})[int(part)] = meta
            by_term = {}
            for gens in every.values():
                chain = [(g, [gens[g][p] for p in sorted(gens[g])]) for g in head.gens if g in gens]
                named = [m["term"] for _, metas in chain for m in metas if m.get("term")]
                if named:  # a term all of whose records are empty lists nothing
                    by_term[str(named[0])] = chain
        merged = {term: _merged(by_gen) for term, by_gen in by_term.items()}
        return [
            (
                term,
                ids,
                [int(v) for v in tfs.astype(np.int64)],
                [int(v) for v in lengths.astype(np.int64)],
            )
            for term, (ids, tfs, lengths) in merged.items()
        ]

    def _claimed(self, digest: str) -> bool:
        """Whether another fold of the partition is under way (claimed, and not too long ago).
        A claim only saves work: two folds at once would each publish a correct generation."""
        found = self._collection().get(ids=[f"claim:{digest}"], include=["metadatas"])
        return bool(found["ids"]) and _now_us() - int(found["metadatas"][0]["at"]) < FOLD_CLAIM_US

    def _claim(self, digest: str, at: int) -> None:
        self._collection().upsert(
            ids=[f"claim:{digest}"],
            embeddings=[PLACEHOLDER_VECTOR],
            metadatas=[{"kind": "claim", "digest": digest, "at": at}],
        )

    def _release(self, digest: str, at: int) -> None:
        records = self._collection()
        found = records.get(ids=[f"claim:{digest}"], include=["metadatas"])
        if found["ids"] and int(found["metadatas"][0]["at"]) == at:
            records.delete(ids=[f"claim:{digest}"])
