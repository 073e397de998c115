"""Memento as the store and checkpointer of a LangGraph server (``langgraph dev``, deployments).

In ``langgraph.json``::

    "store": {"path": "memento_langgraph.server.store"},
    "checkpointer": {"path": "memento_langgraph.server.checkpointer"}

(``langgraph-api`` reads a module path as ``package.module.attribute``: the ``module:attribute``
form is taken for files only, ``"./file.py:name"``.) Each is an async context manager the server
enters at start and leaves at shutdown; both share one ``Memento``, opened by whichever comes
first and closed when the last leaves. Settings come from the environment (the shell's, or
``langgraph.json``'s ``"env"``):

- ``MEMENTO_PATH``: the embedded store's directory (Memento's default when neither this nor
  ``MEMENTO_URL`` is set: the per-user data directory). One process at a time writes to an
  embedded store: a second server on it fails at start.
- ``MEMENTO_URL``: a Chroma server (``chroma run``) instead, ``http://host:port``; any number
  of LangGraph servers can share it.
- ``MEMENTO_COLLECTION_PREFIX``: the store's collection prefix (default ``memento``).
- ``MEMENTO_EMBEDDING_MODEL``: the embedder (default all-MiniLM-L6-v2 on ONNX Runtime); it must
  be the one the store was built with.
- ``MEMENTO_PROJECT``: the store's project, whose reserved home holds the items (default
  ``langgraph``; see ``memento_langgraph.namespaces``).
- ``MEMENTO_INDEX_FIELDS``: the JSON paths of a value that are embedded, comma-separated
  (default ``$``, the whole value). ``langgraph.json``'s ``store.index`` is for the built-in
  store: the in-memory runtime requires an ``embed`` there, which Memento would not use.
- ``store.ttl`` of ``langgraph.json`` (``default_ttl`` minutes, ``refresh_on_read``) is
  ``MementoStore``'s TTL config.

A misconfigured server fails at start with one line naming what is wrong (``ServerConfigError``):
both a path and a URL, a Chroma server that does not answer, a store built with another
embedding model, an embedded store another process writes to. After opening, partitions too
large to load whole are mirrored into collections of their own in the background
(``Memento.mirror_large_partitions``), so the first searches of a big store do not wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import TTLConfig

from memento_core import Memento, MementoError, StoreError, embedder_for
from memento_langgraph.namespaces import NamespaceMapping
from memento_langgraph.saver import MementoSaver
from memento_langgraph.store import MementoStore

__all__ = ["ServerConfigError", "Settings", "checkpointer", "store"]

PATH_ENV = "MEMENTO_PATH"
URL_ENV = "MEMENTO_URL"
PREFIX_ENV = "MEMENTO_COLLECTION_PREFIX"
MODEL_ENV = "MEMENTO_EMBEDDING_MODEL"
PROJECT_ENV = "MEMENTO_PROJECT"
FIELDS_ENV = "MEMENTO_INDEX_FIELDS"
SERVER_STORE_ENV = "LANGGRAPH_STORE"
"""Where the LangGraph server puts ``langgraph.json``'s ``"store"`` section, as JSON."""
WARM_JOIN_SECONDS = 30.0
"""How long closing waits for the background mirroring before closing the store anyway."""

log = logging.getLogger(__name__)


class ServerConfigError(StoreError):
    """The server's Memento settings are wrong, or its store cannot be opened with them."""


