"""The write path: checking, linking, embedding and storing new memories.

Identical content in one scope has one content-addressed id, so a write first reads which ids
are stored already; those are left as they are (restored if soft-deleted) unless the caller chose
the id, which replaces the memory. New memories join their scope's timeline
(``link_timeline``), are embedded longest first (``store_items``) and written with their vectors
to the store and the candidate index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memento_core import _history as history
from memento_core._drafts import MemoryDraft, replacement, validate_draft
from memento_core._model import MemoryItem, Scope, utcnow
from memento_core._ownership import owned
from memento_core._partitions import partition_digests
from memento_core._policies import FOREVER
from memento_core._storage import HISTORY_HEAD, item_metadata, to_micros
from memento_core._visibility import visibility_of
from memento_core.embedding import text_hash
from memento_core.errors import InvalidInput

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
    """Check every draft, embed every text, then store them window by window; the ids in
    order. Nothing is written before every vector is in hand: an embedder that fails midway
    (a remote service gone) leaves the store as it was."""
    engine.check_writable()
    now = utcnow()
    items = [validate_draft(d, now, engine.retention, engine.review_policy) for d in drafts]
    replacing = {d.id for d in drafts if d.id is not None}
    # One window embeds its texts in ``write``, after its one read; more are embedded first.
    vectors = embed_ahead(engine, items, replacing, batch_size) if len(items) > WINDOW else None
    for start in range(0, len(items), WINDOW):
        window = items[start : start + WINDOW]
        write(
            engine,
            window,
            replacing,
            now,
            batch_size=batch_size,
            on_progress=on_progress,
            vectors=vectors,
        )
    return [item.id for item in items]


def embed_ahead(
    engine: Engine, items: Sequence[MemoryItem], replacing: Container[str], batch_size: int
) -> dict[str, Any]:
    """The vectors (by text hash) of every text ``items`` may write: all but those of
    memories stored already and not replaced, which a write leaves as they are. Longest
    texts first, as ``store_items`` embeds (like lengths pad little). A memory stored by
    another process meanwhile needs none; one erased meanwhile is embedded when written."""
    stored: set[str] = set()
    for start in range(0, len(items), WINDOW):
        stored |= engine.store.existing_ids([i.id for i in items[start : start + WINDOW]])
    return embed_all(
        engine, [i for i in items if i.id not in stored or i.id in replacing], batch_size, {}
    )


def embed_all(
    engine: Engine, items: Sequence[MemoryItem], batch_size: int, known: Mapping[str, Any]
) -> dict[str, Any]:
    """The vectors of ``items``' texts by hash: those ``known`` already, the rest embedded
    (vectors of identical text stored elsewhere reused), longest texts first."""
    texts = {text_hash(i.content): i.content for i in items}
    missing = [key for key in texts if key not in known]
    prime_embeddings(engine, missing)
    ordered = sorted(missing, key=lambda key: len(texts[key]), reverse=True)
    vectors = {key: known[key] for key in texts if key in known}
    for start in range(0, len(ordered), batch_size):
        keys = ordered[start : start + batch_size]
        vectors.update(zip(keys, engine.embedder.embed_documents([texts[k] for k in keys])))
    return vectors


def write(
    engine: Engine,
    items: Sequence[MemoryItem],
    replacing: set[str],
    now: datetime,
    *,
    batch_size: int,
    on_progress: Callable[[int], None] | None,
    vectors: Mapping[str, Any] | None = None,
) -> None:
    """Add new memories, replace those stored under a caller-chosen id, and leave
    content-addressed duplicates as they are (restoring soft-deleted ones). ``vectors``: the
    texts' vectors by hash, embedded already (``embed_ahead``)."""
    unique = list({item.id: item for item in items}.values())
    store = engine.store
    with store.lock:
        existing = {item.id: item for item in store.items_by_id([i.id for i in unique])}
        restore = [old for i, old in existing.items() if old.deleted_at and i not in replacing]
        writes = [
            replacement(item, existing[item.id], now) if item.id in existing else item
            for item in unique
            if item.id not in existing or item.id in replacing
        ]
        # Every vector before the first write: a failing embedder leaves the store as it was.
        vectors = embed_all(engine, writes, batch_size, vectors or {})
        _restore(engine, restore, now)
        if on_progress and len(items) > len(writes):
            on_progress(len(items) - len(writes))  # nothing to write for these
        if not writes:
            return
        writes = link_timeline(engine, writes, new={i.id for i in unique} - existing.keys())
        heads = _log_replacements(engine, [(existing[i.id], i) for i in writes if i.id in existing])
        store_items(
            engine, writes, existing.keys(), batch_size, on_progress, extra=heads, vectors=vectors
        )
        writes = _unlink_erased(engine, writes, new={i.id for i in unique} - existing.keys())
    if any(item.hotwords for item in writes) or replacing:
        engine.hotwords_changed()
    engine.written(writes)


