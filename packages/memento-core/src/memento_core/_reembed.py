"""Re-embedding a store into another embedder's space: ``Memento.reembed`` and
``memento-core reembed``.

Every record is kept as stored — ids, links, feedback, history, chat records, usage counts,
adapters' records — and every memory gets the new embedder's vector (``_storage._respace``
does the copying). Into a new directory (``to``), the source is left as it is; ``in_place``
builds the new space beside the old one and switches to it in one write, so a reader sees the
old space or the new, never a mix. A run cut short (a crash, SIGKILL) is continued by running
it again: what was copied is not embedded again. A target half built by another run (another
source or embedder) is refused.

Re-embedding embeds and never queries, so the old space's embedder is not needed: a store
whose remote embedding service is gone can still be moved to another model.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memento_core._paths import default_store_path, store_exists
from memento_core._storage import ChromaStore, release_write_lock
from memento_core._storage import _respace as respace
from memento_core.embedding import CachingEmbedder, Embedder
from memento_core.errors import InvalidInput, StoreError, StoreNotFound

BATCH_SIZE = 256
"""Memories read, embedded and written per step: a run cut short loses at most one step."""


@dataclass(frozen=True)
class ReembedReport:
    """What a re-embedding did."""

    source: str
    target: str
    """The new store's directory, or ``"in place"``."""
    embedder: str
    dimension: int
    previous_embedder: str
    memories: int
    embedded: int
    """Memories embedded by this run."""
    kept: int
    """Memories an earlier run cut short had re-embedded already (not embedded again)."""
    removed: int
    """Memories the target held that the source no longer does."""
    records: int
    """Other records kept (links, feedback, history, chat messages, …)."""
    resumed: bool
    """Whether this run continued one cut short."""


def embedder_named(name: str, **options: Any) -> Embedder:
    """The embedder registered as ``name`` (``onnx``, ``openai-compatible``, a plugin's), or
    the ONNX model so named (``all-MiniLM-L6-v2-int8``)."""
    from memento_core import plugins
    from memento_core._onnx_embedding import OnnxEmbedder, onnx_models

    registered = plugins.registered_names()["embedders"]
    try:
        if name in registered:
            return plugins.embedder(name, **options)
        if name in onnx_models():
            return OnnxEmbedder(name, **options)
    except TypeError as err:  # an option the embedder does not take
        raise InvalidInput(f"embedder {name!r}: {err}") from err
    raise InvalidInput(
        f"no embedder named {name!r}: give a registered one ({', '.join(registered)}) or an "
        f"ONNX model ({', '.join(onnx_models())})"
    )


