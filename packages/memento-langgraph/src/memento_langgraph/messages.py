"""LangChain messages ↔ Memento's chat messages, and archiving a thread into episodic memory.

Mapping: ``HumanMessage`` → user, ``AIMessage`` → assistant (with its tool calls),
``ToolMessage`` → tool, ``SystemMessage`` → system; a ``ChatMessage`` by its role. Only text is
kept (list content keeps its text parts). Messages Memento would refuse are left out rather than
failing the thread: empty ones, tool calls without an id, and tool results that answer no
earlier call. The system messages the recall node injects (ids starting ``INJECTED_PREFIX``)
are derived from memory and never archived back into it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

from memento_core import (
    ChatMemory,
    InvalidInput,
    Memento,
    Message,
    Role,
    Scope,
    Summarizer,
    ToolCall,
    WindowPolicy,
)

__all__ = ["INJECTED_PREFIX", "archive_messages", "to_memento_messages"]

INJECTED_PREFIX = "memento-memories-"
"""Id prefix of the system messages ``recall_node`` adds to a graph's messages."""
ARCHIVE_TAG = "chat-archive"
"""The tag core's ``summarize_thread`` gives a thread's archive."""
ARCHIVE_WINDOW = 1_000_000
"""Messages the archiving chat window holds: all of them, so nothing is summarised piecemeal."""


def as_langchain(messages: Any) -> list[BaseMessage]:
    """A graph's ``messages`` value (messages, dicts, tuples) as LangChain messages."""
    if not messages:
        return []
    return list(convert_to_messages(messages))


def to_memento_messages(messages: Iterable[BaseMessage]) -> list[Message]:
    """The conversation in Memento's types, oldest first (see the module docstring)."""
    out: list[Message] = []
    open_calls: set[str] = set()
    for message in messages:
        if (message.id or "").startswith(INJECTED_PREFIX):
            continue
        converted = _convert(message)
        if converted is None:
            continue
        if converted.role is Role.TOOL:
            if converted.tool_call_id not in open_calls:
                continue
            open_calls.discard(converted.tool_call_id or "")
        open_calls.update(call.id for call in converted.tool_calls)
        out.append(converted)
    return out


def _convert(message: BaseMessage) -> Message | None:
    text = str(message.text)
    name = message.name if isinstance(message.name, str) and message.name.strip() else None
    try:
        if isinstance(message, HumanMessage):
            return Message(Role.USER, text, name=name) if text.strip() else None
        if isinstance(message, SystemMessage):
            return Message.system(text) if text.strip() else None
        if isinstance(message, AIMessage):
            calls = [
                ToolCall(call_id, call["name"], call.get("args") or {})
                for call in message.tool_calls
                if (call_id := call.get("id"))
            ]
            if not text.strip() and not calls:
                return None
            return Message(Role.ASSISTANT, text, tool_calls=tuple(calls), name=name)
        if isinstance(message, ToolMessage):
            return Message.tool(text, tool_call_id=message.tool_call_id)
        if isinstance(message, ChatMessage) and message.role in ("user", "assistant", "system"):
            return Message(Role(message.role), text, name=name) if text.strip() else None
    except InvalidInput:
        return None  # a name or id Memento cannot keep: leave this one message out
    return None


def archive_messages(
    mem: Memento,
    thread_id: str,
    messages: Sequence[BaseMessage],
    *,
    scope: Scope,
    summarizer: Summarizer | None = None,
) -> str | None:
    """Record a thread's messages as the history of Memento session ``thread_id`` and archive
    the session into an episodic memory (core's ``ChatMemory.archive``); returns its id, or
    None when the thread holds no conversation.

    Only messages the recorded history does not already end with are appended, so archiving a
    thread again (or a thread whose state was trimmed from the front) records nothing twice.
    A thread has one live archive: archiving it again after it grew retires the earlier one.
    """
    conversation = [m for m in to_memento_messages(messages) if m.role is not Role.SYSTEM]
    if not conversation:
        return None
    chat = ChatMemory(
        mem,
        thread_id,
        scope=scope,
        policy=WindowPolicy(max_messages=ARCHIVE_WINDOW, snapshot_on_overflow=False, ttl=None),
        summarizer=summarizer,
    )
    recorded = [m for m in chat.history() if m.role is not Role.SYSTEM]
    chat.extend(conversation[_overlap(recorded, conversation) :])
    archive_id = chat.archive()
    _retire_earlier_archives(mem, thread_id, scope, keep=archive_id)
    return archive_id


def _retire_earlier_archives(mem: Memento, thread_id: str, scope: Scope, *, keep: str) -> None:
    """Soft-forget the thread's earlier archives: the new one summarises the whole history they
    summarised, and more (they stay restorable with ``Memento.restore``)."""
    viewer = Scope(user_id=scope.user_id) if scope.user_id else None
    for item in mem.items(scope=viewer, include_deleted=False):
        trace = item.origin_trace
        if (
            item.id != keep
            and ARCHIVE_TAG in item.tags
            and isinstance(trace, Mapping)
            and trace.get("reason") == "thread"
            and trace.get("session_id") == thread_id
        ):
            mem.forget(item.id)


def _overlap(recorded: Sequence[Message], conversation: Sequence[Message]) -> int:
    """The longest run that ends ``recorded`` and starts ``conversation``."""
    for size in range(min(len(recorded), len(conversation)), 0, -1):
        if list(recorded[len(recorded) - size :]) == list(conversation[:size]):
            return size
    return 0
