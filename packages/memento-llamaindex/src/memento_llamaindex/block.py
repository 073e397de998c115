"""``MementoMemoryBlock``: Memento's long-term memory inside LlamaIndex's ``Memory``."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate, RichPromptTemplate

from memento_core import MAX_CONTENT_CHARS, MAX_RECALL_LIMIT, Memento, check_scope_value
from memento_llamaindex.connection import MementoConnection
from memento_llamaindex.mapping import drafts_from_messages, latest_user_text, text_of
from memento_llamaindex.retriever import node_from_recalled


class MementoMemoryBlock(MementoConnection, BaseMemoryBlock[str]):
    """A ``Memory`` block: recalls from Memento for the newest user message, and remembers the
    messages ``Memory`` flushes out of its short-term queue as episodic memories.

    ``Memory`` passes its ``session_id``: it becomes the session of the memories written
    (provenance), while recall sees everything this block's scope (user, project) may see, from
    every session. The recalled memories come as one text, best first, packed by Memento's
    ``memory_injection`` into ``token_budget`` tokens; ``priority`` decides, as for any block,
    whether ``Memory`` may drop it when the context is too long (0: never).

    ``VectorMemoryBlock``'s options work the same way here: ``retrieval_context_window`` (the
    query is the text of the last N messages; 1, the default, means the newest user message),
    ``node_postprocessors`` (applied to the recalled memories as ``NodeWithScore``, node id =
    memory id, score = Memento's ranking score; their contents are then joined by blank lines
    in the order the postprocessors leave) and ``format_template`` (a prompt template with a
    ``text`` variable, or a string; ``"{{ text }}"`` style makes a ``RichPromptTemplate``).

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
    retrieval_context_window: int = Field(
        default=1,
        ge=1,
        description="Messages whose text forms the query; 1 = the newest user message.",
    )
    node_postprocessors: list[BaseNodePostprocessor] = Field(
        default_factory=list,
        description="Applied to the recalled memories (as NodeWithScore) before formatting.",
    )
    format_template: BasePromptTemplate | None = Field(
        default=None, description="Formats the recalled text (variable ``text``); None: as is."
    )

    @field_validator("format_template", mode="before")
    @classmethod
    def _template(cls, value: Any) -> Any:
        if isinstance(value, str):
            return RichPromptTemplate(value) if "{{" in value else PromptTemplate(value)
        return value

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = self._query(messages)
        if query is None:
            return ""
        scope = self.scope.with_session(_session(block_kwargs.get("session_id")))
        store = await asyncio.to_thread(lambda: self.memento)
        if self.node_postprocessors:
            recalled = await store.arecall(query, scope=scope, limit=self.recall_limit)
            nodes = [node_from_recalled(r) for r in recalled]
            for postprocessor in self.node_postprocessors:
                nodes = await postprocessor.apostprocess_nodes(nodes, query_str=query)
            text = "\n\n".join(node.get_content() for node in nodes)
        else:
            injection = await store.amemory_injection(
                query, token_budget=self.token_budget, scope=scope, limit=self.recall_limit
            )
            text = injection.text
        if not text or self.format_template is None:
            return text
        return self.format_template.format(text=text)

    def _query(self, messages: list[ChatMessage] | None) -> str | None:
        if self.retrieval_context_window == 1 or not messages:
            return latest_user_text(messages)
        window = messages[-self.retrieval_context_window :]
        text = " ".join(t for t in (text_of(m) for m in window) if t.strip())
        return text[:MAX_CONTENT_CHARS] if text.strip() else None

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
