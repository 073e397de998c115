"""Chroma as the system of record: opening a store, its collections, and record conversion.

One store is four collections sharing a prefix: ``<prefix>_items`` (memories with their
vectors, cosine space), ``<prefix>_links``, ``<prefix>_events`` (feedback) and ``<prefix>_meta``
(what built the store). Side collections hold no real vectors; Chroma requires one, so they
carry a constant one-dimensional placeholder. Memento always passes vectors: Chroma's default
embedding function would download a model.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from memento_core._model import (
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
)
from memento_core.errors import (
    EmbedderMismatch,
    InvalidInput,
    NotAMementoStore,
    StoreError,
    StoreUnavailable,
)

SCHEMA_VERSION = 1
NEVER = 2**62
"""``expires_at`` of a memory that never expires (microseconds; far beyond any real date)."""
PLACEHOLDER_VECTOR = [1.0]
PAGE = 2_000
# What iter_records and records_by_id yield: (id, metadata, document, embedding).
Record = tuple[str, Mapping[str, Any], str | None, Any]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
FEEDBACK_KEYS = tuple(f"fb_{kind.value}" for kind in FeedbackKind)


def to_micros(value: datetime | None) -> int:
    """Exact integer microseconds since the epoch (floats would lose the last digits)."""
    if value is None:
        return 0
    return (value - EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime | None:
    if not value or value >= NEVER:
        return None
    return EPOCH + timedelta(microseconds=int(value))


def item_metadata(item: MemoryItem, text_hash: str, *, replacing: bool = False) -> dict[str, Any]:
    """Flat, filterable fields; the rest travels as one JSON string under ``doc``.

    Fields that ``where`` clauses compare with their default value (``deleted_at`` 0, say) are
    always written; the others only when they differ from it, since every key is a row in
    Chroma's metadata table and reads by id slow down as that table grows (a 107-id read at
    100k memories: 21 ms with 28 keys each, 6 ms with 5). ``item_from_record`` reads a missing
    field as its default. Chroma merges the metadata of an upsert into the stored one, so a
    ``replacing`` write gives those fields as None, which removes them.
    """
    meta: dict[str, Any] = {
        "type": item.type.value,
        "user_id": item.scope.user_id or "",
        "project_id": item.scope.project_id or "",
        "privacy": item.privacy.value,
        "importance": item.importance,
        "pinned": item.pinned,
        "created_at": to_micros(item.created_at),
        "last_accessed_at": to_micros(item.last_accessed_at),
        "expires_at": to_micros(item.expires_at) if item.expires_at else NEVER,
        "deleted_at": to_micros(item.deleted_at),
        "text_hash": text_hash,
        "review_due_at": to_micros(item.review_due_at),
        "consolidated_at": to_micros(item.consolidated_at),
        "doc": json.dumps(
            {
                "title": item.title,
                "data": item.data,
                "source": item.source,
                "tags": list(item.tags),
                "hotwords": list(item.hotwords),
                "origin_trace": item.origin_trace,
            },
            ensure_ascii=False,
            sort_keys=True,
        ),
    }
    optional: dict[str, Any] = {
        "agent_id": item.scope.agent_id or "",
        "session_id": item.scope.session_id or "",
        "access_count": item.access_count,
        "has_hotwords": bool(item.hotwords),
        "updated_at": to_micros(item.updated_at),
        "retention_s": int(item.retention.total_seconds()) if item.retention else 0,
        "review_step": item.review_step,
        "superseded_by": item.superseded_by or "",
        "follows": item.follows or "",
        "tags": list(item.tags),
        **{key: int(item.feedback.get(key[3:], 0)) for key in FEEDBACK_KEYS},
    }
    for key, value in optional.items():
        if value:
            meta[key] = value
        elif replacing:
            meta[key] = None
    return meta


def item_from_record(memory_id: str, content: str, meta: Mapping[str, Any]) -> MemoryItem:
    doc = json.loads(meta["doc"])
    return MemoryItem(
        id=memory_id,
        content=content,
        type=MemoryType(meta["type"]),
        title=doc["title"],
        data=doc["data"],
        source=doc["source"],
        scope=Scope(
            user_id=meta["user_id"] or None,
            agent_id=meta.get("agent_id") or None,
            project_id=meta["project_id"] or None,
            session_id=meta.get("session_id") or None,
        ),
        privacy=Privacy(meta["privacy"]),
        importance=float(meta["importance"]),
        pinned=bool(meta["pinned"]),
        tags=tuple(doc["tags"]),
        hotwords=tuple(doc["hotwords"]),
        created_at=from_micros(meta["created_at"]) or EPOCH,
        last_accessed_at=from_micros(meta["last_accessed_at"]),
        expires_at=from_micros(meta["expires_at"]),
        access_count=int(meta.get("access_count", 0)),
        feedback={k[3:]: int(meta[k]) for k in FEEDBACK_KEYS if meta.get(k)},
        origin_trace=doc["origin_trace"],
        deleted_at=from_micros(meta["deleted_at"]),
        updated_at=from_micros(meta.get("updated_at", 0)),
        retention=timedelta(seconds=meta["retention_s"]) if meta.get("retention_s") else None,
        review_due_at=from_micros(meta.get("review_due_at", 0)),
        review_step=int(meta.get("review_step", 0)),
        consolidated_at=from_micros(meta.get("consolidated_at", 0)),
        superseded_by=meta.get("superseded_by") or None,
        follows=meta.get("follows") or None,
    )


def link_id(link: Link) -> str:
    return f"{link.source_id}:{link.type.value}:{link.target_id}"


def link_metadata(link: Link) -> dict[str, Any]:
    return {
        "source_id": link.source_id,
        "target_id": link.target_id,
        "type": link.type.value,
        "created_at": to_micros(link.created_at),
    }


def event_metadata(event: FeedbackEvent) -> dict[str, Any]:
    return {
        "memory_id": event.memory_id,
        "kind": event.kind.value,
        "score": event.score,
        "at": to_micros(event.at),
    }


def link_from_record(meta: Mapping[str, Any], note: str) -> Link:
    return Link(
        source_id=meta["source_id"],
        type=LinkType(meta["type"]),
        target_id=meta["target_id"],
        created_at=from_micros(meta["created_at"]) or EPOCH,
        note=note or None,
    )


def event_from_record(meta: Mapping[str, Any], note: str) -> FeedbackEvent:
    return FeedbackEvent(
        memory_id=meta["memory_id"],
        kind=FeedbackKind(meta["kind"]),
        score=float(meta["score"]),
        at=from_micros(meta["at"]) or EPOCH,
        note=note or None,
    )


@dataclass(frozen=True)
class StoreInfo:
    embedder: str
    dimension: int
    schema_version: int
    location: str


class ChromaStore:
    """The collections of one Memento store, embedded (a directory) or on a Chroma server."""

    def __init__(self, client: Any, *, prefix: str, location: str) -> None:
        self.client = Guarded(client, self)
        self.prefix = prefix
        self.location = location
        self.lock = threading.RLock()
        self.items: Any = None
        self.links: Any = None
        self.events: Any = None
        self.meta: Any = None

    @classmethod
    def open_embedded(cls, path: str | os.PathLike[str], *, prefix: str) -> ChromaStore:
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
        try:
            client = chromadb.PersistentClient(
                path=str(directory), settings=chromadb.Settings(anonymized_telemetry=False)
            )
        except Exception as err:  # Chroma raises assorted types for a corrupt or alien file
            problem = filesystem_problem(directory)
            if problem is not None:  # a full disk, not a foreign file
                raise problem from err
            raise NotAMementoStore(
                f"{directory} cannot be opened as a Chroma store: {err}"
            ) from err
        return cls(client, prefix=prefix, location=str(directory))

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

    def attach(self, embedder_name: str, dimension: int) -> StoreInfo:
        """Create or check the collections; refuse a store built by another embedder."""
        names = {c if isinstance(c, str) else c.name for c in self.client.list_collections()}
        meta_name = f"{self.prefix}_meta"
        if meta_name not in names and names and self.location and "://" not in self.location:
            raise NotAMementoStore(
                f"{self.location} holds Chroma collections ({', '.join(sorted(names)[:5])}) "
                "but no Memento store"
            )
        self.meta = self._side_collection("meta")
        record = self.meta.get(ids=["store"], include=["metadatas"])
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
                ids=["store"],
                embeddings=[PLACEHOLDER_VECTOR],
                documents=["memento store"],
                metadatas=[
                    {"embedder": embedder_name, "dimension": dimension, "schema_version": schema}
                ],
            )
        self.items = self._collection("items", configuration={"hnsw": {"space": "cosine"}})
        self.links = self._side_collection("links")
        self.events = self._side_collection("events")
        return StoreInfo(embedder_name, dimension, schema, self.location)

    def side_collection(self, name: str) -> Any:
        """A collection for records without real vectors (links, events, chat messages)."""
        return self._side_collection(name)

    def _side_collection(self, name: str) -> Any:
        return self._collection(name)

    def _collection(self, name: str, **options: Any) -> Any:
        """The collection ``<prefix>_<name>``, created if missing. An existing one is fetched
        with ``get_collection``: in a process where a call on it failed (a full disk, say),
        chromadb 1.5's ``get_or_create_collection`` can hang once the disk has room again."""
        full_name = f"{self.prefix}_{name}"
        try:
            found = self.client.get_collection(full_name, embedding_function=None)
        except _import_chromadb().errors.NotFoundError:
            found = self.client.get_or_create_collection(
                full_name, embedding_function=None, **options
            )
        return Guarded(found, self)

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
        """(id, metadata, document, embedding) of each of ``ids`` still stored, in pages."""
        for start in range(0, len(ids), PAGE):
            yield from _records(
                collection.get(ids=list(ids[start : start + PAGE]), include=list(include))
            )


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

    def __init__(self, target: Any, store: ChromaStore) -> None:
        self._target = target
        self._store = store

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value
        store = self._store

        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return value(*args, **kwargs)
            except Exception as err:
                problem = store.unavailable(err)
                if problem is None:
                    raise
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
