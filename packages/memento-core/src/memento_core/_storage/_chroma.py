"""Opening a Chroma store (a directory or a server) and its collections, with failures explained.

One store is a few collections sharing a prefix: ``<prefix>_items`` (memories with their
vectors, cosine space), ``<prefix>_links``, ``<prefix>_events`` (feedback), ``<prefix>_meta``
(what built the store) and side collections (chat messages, the change feed, adapters' records).
Side collections hold no real vectors; Chroma requires one, so they carry a constant
one-dimensional placeholder. Memento always passes vectors: Chroma's default embedding function
would download a model.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from memento_core._storage import _lock
from memento_core.errors import (
    EmbedderMismatch,
    InvalidInput,
    NotAMementoStore,
    StoreError,
    StoreUnavailable,
)

SCHEMA_VERSION = 1
STORE_RECORD = "store"
"""The meta record naming the embedder and dimension (and, at a re-embedded store's root,
the prefix its collections have now: ``space``)."""
REEMBEDDING_RECORD = "reembedding"
"""The meta record of a store being re-embedded into (``_respace``): which run builds it."""
PLACEHOLDER_VECTOR = [1.0]
PAGE = 2_000
READ_AHEAD = 2
"""Pages a read by id has in flight at once (``ChromaStore.records_by_id``)."""
# What iter_records and records_by_id yield: (id, metadata, document, embedding).
Record = tuple[str, Mapping[str, Any], str | None, Any]


@dataclass(frozen=True)
class StoreInfo:
    embedder: str
    dimension: int
    schema_version: int
    location: str
    created: bool = False
    """Whether this open created the store."""


class ChromaStore:
    """The collections of one Memento store, embedded (a directory) or on a Chroma server."""

    def __init__(self, client: Any, *, prefix: str, location: str) -> None:
        self.client = Guarded(client, self)
        self.prefix = prefix
        self.root_prefix = prefix
        """The prefix the store was opened with (``prefix`` is its space's, once attached)."""
        self.location = location
        self.lock = threading.RLock()
        self.directory: Path | None = None  # an embedded store's directory
        self._closed = False
        # Whether reaching the data failed in this process: after a failure on a full disk,
        # chromadb 1.5 can hang in the next write, so optional writes (a fold at close) skip.
        self.failed = False
        self.items: Any = None
        self.links: Any = None
        self.events: Any = None
        self.meta: Any = None

    @classmethod
    def open_embedded(
        cls, path: str | os.PathLike[str], *, prefix: str, lock: bool = True
    ) -> ChromaStore:
        """Open the store in ``path``. With ``lock`` (a writer) this takes the directory's write
        lock first (``_lock``; a second writing process gets ``StoreLocked``); whoever holds the
        store releases it with ``release_write_lock(store.directory)``."""
        directory = Path(path).expanduser()
        if directory.exists() and not directory.is_dir():
            raise NotAMementoStore(f"{directory} is a file, not a Memento store directory")
        holds_other_files = directory.is_dir() and any(directory.iterdir())
        if holds_other_files and not (directory / "chroma.sqlite3").is_file():
            raise NotAMementoStore(
                f"{directory} is not empty and holds no Memento store; "
                "choose an empty or new directory"
            )
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreUnavailable(f"cannot create the store directory {directory}: {err}") from err
        database = directory / "chroma.sqlite3"
        if not os.access(directory, os.W_OK) or (
            database.exists() and not os.access(database, os.W_OK)
        ):
            raise StoreUnavailable(
                f"the store directory {directory} is not writable; Chroma needs write access "
                "even to read. Make it (and chroma.sqlite3 in it) writable, or open a writable "
                "copy; nothing in it was changed"
            )
        chromadb = _import_chromadb()
        if lock:
            _lock.acquire(directory)  # before Chroma opens: opening replays its log
        try:
            client = chromadb.PersistentClient(
                path=str(directory), settings=chromadb.Settings(anonymized_telemetry=False)
            )
        except Exception as err:  # Chroma raises assorted types for a corrupt or alien file
            if lock:
                _lock.release(directory)
            problem = filesystem_problem(directory)
            if problem is not None:  # a full disk, not a foreign file
                raise problem from err
            raise NotAMementoStore(
                f"{directory} cannot be opened as a Chroma store: {err}"
            ) from err
        store = cls(client, prefix=prefix, location=str(directory))
        store.directory = directory
        return store

    @classmethod
    def open_server(cls, url: str, *, prefix: str) -> ChromaStore:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InvalidInput(f"a server URL looks like http://127.0.0.1:8000, got {url!r}")
        chromadb = _import_chromadb()
        try:
            client = chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=chromadb.Settings(anonymized_telemetry=False),
            )
            client.heartbeat()
        except Exception as err:
            raise StoreUnavailable(f"no Chroma server answers at {url}: {err}") from err
        return cls(client, prefix=prefix, location=url)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release Chroma's client: its shared system stops with the last client on the path,
        so a later open reads the directory afresh."""
        if self._closed:
            return
        with contextlib.suppress(Exception):  # closing is best effort; the data is committed
            self.client.close()
        self._closed = True

    def attach(self, embedder_name: str, dimension: int) -> StoreInfo:
        """Create or check the collections; refuse a store built by another embedder, and
        one still being re-embedded into (``_respace``). A store re-embedded in place keeps
        its collections under the prefix its root record names (``space``): the prefix
        becomes that one."""
        names = self.collection_names()
        meta_name = f"{self.prefix}_meta"
        if meta_name not in names and names and self.location and "://" not in self.location:
            raise NotAMementoStore(
                f"{self.location} holds Chroma collections ({', '.join(sorted(names)[:5])}) "
                "but no Memento store"
            )
        self.meta = self._side_collection("meta")
        record = self.meta.get(ids=[STORE_RECORD, REEMBEDDING_RECORD], include=["metadatas"])
        found = dict(zip(record["ids"], record["metadatas"]))
        space = found.get(STORE_RECORD, {}).get("space")
        if space and space != self.prefix:
            self.prefix = str(space)  # the space in use; readers see it whole, or the old one
            self.meta = self._side_collection("meta")
            record = self.meta.get(ids=[STORE_RECORD], include=["metadatas"])
        elif REEMBEDDING_RECORD in found:
            pending = found[REEMBEDDING_RECORD]
            raise StoreError(
                f"{self.location} is an unfinished re-embedding of {pending['source']} into "
                f"{pending['embedder']!r}; run the same `memento-core reembed` again to finish "
                "it, or delete it"
            )
        if record["ids"]:
            info = record["metadatas"][0]
            if info["embedder"] != embedder_name or int(info["dimension"]) != dimension:
                raise EmbedderMismatch(
                    stored=info["embedder"],
                    stored_dimension=int(info["dimension"]),
                    given=embedder_name,
                    given_dimension=dimension,
                )
            schema = int(info["schema_version"])
        else:
            schema = SCHEMA_VERSION
            self.meta.upsert(
                ids=[STORE_RECORD],
                embeddings=[PLACEHOLDER_VECTOR],
                documents=["memento store"],
                metadatas=[
                    {"embedder": embedder_name, "dimension": dimension, "schema_version": schema}
                ],
            )
        self.items = self._collection("items", configuration={"hnsw": {"space": "cosine"}})
        self.links = self._side_collection("links")
        self.events = self._side_collection("events")
        return StoreInfo(embedder_name, dimension, schema, self.location, not record["ids"])

    def collection_names(self) -> set[str]:
        """The names of every collection the client holds (all stores and prefixes)."""
        return {c if isinstance(c, str) else c.name for c in self.client.list_collections()}

    def stored_space(self) -> tuple[str, int] | None:
        """The embedder name and dimension the store records (following a re-embedded
        store's root record to its space), or None where no store is."""
        if f"{self.prefix}_meta" not in self.collection_names():
            return None
        meta = self._side_collection("meta")
        found = meta.get(ids=[STORE_RECORD], include=["metadatas"])
        if not found["ids"]:
            return None
        info = found["metadatas"][0]
        if info.get("space") and info["space"] != self.prefix:
            inner = self._collection_named(f"{info['space']}_meta")
            found = inner.get(ids=[STORE_RECORD], include=["metadatas"])
            if not found["ids"]:
                return None
            info = found["metadatas"][0]
        return str(info["embedder"]), int(info["dimension"])

    def side_collection(self, name: str) -> Any:
        """A collection for records without real vectors (links, events, chat messages)."""
        return self._side_collection(name)

    def _side_collection(self, name: str) -> Any:
        return self._collection(name)

    def collection(self, name: str, **options: Any) -> Any:
        """The collection ``<prefix>_<name>`` with real vectors (a partition's mirror),
        created with ``options`` if missing."""
        return self._collection(name, **options)

    def drop_collection(self, name: str) -> None:
        """Delete the collection ``<prefix>_<name>``; one already gone is no error."""
        try:
            self.client.delete_collection(f"{self.prefix}_{name}")
        except (ValueError, _import_chromadb().errors.NotFoundError):
            pass

    def _collection(self, name: str, **options: Any) -> Any:
        """The collection ``<prefix>_<name>``, created if missing. An existing one is fetched
        with ``get_collection``: in a process where a call on it failed (a full disk, say),
        chromadb 1.5's ``get_or_create_collection`` can hang once the disk has room again."""
        return self._collection_named(f"{self.prefix}_{name}", **options)

    def _collection_named(self, full_name: str, **options: Any) -> Any:
        try:
            found = self.client.get_collection(full_name, embedding_function=None)
        except _import_chromadb().errors.NotFoundError:
            found = self.client.get_or_create_collection(
                full_name, embedding_function=None, **options
            )
        return Guarded(found, self, collection=True)

    def moved(self, err: Exception) -> StoreUnavailable | None:
        """The ``StoreUnavailable`` that explains a collection gone because another process
        re-embedded the store into a new space (``_respace``) and dropped this one; None when
        that is not why."""
        if not isinstance(err, _import_chromadb().errors.NotFoundError):
            return None
        try:  # the unguarded client: this runs on a failure path already
            root = self.client._target.get_collection(
                f"{self.root_prefix}_meta", embedding_function=None
            )
            found = root.get(ids=[STORE_RECORD], include=["metadatas"])
        except Exception:
            return None
        if not found["ids"] or (found["metadatas"][0].get("space") or self.root_prefix) == (
            self.prefix
        ):
            return None
        return StoreUnavailable(
            f"the store {self.location} was re-embedded into "
            f"{found['metadatas'][0]['embedder']!r} by another process while this one had it "
            "open (memento-core reembed); open it again, with that embedder"
        )

    def unavailable(self, err: Exception) -> StoreUnavailable | None:
        """The ``StoreUnavailable`` that explains a failed Chroma call, or None when the store
        itself is fine (a bad argument, say: then the original error stands)."""
        if "://" in self.location:
            if not _is_transport_error(err):
                return None
            return StoreUnavailable(
                f"the Chroma server at {self.location} did not answer "
                f"({type(err).__name__}: {err}). Check that it is running and reachable "
                "(`chroma run`), then retry: a write cut short may or may not have been stored, "
                "and retrying it is safe (writes are idempotent)"
            )
        chromadb_errors = _import_chromadb().errors
        if not isinstance(err, (chromadb_errors.InternalError, OSError)):
            return None
        problem = filesystem_problem(Path(self.location))
        if problem is None and "readonly database" in str(err):
            # SQLite opened a connection read-only while the directory was not writable, and
            # Chroma keeps it (and its client per path) for the life of the process.
            return StoreUnavailable(
                f"Chroma holds the store {self.location} read-only in this process: it was not "
                "writable for a while, and is again, but this process keeps its read-only "
                "connection. Restart the process to write again; what was stored is intact"
            )
        return problem

    def iter_records(
        self, collection: Any, *, where: Mapping[str, Any] | None = None, include: Sequence[str]
    ) -> Iterator[Record]:
        """Every (id, metadata, document, embedding) in pages, so memory stays flat."""
        offset = 0
        while True:
            page = collection.get(
                where=dict(where) if where else None,
                include=list(include),
                limit=PAGE,
                offset=offset,
            )
            yield from _records(page)
            if len(page["ids"]) < PAGE:
                return
            offset += PAGE

    def all_ids(self, collection: Any) -> set[str]:
        """Every record's id, in one call: pages would make Chroma skip ever more rows
        (100k ids: 4 s in pages of 2,000, against a fraction of a second at once)."""
        return set(collection.get(include=[])["ids"])

    def records_by_id(
        self, collection: Any, ids: Sequence[str], *, include: Sequence[str]
    ) -> Iterator[Record]:
        """(id, metadata, document, embedding) of each of ``ids`` still stored, in pages, in
        order. On a server, past one page, the next ``READ_AHEAD`` pages are read while the
        caller takes one: a page waits mostly on the server, and a process's first recall at
        1M (the 50,000 public memories) went from 31 to 25 s (``scale.py``). Embedded, reads
        at once contend in this process: that first recall at 100k was slower (2.2-2.6 s
        against 1.9 s)."""

        def read(start: int) -> Mapping[str, Any]:
            page: Mapping[str, Any] = collection.get(
                ids=list(ids[start : start + PAGE]), include=list(include)
            )
            return page

        starts = range(0, len(ids), PAGE)
        if len(starts) <= 1 or self.directory is not None:
            for start in starts:
                yield from _records(read(start))
            return
        with ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="memento-read") as pool:
            pending: deque[Future[Mapping[str, Any]]] = deque()
            try:
                for start in starts:
                    pending.append(pool.submit(read, start))
                    if len(pending) > READ_AHEAD:
                        yield from _records(pending.popleft().result())
                while pending:
                    yield from _records(pending.popleft().result())
            finally:  # the caller stopped early or a read failed: read no further
                for future in pending:
                    future.cancel()