def reembed(
    path: str | os.PathLike[str] | None,
    *,
    url: str | None,
    collection_prefix: str,
    embedder: Embedder | str,
    to: str | os.PathLike[str] | None,
    in_place: bool,
    read_only: bool = False,
    restart: bool = False,
    batch_size: int = BATCH_SIZE,
    on_progress: Callable[[int, int], None] | None = None,
) -> ReembedReport:
    """See ``Memento.reembed``."""
    if (to is None) == (not in_place):
        raise InvalidInput("re-embed either into a new directory (to=...) or in place, not both")
    if path is not None and url is not None:
        raise InvalidInput("give either a path (embedded store) or a url (Chroma server)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInput(f"batch_size must be a whole number ≥ 1, got {batch_size!r}")
    if in_place and read_only:
        raise InvalidInput("an in-place re-embedding writes the store: it cannot be read-only")
    chosen = embedder_named(embedder) if isinstance(embedder, str) else embedder
    name, dimension = chosen.name, chosen.dimension
    source = _open_source(path, url, collection_prefix, lock=not read_only)
    target: ChromaStore | None = None
    try:
        stored = source.stored_space()
        if stored is None:
            raise StoreNotFound(f"no Memento store at {source.location}", path=source.location)
        source.attach(*stored)  # follows a space switched to; refuses a half-built target
        where = source.directory.resolve() if source.directory else source.location
        origin = f"{where} ({collection_prefix})"  # names the run: the same on a rerun
        if in_place:
            target = respace.sibling(source, respace.space_of(source.prefix, _next(source)))
            if stored == (name, dimension):
                _tidy(source, collection_prefix)
                return ReembedReport(origin, "in place", name, dimension, stored[0],
                                     0, 0, 0, 0, 0, False)  # fmt: skip
        else:
            target = _open_target(to, source, collection_prefix)
        pending = respace.pending_run(target)
        wanted = {"source": origin, "embedder": name, "dimension": dimension}
        resumed = pending is not None and all(pending.get(k) == v for k, v in wanted.items())
        if pending is not None and not resumed:
            if not (restart and in_place):
                raise StoreError(_half_done(target, pending, in_place))
            respace.drop_space(target, keep_root_record=False)
        elif pending is None and respace.holds_store(target):
            if not in_place:
                raise StoreError(f"{target.location} holds a Memento store already; re-embed "
                                 "into a new or empty directory")  # fmt: skip
            respace.drop_space(target, keep_root_record=False)  # a leftover no one reads
        if not resumed:
            respace.begin(target, source=origin, embedder=name, dimension=dimension)
        done = [0]

        def advance(count: int) -> None:
            done[0] += count
            if on_progress is not None:
                on_progress(done[0], total)

        total = len(source.all_ids(source.collection("items")))
        cached = CachingEmbedder(chosen)
        copied = respace.sync(
            source, target, cached.embed_documents, batch_size=batch_size, on_progress=advance
        )
        if in_place:
            old = source.prefix
            respace.switch(_root(source, collection_prefix), space=target.prefix, embedder=name,
                           dimension=dimension)  # fmt: skip
            respace.finish(target)
            respace.drop_space(
                respace.sibling(source, old), keep_root_record=old == collection_prefix
            )
        else:
            respace.finish(target)
        return ReembedReport(
            origin,
            "in place" if in_place else str(target.location),
            name,
            dimension,
            stored[0],
            copied.memories,
            copied.embedded,
            copied.kept,
            copied.removed,
            copied.records,
            resumed,
        )
    finally:
        if target is not None and target.client._target is not source.client._target:
            _close(target)
        _close(source)


def _open_source(path: Any, url: str | None, prefix: str, *, lock: bool) -> ChromaStore:
    from memento_core._engine import _SHARED

    if url is not None:
        if (url.rstrip("/"), prefix) in _SHARED:
            raise StoreError(f"close the store at {url} in this process before re-embedding it")
        return ChromaStore.open_server(url, prefix=prefix)
    location = Path(path).expanduser() if path is not None else default_store_path()
    if not store_exists(location):
        raise StoreNotFound(f"no Memento store at {location} to re-embed", path=str(location))
    if (str(location.resolve()), prefix) in _SHARED:
        raise StoreError(f"close the store {location} in this process before re-embedding it")
    return ChromaStore.open_embedded(location, prefix=prefix, lock=lock)


def _open_target(to: Any, source: ChromaStore, prefix: str) -> ChromaStore:
    directory = Path(to).expanduser()
    if source.directory is not None and directory.resolve() == source.directory.resolve():
        raise InvalidInput("the target directory is the store itself; use in_place instead")
    target = ChromaStore.open_embedded(directory, prefix=prefix, lock=True)
    names = target.collection_names()
    if names and respace.pending_run(target) is None and not respace.holds_store(target):
        _close(target)
        raise StoreError(f"{directory} holds Chroma collections but no Memento store; "
                         "re-embed into a new or empty directory")  # fmt: skip
    return target


def _next(source: ChromaStore) -> int:
    return respace.generation(source.prefix) + 1


def _root(source: ChromaStore, prefix: str) -> ChromaStore:
    return source if source.prefix == prefix else respace.sibling(source, prefix)


def _tidy(source: ChromaStore, prefix: str) -> None:
    """A run cut short after its switch: finish it (the new space's run record and the old
    spaces' collections go)."""
    if respace.pending_run(source) is not None:
        respace.finish(source)
    current = respace.generation(source.prefix)
    for n in range(current):
        old = respace.sibling(source, prefix if n == 0 else respace.space_of(prefix, n))
        left = set(respace.own_collections(old)) - ({respace.META} if n == 0 else set())
        if left:
            respace.drop_space(old, keep_root_record=n == 0)


def _half_done(target: ChromaStore, pending: Any, in_place: bool) -> str:
    where = "this store holds" if in_place else f"{target.location} holds"
    how = (
        "run that again to finish it, or pass --restart (restart=True) to discard it"
        if in_place
        else "run that again to finish it, or delete the directory"
    )
    return (
        f"{where} an unfinished re-embedding of {pending['source']} into "
        f"{pending['embedder']!r}; {how}"
    )


def _close(store: ChromaStore) -> None:
    store.close()
    if store.directory is not None:
        release_write_lock(store.directory)
