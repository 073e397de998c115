"""Long-term memory from chat: archiving a session's messages into episodic memories.

An archive is lossless: a memory per turn (tag ``chat-turn``, filler folded into the turn before
it) plus a summary linked ``derived_from`` each of them (``archive_messages``). Ids come from
content and scope, so archiving the same messages again writes nothing new. ``summarize_thread``
archives a whole stored session; the chat window (``memento_core._chat``) archives what it evicts
and what is left when it ends, and the worker archives sessions nobody touches again
(``archive_idle_sessions``). Summaries of a session are its owner's memories, never the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memento_core import _writing
from memento_core._chat_records import (
    chats_of,
    check_session,
    decode,
    query,
    scope_of,
    session_owner,
)
from memento_core._drafts import MemoryDraft
from memento_core._engine import Engine
from memento_core._messages import Message, Role
from memento_core._model import MAX_CONTENT_CHARS, Link, LinkType, MemoryType, Scope
from memento_core._summarize import ExtractiveSummarizer, Summarizer, is_filler, message_text
from memento_core.errors import InvalidInput

__all__ = ["TURN_TAG", "archive_messages", "archive_session", "summarize_thread"]


def summarize_thread(
    engine: Engine,
    session_id: str,
    *,
    summarizer: Summarizer | None = None,
    scope: Scope | None = None,
) -> str:
    """Archive the whole session into episodic memory (``archive_messages``); returns the id
    of its summary.

    Archiving an unchanged session again writes nothing and returns the same id (with the
    default, deterministic summarizer). ``scope`` defaults to the scope the session's messages
    were written with; a scope with a user may only archive a session all of whose messages
    were written by that user (any other is answered as if it were empty, so a session id
    leaks nothing).
    """
    return archive_session(engine, session_id, summarizer or ExtractiveSummarizer(), scope)[0]


def archive_session(
    engine: Engine, session_id: str, summarizer: Summarizer, scope: Scope | None
) -> tuple[str, str]:
    """``summarize_thread``, also returning the key of the last message archived."""
    check_session(session_id)
    records = query(chats_of(engine).collection, {"session": session_id, "kind": "message"})
    messages = [m for m in (decode(*r) for r in records) if m.role is not Role.SYSTEM]
    owner = scope.user_id if scope is not None else None
    session = session_owner(engine, session_id)
    if (
        not messages
        or (owner and any(meta["user_id"] != owner for _, meta, _ in records))
        or (scope is not None and session is not None and session.user_id != scope.user_id)
    ):
        raise InvalidInput(f"session {session_id!r} has no messages to summarise")
    if scope is None:
        scope = session or scope_of(records[-1][1])
    summary = archive_messages(
        engine, summarizer, messages, scope.with_session(session_id), reason="thread"
    )
    return summary, records[-1][0]


TURN_TAG = "chat-turn"
"""The tag of a memory holding one archived chat turn (with any filler folded into it)."""


def archive_messages(
    engine: Engine, summarizer: Summarizer, messages: list[Message], scope: Scope, *, reason: str
) -> str:
    """Remember ``messages`` losslessly as episodic memories; returns the summary's id.

    Each message with content becomes a memory of its own (tag ``chat-turn``), its text headed
    by when it was said and who said it, ``created_at`` its time, in the session's timeline in
    order; pure filler ("ok", "thanks", greetings) is folded into the turn before it rather than
    stored alone. Then one summary memory (tag ``chat-archive`` or ``chat-overflow``) is linked
    ``derived_from`` each of them, for browsing and injection. Ids are derived from content and
    scope, so archiving the same messages again writes nothing new.
    """
    sid = scope.session_id
    groups = _turn_groups(messages)
    turns = [
        MemoryDraft(
            content=text,
            scope=scope,
            type=MemoryType.EPISODIC,
            source="chat",
            tags=[TURN_TAG],
            created_at=group[0].created_at,
            origin_trace={
                "session_id": sid,
                "reason": reason,
                "messages": [m.id for m in group],
            },
        )
        for group in groups
        for text in _turn_texts(group)
    ]
    first, last = messages[0].created_at, messages[-1].created_at
    start, end = f"{first:%Y-%m-%d %H:%M:%S}", f"{last:%Y-%m-%d %H:%M:%S}"
    span = start if start == end else f"{start} to {end[11:] if end[:10] == start[:10] else end}"
    count = f"{len(messages)} message{'s' if len(messages) > 1 else ''}"
    summary = MemoryDraft(
        content=f"Chat {sid}, {span} UTC, {count}:\n{summarizer.summarize(messages)}",
        scope=scope,
        type=MemoryType.EPISODIC,
        title=_TITLES[reason].format(sid=sid),
        source="chat",
        tags=["chat-overflow" if reason == "overflow" else "chat-archive"],
        created_at=last,
        origin_trace={"session_id": sid, "reason": reason, "messages": [m.id for m in messages]},
    )
    # Two writes, turns first (the timeline's order): embedded together, every short turn
    # would be padded to the summary's length, several times the encoding work.
    turn_ids = _writing.remember_many(engine, turns)
    summary_id = _writing.remember_many(engine, [summary])[0]
    links = [
        Link(summary_id, LinkType.DERIVED_FROM, turn_id)
        for turn_id in dict.fromkeys(turn_ids)
        if turn_id != summary_id
    ]
    with engine.store.lock:
        engine.store.add_links(links)  # those stored already keep their time
    return summary_id


_TITLES = {
    "thread": "Chat session {sid}",
    "overflow": "Earlier in chat session {sid}",
    "end": "End of chat session {sid}",
}


def _turn_groups(messages: Sequence[Message]) -> list[list[Message]]:
    """Each message with content, with the filler said right after it (or, at the very start,
    right before it); a stretch of nothing but filler stays one group, so nothing is lost."""
    groups: list[list[Message]] = []
    leading: list[Message] = []
    for message in messages:
        text = message_text(message)
        if not text.strip():
            continue  # an empty tool result says nothing
        if is_filler(text):
            (groups[-1] if groups else leading).append(message)
            continue
        groups.append([*leading, message])
        leading = []
    if leading:
        groups.append(leading)
    return groups


def _turn_texts(group: Sequence[Message]) -> list[str]:
    """The group as text, ``[when] speaker: text`` per message, in pieces a memory can hold."""
    lines = []
    for message in group:
        speaker = message.name or message.role.value
        lines.append(f"[{_when(message.created_at)}] {speaker}: {message_text(message)}")
    text = "\n".join(lines)
    if len(text) <= MAX_CONTENT_CHARS:
        return [text]
    return [text[n : n + MAX_CONTENT_CHARS] for n in range(0, len(text), MAX_CONTENT_CHARS)]


def _when(moment: datetime | None) -> str:
    """``8 May 2023, 13:56``: words a question about a date will share ("May", "2023")."""
    if moment is None:
        return "unknown time"
    return f"{moment.day} {moment:%B %Y, %H:%M}"