def _records(page: Mapping[str, Any]) -> Iterator[Record]:
    """The records of one ``get`` result, with ``{}`` or None for what it did not include."""
    metadatas, documents, embeddings = (
        page.get("metadatas"),
        page.get("documents"),
        page.get("embeddings"),
    )
    for n, record_id in enumerate(page["ids"]):
        yield (
            record_id,
            metadatas[n] if metadatas is not None else {},
            documents[n] if documents is not None else None,
            embeddings[n] if embeddings is not None else None,
        )


class Guarded:
    """A Chroma client or collection whose failures to reach the data — server gone, disk
    full, directory read-only — raise ``StoreUnavailable`` saying what happened and what to do;
    other errors pass through unchanged."""

    def __init__(self, target: Any, store: ChromaStore, *, collection: bool = False) -> None:
        self._target = target
        self._store = store
        self._collection = collection

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value
        store = self._store
        collection = self._collection

        def guarded(*args: Any, **kwargs: Any) -> Any:
            if store.closed:  # Chroma's own error would name its internals
                raise StoreUnavailable(
                    f"the store {store.location} was closed in this process "
                    "(Memento.close, or its with block ended); open it again with Memento.open"
                )
            try:
                return value(*args, **kwargs)
            except Exception as err:
                problem = store.unavailable(err) or (store.moved(err) if collection else None)
                if problem is None:
                    raise
                store.failed = True
                raise problem from err

        return guarded


