"""The write path: checking, linking, embedding and storing new memories.

Identical content in one scope has one content-addressed id, so a write first reads which ids
are stored already; those are left as they are (restored if soft-deleted) unless the caller chose
the id, which replaces the memory. New memories join their scope's timeline
(``link_timeline``), are embedded longest first (``store_items``) and written with their vectors
to Chroma and the in-memory candidate index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memento_core import plugins
from memento_core._drafts import keyword_visibility, replacement
from memento_core._model import MemoryItem
from memento_core._storage import item_from_record, item_metadata
from memento_core.embedding import text_hash

if TYPE_CHECKING:
    from memento_core._memento import Memento

BATCH_SIZE = 256
"""Memories embedded and written to Chroma per call (``remember_many``'s default, and import's)."""
WINDOW = 1_024
"""Drafts that ``Memento.remember_many`` checks and embeds as one group (see ``store_items``)."""
CONTIGUITY_WINDOW = timedelta(hours=1)
"""Two memories stored one after the other in a scope are neighbours in its timeline when
their ``created_at`` are at most this far apart (turns of one conversation, say)."""
TIMELINE_SCOPES = 10_000
"""Scopes whose last memory this process remembers, to link the next one to it."""


def write(
    mem: Memento,
    items: Sequence[MemoryItem],
    replacing: set[str],
    now: datetime,
    *,
    batch_size: int,
    on_progress: Callable[[int], None] | None,
) -> None:
    """Add new memories, replace those stored under a caller-chosen id, and leave
    content-addressed duplicates as they are (restoring soft-deleted ones)."""
    unique = list({item.id: item for item in items}.values())
    with mem._store.lock:
        found = mem._store.items.get(ids=[i.id for i in unique], include=["metadatas", "documents"])
        existing = {
            i: item_from_record(i, d or "", m)
            for i, m, d in zip(found["ids"], found["metadatas"], found["documents"])
        }
        restore = [i for i, old in existing.items() if old.deleted_at and i not in replacing]
        if restore:
            mem._store.items.update(ids=restore, metadatas=[{"deleted_at": 0}] * len(restore))
        writes = [
            replacement(item, existing[item.id], now) if item.id in existing else item
            for item in unique
            if item.id not in existing or item.id in replacing
        ]
        if on_progress and len(items) > len(writes):
            on_progress(len(items) - len(writes))  # nothing to write for these
        if not writes:
            return
        writes = link_timeline(mem, writes, new={i.id for i in unique} - existing.keys())
        store_items(mem, writes, existing.keys(), batch_size, on_progress)
    if any(item.hotwords for item in writes) or replacing:
        mem._hotwords_changed()
    plugins.notify_remember(mem, writes)


def store_items(
    mem: Memento,
    items: Sequence[MemoryItem],
    existing: Container[str],
    batch_size: int,
    on_progress: Callable[[int], None] | None,
) -> None:
    """Embed ``items`` and write them with their vectors; the caller holds the store lock.

    The encoder pads each of its batches to the longest text in it, so texts go to it
    longest first: its batches then hold texts of like length (on chat turns, a tenth
    less encoding than batches taken in the order given).
    """
    ordered = sorted(items, key=lambda item: len(item.content), reverse=True)
    for start in range(0, len(ordered), batch_size):
        batch = ordered[start : start + batch_size]
        hashes = [text_hash(item.content) for item in batch]
        prime_embeddings(mem, hashes)
        vectors = mem.embedder.embed_documents([item.content for item in batch])
        # New memories are added, not upserted: Chroma keeps the first record of an id, so
        # when another process stored the same content since the caller's check, its
        # record (and any pin, feedback or use since) stays. Replacements overwrite.
        for write, replacing in ((mem._store.items.add, False), (mem._store.items.upsert, True)):
            chosen = [n for n, item in enumerate(batch) if (item.id in existing) == replacing]
            if chosen:
                write(
                    ids=[batch[n].id for n in chosen],
                    embeddings=[vectors[n] for n in chosen],
                    documents=[batch[n].content for n in chosen],
                    metadatas=[
                        item_metadata(batch[n], hashes[n], replacing=replacing) for n in chosen
                    ],
                )
        for item in batch:
            if item.id in mem._keywords:
                mem._keywords.remove(item.id)
                mem._keyword_count -= 1
        mem._keywords.add_many(
            (i.id, i.content, keyword_visibility(i), v) for i, v in zip(batch, vectors)
        )
        mem._keyword_count += len(batch)
        if on_progress:
            on_progress(len(batch))


def link_timeline(mem: Memento, items: list[MemoryItem], *, new: set[str]) -> list[MemoryItem]:
    """Each new memory ``follows`` the last one this process stored in its scope, when the
    two are about the same moment (``CONTIGUITY_WINDOW``). Recall uses the link: a memory
    whose neighbour is also relevant ranks higher (see ``ranking``)."""
    linked = []
    for item in items:
        if item.id in new:
            last = mem._timeline.pop(item.scope, None)
            if last and last[0] != item.id and abs(item.created_at - last[1]) <= CONTIGUITY_WINDOW:
                item = dataclasses.replace(item, follows=last[0])
            mem._timeline[item.scope] = (item.id, item.created_at)
            if len(mem._timeline) > TIMELINE_SCOPES:
                del mem._timeline[next(iter(mem._timeline))]  # the least recently written
        linked.append(item)
    return linked


def prime_embeddings(mem: Memento, hashes: Sequence[str]) -> None:
    """Reuse vectors of identical text already in the store (say, in another scope)."""
    unknown = [h for h in set(hashes) if mem.embedder.cached(h) is None]
    if not unknown or not mem._keyword_count:
        return
    found = mem._store.items.get(
        where={"text_hash": {"$in": unknown}}, include=["metadatas", "embeddings"]
    )
    for meta, vector in zip(found["metadatas"], found["embeddings"]):
        mem.embedder.prime(meta["text_hash"], vector)
