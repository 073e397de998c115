"""The write path: checking, linking, embedding and storing new memories.

Identical content in one scope has one content-addressed id, so a write first reads which ids
are stored already; those are left as they are (restored if soft-deleted) unless the caller chose
the id, which replaces the memory. New memories join their scope's timeline
(``link_timeline``), are embedded longest first (``store_items``) and written with their vectors
to the store and the candidate index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memento_core._drafts import MemoryDraft, replacement, validate_draft
from memento_core._model import MemoryItem, utcnow
from memento_core._partitions import partition_digests
from memento_core._visibility import visibility_of
from memento_core.embedding import text_hash

if TYPE_CHECKING:
    from memento_core._engine import Engine

BATCH_SIZE = 256
"""Memories embedded and written to Chroma per call (``remember_many``'s default, and import's)."""
WINDOW = 1_024
"""Drafts that ``remember_many`` checks and embeds as one group (see ``store_items``)."""
CONTIGUITY_WINDOW = timedelta(hours=1)
"""Two memories stored one after the other in a scope are neighbours in its timeline when
their ``created_at`` are at most this far apart (turns of one conversation, say)."""
TIMELINE_SCOPES = 10_000
"""Scopes whose last memory this process remembers, to link the next one to it."""
REUSE_AT = 16
"""Texts a batch needs before the store is asked for vectors of identical text
(``prime_embeddings``): that read is an equality over the whole collection (0.25 s at 1M),
while embedding a few texts takes milliseconds."""


def remember_many(
    engine: Engine,
    drafts: Sequence[MemoryDraft],
    *,
    on_progress: Callable[[int], None] | None = None,
    batch_size: int = BATCH_SIZE,
) -> list[str]:
    """Check every draft, then store them window by window; the ids in order."""
    engine.check_writable()
    now = utcnow()
    items = [validate_draft(d, now, engine.retention, engine.review_policy) for d in drafts]
    replacing = {d.id for d in drafts if d.id is not None}
    for start in range(0, len(items), WINDOW):
        window = items[start : start + WINDOW]
        write(engine, window, replacing, now, batch_size=batch_size, on_progress=on_progress)
    return [item.id for item in items]


def write(
    engine: Engine,
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
    store = engine.store
    with store.lock:
        existing = {item.id: item for item in store.items_by_id([i.id for i in unique])}
        restore = [i for i, old in existing.items() if old.deleted_at and i not in replacing]
        store.set_fields(restore, {"deleted_at": 0})
        writes = [
            replacement(item, existing[item.id], now) if item.id in existing else item
            for item in unique
            if item.id not in existing or item.id in replacing
        ]
        if on_progress and len(items) > len(writes):
            on_progress(len(items) - len(writes))  # nothing to write for these
        if not writes:
            return
        writes = link_timeline(engine, writes, new={i.id for i in unique} - existing.keys())
        store_items(engine, writes, existing.keys(), batch_size, on_progress)
    if any(item.hotwords for item in writes) or replacing:
        engine.hotwords_changed()
    engine.written(writes)


def store_items(
    engine: Engine,
    items: Sequence[MemoryItem],
    existing: Container[str],
    batch_size: int,
    on_progress: Callable[[int], None] | None,
) -> None:
    """Embed ``items`` and write them with their vectors; the caller holds the store lock.

    The encoder pads each of its batches to the longest text in it, so texts go to it
    longest first: its batches then hold texts of like length (on chat turns, a tenth
    less encoding than batches taken in the order given). A batch is written to Chroma while
    the next one is embedded (the encoder releases the GIL): the writes cost about a tenth
    of the encoding, on LoCoMo's turns. Batches are written in order, one at a time, and all
    of them before this returns.
    """
    ordered = sorted(items, key=lambda item: len(item.content), reverse=True)
    batches = [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]

    def write_batch(batch: Sequence[MemoryItem], vectors: Any, hashes: list[str]) -> None:
        change = engine.store.write_items(
            batch,
            vectors,
            hashes,
            replacing=[item.id in existing for item in batch],
            partitions=[partition_digests(visibility_of(item)) for item in batch],
        )
        engine.indexed(batch, vectors)
        engine.noted(change)

    def written(batch: Sequence[MemoryItem]) -> None:
        if on_progress:  # in the caller's thread, as a progress bar expects
            on_progress(len(batch))

    def embedded(batch: Sequence[MemoryItem]) -> tuple[Any, list[str]]:
        hashes = [text_hash(item.content) for item in batch]
        prime_embeddings(engine, hashes)
        return engine.embedder.embed_documents([item.content for item in batch]), hashes

    if len(batches) == 1:
        write_batch(batches[0], *embedded(batches[0]))
        written(batches[0])
        return
    with ThreadPoolExecutor(1, thread_name_prefix="memento-write") as writer:
        writing: tuple[Future[None], Sequence[MemoryItem]] | None = None
        for batch in batches:
            vectors, hashes = embedded(batch)
            if writing is not None:
                writing[0].result()  # in order, and a failed write stops the rest
                written(writing[1])
            writing = (writer.submit(write_batch, batch, vectors, hashes), batch)
        if writing is not None:
            writing[0].result()
            written(writing[1])


def link_timeline(engine: Engine, items: list[MemoryItem], *, new: set[str]) -> list[MemoryItem]:
    """Each new memory ``follows`` the last one this process stored in its scope, when the
    two are about the same moment (``CONTIGUITY_WINDOW``). Recall uses the link: a memory
    whose neighbour is also relevant ranks higher (see ``ranking``)."""
    linked = []
    timeline = engine.timeline
    for item in items:
        if item.id in new:
            last = timeline.pop(item.scope, None)
            if last and last[0] != item.id and abs(item.created_at - last[1]) <= CONTIGUITY_WINDOW:
                item = dataclasses.replace(item, follows=last[0])
            timeline[item.scope] = (item.id, item.created_at)
            if len(timeline) > TIMELINE_SCOPES:
                del timeline[next(iter(timeline))]  # the least recently written
        linked.append(item)
    return linked


def prime_embeddings(engine: Engine, hashes: Sequence[str]) -> None:
    """Reuse vectors of identical text already in the store (say, in another scope), for a
    batch of at least ``REUSE_AT`` texts not in the embedder's cache; fewer are embedded."""
    unknown = [h for h in set(hashes) if engine.embedder.cached(h) is None]
    if len(unknown) < REUSE_AT:
        return
    for text_key, vector in engine.store.vectors_by_hash(unknown).items():
        engine.embedder.prime(text_key, vector)
