"""``MementoMemory``: Memento as an AutoGen ``Memory`` component."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from autogen_core import CancellationToken, Component
from autogen_core.memory import Memory, MemoryContent, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage
from typing_extensions import Self

from memento_autogen._batching import AddBatcher
from memento_autogen.config import MementoMemoryConfig
from memento_autogen.mapping import (
    SCOPE_FIELDS,
    content_from_recalled,
    draft_from_content,
    latest_user_text,
    memory_listing,
    query_text,
)
from memento_core import (
    InvalidInput,
    Memento,
    MemoryType,
    Privacy,
    RecallFilter,
    Scope,
    embedder_for,
)

T = TypeVar("T")


class MementoMemory(Memory, Component[MementoMemoryConfig]):
    """Long-term memory for AutoGen agents: Memento's ranked hybrid recall over Chroma.

    Put it in ``AssistantAgent(memory=[...])``: before each model call the agent runs
    ``update_context``, which recalls the memories that best fit the newest user message and
    adds them to the model context as one system message. Ranking, storage and forgetting are
    Memento's; this class maps AutoGen's types onto it (see ``memento_autogen.mapping``).

    Args:
        config: Where the store lives, whose memories these are (the scope) and how many come
            back. Built from a config alone, the memory opens its own store on first use (off
            the event loop) and closes it in ``close()``.
        store: An already-open ``Memento`` to use instead, for instance to share one embedding
            model among many memories. The caller keeps it and closes it. The config's path or
            url, collection prefix and embedding model are taken from it (a conflicting value
            is an error).

    Example::

        memory = MementoMemory(MementoMemoryConfig(path="./memory", user_id="alice"))
        await memory.add(MemoryContent(content="Alice drinks green tea.", mime_type="text/plain"))
        agent = AssistantAgent("assistant", model_client=client, memory=[memory])
    """

    component_type = "memory"
    component_version = 1
    component_config_schema = MementoMemoryConfig
    component_provider_override = "memento_autogen.MementoMemory"

    def __init__(
        self, config: MementoMemoryConfig | None = None, *, store: Memento | None = None
    ) -> None:
        config = config or MementoMemoryConfig()
        if store is not None:
            config = _config_matching(config, store)
        self._config = config
        self._scope = Scope(**{name: getattr(config, name) for name in SCOPE_FIELDS})
        self._privacy = Privacy(config.privacy)
        self._memory_type = MemoryType(config.memory_type)
        self._store = store
        self._owns_store = store is None
        self._opening = threading.Lock()
        self._adds = AddBatcher()

    @property
    def config(self) -> MementoMemoryConfig:
        return self._config

    @property
    def scope(self) -> Scope:
        """Whose memories these are; ``query`` sees what this scope may see."""
        return self._scope

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Remember ``content`` under this memory's scope (see ``mapping`` for the rules).

        Text and JSON are accepted, images and binary content are not. Identical content in
        the same scope is stored once: adding it again changes nothing. ``content`` and its
        metadata are not modified. Adds awaited at once (``asyncio.gather``) are written
        together, in one call to the store; each returns when its own content is stored.
        """
        draft = draft_from_content(
            content, scope=self._scope, privacy=self._privacy, memory_type=self._memory_type
        )
        store = await self._open()
        # Adds in flight at once (a tool loop's gather) are written together (``_batching``).
        await _cancellable(self._adds.add(store, draft), cancellation_token)

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        *,
        k: int | None = None,
        score_threshold: float | None = None,
        filter: RecallFilter | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The memories that best fit ``query`` and that this scope may see, best first.

        Each result's metadata holds ``score``: how well the memory matches the query, 0..1 —
        Memento's relevance (embedding similarity fused with keyword matching), the number
        ``score_threshold`` bounds, as ``ChromaDBVectorMemory``'s ``score`` is the similarity
        its threshold bounds. Results are ordered by ``rank_score`` (Memento's ranking score:
        relevance with recency, importance, usage and diversity), so ``score`` need not
        decrease down the list. Also ``relevance`` (the same number as ``score``),
        ``similarity`` (the true cosine similarity of the embeddings; a negative one shows as
        0), ``reason`` (the ranking score's parts, readable) and ``matched_terms``, with the
        memory's ``id``, its fields and the metadata it was added with. ``k`` and
        ``score_threshold`` override the config for this call; ``filter`` narrows recall
        (``RecallFilter`` fields: types, tags, since, until, session_id, …).
        """
        if kwargs:
            raise TypeError(f"unexpected query option(s): {', '.join(sorted(kwargs))}")
        store = await self._open()
        threshold = self._config.score_threshold if score_threshold is None else score_threshold
        recalled = await _cancellable(
            store.arecall(
                query_text(query),
                scope=self._scope,
                limit=self._config.k if k is None else k,
                filter=filter,
                min_relevance=threshold or 0.0,
            ),
            cancellation_token,
        )
        return MemoryQueryResult(results=[content_from_recalled(r) for r in recalled])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recall for the newest user message and add one system message listing the memories.

        The context is left alone when there is no user message or nothing relevant was found.
        """
        text = latest_user_text(await model_context.get_messages())
        if text is None:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        found = await self.query(text)
        if found.results:
            await model_context.add_message(SystemMessage(content=memory_listing(found.results)))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Erase this memory's own memories, and nothing else in the store.

        Its own are those that ``add`` could have written: the same user (a memory without a
        user_id owns the anonymous user's memories) and every other scope field it sets
        (agent, project, session); a field it leaves open, say the session, matches any value.
        So other users' memories stay, public ones included, and so do the same user's
        memories written under another agent when this memory names one. The erase is a hard
        delete: vectors, links and feedback go too.
        """
        store = await self._open()
        await asyncio.to_thread(_erase_scope, store, self._scope)

    async def close(self) -> None:
        """Release a store this memory opened itself; a store passed in stays open.

        A later call opens the store again.
        """
        if self._owns_store and self._store is not None:
            store, self._store = self._store, None
            await asyncio.to_thread(store.close)

    def _to_config(self) -> MementoMemoryConfig:
        return self._config

    @classmethod
    def _from_config(cls, config: MementoMemoryConfig) -> Self:
        return cls(config)

    async def _open(self) -> Memento:
        if self._store is not None:
            return self._store
        return await asyncio.to_thread(self._open_blocking)

    def _open_blocking(self) -> Memento:
        with self._opening:
            if self._store is None:
                config = self._config
                self._store = Memento.open(
                    config.path,
                    url=config.url,
                    embedder=embedder_for(config.embedding_model),
                    collection_prefix=config.collection_prefix,
                )
            return self._store


async def _cancellable(work: Awaitable[T], token: CancellationToken | None) -> T:
    """Await ``work``; cancelling ``token`` stops the wait (the thread finishes on its own)."""
    task = asyncio.ensure_future(work)
    if token is not None:
        token.link_future(task)
    return await task


def _erase_scope(store: Memento, scope: Scope) -> None:
    wanted: dict[str, str | None] = {
        name: value for name, value in scope.as_dict().items() if value is not None
    }
    wanted["user_id"] = scope.user_id  # None too: the anonymous user's memories only
    # Forgotten (soft-deleted) memories are erased too: clear() is a hard delete.
    for item in store.items(scope=scope, include_deleted=True):
        if all(getattr(item.scope, name) == value for name, value in wanted.items()):
            store.forget(item.id, hard=True, scope=scope)


def _config_matching(config: MementoMemoryConfig, store: Memento) -> MementoMemoryConfig:
    """``config`` with the store's location and model; a conflicting explicit value is an error."""
    location = store.location
    on_server = "://" in location
    wrong_url = config.url is not None and (
        not on_server or config.url.rstrip("/") != location.rstrip("/")
    )
    wrong_path = config.path is not None and (on_server or not _same_path(config.path, location))
    if wrong_url or wrong_path:
        given = config.url if config.url is not None else config.path
        raise InvalidInput(f"the config names {given!r} but the store is at {location!r}")
    model = store.embedder.name
    if "embedding_model" in config.model_fields_set and config.embedding_model != model:
        raise InvalidInput(
            f"the config names embedding model {config.embedding_model!r} "
            f"but the store was opened with {model!r}"
        )
    if (
        "collection_prefix" in config.model_fields_set
        and config.collection_prefix != store.collection_prefix
    ):
        raise InvalidInput(
            f"the config names collection prefix {config.collection_prefix!r} "
            f"but the store was opened with {store.collection_prefix!r}"
        )
    where = {"url": location} if on_server else {"path": config.path or location}
    return config.model_copy(
        update={**where, "embedding_model": model, "collection_prefix": store.collection_prefix}
    )


def _same_path(a: str, b: str) -> bool:
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
