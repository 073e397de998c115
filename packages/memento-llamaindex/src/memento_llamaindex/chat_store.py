"""``MementoChatStore``: ``Memory``'s short-term queue kept in Memento, so it survives restarts.

``Memory`` keeps its FIFO queue of chat messages in an ``AsyncDBChatStore``; the default is an
in-memory SQLite database, gone when the process ends. This store keeps the queue in Memento's
working memory instead: a chat key is a Memento chat session, *active* messages are the
session's window, *archived* ones the rest of its history. So the queue lives next to the
long-term memories (one data directory, or one Chroma server shared by many processes), and
``Memento.erase_user`` erases it with them.

Memento's working memory is append-only history under a moving window, which shapes a few
operations: archiving moves the window's start (the session's system message stays active);
deleting some messages but not others (``delete_message``, ``delete_messages`` with a status,
``delete_oldest_messages``) rewrites the session's messages — checked first, so a bad request
changes nothing, but not atomic against a crash midway; messages can only be added as active;
and ``get_keys`` is not supported (Memento keeps no list of sessions).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, PrivateAttr
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from memento_core import ChatMemory, InvalidInput, Memento, Message, Role, WindowPolicy
from memento_llamaindex.chat_memory import UNBOUNDED
from memento_llamaindex.connection import MementoConnection
from memento_llamaindex.mapping import check_tool_results, from_memento_message, to_memento_message

T = TypeVar("T")


class MementoChatStore(MementoConnection, AsyncDBChatStore):
    """``Memory(…, chat_store=MementoChatStore(path=...))``: a durable short-term queue.

    Example::

        store = MementoChatStore(path="./memory", user_id="alice")
        memory = Memory.from_defaults(session_id="alice-1", chat_store=store,
                                      memory_blocks=[MementoMemoryBlock(path="./memory",
                                                                        user_id="alice")])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    _sessions: dict[str, ChatMemory] = PrivateAttr(default_factory=dict)

    def __init__(self, /, store: Memento | None = None, **data: Any) -> None:
        # Spelled out so that type checkers accept ``store=`` (pydantic synthesises the rest).
        super().__init__(store=store, **data)

    @classmethod
    def class_name(cls) -> str:
        return "MementoChatStore"

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """The messages of ``key`` with ``status`` (None: all), oldest first."""

        def read() -> list[ChatMessage]:
            chosen = self._select(key, status)
            start = offset or 0
            end = start + limit if limit is not None else None
            return [from_memento_message(m) for m in chosen[start:end]]

        return await _off_loop(read)

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        return await _off_loop(lambda: len(self._select(key, status)))

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        await self.add_messages(key, [message], status)

    async def add_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append messages to the queue: all of them, or (on an error) none."""
        _check_active(status)
        converted = [to_memento_message(m) for m in messages]
        await _off_loop(lambda: self._session(key).extend(converted))

    async def set_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Replace every message of ``key`` (checked before anything is deleted)."""
        _check_active(status)
        converted = [to_memento_message(m) for m in messages]
        check_tool_results(converted)
        await _off_loop(lambda: self._rewrite(key, [], converted))

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at position ``idx`` of ``get_messages(key, status=None)``."""

        def delete() -> ChatMessage | None:
            every = self._select(key, None)
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(every):
                return None
            doomed = every[idx].id
            archived, active = self._split(key)
            self._rewrite(
                key, [m for m in archived if m.id != doomed], [m for m in active if m.id != doomed]
            )
            return from_memento_message(every[idx])

        return await _off_loop(delete)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete the messages of ``key`` with ``status``; None deletes the session for good."""

        def delete() -> None:
            if status is None:
                self._session(key).reset(purge=True)
                return
            archived, active = self._split(key)
            if status == MessageStatus.ACTIVE:
                self._rewrite(key, archived, [])
            else:
                self._rewrite(key, [], active)

        await _off_loop(delete)

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the ``n`` oldest active messages and return them."""

        def delete() -> list[ChatMessage]:
            archived, active = self._split(key)
            self._rewrite(key, archived, active[n:])
            return [from_memento_message(m) for m in active[:n]]

        return await _off_loop(delete)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Move the window past the ``n`` oldest active messages and return those archived.

        The system message stays active (Memento keeps it in the window); tool results go with
        the tool call they answer."""

        def archive() -> list[ChatMessage]:
            chat = self._session(key)
            window = chat.window()
            system = window[0] if window and window[0].role is Role.SYSTEM else None
            rest = window[1:] if system is not None else window
            count = n - 1 if system is not None and n > 0 else n
            if count <= 0 or not rest:
                return []
            if count >= len(rest):
                chat.reset()
                if system is not None:
                    chat.set_system(system.content)
            else:
                # A narrower view of the same session moves its window start for every view.
                policy = WindowPolicy(
                    max_messages=len(rest) - count, snapshot_on_overflow=False, ttl=None
                )
                self.memento.chat(key, scope=self.scope, policy=policy).window()
            kept = {m.id for m in chat.window()}
            return [from_memento_message(m) for m in rest if m.id not in kept]

        return await _off_loop(archive)

    async def get_keys(self) -> list[str]:
        raise NotImplementedError(
            "MementoChatStore cannot list its keys: Memento keeps no index of chat sessions"
        )

    def _session(self, key: str) -> ChatMemory:
        found = self._sessions.get(key)
        if found is None:
            found = self._sessions[key] = self.memento.chat(key, scope=self.scope, policy=UNBOUNDED)
        return found

    def _split(self, key: str) -> tuple[list[Message], list[Message]]:
        """(archived, active) messages of ``key``, oldest first."""
        chat = self._session(key)
        active = chat.window()
        ids = {m.id for m in active}
        return [m for m in chat.history() if m.id not in ids], active

    def _select(self, key: str, status: MessageStatus | None) -> list[Message]:
        if status == MessageStatus.ACTIVE:
            return self._session(key).window()
        archived, active = self._split(key)
        if status == MessageStatus.ARCHIVED:
            return archived
        return sorted(archived + active, key=lambda m: m.id or "")

    def _rewrite(self, key: str, archived: list[Message], active: list[Message]) -> None:
        """Replace the session's messages: ``archived`` in its history, ``active`` in its window."""
        archived = [_fresh(m) for m in archived]
        active = [_fresh(m) for m in active]
        check_tool_results(archived)
        check_tool_results(active)
        chat = self._session(key)
        chat.reset(purge=True)
        if archived:
            chat.extend(archived)
            chat.reset()
        if active:
            chat.extend(active)


def _fresh(message: Message) -> Message:
    return dataclasses.replace(message, id=None, created_at=None)


def _check_active(status: MessageStatus) -> None:
    if status != MessageStatus.ACTIVE:
        raise InvalidInput(
            "MementoChatStore adds messages as active only: archived ones are those archived "
            "from the queue with archive_oldest_messages"
        )


async def _off_loop(work: Callable[[], T]) -> T:
    return await asyncio.to_thread(work)