def _log_replacements(
    engine: Engine, pairs: Sequence[tuple[MemoryItem, MemoryItem]]
) -> dict[str, dict[str, Any]]:
    """Log each replacement under a caller-chosen id as an ``updated`` change, one log write
    for all; the heads to commit with the memories. New memories log nothing."""

    edits = [(edit, new.scope) for old, new in pairs if (edit := history.diff(old, new))]
    heads: dict[str, dict[str, Any]] = {}
    # One log write per actor (a batch from one caller shares it).
    for scope in dict.fromkeys(scope for _, scope in edits):
        entries = [edit for edit, of in edits if of == scope]
        actor = history.actor_of(None if scope == Scope() else scope)
        logged = history.log(engine, entries, actor, utcnow())
        heads.update({e.memory_id: {HISTORY_HEAD: logged[e.memory_id]} for e in entries})
    return heads


def _restore(engine: Engine, items: Sequence[MemoryItem], now: datetime) -> None:
    """Bring back soft-deleted memories remembered again, each change logged with its scope."""

    for item in items:
        entry = history.Entry(
            item.id,
            history.ChangeKind.RESTORED,
            {"deleted_at": history.as_json(item.deleted_at)},
            {"deleted_at": None},
        )
        actor = history.actor_of(None if item.scope == Scope() else item.scope)
        history.set_fields(engine, [(entry, {"deleted_at": 0})], actor, now)


def store_items(
    engine: Engine,
    items: Sequence[MemoryItem],
    existing: Container[str],
    batch_size: int,
    on_progress: Callable[[int], None] | None,
    *,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
    vectors: Mapping[str, Any] | None = None,
) -> None:
    """Embed ``items`` and write them with their vectors; the caller holds the store lock.
    ``extra``: more metadata of some memories by id, in the same write (``_history``);
    ``vectors``: texts' vectors by hash, embedded already (those are not embedded again).

    The encoder pads each of its batches to the longest text in it, so texts go to it
    longest first: its batches then hold texts of like length (on chat turns, a tenth
    less encoding than batches taken in the order given). A batch is written to Chroma while
    the next one is embedded (the encoder releases the GIL): the writes cost about a tenth
    of the encoding, on LoCoMo's turns. Batches are written in order, one at a time, and all
    of them before this returns.
    """
    for item in items:  # every value fits the store before the first batch is written
        item_metadata(item, "")
    engine.holding(items)  # the partitions these are the first memories of: indexed here
    ordered = sorted(items, key=lambda item: len(item.content), reverse=True)
    batches = [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]

    def write_batch(batch: Sequence[MemoryItem], vectors: Any, hashes: list[str]) -> None:
        change = engine.store.write_items(
            batch,
            vectors,
            hashes,
            replacing=[item.id in existing for item in batch],
            partitions=[partition_digests(visibility_of(item)) for item in batch],
            extra=extra,
        )
        engine.indexed(batch, vectors)
        engine.noted(change)

    def written(batch: Sequence[MemoryItem]) -> None:
        if on_progress:  # in the caller's thread, as a progress bar expects
            on_progress(len(batch))

    def embedded(batch: Sequence[MemoryItem]) -> tuple[Any, list[str]]:
        hashes = [text_hash(item.content) for item in batch]
        if vectors is not None and all(h in vectors for h in hashes):
            import numpy as np

            return np.stack([vectors[h] for h in hashes]), hashes
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


