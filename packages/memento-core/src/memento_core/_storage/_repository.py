"""The store repository: every read and write of Memento's records, in the words of the work.

Work modules ask for memories, links, feedback events and side records by what they mean; this
class and ``_chroma`` are the only code that calls Chroma. Writes that change what the candidate
index holds — new, replaced and erased memories — are also appended to the change feed
(``<prefix>_changes``), from which other instances and processes catch up (see ``_engine``).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memento_core._model import FeedbackEvent, Link, LinkType, MemoryItem, utcnow
from memento_core._storage._chroma import PAGE, PLACEHOLDER_VECTOR, ChromaStore, Record, StoreInfo
from memento_core._storage._directory import PartitionDirectory
from memento_core._storage._mirrors import PartitionMirrors
from memento_core._storage._records import (
    event_from_record,
    event_metadata,
    item_from_record,
    item_metadata,
    legacy_link_id,
    link_from_record,
    link_id,
    link_metadata,
    to_micros,
)
from memento_core._storage._side import SideRecords, Where
from memento_core.errors import StoreUnavailable

WHERE_PAGE = 10_000
ITEM_CACHE = 50_000
"""Memories recall keeps as read (``Repository.cached_items``): about 1.5 KB each."""

HISTORY_HEAD = "history_head"
"""The metadata field of a memory that commits its logged changes (see ``_history``)."""
SIDE_OWNER_KEY = "user_id"
"""The metadata field of a side record that names the user it belongs to (see
``Repository.erase_side_records_of``)."""
SIDE_REGISTRY_KIND = "side_records"
"""The ``kind`` of the meta records that list the side collections adapters made."""


@dataclass(frozen=True)
class IndexRecord:
    """What the candidate index keeps of a memory: its text, who may see it, its vector."""

    id: str
    content: str
    user_id: str
    project_id: str
    privacy: str
    vector: Any


@dataclass(frozen=True)
class Change:
    """One entry of the change feed: memories written (``put``), erased (``erase``) or with
    fields changed that no index depends on (``touch``: usage, pins, soft forgetting). A put
    gives each memory's partitions as digests (``_partitions.digest``: no user's name is in the
    feed), so a reader re-reads only what its index wants; older entries give none."""

    id: str
    at: int
    op: str
    ids: tuple[str, ...]
    partitions: tuple[tuple[str, ...], ...] = ()


class Repository:
    """Memories, links, feedback events, side records and the change feed of one store."""

    def __init__(
        self,
        chroma: ChromaStore,
        info: StoreInfo,
        digests_of: Callable[[Mapping[str, Any]], tuple[str, ...]] = lambda meta: (),
        terms_of: Callable[[str], Sequence[str]] = lambda text: (),
    ) -> None:
        self._chroma = chroma
        self._digests_of = digests_of
        """A stored memory's partitions (digests), from its metadata."""
        self.info = info
        self.location = chroma.location
        self.shared = "://" in chroma.location
        """A Chroma server, which other processes may write to."""
        self.lock: threading.RLock = chroma.lock
        self._items = chroma.items
        self._links = chroma.links
        self._events = chroma.events
        self._side: dict[str, SideRecords] = {}
        self._registered: set[str] = set()
        self.changes = self.side_records("changes")
        # Recall's reads of held memories (``cached_items``); kept fresh by this repository's
        # writes and, for other processes' writes, by the change feed (``forget_cached``).
        self._cache: OrderedDict[str, MemoryItem] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._cache_generation = 0
        self._feed_lock = threading.RLock()
        """Held while an entry is logged and while the directory folds the feed."""
        self.directory = PartitionDirectory(
            self.side_records("partitions"),
            chroma.meta,
            sole_writer=not self.shared,
            feed=self._feed_puts,
        )
        """Which memories each partition holds (``_directory``)."""
        self.mirrors = PartitionMirrors(chroma, shared=self.shared, terms_of=terms_of)
        """The large partitions' own collections (``_mirrors``)."""
        if info.created:
            self.directory.mark_complete()

    # ----------------------------------------------------------------- memories

    def items_by_id(self, ids: Sequence[str], *, where: Where | None = None) -> list[MemoryItem]:
        """The memories with these ids that exist (and match ``where``), as stored."""
        if not ids:
            return []
        if where is None:
            records: Iterator[Record] = self._chroma.records_by_id(
                self._items, list(ids), include=["metadatas", "documents"]
            )
            return [item_from_record(i, d or "", m) for i, m, d, _ in records]
        found = self._items.get(
            ids=list(ids), where=dict(where), include=["metadatas", "documents"]
        )
        return [
            item_from_record(i, d or "", m)
            for i, m, d in zip(found["ids"], found["metadatas"], found["documents"])
        ]

    def cached_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        """The memories with these ids that exist, as stored when last read or written here:
        recall's read. A Chroma read by id grows with the collection (about 0.25 ms a memory
        at 1M), and a recall reads a hundred; the cache holds ``ITEM_CACHE`` memories.
        Another process's change shows once the change feed is applied (``forget_cached``),
        within the freshness bound, as its new memories do."""
        with self._cache_lock:
            found = {i: self._cache[i] for i in ids if i in self._cache}
            for memory_id in found:
                self._cache.move_to_end(memory_id)
            generation = self._cache_generation
        missing = [i for i in dict.fromkeys(ids) if i not in found]
        read = self.items_by_id(missing)
        self._keep(read, generation)
        return [*found.values(), *read]

    def _keep(self, items: Sequence[MemoryItem], generation: int) -> None:
        """Cache memories read when the cache was at ``generation``; not if anything was
        forgotten since: the read may predate that change."""
        with self._cache_lock:
            if items and generation == self._cache_generation:
                for item in items:
                    self._cache[item.id] = item
                while len(self._cache) > ITEM_CACHE:
                    self._cache.popitem(last=False)

    def gone(self) -> bool:
        """Whether an embedded store's directory was deleted under it."""
        directory = self._chroma.directory
        return directory is not None and not (directory / "chroma.sqlite3").exists()

    def forget_cached(self, ids: Iterable[str] | None = None) -> None:
        """Drop these memories (all, without ``ids``) from the cache: they changed."""
        with self._cache_lock:
            self._cache_generation += 1
            if ids is None:
                self._cache.clear()
            else:
                for memory_id in ids:
                    self._cache.pop(memory_id, None)

    def find_items(self, where: Where | None = None) -> list[MemoryItem]:
        """Every memory matching ``where`` (all of them without it), in pages."""
        return [
            item_from_record(i, d or "", m)
            for i, m, d, _ in self._chroma.iter_records(
                self._items, where=where, include=["metadatas", "documents"]
            )
        ]

    def find_items_with_vectors(self, where: Where) -> list[tuple[MemoryItem, Any]]:
        """Every memory matching ``where`` with its stored vector."""
        return [
            (item_from_record(i, d or "", m), vector)
            for i, m, d, vector in self._chroma.iter_records(
                self._items, where=where, include=["metadatas", "documents", "embeddings"]
            )
        ]

    def items_with_vectors_by_id(self, ids: Sequence[str]) -> list[tuple[MemoryItem, Any]]:
        """The memories with these ids that exist, each with its stored vector."""
        return [
            (item_from_record(i, d or "", m), vector)
            for i, m, d, vector in self._chroma.records_by_id(
                self._items, list(ids), include=["metadatas", "documents", "embeddings"]
            )
        ]

    def find_item_ids(self, where: Where | None = None) -> list[str]:
        return [i for i, _, _, _ in self._chroma.iter_records(self._items, where=where, include=[])]

    def item_fields(self, where: Where | None = None) -> Iterator[Mapping[str, Any]]:
        """The flat metadata of every memory matching ``where`` (cheap: no text, no JSON)."""
        for _, meta, _, _ in self._chroma.iter_records(
            self._items, where=where, include=["metadatas"]
        ):
            yield meta

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored."""
        if not ids:
            return set()
        return set(self._items.get(ids=list(dict.fromkeys(ids)), include=[])["ids"])

    def all_item_ids(self) -> set[str]:
        return self._chroma.all_ids(self._items)

    def count_items(self) -> int:
        return int(self._items.count())

    def item_ids_where(self, where: Where, *, privacies: frozenset[str]) -> list[str]:
        """The ids of the memories matching ``where`` whose privacy is one of ``privacies``.
        In pages of ``WHERE_PAGE``: Chroma evaluates a ``where`` over the whole collection for
        each page, so pages are large, but one read of 50,000 records exceeds SQLite's limit
        on a statement's variables."""
        ids: list[str] = []
        offset = 0
        while True:
            page = self._items.get(
                where=dict(where), include=["metadatas"], limit=WHERE_PAGE, offset=offset
            )
            ids += [i for i, m in zip(page["ids"], page["metadatas"]) if m["privacy"] in privacies]
            if len(page["ids"]) < WHERE_PAGE:
                return ids
            offset += WHERE_PAGE

    def item_fields_by_id(
        self, where: Where | None = None
    ) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """Each memory's id and flat metadata (no text, no JSON), for those matching ``where``.
        Without ``where``, all ids in one read and then the metadata by id in pages: pages of a
        whole-collection read would make Chroma skip ever more rows."""
        if where is not None:
            for memory_id, meta, _, _ in self._chroma.iter_records(
                self._items, where=where, include=["metadatas"]
            ):
                yield memory_id, meta
            return
        ids = sorted(self.all_item_ids())
        for memory_id, meta, _, _ in self._chroma.records_by_id(
            self._items, ids, include=["metadatas"]
        ):
            yield memory_id, meta

    def item_partitions(
        self, partitions_of: Callable[[Mapping[str, Any]], Sequence[str]]
    ) -> Iterator[tuple[str, Sequence[str]]]:
        """Every memory's id with its partitions (``partitions_of`` its metadata): all ids in
        one read, then the metadata by id in pages (pages of a whole-collection read would
        make Chroma skip ever more rows)."""
        ids = sorted(self.all_item_ids())
        for memory_id, meta, _, _ in self._chroma.records_by_id(
            self._items, ids, include=["metadatas"]
        ):
            yield memory_id, partitions_of(meta)

    def index_records(
        self, ids: Sequence[str], *, with_vectors: bool = True, cache: bool = False
    ) -> Iterator[IndexRecord]:
        """What the candidate index needs of these memories, read by id in pages. Without
        vectors, ``vector`` is None: the caller embeds the text again. With ``cache``, the
        memories read are also kept for recall (``cached_items``), which would read them
        again at once: a cold user's own memories."""
        include = ["metadatas", "documents", *(["embeddings"] if with_vectors else [])]
        generation = self._cache_generation
        records = self._chroma.records_by_id(self._items, list(ids), include=include)
        items: list[MemoryItem] = []
        for memory_id, meta, document, vector in records:
            if cache:
                items.append(item_from_record(memory_id, document or "", meta))
            yield IndexRecord(
                memory_id,
                document or "",
                meta["user_id"],
                meta["project_id"],
                meta["privacy"],
                vector,
            )
        self._keep(items, generation)

    def nearest_in(
        self, where: Where, privacies: frozenset[str], vector: Any, limit: int
    ) -> list[tuple[str, float, Any]]:
        """The ``limit`` memories nearest ``vector`` among those ``where`` selects (one
        partition), with one of ``privacies``: (id, cosine, vector). A filtered query costs
        time with the whole collection (75-115 ms at 100k), not the partition: what a recall
        does for a large partition not mirrored yet, instead of loading it."""
        import numpy as np

        found = self._items.query(
            query_embeddings=[list(map(float, vector))],
            n_results=limit,
            where=dict(where),
            include=["metadatas", "embeddings"],
        )
        query = np.asarray(vector, dtype=np.float32).ravel()
        query = query / (float(np.linalg.norm(query)) or 1.0)
        hits = []
        for memory_id, meta, row in zip(
            found["ids"][0], found["metadatas"][0], found["embeddings"][0]
        ):
            if meta.get("privacy") not in privacies:
                continue
            unit = np.asarray(row, dtype=np.float32).ravel()
            unit = unit / (float(np.linalg.norm(unit)) or 1.0)
            hits.append((memory_id, float(unit @ query), row))
        return hits

    def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, Any]:
        """Stored vectors of texts with these hashes (identical text stored in another scope)."""
        if not hashes:
            return {}
        # Which texts are stored first, without vectors: usually none, and then no vector
        # index is touched (a Chroma server cannot read the vectors of a collection whose
        # index is not on disk yet: "Nothing found on disk").
        found = self._items.get(where={"text_hash": {"$in": list(hashes)}}, include=["metadatas"])
        if not found["ids"]:
            return {}
        hash_of = {i: m["text_hash"] for i, m in zip(found["ids"], found["metadatas"])}
        try:
            vectors = self._items.get(ids=list(hash_of), include=["embeddings"])
        except StoreUnavailable:
            raise
        except Exception:  # that same error, on text stored a moment ago: embed it instead
            return {}
        return {hash_of[i]: v for i, v in zip(vectors["ids"], vectors["embeddings"])}

    def write_items(
        self,
        items: Sequence[MemoryItem],
        vectors: Any,
        hashes: Sequence[str],
        *,
        replacing: Sequence[bool],
        partitions: Sequence[Sequence[str]],
        extra: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Change | None:
        """Store memories with their vectors, list them in their ``partitions`` (digests) in
        the directory, and log them with those in the change feed. ``extra``: more metadata
        of some memories by id, in the same write (a history head, ``_history``).

        New memories are added, not upserted: Chroma keeps the first record of an id, so when
        another process stored the same content since the caller's check, its record (and any
        pin, feedback or use since) stays. Replacements overwrite.
        """
        self.directory.before_deferring()
        ids = [item.id for item in items]
        texts = [item.content for item in items]
        # First: see ``_mirrors``.
        mirrored = self.mirrors.put(ids, vectors, texts, partitions, replacing=replacing)
        left = self._partitions_before([i for i, r in zip(ids, replacing) if r])
        for write, replace in ((self._items.add, False), (self._items.upsert, True)):
            chosen = [n for n in range(len(items)) if replacing[n] == replace]
            if chosen:
                write(
                    ids=[items[n].id for n in chosen],
                    embeddings=[vectors[n] for n in chosen],
                    documents=[items[n].content for n in chosen],
                    metadatas=[
                        {
                            **item_metadata(items[n], hashes[n], replacing=replace),
                            **(extra or {}).get(items[n].id, {}),
                        }
                        for n in chosen
                    ],
                )
        self.forget_cached(ids)
        if left:
            self.mirrors.moved(left, {i: partitions[n] for n, i in enumerate(ids) if i in left})
        if not self.directory.defers:
            self.directory.append(ids, partitions)
            change = self.log_change("put", ids, partitions)
        else:
            with self._feed_lock:
                change = self.log_change("put", ids, partitions)  # lists them (``_directory``)
                if self.directory.deferred(len(ids)):
                    self.directory.fold()
        self.mirrors.put(ids, vectors, texts, partitions, besides=mirrored)
        return change

    def _partitions_before(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The partitions (digests) stored memories about to be replaced are in now, when any
        partition is mirrored: a memory that leaves one leaves its mirror too."""
        if not ids or not self.mirrors.catalog():
            return {}
        found = self._items.get(ids=list(ids), include=["metadatas"])
        return {i: self._digests_of(m) for i, m in zip(found["ids"], found["metadatas"])}

    def fold_directory(self) -> None:
        """List the writes the directory holds only as feed entries in its records (a writer
        of an embedded store that is about to let go of it). Not after the store failed in
        this process: the feed lists them still, and the fold could hang (``ChromaStore``)."""
        if self.directory.defers and not self._chroma.failed:
            with self._feed_lock:
                self.directory.fold()

    def _feed_puts(self, at: int) -> list[tuple[int, tuple[str, ...], tuple[tuple[str, ...], ...]]]:
        """The feed's ``put`` entries stamped at or after ``at`` (µs), for the directory."""
        return [
            (change.at, change.ids, change.partitions)
            for change in self.changes_since(at)
            if change.op == "put" and change.partitions
        ]

    def set_fields(
        self, ids: Sequence[str], fields: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> Change | None:
        """Change flat fields of stored memories: the same ``fields`` for all, or one each.
        Fields no index depends on (usage, pins, marks); the change feed is told (``touch``)
        so other processes read the memories again instead of from their caches."""
        if not ids:
            return None
        metadatas = [dict(fields)] * len(ids) if isinstance(fields, Mapping) else list(fields)
        for start in range(0, len(ids), PAGE):
            self._items.update(
                ids=list(ids[start : start + PAGE]),
                metadatas=[dict(m) for m in metadatas[start : start + PAGE]],
            )
        self.forget_cached(ids)
        return self.log_change("touch", ids)

    def history_heads(self, ids: Sequence[str]) -> dict[str, int]:
        """Each stored memory's history head: how many logged changes it has (``_history``)."""
        if not ids:
            return {}
        found = self._items.get(ids=list(ids), include=["metadatas"])
        return {i: int(m.get(HISTORY_HEAD, 0)) for i, m in zip(found["ids"], found["metadatas"])}

    def delete_items(self, ids: Sequence[str]) -> Change | None:
        """Erase memories and their vectors, and every mention of their ids in the partition
        directory and the change feed; log the erasure there without ids (readers drop their
        record caches, and their indexes drop the ids when a recall finds them gone)."""
        if not ids:
            return None
        done = self.mirrors.delete(ids)  # first: an erased memory's vector stays in no mirror
        for start in range(0, len(ids), PAGE):
            self._items.delete(ids=list(ids[start : start + PAGE]))
        self.mirrors.delete(ids, besides=done)  # listed meanwhile: its build may hold them
        self.forget_cached(ids)
        self.directory.scrub(ids)
        self._scrub_changes(ids)
        return self.log_change("erase", (), force=True)

    def _scrub_changes(self, erased: Sequence[str]) -> None:
        """Take erased ids (and their partitions) out of the change-feed entries naming them;
        an entry left naming nothing goes."""
        gone = set(erased)
        emptied: list[str] = []
        for record in self.changes.naming([json.dumps(i) for i in gone]):
            named = json.loads(record.document)
            if isinstance(named, list):  # an older writer's entry: ids only
                named = {"ids": named}
            ids, partitions = named["ids"], named.get("partitions") or []
            keep = [n for n, i in enumerate(ids) if i not in gone]
            if len(keep) == len(ids):
                continue
            if not keep:
                emptied.append(record.id)
                continue
            document = {
                "ids": [ids[n] for n in keep],
                "partitions": [partitions[n] for n in keep] if partitions else [],
            }
            self.changes.put([record.id], [json.dumps(document)], [record.metadata])
        self.changes.delete(ids=emptied)

    def items_following(self, ids: Sequence[str]) -> list[MemoryItem]:
        """Memories whose timeline link (``follows``) points at one of ``ids``."""
        return self.find_items({"follows": {"$in": list(ids)}})

    def items_superseded_by(self, ids: Sequence[str]) -> list[MemoryItem]:
        """Memories marked superseded by one of ``ids``."""
        return self.find_items({"superseded_by": {"$in": list(ids)}})

    # -------------------------------------------------------------------- links

    def link(self, link: Link) -> Link | None:
        """The stored link with ``link``'s ends and type (under its id, or the id it had
        before ids were escaped)."""
        keys = [link_id(link), legacy_link_id(link)] if _escaped(link) else [link_id(link)]
        found = self._links.get(ids=keys, include=["metadatas", "documents"])
        if not found["ids"]:
            return None
        return link_from_record(found["metadatas"][0], found["documents"][0] or "")

    def add_links(self, links: Sequence[Link]) -> None:
        """Store links not stored yet (a stored link keeps its time and note)."""
        fresh = {link_id(link): link for link in links}
        if not fresh:
            return
        legacy = {legacy_link_id(link): key for key, link in fresh.items() if _escaped(link)}
        for known in self._links.get(ids=list(fresh.keys() | legacy.keys()), include=[])["ids"]:
            fresh.pop(legacy.get(known, known), None)
        if fresh:
            self._links.add(
                ids=list(fresh),
                embeddings=[PLACEHOLDER_VECTOR] * len(fresh),
                documents=[link.note or "" for link in fresh.values()],
                metadatas=[link_metadata(link) for link in fresh.values()],
            )

    def put_links(self, links: Sequence[Link]) -> None:
        """Store links as given, replacing stored ones with the same ids (import; of a link
        given twice, the last counts)."""
        unique = list({link_id(link): link for link in links}.values())
        for start in range(0, len(unique), PAGE):
            batch = unique[start : start + PAGE]
            self._links.upsert(
                ids=[link_id(link) for link in batch],
                embeddings=[PLACEHOLDER_VECTOR] * len(batch),
                documents=[link.note or "" for link in batch],
                metadatas=[link_metadata(link) for link in batch],
            )
        # The same link stored before ids were escaped goes: one record per link.
        legacy = [legacy_link_id(link) for link in unique if _escaped(link)]
        for start in range(0, len(legacy), PAGE):
            self._links.delete(ids=legacy[start : start + PAGE])

    def find_links(self, where: Where | None = None) -> list[Link]:
        return [
            link_from_record(m, d or "")
            for _, m, d, _ in self._chroma.iter_records(
                self._links, where=where, include=["metadatas", "documents"]
            )
        ]

    def links_touching(self, ids: Sequence[str]) -> list[Link]:
        """Every link from or to one of ``ids``."""
        listed = list(ids)
        return self.find_links(
            {"$or": [{"source_id": {"$in": listed}}, {"target_id": {"$in": listed}}]}
        )

    def links_of_type(
        self,
        link_type: LinkType,
        *,
        sources: Sequence[str] | None = None,
        targets: Sequence[str] | None = None,
    ) -> list[Link]:
        """Links of one type from any of ``sources`` and/or to any of ``targets``."""
        clauses: list[dict[str, Any]] = [{"type": link_type.value}]
        if sources is not None:
            clauses.append({"source_id": {"$in": list(sources)}})
        if targets is not None:
            clauses.append({"target_id": {"$in": list(targets)}})
        found: list[Link] = []
        # ``$in`` lists are kept to a page: Chroma's query planner slows with long ones.
        longest = max(len(sources or ()), len(targets or ()), 1)
        if longest <= PAGE:
            return self.find_links({"$and": clauses})
        key = "source_id" if sources is not None and len(sources) == longest else "target_id"
        values = list((sources if key == "source_id" else targets) or ())
        for start in range(0, len(values), PAGE):
            page = [c for c in clauses if key not in c] + [
                {key: {"$in": values[start : start + PAGE]}}
            ]
            found += self.find_links({"$and": page})
        return found

    def delete_links_touching(self, ids: Sequence[str]) -> None:
        listed = list(ids)
        for start in range(0, len(listed), PAGE):
            page = listed[start : start + PAGE]
            self._links.delete(
                where={"$or": [{"source_id": {"$in": page}}, {"target_id": {"$in": page}}]}
            )

    def links_by_key(self, keys: Sequence[str]) -> dict[str, Link]:
        """The stored links among ``keys`` (``link_id``s), by key."""
        found: dict[str, Link] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), PAGE):
            got = self._links.get(
                ids=unique[start : start + PAGE], include=["metadatas", "documents"]
            )
            for key, meta, note in zip(got["ids"], got["metadatas"], got["documents"]):
                found[key] = link_from_record(meta, note or "")
        return found

    def delete_links(self, links: Sequence[Link]) -> None:
        keys = [link_id(link) for link in links]
        keys += [legacy_link_id(link) for link in links if _escaped(link)]
        for start in range(0, len(keys), PAGE):
            self._links.delete(ids=keys[start : start + PAGE])

    def forget_link_maker(self, user_id: str) -> None:
        """Links an erased user made between memories that stay keep no trace of who made them."""
        made = self._links.get(where={"made_by": user_id}, include=[])["ids"]
        for start in range(0, len(made), PAGE):
            page = made[start : start + PAGE]
            self._links.update(ids=page, metadatas=[{"made_by": ""} for _ in page])

    def count_links(self) -> int:
        return int(self._links.count())

    # ----------------------------------------------------------------- feedback

    def add_event(self, event: FeedbackEvent, *, key: str | None = None) -> None:
        """Store one feedback event (under ``key``, or a fresh unique id)."""
        event_key = key or f"{event.memory_id}:{to_micros(event.at)}:{os.urandom(4).hex()}"
        self._events.upsert(
            ids=[event_key],
            embeddings=[PLACEHOLDER_VECTOR],
            documents=[event.note or ""],
            metadatas=[event_metadata(event)],
        )

    def find_events(self, memory_ids: Sequence[str] | None = None) -> list[FeedbackEvent]:
        """The feedback events of these memories (of every memory without ids)."""
        where = None if memory_ids is None else {"memory_id": {"$in": list(memory_ids)}}
        if memory_ids is not None and not memory_ids:
            return []
        return [
            event_from_record(m, d or "")
            for _, m, d, _ in self._chroma.iter_records(
                self._events, where=where, include=["metadatas", "documents"]
            )
        ]

    def delete_events(self, keys: Sequence[str]) -> None:
        """Delete the feedback events stored under these keys."""
        for start in range(0, len(keys), PAGE):
            self._events.delete(ids=list(keys[start : start + PAGE]))

    def delete_events_of(self, memory_ids: Sequence[str]) -> None:
        listed = list(memory_ids)
        for start in range(0, len(listed), PAGE):
            self._events.delete(where={"memory_id": {"$in": listed[start : start + PAGE]}})

    def count_events(self) -> int:
        return int(self._events.count())

    # ------------------------------------------------------------ side records

    def side_records(self, name: str) -> SideRecords:
        """The side collection ``<prefix>_<name>``, created on first use."""
        found = self._side.get(name)
        if found is None:
            found = self._side[name] = SideRecords(self._chroma.side_collection(name), self._chroma)
        return found

    def register_side_records(self, name: str) -> None:
        """Note in the store that an adapter keeps the side collection ``name``, so that any
        instance, in any process, finds it when it erases a user."""
        if name in self._registered:
            return
        meta = self._chroma.meta
        record_id = f"side:{name}"
        if not meta.get(ids=[record_id], include=[])["ids"]:
            meta.upsert(
                ids=[record_id],
                embeddings=[PLACEHOLDER_VECTOR],
                documents=[name],
                metadatas=[{"kind": SIDE_REGISTRY_KIND, "name": name}],
            )
        self._registered.add(name)

    def registered_side_records(self) -> list[str]:
        """The names of the side collections adapters made in this store, sorted."""
        found = self._chroma.meta.get(where={"kind": SIDE_REGISTRY_KIND}, include=["metadatas"])
        return sorted(str(m["name"]) for m in found["metadatas"])

    def erase_side_records_of(self, user_id: str) -> dict[str, int]:
        """Delete, in every registered side collection, the records whose metadata
        ``user_id`` is ``user_id``; returns how many went, by collection name."""
        erased: dict[str, int] = {}
        for name in self.registered_side_records():
            records = self.side_records(name)
            doomed = records.ids({SIDE_OWNER_KEY: user_id})
            records.delete(ids=doomed)
            erased[name] = len(doomed)
        return erased

    # ------------------------------------------------------------- change feed

    def log_change(
        self,
        op: str,
        ids: Sequence[str],
        partitions: Sequence[Sequence[str]] = (),
        *,
        force: bool = False,
    ) -> Change | None:
        """Append an entry to the change feed (after the write it describes, so a reader that
        sees the entry finds the records). An entry without ids is written only if ``force``
        (an erasure, which names none)."""
        if not ids and not force:
            return None
        with self._feed_lock:  # stamped and written with no fold in between
            return self._log(op, ids, partitions)

    def _log(self, op: str, ids: Sequence[str], partitions: Sequence[Sequence[str]]) -> Change:
        at = to_micros(utcnow())
        change = Change(
            f"{at:020d}:{os.urandom(6).hex()}", at, op, tuple(ids), tuple(map(tuple, partitions))
        )
        document = {"ids": list(change.ids), "partitions": [list(p) for p in change.partitions]}
        self.changes.add([change.id], [json.dumps(document)], [{"at": change.at, "op": change.op}])
        return change

    def changes_since(self, at: int, *, known: Container[str] = ()) -> list[Change]:
        """Change-feed entries stamped at or after ``at`` (microseconds), oldest first, but
        those whose ids are ``known``: a reader re-reads a window of the feed on every look,
        so it lists the window's ids and reads only the entries it has not applied."""
        wanted = [i for i in self.changes.ids({"at": {"$gte": at}}) if i not in known]
        changes = []
        for record in sorted(self.changes.get(wanted), key=lambda r: r.id):
            named = json.loads(record.document)
            if isinstance(named, list):  # an older writer's entry: ids only
                named = {"ids": named}
            changes.append(
                Change(
                    record.id,
                    int(record.metadata["at"]),
                    str(record.metadata["op"]),
                    tuple(named["ids"]),
                    tuple(tuple(map(str, p)) for p in named.get("partitions", ())),
                )
            )
        return changes

    def prune_changes(self, before: int) -> None:
        """Drop change-feed entries stamped before ``before`` (microseconds), but none the
        partition directory has not folded into its records yet."""
        with self._feed_lock:
            mark = self.directory.folded_up_to()
            until = before if mark is None else min(before, mark)
            self.changes.delete(where={"at": {"$lt": until}})


def _escaped(link: Link) -> bool:
    """Whether ``link`` may be stored under the id it had before ids in link ids were escaped,
    and that id is no other link's now: its memory ids hold a ``:`` (so the old id has more
    than two, which no escaped id has). A link whose ids hold ``%`` only is found by its ends
    and erased with its memories, but not by its old id."""
    return ":" in link.source_id or ":" in link.target_id