@dataclass(frozen=True)
class Settings:
    """Where the store is and how items are stored, as read from the environment."""

    path: str | None = None
    url: str | None = None
    collection_prefix: str = "memento"
    embedding_model: str | None = None
    project_id: str = "langgraph"
    index_fields: tuple[str, ...] = ("$",)
    ttl: TTLConfig | None = None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)

        def setting(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        path, url = setting(PATH_ENV), setting(URL_ENV)
        if path is not None and url is not None:
            raise ServerConfigError(
                f"set either ${PATH_ENV} (an embedded store) or ${URL_ENV} (a Chroma server), "
                "not both"
            )
        if url is not None and not url.startswith(("http://", "https://")):
            raise ServerConfigError(f"${URL_ENV} must be http://host:port, got {url!r}")
        fields = tuple(f.strip() for f in (setting(FIELDS_ENV) or "$").split(",") if f.strip())
        project = setting(PROJECT_ENV) or "langgraph"
        try:
            NamespaceMapping(project_id=project)
        except MementoError as err:
            raise ServerConfigError(f"${PROJECT_ENV} {project!r} is not usable: {err}") from None
        return cls(
            path=path,
            url=url,
            collection_prefix=setting(PREFIX_ENV) or "memento",
            embedding_model=setting(MODEL_ENV),
            project_id=project,
            index_fields=fields or ("$",),
            ttl=_store_ttl(env.get(SERVER_STORE_ENV)),
        )

    @property
    def where(self) -> str:
        """The store's location, for messages."""
        if self.url is not None:
            return f"{self.url} (collections {self.collection_prefix}*)"
        return self.path or f"${PATH_ENV} unset: Memento's default directory"

    def open(self) -> Memento:
        """Open the store (blocking); any failure becomes one ``ServerConfigError`` line."""
        try:
            embedder = embedder_for(self.embedding_model) if self.embedding_model else None
            return Memento.open(
                None if self.url else self.path,
                url=self.url,
                embedder=embedder,
                collection_prefix=self.collection_prefix,
            )
        except (MementoError, OSError, ValueError) as err:  # OSError: a model that is not there
            message = " ".join(str(err).split())  # one line, whatever core's message holds
            line = (
                f"memento_langgraph.server cannot open the Memento store at {self.where}: "
                f"{type(err).__name__}: {message}"
            )
            log.error(line)  # the server's log has it on one line, before its traceback
            raise ServerConfigError(line) from None


def _store_ttl(raw: str | None) -> TTLConfig | None:
    """``langgraph.json``'s ``store.ttl``, which the server hands over as JSON."""
    if not raw:
        return None
    try:
        section = json.loads(raw)
    except ValueError:
        return None  # the server itself refuses a malformed section
    ttl = section.get("ttl") if isinstance(section, dict) else None
    if ttl is None:
        return None
    if not isinstance(ttl, dict):
        raise ServerConfigError(f"langgraph.json's store.ttl must be an object, got {ttl!r}")
    config: TTLConfig = {}
    if ttl.get("default_ttl") is not None:
        try:
            config["default_ttl"] = float(ttl["default_ttl"])
        except (TypeError, ValueError):
            raise ServerConfigError(
                "langgraph.json's store.ttl.default_ttl must be minutes, got "
                f"{ttl['default_ttl']!r}"
            ) from None
    if ttl.get("refresh_on_read") is not None:
        config["refresh_on_read"] = bool(ttl["refresh_on_read"])
    return config


class _Opened:
    """The process's one Memento for the server's store and checkpointer, counted by users."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.settings: Settings | None = None
        self.memento: Memento | None = None
        self.users = 0
        self.warming: threading.Thread | None = None

    def acquire(self, settings: Settings) -> Memento:
        with self.lock:
            if self.memento is None:
                memento = settings.open()
                self.settings, self.memento = settings, memento
                self.warming = threading.Thread(
                    target=_warm, args=(memento,), name="memento-warm", daemon=True
                )
                self.warming.start()
            elif settings != self.settings:
                raise ServerConfigError(
                    "the Memento store is open already with other settings "
                    f"({self.settings}); the store and the checkpointer share one"
                )
            self.users += 1
            return self.memento

    def release(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users > 0 or self.memento is None:
                return
            memento, warming = self.memento, self.warming
            self.memento = self.settings = self.warming = None
        if warming is not None:
            warming.join(WARM_JOIN_SECONDS)
        memento.close()
        log.info("memento_langgraph.server closed the Memento store at %s", memento.location)


def _warm(memento: Memento) -> None:
    """Load the embedding model and mirror partitions too large to load whole, beside the
    server's start. A store that fails here fails again on the call that needs it, which
    reports it."""
    try:
        memento.embedder.embed_query("warm up")
        copied = memento.mirror_large_partitions()
    except Exception as err:  # a background nicety: never the server's end
        log.warning("memento_langgraph.server: warming the store failed: %s", err)
        return
    if copied:
        log.info("memento_langgraph.server mirrored %d large partitions", copied)


_OPENED = _Opened()


@contextlib.asynccontextmanager
async def _memento(settings: Settings) -> AsyncIterator[Memento]:
    # Opening reads the disk or the network: off the server's event loop.
    memento = await asyncio.to_thread(_OPENED.acquire, settings)
    try:
        yield memento
    finally:
        await asyncio.to_thread(_OPENED.release)


@contextlib.asynccontextmanager
async def store() -> AsyncIterator[MementoStore]:
    """The server's long-term store: a ``MementoStore`` on the shared Memento."""
    settings = Settings.from_env()
    async with _memento(settings) as memento:
        index: dict[str, Any] = {"fields": list(settings.index_fields)}
        built = await asyncio.to_thread(
            MementoStore,
            memento,
            index=index,  # type: ignore[arg-type]  # IndexConfig without embed or dims
            ttl=settings.ttl,
            project_id=settings.project_id,
        )
        yield built


@contextlib.asynccontextmanager
async def checkpointer() -> AsyncIterator[MementoSaver]:
    """The server's checkpointer: a ``MementoSaver`` on the shared Memento."""
    settings = Settings.from_env()
    async with _memento(settings) as memento:
        yield MementoSaver(memento)