def _unlink_erased(engine: Engine, items: list[MemoryItem], *, new: set[str]) -> list[MemoryItem]:
    """Read again, after storing, the predecessors new memories were linked to from this
    process's timeline: another process may have erased one meanwhile. The eraser closes
    the gaps it finds after erasing (``_lifecycle``), so either it finds the new memory or
    the new memory finds its predecessor gone, and drops the link. Only the sole writer of
    an embedded store, whose own erasures leave its timeline (``Engine.unindexed``), skips it."""
    linked = {i.id: i.follows for i in items if i.id in new and i.follows}
    if not linked or engine.store.mirrors.sole_writer:
        return items
    present = engine.store.existing_ids(sorted(set(linked.values())))
    stale = {i for i, follows in linked.items() if follows not in present}
    if not stale:
        return items
    engine.store.set_fields(sorted(stale), {"follows": ""})
    return [dataclasses.replace(i, follows=None) if i.id in stale else i for i in items]


def prime_embeddings(engine: Engine, hashes: Sequence[str]) -> None:
    """Reuse vectors of identical text already in the store (say, in another scope), for a
    batch of at least ``REUSE_AT`` texts not in the embedder's cache; fewer are embedded."""
    unknown = [h for h in set(hashes) if engine.embedder.cached(h) is None]
    if len(unknown) < REUSE_AT:
        return
    for text_key, vector in engine.store.vectors_by_hash(unknown).items():
        engine.embedder.prime(text_key, vector)


def update(
    engine: Engine,
    memory_id: str,
    changes: Mapping[str, Any],
    *,
    supersede: bool,
    caller: Scope | None,
) -> MemoryItem:
    """Change fields of a memory the caller owns in place, logging the change in the same write
    (``_history``); with ``supersede`` and new content, keep the memory as the older fact
    (its validity closed, superseded) and store the new one beside it. Returns what is new."""

    if not isinstance(supersede, bool):
        raise InvalidInput(f"supersede must be true or false, got {supersede!r}")
    engine.check_writable()
    now = utcnow()
    store = engine.store
    with store.lock:
        old = owned(engine, memory_id, caller, "update")
        values = {name: getattr(old, name) for name in history.EDITABLE}
        values.update({k: v for k, v in changes.items() if v is not None})
        draft = MemoryDraft(
            **values,
            id=None if supersede else memory_id,
            scope=old.scope,
            source=old.source,
            pinned=old.pinned,
            created_at=now if supersede else old.created_at,
            origin_trace=old.origin_trace,
            retention=FOREVER if old.retention is None else old.retention,
        )
        if supersede:
            if draft.content == old.content:
                raise InvalidInput("supersede=True needs new content: the fact it replaces")
            draft = dataclasses.replace(draft, valid_from=changes.get("valid_from") or now,
                                        valid_to=changes.get("valid_to"))  # fmt: skip
            new = validate_draft(draft, now, engine.retention, engine.review_policy)
            if new.valid_since <= old.valid_since:
                raise InvalidInput("the new fact's valid_from must be after the old one's start")
            write(engine, [new], set(), now, batch_size=BATCH_SIZE, on_progress=None)
            entry = history.Entry(
                old.id,
                history.ChangeKind.SUPERSEDED,
                history.fields_of(old, ("superseded_by", "valid_to")),
                {"superseded_by": new.id, "valid_to": history.as_json(new.valid_since)},
                related=new.id,
            )
            fields = {"superseded_by": new.id, "valid_to": to_micros(new.valid_since)}
            history.set_fields(engine, [(entry, fields)], history.actor_of(caller), now)
            return engine.get(new.id, include_deleted=True)
        checked = validate_draft(draft, now, engine.retention, engine.review_policy)
        # A soft-deleted memory stays hidden: its deletion is written in the same write.
        new = dataclasses.replace(replacement(checked, old, now), deleted_at=old.deleted_at)
        edit = history.diff(old, new)
        extra = {}
        if edit is not None:
            heads = history.log(engine, [edit], history.actor_of(caller), now)
            extra = {memory_id: {HISTORY_HEAD: heads[memory_id]}}
        store_items(engine, [new], {memory_id}, BATCH_SIZE, None, extra=extra)
    engine.hotwords_changed()
    engine.written([new])
    return engine.get(memory_id, include_deleted=True)
