"""``MementoMemoryBlock``: Memento's long-term memory inside LlamaIndex's ``Memory``."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field
from llama_index.core.memory.memory import BaseMemoryBlock

from memento_core import MAX_RECALL_LIMIT, Memento, check_scope_value
from memento_llamaindex.connection import MementoConnection
from memento_llamaindex.mapping import drafts_from_messages, latest_user_text


class MementoMemoryBlock(MementoConnection, BaseMemoryBlock[str]):
    """A ``Memory`` block: recalls from Memento for the newest user message, and remembers the
    messages ``Memory`` flushes out of its short-term queue as episodic memories.

    ``Memory`` passes its ``session_id``: it becomes the session of the memories written
    (provenance), while recall sees everything this block's scope (user, project) may see, from
    every session. The recalled memories come as one text, best first, packed by Memento's
    ``memory_injection`` into ``token_budget`` tokens; ``priority`` decides, as for any block,
    whether ``Memory`` may drop it when the context is too long (0: never).

    Example::

        memory = Memory.from_defaults(
            session_id="alice-1",
            memory_blocks=[MementoMemoryBlock(path="./memory", user_id="alice")],
        )
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    def __init__(self, /, store: Memento | None = None, **data: Any) -> None:
        # Spelled out so that type checkers accept ``store=`` (pydantic synthesises the rest).
        super().__init__(store=store, **data)

    name: str = Field(default="memento", description="The block's name in the memory template.")
    description: str | None = Field(
        default="Long-term memories recalled by Memento, most relevant first."
    )
    priority: int = Field(
        default=1, ge=0, description="0 = never truncated; higher numbers are dropped first."
    )
    recall_limit: int = Field(
        default=5, ge=1, le=MAX_RECALL_LIMIT, description="At most this many memories recalled."
    )
    token_budget: int = Field(
        default=600, ge=1, description="Tokens the recalled memories may take (Memento's count)."
    )

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = latest_user_text(messages)
        if query is None:
            return ""
        scope = self.scope.with_session(_session(block_kwargs.get("session_id")))
        store = await asyncio.to_thread(lambda: self.memento)
        injection = await store.amemory_injection(
            query, token_budget=self.token_budget, scope=scope, limit=self.recall_limit
        )
        return injection.text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await self.aremember(messages)

    def remember(self, messages: list[ChatMessage], session_id: str | None = None) -> list[str]:
        """Store the messages that carry text as episodic memories; returns their ids, in order.
        All are checked first: one bad message stores nothing."""
        drafts = drafts_from_messages(messages, scope=self.scope, session_id=_session(session_id))
        return self.memento.remember_many(drafts) if drafts else []

    async def aremember(
        self, messages: list[ChatMessage], session_id: str | None = None
    ) -> list[str]:
        """The async twin of ``remember``."""
        return await asyncio.to_thread(self.remember, messages, session_id)


def _session(value: object) -> str | None:
    return check_scope_value(value, "session_id")
