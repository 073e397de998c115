"""Where a LlamaIndex-side object finds its Memento store, and whose memories it works on.

The fields are plain JSON (a path or a URL, names), so ``to_dict`` / ``from_dict`` — and a
workflow ``Context`` that holds the object — rebuild it in another process. Stores opened from
these fields are shared per process: an embedded store must be opened once per process, and many
memories of one application should share one embedding model.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr, model_validator

from memento_core import InvalidInput, Memento, Scope, embedder_for
from memento_core.embedding import DEFAULT_MODEL

_OPEN: dict[tuple[str | None, str | None, str, str], Memento] = {}
_OPEN_LOCK = threading.Lock()


def open_store(
    path: str | None, url: str | None, collection_prefix: str, embedding_model: str
) -> Memento:
    """The process's store for these settings, opened on first use and then shared."""
    where = str(Path(path).expanduser().resolve()) if path is not None else None
    key = (where, url.rstrip("/") if url is not None else None, collection_prefix, embedding_model)
    with _OPEN_LOCK:
        found = _OPEN.get(key)
        if found is None:
            found = _OPEN[key] = Memento.open(
                where,
                url=url,
                embedder=embedder_for(embedding_model),
                collection_prefix=collection_prefix,
            )
        return found


class MementoConnection(BaseModel):
    """The store and scope fields shared by the memory, the block, the chat store and the
    retriever. Pass ``store=`` (an open ``Memento``) to use a store you opened yourself; its
    location and model are then recorded in the fields (``collection_prefix`` cannot be read
    from a store: give it when the store does not use the default)."""

    path: str | None = Field(
        default=None,
        description="Directory of an embedded store; with neither path nor url, Memento's "
        "default ($MEMENTO_PATH, else the per-user data directory).",
    )
    url: str | None = Field(
        default=None, description="A Chroma server started with `chroma run`: http://host:port."
    )
    collection_prefix: str = Field(
        default="memento", description="Prefix of the store's Chroma collections."
    )
    embedding_model: str = Field(
        default=DEFAULT_MODEL,
        description="all-MiniLM-L6-v2 (ONNX Runtime; the default), all-MiniLM-L6-v2-int8, or, "
        "with memento-core[torch], a sentence-transformers model name or local path; it must "
        "be the model that built the store.",
    )
    user_id: str | None = Field(
        default=None, description="Whose memories these are; none: the store's anonymous user."
    )
    agent_id: str | None = Field(default=None, description="The agent that writes them.")
    project_id: str | None = Field(default=None, description="The project (team) they belong to.")

    _memento: Memento | None = PrivateAttr(default=None)
    _opening: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, /, store: Memento | None = None, **data: Any) -> None:
        if store is not None:
            if not isinstance(store, Memento):
                raise InvalidInput(f"store must be an open Memento, got {type(store).__name__}")
            on_server = "://" in store.location
            data.setdefault("url" if on_server else "path", store.location)
            data.setdefault("embedding_model", store.embedder.name)
        super().__init__(**data)
        self._memento = store

    @model_validator(mode="after")
    def _check(self) -> MementoConnection:
        if self.path is not None and self.url is not None:
            raise ValueError("give either path (an embedded store) or url (a Chroma server)")
        Scope(user_id=self.user_id, agent_id=self.agent_id, project_id=self.project_id)
        return self

    @property
    def scope(self) -> Scope:
        """Whose memories these are: recall sees what this scope may see."""
        return Scope(user_id=self.user_id, agent_id=self.agent_id, project_id=self.project_id)

    @property
    def memento(self) -> Memento:
        """The store, opened on first use (blocking: async callers use a worker thread)."""
        if self._memento is None:
            with self._opening:
                if self._memento is None:
                    self._memento = open_store(
                        self.path, self.url, self.collection_prefix, self.embedding_model
                    )
        return self._memento
