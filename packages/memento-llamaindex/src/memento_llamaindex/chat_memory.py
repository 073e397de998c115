"""``MementoChatMemory``: a durable ``ChatMemoryBuffer`` with long-term recall."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import BaseMemory
from llama_index.core.utils import get_tokenizer

from memento_core import (
    MAX_RECALL_LIMIT,
    ChatMemory,
    Memento,
    Summarizer,
    WindowPolicy,
    check_scope_value,
)
from memento_llamaindex.connection import MementoConnection
from memento_llamaindex.mapping import (
    check_tool_results,
    from_memento_message,
    latest_user_text,
    text_of,
    to_memento_message,
)

DEFAULT_TOKEN_LIMIT = 3000
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
DEFAULT_SESSION = "chat_history"
UNBOUNDED = WindowPolicy(max_messages=10**9, snapshot_on_overflow=False, ttl=None)
"""Core's window over the session, never evicting or expiring: like ``ChatMemoryBuffer``'s
store, it holds every message since the last reset; ``get`` trims at read time."""


class TokenizerCounter:
    """A LlamaIndex ``tokenizer_fn`` as a Memento ``TokenCounter``."""

    def __init__(self, tokenizer_fn: Callable[[str], Sequence[Any]]) -> None:
        self.tokenizer_fn = tokenizer_fn

    def count(self, text: str) -> int:
        return len(self.tokenizer_fn(text)) if text else 0


class MementoChatMemory(MementoConnection, BaseMemory):
    """A chat memory usable wherever ``ChatMemoryBuffer`` is, kept in Memento's working memory.

    Every message is written to the store as it is put, so the conversation survives a restart
    (reopen with the same ``session_id``) and is shared through a Chroma server. ``get`` returns
    the newest messages within ``token_limit`` by ``ChatMemoryBuffer``'s rules (oldest out
    first; the window never starts on an assistant or tool message; if even the newest message
    does not fit, it alone is returned). With ``input``, it also recalls the long-term memories
    that fit the input and adds them as one system message, within ``memory_share`` of the limit.

    Differences from ``ChatMemoryBuffer``: one system message is kept, first, and never trimmed
    (a new one replaces it); a tool result must answer a tool call in the memory; ``reset``
    empties the memory but keeps the history in the store (``history()``, ``archive()``); the
    tokens of a window are the sum of each message's (text and tool calls).

    Example::

        memory = MementoChatMemory.from_defaults(path="./memory", user_id="alice",
                                                 session_id="alice-1")
        agent = FunctionAgent(tools=[...], llm=llm)
        await agent.run("Hi!", memory=memory)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    session_id: str = Field(
        default=DEFAULT_SESSION,
        description="The conversation; its messages are kept under this id in the store. "
        "Session ids are global in a store: give every conversation its own.",
    )
    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, ge=1)
    memory_share: float = Field(
        default=0.25,
        ge=0.0,
        lt=1.0,
        description="Share of token_limit that recalled long-term memories may take (0: none).",
    )
    recall_limit: int = Field(
        default=5, ge=1, le=MAX_RECALL_LIMIT, description="At most this many memories recalled."
    )
    tokenizer_fn: Callable[[str], list[Any]] = Field(default_factory=get_tokenizer, exclude=True)

    _chat: ChatMemory | None = PrivateAttr(default=None)

    def __init__(self, /, store: Memento | None = None, **data: Any) -> None:
        # Spelled out so that type checkers accept ``store=`` (pydantic synthesises the rest).
        super().__init__(store=store, **data)

    @field_validator("session_id")
    @classmethod
    def _valid_session(cls, value: str) -> str:
        check_scope_value(value, "session_id")
        return value

    @classmethod
    def class_name(cls) -> str:
        return "MementoChatMemory"

    @classmethod
    def from_defaults(
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        token_limit: int | None = None,
        tokenizer_fn: Callable[[str], list[Any]] | None = None,
        *,
        chat_store_key: str | None = None,
        **kwargs: Any,
    ) -> MementoChatMemory:
        """Build one like ``ChatMemoryBuffer.from_defaults``: the token limit is ``token_limit``,
        else ¾ of the LLM's context window, else 3000. ``chat_history`` replaces the session's
        messages. Other keyword arguments are fields (``store=``, ``path``, ``url``,
        ``user_id``, ``session_id`` — ``chat_store_key`` is read as ``session_id`` —, …)."""
        if token_limit is None:
            token_limit = (
                int(llm.metadata.context_window * DEFAULT_TOKEN_LIMIT_RATIO)
                if llm is not None
                else DEFAULT_TOKEN_LIMIT
            )
        if chat_store_key is not None:
            kwargs.setdefault("session_id", chat_store_key)
        memory = cls(
            token_limit=token_limit, tokenizer_fn=tokenizer_fn or get_tokenizer(), **kwargs
        )
        if chat_history is not None:
            memory.set(chat_history)
        return memory

    @classmethod
    def from_string(cls, json_str: str, **kwargs: Any) -> MementoChatMemory:
        """Rebuild from ``to_string()`` (``store=`` may name an open store)."""
        return cls.from_json(json_str, **kwargs)

    def to_string(self) -> str:
        """The settings as JSON: location, scope, session and limits; the messages stay stored."""
        return self.to_json()

    @property
    def chat(self) -> ChatMemory:
        """Core's working memory of this session."""
        if self._chat is None:
            self._chat = self.memento.chat(
                self.session_id,
                scope=self.scope,
                policy=UNBOUNDED,
                counter=TokenizerCounter(self.tokenizer_fn),
            )
        return self._chat

    def get(
        self,
        input: str | ChatMessage | None = None,
        initial_token_count: int = 0,
        **kwargs: Any,
    ) -> list[ChatMessage]:
        """The newest messages within the token limit, oldest first; with ``input``, the
        long-term memories that fit it as a system message after the session's system message."""
        if initial_token_count > self.token_limit:
            raise ValueError("Initial token count exceeds token limit")
        window = [from_memento_message(m) for m in self.chat.window()]
        head = window[:1] if window and window[0].role == MessageRole.SYSTEM else []
        tail = window[len(head) :]
        query = _query_of(input)
        if query is not None and query.strip() and self.memory_share > 0:
            budget = int(self.token_limit * self.memory_share)
            injection = self.memento.memory_injection(
                query,
                token_budget=max(budget, 1),
                scope=self.scope,
                counter=TokenizerCounter(self.tokenizer_fn),
                limit=self.recall_limit,
            )
            if injection.text:
                head.append(ChatMessage(role=MessageRole.SYSTEM, content=injection.text))
        budget = self.token_limit - initial_token_count - sum(map(self._tokens, head))
        return head + self._trim(tail, budget)

    def get_all(self) -> list[ChatMessage]:
        """Every message since the last reset, the system message first."""
        return [from_memento_message(m) for m in self.chat.window()]

    def put(self, message: ChatMessage) -> None:
        """Store one message. A bad one raises ``InvalidInput`` and stores nothing."""
        self.chat.append(to_memento_message(message))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store several messages: all of them, or (on an error) none."""
        self.chat.extend([to_memento_message(m) for m in messages])

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the memory's messages. They are all checked before anything changes."""
        converted = [to_memento_message(m) for m in messages]
        check_tool_results(converted)
        self.chat.reset()
        if converted:
            self.chat.extend(converted)

    def reset(self) -> None:
        """Empty the memory; the messages stay in the store's history."""
        self.chat.reset()

    def history(self) -> list[ChatMessage]:
        """Every message of the session ever stored, resets notwithstanding, oldest first."""
        return [from_memento_message(m) for m in self.chat.history()]

    def archive(self, summarizer: Summarizer | None = None) -> str:
        """Summarise the session into an episodic memory (recalled later); returns its id."""
        return self.chat.archive(summarizer)

    async def aget(
        self,
        input: str | ChatMessage | None = None,
        initial_token_count: int = 0,
        **kwargs: Any,
    ) -> list[ChatMessage]:
        """The async twin of ``get`` (the store is read in a worker thread)."""
        return await asyncio.to_thread(
            self.get, input=input, initial_token_count=initial_token_count, **kwargs
        )

    async def aget_all(self) -> list[ChatMessage]:
        """The async twin of ``get_all``."""
        return await asyncio.to_thread(self.get_all)

    async def aput(self, message: ChatMessage) -> None:
        """The async twin of ``put``."""
        await asyncio.to_thread(self.put, message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """The async twin of ``put_messages``."""
        await asyncio.to_thread(self.put_messages, messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """The async twin of ``set``."""
        await asyncio.to_thread(self.set, messages)

    async def areset(self) -> None:
        """The async twin of ``reset``."""
        await asyncio.to_thread(self.reset)

    async def ahistory(self) -> list[ChatMessage]:
        """The async twin of ``history``."""
        return await asyncio.to_thread(self.history)

    async def aarchive(self, summarizer: Summarizer | None = None) -> str:
        """The async twin of ``archive``."""
        return await asyncio.to_thread(self.archive, summarizer)

    def _tokens(self, message: ChatMessage) -> int:
        text = text_of(message)
        calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
        if calls:
            text += " " + " ".join(
                b.model_dump_json(include={"tool_name", "tool_kwargs"}) for b in calls
            )
        return len(self.tokenizer_fn(text)) if text else 0

    def _trim(self, messages: list[ChatMessage], budget: int) -> list[ChatMessage]:
        """``ChatMemoryBuffer``'s rule: drop the oldest until the rest fits, then keep dropping
        while the first is an assistant or tool message; the newest one alone if nothing fits."""
        sizes = [self._tokens(m) for m in messages]
        start = 0
        while start < len(messages) - 1 and sum(sizes[start:]) > budget:
            start += 1
            while start < len(messages) - 1 and messages[start].role in (
                MessageRole.ASSISTANT,
                MessageRole.TOOL,
            ):
                start += 1
        if sum(sizes[start:]) > budget:
            return messages[-1:]
        return messages[start:]


def _query_of(input: object) -> str | None:
    """The text ``get(input)`` recalls for: a string, a message's text, or the newest user
    message of a list. Any other input is ignored, as ``ChatMemoryBuffer.get`` ignores it."""
    if isinstance(input, str):
        return input
    if isinstance(input, ChatMessage):
        return text_of(input)
    if isinstance(input, (list, tuple)) and all(isinstance(m, ChatMessage) for m in input):
        return latest_user_text(list(input))
    return None