def _is_transport_error(err: Exception) -> bool:
    import httpx  # chromadb's HTTP client; loaded already when a server store fails

    return isinstance(err, (httpx.TransportError, ConnectionError))


PROBE_BYTES = 1 << 20
FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}


def filesystem_problem(directory: Path) -> StoreUnavailable | None:
    """Why the store directory takes no writes (full disk, read-only), found by writing a 1 MiB
    probe file next to the store and removing it; None when the probe can be written."""
    probe = directory / f".memento-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            chunk = bytes(64 * 1024)
            for _ in range(PROBE_BYTES // len(chunk)):
                os.write(fd, chunk)  # a short write is followed by one that raises ENOSPC
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        reason = os.strerror(err.errno) if err.errno else str(err)
        if err.errno in FULL:
            try:
                free = f"{shutil.disk_usage(directory).free // 1024} KiB free"
            except OSError:
                free = "free space unknown"
            return StoreUnavailable(
                f"the disk holding the store {directory} is full ({reason}; {free}). Free some "
                "space or move the store to a larger disk, then retry: what was stored before is "
                "intact, a write cut short may or may not have been stored, and retrying it is "
                "safe (writes are idempotent)"
            )
        if err.errno in READ_ONLY:
            return StoreUnavailable(
                f"the store directory {directory} is read-only ({reason}). Make it writable again "
                "(check its mount and permissions), then retry: what was stored before is intact, "
                "and Chroma needs write access even to read"
            )
        return StoreUnavailable(f"the store directory {directory} cannot be written ({reason})")
    finally:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
    return None


def _import_chromadb() -> Any:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        import chromadb
    except ImportError as err:  # pragma: no cover - chromadb is a hard dependency
        raise StoreError("chromadb is not installed: pip install chromadb") from err
    return chromadb
