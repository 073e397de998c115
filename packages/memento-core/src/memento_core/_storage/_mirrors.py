"""Large partitions searched where they live: each in a Chroma collection of its own.

Loading a partition into a process costs time in proportion to what it holds (about 0.3 ms a
memory), and Chroma's filtered vector query evaluates its ``where`` over the whole collection
(75-115 ms at 100k memories, whatever the partition holds: ``benchmarks/results/
partition_search.md``). A partition in a collection of its own is searched by Chroma's HNSW with
no ``where`` in 1-4 ms. So a partition past the load limit gets a **mirror**,
``<prefix>_mirror_<digest>``: the id and vector of each of its memories and, for the keyword
side, the terms its text holds with their counts (one string, ``keywords``: a metadata array
costs Chroma a row an element, which made a write of 4,000 memories 2.2 times slower than one
string), its length, and when it was put (``at``; none for a build's copy). Its BM25 postings
are kept beside it (``_postings``): a base written when the mirror is built and folded now
and then, and a tail, the memories put since, read from the mirror by their ``at``. Nothing
else: recall reads the memories it finds by id and decides
visibility on what it reads. (A mirror copied before postings existed is not searched: its
partition is loaded, and a process that may write writes its postings then.)

The **catalog** (records ``mirror:<digest>`` in ``<prefix>_meta``) lists the mirrored
partitions: ``building`` from the moment a process starts copying one, ``ready`` once every
memory it held then is copied. Every writer keeps a mirror listed in the catalog current:

- a memory is put into the mirrors of its partitions *before* it is stored, so a writer killed
  between the two leaves at most an id that recall finds gone, never a stored memory the
  mirror lacks; and after it is logged, into a mirror listed meanwhile;
- a memory that left a partition (a change of privacy) is taken out of that mirror after it is
  stored; an erased one is taken out of every mirror, and its postings, before it is erased;
- a writer reads the catalog again when its copy is older than ``CATALOG_TTL``, and a process
  starting a mirror on a shared store waits ``2 * CATALOG_TTL`` before listing what to copy
  (in its own process, the listing is seen at once), so a write either sees the mirror listed
  when it checks after logging, or was logged before the copy was listed and is in it.

A mirror may hold ids that left its partition or the store; recall drops them on the read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container, Mapping, Sequence, Set
from typing import Any

from memento_core._storage._chroma import PLACEHOLDER_VECTOR, ChromaStore
from memento_core._storage._postings import OVERLAP_US, PartitionPostings, StoredPostings
from memento_core.errors import StoreUnavailable

KIND = "partition_mirror"
BUILDING = "building"
READY = "ready"
CATALOG_TTL = 0.25
"""Seconds a process trusts its copy of the catalog (the change feed's freshness bound)."""
STALE_BUILD_US = 120 * 1_000_000
"""A build listed this long ago without finishing was cut short: another may start it over."""
EF_SEARCH = 200
"""HNSW search breadth of a mirror. Chroma's default (100) agreed with exact search on 97.3 %
of the top 10 at 100k memories on a server; 200 keeps it at or above 98 %."""
COPY_PAGE = 1_000


def _now_us() -> int:
    return time.time_ns() // 1000


class PartitionMirrors:
    """The mirrors of one store and their catalog, as this process sees them."""

    def __init__(
        self,
        chroma: ChromaStore,
        *,
        shared: bool,
        terms_of: Callable[[str], Sequence[str]] = lambda text: (),
    ) -> None:
        self._chroma = chroma
        self._shared = shared
        self._terms_of = terms_of
        """A text's keyword terms, as the candidate index's BM25 counts them."""
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._catalog: dict[str, tuple[str, int]] = {}  # digest → (state, listed at µs)
        self._read_at = -1.0
        self._collections: dict[str, Any] = {}
        self._started: dict[str, int] = {}  # digest → when this process listed its build
        self.postings = PartitionPostings(chroma, mirror=self._mirror, counts_in=counts_in)
        """Their keyword side (``_postings``)."""
        self._sole_writer = False

    @property
    def sole_writer(self) -> bool:
        """This process holds the embedded store's write lock (``_engine.open_shared``)."""
        return self._sole_writer

    @sole_writer.setter
    def sole_writer(self, value: bool) -> None:
        self._sole_writer = self.postings.sole_writer = value

    def _counts(self, text: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for term in self._terms_of(text):
            counts[term] = counts.get(term, 0) + 1
        return counts

    # ------------------------------------------------------------------ catalog

    def catalog(self, *, fresh: bool = False) -> dict[str, tuple[str, int]]:
        """Digest → (state, when listed) of every mirrored partition; read from the store when
        this process's copy is older than ``CATALOG_TTL`` (or ``fresh``). The sole writer of
        an embedded store reads it once: only it can list a mirror while it holds the lock."""
        with self._lock:
            never = self._read_at < 0
            expired = fresh or time.monotonic() - self._read_at >= CATALOG_TTL
            if never or (expired and not self.sole_writer):
                found = self._chroma.meta.get(where={"kind": KIND}, include=["metadatas"])
                self._catalog = {
                    str(m["digest"]): (str(m["state"]), int(m["at"])) for m in found["metadatas"]
                }
                self._read_at = time.monotonic()
            return dict(self._catalog)

    def ready(self) -> set[str]:
        """The partitions whose mirror holds all of them."""
        return {d for d, (state, _) in self.catalog().items() if state == READY}

    def _list(self, digest: str, state: str) -> None:
        at = _now_us()
        self._chroma.meta.upsert(
            ids=[f"mirror:{digest}"],
            embeddings=[PLACEHOLDER_VECTOR],
            documents=[f"partition {digest} is searched in its own collection ({state})"],
            metadatas=[{"kind": KIND, "digest": digest, "state": state, "at": at}],
        )
        with self._lock:
            self._catalog[digest] = (state, at)

    # ------------------------------------------------------------------ building

    def start(self, digest: str) -> bool:
        """List the partition as being mirrored, unless it is listed already (and its build
        not cut short): from now on every writer mirrors its writes. On a shared store, wait
        until every writer has read the catalog again. Returns whether this process builds."""
        with self._starting:
            listed = self.catalog(fresh=True).get(digest)
            if listed is not None and (
                listed[0] == READY or _now_us() - listed[1] <= STALE_BUILD_US
            ):
                return False
            self._list(digest, BUILDING)
            with self._lock:
                self._started[digest] = self._catalog[digest][1]
        if self._shared:
            time.sleep(2 * CATALOG_TTL)
        return True

    def copy(
        self, digest: str, ids: Sequence[str], vectors: Sequence[Any], texts: Sequence[str]
    ) -> None:
        """Put memories a build read into the mirror (pages of ``COPY_PAGE``), then write
        their postings as the base, as of when the build was listed (what was written from
        then on reached the mirror with its stamp: the tail, ``_postings``)."""
        counts = [self._counts(text) for text in texts]
        for start in range(0, len(ids), COPY_PAGE):
            page = slice(start, start + COPY_PAGE)
            self._upsert(digest, ids[page], vectors[page], counts[page], stamped=False)
        mark = self._listed_at(digest) - OVERLAP_US
        # Erased or moved out since the build was listed (the copy read them before): an
        # erasure tombstones every id in a mirror being built, then deletes what it holds.
        struck = self.postings.struck_since(digest, ids, mark)
        if struck:
            self._mirror(digest).delete(ids=struck)
        self.postings.write_base(digest, zip(ids, counts), mark)

    def index_postings(
        self, digest: str, ids: Sequence[str], texts: Sequence[str], *, read_at: int | None = None
    ) -> None:
        """Write the postings of a mirror copied before postings existed: ``ids`` and
        ``texts``, what its partition held when read (at ``read_at``, µs, by default now);
        the tail is what reaches the mirror from a moment before on."""
        mark = (_now_us() if read_at is None else read_at) - OVERLAP_US
        self.postings.write_base(digest, zip(ids, map(self._counts, texts)), mark)

    def has_postings(self, digest: str, *, fresh: bool = True) -> bool:
        return self.postings.head(digest, fresh=fresh) is not None

    def held(self, digest: str) -> list[str]:
        """The ids a mirror holds (none: dropped meanwhile, its user erased)."""
        try:
            return list(self._mirror(digest).get(include=[])["ids"])
        except StoreUnavailable:
            raise
        except Exception:  # chromadb's NotFoundError: the mirror was dropped
            self._forget(digest)
            return []

    def _forget(self, digest: str) -> None:
        with self._lock:
            self._collections.pop(digest, None)

    def _upsert(
        self,
        digest: str,
        ids: Sequence[str],
        vectors: Sequence[Any],
        counts: Sequence[dict[str, int]],
        *,
        stamped: bool = True,
        replaced: Sequence[str] = (),
    ) -> None:
        import numpy as np  # not at import time: ``import memento_core`` stays light

        mirror = self._mirror(digest)
        earlier: dict[str, list[str]] = {}
        if replaced:  # the terms its postings may list them under
            found = mirror.get(ids=list(replaced), include=["metadatas"])
            earlier = {i: _terms_ever(m) for i, m in zip(found["ids"], found["metadatas"])}
        at = _now_us()
        metadatas = [self._metadata(c, at if stamped else None) for c in counts]
        for memory_id, meta in zip(ids, metadatas):
            if earlier.get(memory_id):
                meta["earlier"] = " ".join(earlier[memory_id])
        mirror.upsert(
            ids=list(ids),
            # One array, not lists of Python floats: Chroma takes it as it is.
            embeddings=np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1),
            metadatas=metadatas,
        )
        if stamped:
            self.postings.noted(digest, list(zip(ids, counts)), at)

    @staticmethod
    def _metadata(counts: dict[str, int], at: int | None) -> dict[str, Any]:
        """A mirrored memory's keyword terms with their counts and its length (for the tail of
        its postings), and when it was put (``at``: none for a build's copy)."""
        meta: dict[str, Any] = {
            "keywords": " ".join(f"{term} {count}" for term, count in sorted(counts.items())),
            "length": sum(counts.values()),
        }
        if at is not None:
            meta["at"] = at
        return meta

    def _listed_at(self, digest: str) -> int:
        with self._lock:
            started = self._started.get(digest)
        if started is not None:
            return started
        listed = self.catalog().get(digest)
        return listed[1] if listed is not None else _now_us()

    def finish(self, digest: str) -> bool:
        """List a mirror built ``ready``; unless its partition was dropped (its user erased)
        since the build was listed: then the build goes too. Returns whether it is listed."""
        listed_at = self._listed_at(digest)
        with self._lock:
            self._started.pop(digest, None)
        if self.postings.gone_since(digest, listed_at - OVERLAP_US):
            self.drop(digest)
            return False
        self._list(digest, READY)
        return True

    def drop(self, digest: str) -> None:
        """Delete a partition's mirror and its listing (its user was erased)."""
        with self._lock:
            self._collections.pop(digest, None)
            self._catalog.pop(digest, None)
        self._chroma.meta.delete(ids=[f"mirror:{digest}"])
        self.postings.drop(digest)
        self._chroma.drop_collection(self._name(digest))

    # ------------------------------------------------------------------ writes

    def put(
        self,
        ids: Sequence[str],
        vectors: Any,
        texts: Sequence[str],
        digests: Sequence[Sequence[str]],
        *,
        besides: Container[str] = (),
        replacing: Sequence[bool] = (),
    ) -> set[str]:
        """Put memories into the mirrors of their partitions: before they are stored, and
        again after (``besides`` the mirrors they were put in then) for a mirror listed
        meanwhile. ``replacing``: which replace a stored memory (whose former terms the
        mirror keeps, so an erasure finds them in the postings). Returns the mirrors listed
        now."""
        listed = self.catalog()
        by_mirror: dict[str, list[int]] = {}
        for n, memory_digests in enumerate(digests):
            for d in memory_digests:
                if d in listed and d not in besides:
                    by_mirror.setdefault(d, []).append(n)
        counted: dict[int, dict[str, int]] = {}
        for d, rows in by_mirror.items():
            for n in rows:
                if n not in counted:
                    counted[n] = self._counts(texts[n])
            self._upsert(
                d,
                [ids[n] for n in rows],
                [vectors[n] for n in rows],
                [counted[n] for n in rows],
                replaced=[ids[n] for n in rows if n < len(replacing) and replacing[n]],
            )
        return set(listed)

    def moved(self, before: dict[str, tuple[str, ...]], now: dict[str, Sequence[str]]) -> None:
        """Take stored memories out of the mirrors of partitions they were in (``before``)
        and are no longer in (``now``)."""
        listed = self.catalog()
        leaving: dict[str, list[str]] = {}
        for memory_id, was in before.items():
            for d in set(was) - set(now.get(memory_id, ())):
                if d in listed:
                    leaving.setdefault(d, []).append(memory_id)
        for d, ids in leaving.items():
            self._take_out(d, ids, building=listed[d][0] == BUILDING)

    def _take_out(self, digest: str, ids: Sequence[str], *, building: bool = False) -> None:
        """Take memories out of a mirror and out of its postings: a tombstone each first
        (``_postings``), for every id if the mirror is being built (its copy may put one in
        after this), else for those it holds."""
        mirror = self._mirror(digest)
        held: dict[str, list[str]] = {}
        try:
            for start in range(0, len(ids), COPY_PAGE):  # SQLite takes so many ids a read
                found = mirror.get(ids=list(ids[start : start + COPY_PAGE]), include=["metadatas"])
                held.update((i, _terms_ever(m)) for i, m in zip(found["ids"], found["metadatas"]))
        except StoreUnavailable:
            raise
        except Exception:  # chromadb's NotFoundError: dropped meanwhile, its user erased
            self._forget(digest)
            return
        self.postings.scrub(digest, held, struck=ids if building else ())
        gone = list(held)
        for start in range(0, len(gone), COPY_PAGE):
            mirror.delete(ids=gone[start : start + COPY_PAGE])

    def delete(self, ids: Sequence[str], *, besides: Container[str] = ()) -> set[str]:
        """Take memories being erased out of every mirror and its postings (``besides``
        those done already); returns the mirrors listed. The store calls it before it erases
        them and again after, for a mirror listed meanwhile: a build lists its mirror before
        it reads the store, so either it read them gone or the second call finds it."""
        listed = self.catalog(fresh=True)
        for d, (state, _) in listed.items():
            if d not in besides:
                self._take_out(d, ids, building=state == BUILDING)
        return set(listed)

    # ------------------------------------------------------------------ reads

    def nearest(
        self, digests: Sequence[str], vector: Any, limit: int
    ) -> list[tuple[str, float, Any]]:
        """The ``limit`` memories nearest ``vector`` in each of these mirrors: (id, cosine,
        vector). A mirror dropped meanwhile (its user erased) finds nothing."""
        query = [list(map(float, vector))]
        hits: list[tuple[str, float, Any]] = []
        for digest in digests:
            try:
                found = self._mirror(digest).query(
                    query_embeddings=query, n_results=limit, include=["distances", "embeddings"]
                )
            except StoreUnavailable:
                raise
            except Exception:  # chromadb's NotFoundError: the mirror was dropped
                with self._lock:
                    self._collections.pop(digest, None)
                continue
            hits += [
                (i, 1.0 - float(d), v)
                for i, d, v in zip(found["ids"][0], found["distances"][0], found["embeddings"][0])
            ]
        return hits

    def keyword_postings(
        self,
        digests: Sequence[str],
        terms: Sequence[str],
        *,
        held: Mapping[str, tuple[float, Sequence[str]]] | None = None,
        followed: Set[str] = frozenset(),
    ) -> StoredPostings | None:
        """The postings of ``terms`` in these mirrored partitions (``_postings.gather``)."""
        return self.postings.gather(digests, terms, held=held or {}, followed=followed)

    def warm(self, digests: Sequence[str], dimension: int) -> int:
        """Make a Chroma server load these mirrors' indexes now, a query each (and their
        postings' heads): its first query of a mirror after it starts waits while it loads
        the index (8.9 s for a public mirror of 1M memories). Returns how many answered."""
        probe = [[1.0] + [0.0] * (dimension - 1)]
        warmed = 0
        for digest in digests:
            try:
                self._mirror(digest).query(query_embeddings=probe, n_results=1, include=[])
                self.postings.head(digest, fresh=True)
            except StoreUnavailable:
                raise
            except Exception:  # chromadb's NotFoundError: dropped meanwhile
                self._forget(digest)
                continue
            warmed += 1
        return warmed

    def close(self) -> None:
        """Let the postings' folds in flight finish (the store is closing)."""
        self.postings.wait_folds()

    def vectors(self, digests: Sequence[str], ids: Sequence[str]) -> dict[str, Any]:
        """The vectors these mirrors hold of these memories."""
        found: dict[str, Any] = {}
        for digest in digests:
            wanted = [i for i in ids if i not in found]
            if not wanted:
                break
            try:
                got = self._mirror(digest).get(ids=wanted, include=["embeddings"])
            except StoreUnavailable:
                raise
            except Exception:  # chromadb's NotFoundError: the mirror was dropped
                continue
            found.update(zip(got["ids"], got["embeddings"]))
        return found

    def _name(self, digest: str) -> str:
        return f"mirror_{digest}"

    def _mirror(self, digest: str) -> Any:
        with self._lock:
            found = self._collections.get(digest)
        if found is None:
            found = self._chroma.collection(
                self._name(digest),
                configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}},
            )
            with self._lock:
                self._collections[digest] = found
        return found


def counts_in(meta: Mapping[str, Any]) -> dict[str, int]:
    """A mirrored memory's term counts, from its metadata."""
    words = str(meta.get("keywords") or "").split()
    return {words[n]: int(words[n + 1]) for n in range(0, len(words) - 1, 2)}


def _terms_ever(meta: Mapping[str, Any]) -> list[str]:
    """The terms a mirrored memory's postings may list it under: its own, and those of the
    texts it replaced (until a fold, the base lists those)."""
    return sorted(set(counts_in(meta)) | set(str(meta.get("earlier") or "").split()))
