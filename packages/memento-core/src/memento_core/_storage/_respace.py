"""Re-embedding a store into another embedding space, at the level of its collections.

Every record is copied as stored — ids, metadata (usage counts, history heads, pins, …) and
text — from the source's collections to the target's: the memories (``items``) with vectors
of the new embedder, the mirrors of large partitions with those same new vectors, and every
other collection (links, feedback, history, chat messages, the change feed, the partition
directory, adapters' records, keyword postings) as it is, with the placeholder vector side
collections carry. Nothing else holds a vector.

A copy is a **sync**: a record the target holds already, the same as the source's, is left
alone (a memory whose text is unchanged is not embedded again), a changed one is rewritten,
and one the source no longer holds goes. So running it again after it was cut short
(SIGKILL) continues where it stopped, and what changed in the source meanwhile is caught up.

The target is a store of its own while it is built: ``--to DIR``, a new directory, or — in
place — a new **space** in the same Chroma client, the store's collections under the prefix
``<root>.g<n>`` beside the old ones. Its meta holds a ``reembedding`` record naming the run
(source, embedder), which makes an open of it refuse (``ChromaStore.attach``) and tells a
rerun of the same command that it may go on. In place, the switch is one write: the root
record (``<root>_meta``, id ``store``) gets the new embedder, dimension and ``space``; a
reader opening before it sees the old space whole, one opening after it the new one whole.
The old space's collections are dropped after the switch; a process that had the store open
must open it again (its embedder belongs to the old space anyway).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memento_core._storage._chroma import (
    PAGE,
    PLACEHOLDER_VECTOR,
    REEMBEDDING_RECORD,
    SCHEMA_VERSION,
    STORE_RECORD,
    ChromaStore,
)
from memento_core._storage._mirrors import EF_SEARCH

ITEMS = "items"
META = "meta"
MIRROR = "mirror_"
GENERATION = re.compile(r"^(?P<root>.+)\.g(?P<n>[0-9]+)$")
"""A space's prefix: ``<root>.g<n>`` (a ``.`` cannot end a store's own prefix's collections,
``<root>_<name>``, so no store's collections are mistaken for a space's)."""

Embed = Callable[[Sequence[str]], Any]
Progress = Callable[[int], None]


@dataclass
class Copied:
    """What a sync of the memories did."""

    memories: int = 0
    embedded: int = 0
    kept: int = 0
    """Memories the target held already, unchanged: not embedded again (a resumed run)."""
    removed: int = 0
    records: int = 0
    """Other records copied or checked (links, feedback, history, chat, …)."""


def space_of(prefix: str, n: int) -> str:
    root = GENERATION.match(prefix)
    return f"{root['root'] if root else prefix}.g{n}"


def generation(prefix: str) -> int:
    found = GENERATION.match(prefix)
    return int(found["n"]) if found else 0


def sibling(store: ChromaStore, prefix: str) -> ChromaStore:
    """Another prefix in the same client (a space beside the store's); closing the first
    closes both."""
    other = ChromaStore(store.client._target, prefix=prefix, location=store.location)
    other.directory = store.directory
    return other


def own_collections(store: ChromaStore) -> list[str]:
    """The names (after ``<prefix>_``) of the collections of the store with this prefix:
    not those of a store whose prefix merely begins with it (``memento`` and
    ``memento_test`` on one server), known by their own ``_meta``."""
    names = store.collection_names()
    head = f"{store.prefix}_"
    others = [
        n[: -len("_meta")]
        for n in names
        if n.startswith(head) and n.endswith("_meta") and n != f"{head}meta"
    ]
    return sorted(
        n[len(head) :]
        for n in names
        if n.startswith(head) and not any(n.startswith(f"{o}_") for o in others)
    )


def pending_run(store: ChromaStore) -> Mapping[str, Any] | None:
    """The ``reembedding`` record of a store being built (None: not one)."""
    if f"{store.prefix}_{META}" not in store.collection_names():
        return None
    found = store.side_collection(META).get(ids=[REEMBEDDING_RECORD], include=["metadatas"])
    return found["metadatas"][0] if found["ids"] else None


def holds_store(store: ChromaStore) -> bool:
    if f"{store.prefix}_{META}" not in store.collection_names():
        return False
    meta = store.side_collection(META)
    return bool(meta.get(ids=[STORE_RECORD], include=[])["ids"])


def begin(store: ChromaStore, *, source: str, embedder: str, dimension: int) -> None:
    """Mark ``store`` as the target of this run, then record its space (in that order: a
    target cut short before its store record is still known as this run's)."""
    meta = store.side_collection(META)
    meta.upsert(
        ids=[REEMBEDDING_RECORD],
        embeddings=[PLACEHOLDER_VECTOR],
        documents=["a re-embedding builds this store"],
        metadatas=[{"kind": "reembedding", "source": source, "embedder": embedder,
                    "dimension": dimension, "started": time.time_ns() // 1000}],
    )  # fmt: skip
    meta.upsert(
        ids=[STORE_RECORD],
        embeddings=[PLACEHOLDER_VECTOR],
        documents=["memento store"],
        metadatas=[
            {"embedder": embedder, "dimension": dimension, "schema_version": SCHEMA_VERSION}
        ],
    )


def finish(store: ChromaStore) -> None:
    """The target is whole: it opens as a store of its own."""
    store.side_collection(META).delete(ids=[REEMBEDDING_RECORD])


def switch(root: ChromaStore, *, space: str, embedder: str, dimension: int) -> None:
    """Make ``space`` the store's, in one write of the root record."""
    root.side_collection(META).upsert(
        ids=[STORE_RECORD],
        embeddings=[PLACEHOLDER_VECTOR],
        documents=["memento store"],
        metadatas=[{"embedder": embedder, "dimension": dimension,
                    "schema_version": SCHEMA_VERSION, "space": space}],
    )  # fmt: skip


def drop_space(store: ChromaStore, *, keep_root_record: bool) -> None:
    """Drop every collection of ``store``'s space; a root's meta keeps its ``store`` record
    (which names the space in use now) and nothing else."""
    for name in own_collections(store):
        if name == META and keep_root_record:
            meta = store.side_collection(META)
            stale = [i for i in store.all_ids(meta) if i != STORE_RECORD]
            for start in range(0, len(stale), PAGE):
                meta.delete(ids=stale[start : start + PAGE])
            continue
        store.drop_collection(name)


def sync(
    source: ChromaStore,
    target: ChromaStore,
    embed: Embed,
    *,
    batch_size: int,
    on_progress: Progress | None = None,
) -> Copied:
    """Make ``target`` hold what ``source`` holds, the memories embedded by ``embed``."""
    names = own_collections(source)
    copied = _sync_items(source, target, embed, batch_size, on_progress)
    for name in names:
        if name.startswith(MIRROR):
            copied.records += _sync_mirror(source, target, name)
        elif name not in (ITEMS, META):
            copied.records += _sync_records(
                source, source.side_collection(name), target.side_collection(name)
            )
    copied.records += _sync_records(
        source,
        source.side_collection(META),
        target.side_collection(META),
        skip={STORE_RECORD, REEMBEDDING_RECORD},
    )
    for name in set(own_collections(target)) - set(names) - {ITEMS, META}:
        target.drop_collection(name)  # gone from the source since the last run
    return copied


def _items(store: ChromaStore) -> Any:
    return store.collection(ITEMS, configuration={"hnsw": {"space": "cosine"}})


def _sync_items(
    source: ChromaStore,
    target: ChromaStore,
    embed: Embed,
    batch_size: int,
    on_progress: Progress | None,
) -> Copied:
    have, give = _items(source), _items(target)
    wanted = sorted(source.all_ids(have))
    held = target.all_ids(give)
    copied = Copied(memories=len(wanted))
    for start in range(0, len(wanted), batch_size):
        page = wanted[start : start + batch_size]
        theirs = _read(source, have, page)
        ours = _read(target, give, [i for i in page if i in held])
        fresh = [i for i in page if i in theirs and (i not in ours or ours[i][1] != theirs[i][1])]
        touched = [i for i in page if i in ours and i in theirs and i not in fresh]
        touched = [i for i in touched if ours[i][0] != theirs[i][0]]
        if fresh:
            vectors = embed([theirs[i][1] for i in fresh])
            give.upsert(
                ids=fresh,
                embeddings=[list(map(float, v)) for v in vectors],
                documents=[theirs[i][1] for i in fresh],
                metadatas=[_replacing(theirs[i][0], ours.get(i)) for i in fresh],
            )
        if touched:
            give.update(ids=touched, metadatas=[_replacing(theirs[i][0], ours[i]) for i in touched])
        copied.embedded += len(fresh)
        copied.kept += len(page) - len(fresh)
        if on_progress:
            on_progress(len(page))
    gone = sorted(held - set(wanted))
    for start in range(0, len(gone), PAGE):
        give.delete(ids=gone[start : start + PAGE])
    copied.removed = len(gone)
    return copied


def _sync_mirror(source: ChromaStore, target: ChromaStore, name: str) -> int:
    """A mirror's records as they are, each with its memory's new vector (from the target's
    memories: a mirrored id no longer stored is left out, as recall would drop it)."""
    options = {"configuration": {"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}}}
    have, give = source.collection(name, **options), target.collection(name, **options)
    wanted = sorted(source.all_ids(have))
    held = target.all_ids(give)
    for start in range(0, len(wanted), PAGE):
        page = wanted[start : start + PAGE]
        theirs = _read(source, have, page)
        vectors = {
            i: v
            for i, _, _, v in target.records_by_id(
                _items(target), list(theirs), include=["embeddings"]
            )
        }
        ours = _read(target, give, [i for i in page if i in held])
        ids = [i for i in page if i in vectors]
        if ids:
            give.upsert(
                ids=ids,
                embeddings=[list(map(float, vectors[i])) for i in ids],
                documents=[theirs[i][1] for i in ids],
                metadatas=[_replacing(theirs[i][0], ours.get(i)) for i in ids],
            )
    gone = sorted(held - set(wanted))
    for start in range(0, len(gone), PAGE):
        give.delete(ids=gone[start : start + PAGE])
    return len(wanted)


def _sync_records(
    store: ChromaStore, have: Any, give: Any, *, skip: set[str] | frozenset[str] = frozenset()
) -> int:
    """Records without vectors, as they are; those the target holds the same are left."""
    wanted = sorted(store.all_ids(have) - skip)
    held = store.all_ids(give) - skip
    for start in range(0, len(wanted), PAGE):
        page = wanted[start : start + PAGE]
        theirs = _read(store, have, page)
        ours = _read(store, give, [i for i in page if i in held])
        changed = [i for i in page if i in theirs and ours.get(i) != theirs[i]]
        if changed:
            give.upsert(
                ids=changed,
                embeddings=[PLACEHOLDER_VECTOR] * len(changed),
                documents=[theirs[i][1] for i in changed],
                metadatas=[_replacing(theirs[i][0], ours.get(i)) for i in changed],
            )
    gone = sorted(held - set(wanted))
    for start in range(0, len(gone), PAGE):
        give.delete(ids=gone[start : start + PAGE])
    return len(wanted)


def _read(store: ChromaStore, collection: Any, ids: Sequence[str]) -> dict[str, tuple[Any, str]]:
    return {
        i: (dict(m or {}), d or "")
        for i, m, d, _ in store.records_by_id(collection, ids, include=["metadatas", "documents"])
    }


def _replacing(metadata: Mapping[str, Any], held: tuple[Any, str] | None) -> dict[str, Any]:
    """``metadata`` to write over ``held``'s: Chroma merges metadata on upsert, so a key the
    source no longer has is removed (set to None)."""
    gone = {key: None for key in (held[0] if held else {}) if key not in metadata}
    return {**gone, **metadata}
