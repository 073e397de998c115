"""How chat sessions are stored: the ``<prefix>_messages`` records, and who owns each session.

One collection beside the memories holds every session's messages, the window marks of each
writer (one record per writer and session) and an owner record per session. A record's key is
(time in µs, writer id, writer counter), sortable as text; ``Chats`` issues them, one writer per
open store and process. ``SessionLog`` is what this process knows of one session's window,
shared by its ``ChatMemory`` objects: ``memento_core._chat`` keeps the window, and
``memento_core._chat_archive`` turns messages into episodic memories.

A session belongs to the user (with agent and project) whose scope first wrote to it
(``claim_session``); ``check_session_owner`` refuses any other user (``NotOwner``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from memento_core._engine import Engine
from memento_core._messages import Message
from memento_core._model import Scope, check_scope_value
from memento_core._storage import SideRecords, from_micros, to_micros
from memento_core.errors import InvalidScope, NotOwner

__all__ = [
    "NO_MARKS",
    "Chats",
    "SessionLog",
    "chats_of",
    "check_session",
    "check_session_owner",
    "claim_session",
    "decode",
    "encode",
    "erase_user_messages",
    "history",
    "key_ts",
    "query",
    "scope_fields",
    "scope_of",
    "session_owner",
]


NO_MARKS = {"start": "", "floor": "", "snap": ""}


class SessionLog:
    """What this process knows of one session's window; shared by its ``ChatMemory`` objects."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.loaded = False
        self.tail: list[Message] = []
        self.system: Message | None = None
        self.marks = dict(NO_MARKS)
        self.seen_ts = 0
        self.last_ts = 0
        self.last_key = ""
        self.pending: list[Message] | None = None
        self.owner: Scope | None = None  # the session's owner, once known


class Chats:
    """The messages collection of one open store, its writer identity, and its session logs."""

    def __init__(self, records: SideRecords, shared: bool) -> None:
        self.collection = records
        self.shared = shared
        self.sessions: weakref.WeakValueDictionary[str, SessionLog] = weakref.WeakValueDictionary()
        self.lock = threading.Lock()
        self.pid, self._writer, self.last_ts, self.counter = -1, "", 0, 0

    @property
    def writer(self) -> str:
        with self.lock:
            if self.pid != os.getpid():  # a forked child must not reuse its parent's keys
                self.pid, self._writer, self.counter = os.getpid(), os.urandom(6).hex(), 0
            return self._writer

    def next_key(self, seen_ts: int) -> tuple[str, int]:
        writer = self.writer
        with self.lock:
            self.last_ts = max(time.time_ns() // 1000, self.last_ts, seen_ts + 1)
            self.counter += 1
            return f"{self.last_ts:017d}.{writer}.{self.counter:010d}", self.last_ts

    def log(self, session_id: str) -> SessionLog:
        with self.lock:
            found = self.sessions.get(session_id)
            if found is None:
                found = self.sessions[session_id] = SessionLog()
            return found


def chats_of(engine: Engine) -> Chats:
    """The store's chats, one per store in this process (shared by its instances)."""
    return engine.shared_state(
        "chats", lambda: Chats(engine.store.side_records("messages"), engine.store.shared)
    )


def _owner_key(session_id: str) -> str:
    return f"owner:{session_id}"


def session_owner(engine: Engine, session_id: str) -> Scope | None:
    """The scope that owns a session (None: nobody has written to it yet). A session written
    before owners were recorded belongs to the user of its first message."""
    chats = chats_of(engine)
    log = chats.log(session_id)
    if log.owner is not None:
        return log.owner
    found = chats.collection.get([_owner_key(session_id)])
    meta: Mapping[str, Any] | None = found[0].metadata if found else None
    if meta is None:
        first = query(chats.collection, {"session": session_id, "kind": "message"})[:1]
        meta = first[0][1] if first else None
    if meta is None:
        return None
    owner = scope_of(meta)
    log.owner = owner
    return owner


def check_session_owner(engine: Engine, session_id: str, caller: Scope | None, action: str) -> None:
    """``NotOwner`` unless ``caller`` is the session's user (or absent: the application)."""
    if caller is None:
        return
    owner = session_owner(engine, session_id)
    if owner is not None and (owner.user_id or "") != (caller.user_id or ""):
        raise NotOwner(f"chat session {session_id!r}", action)


def claim_session(engine: Engine, session_id: str, scope: Scope, caller: Scope | None) -> None:
    """Record the session's owner on its first write; the first writer wins a race."""
    chats = chats_of(engine)
    owner_meta = {
        "session": session_id,
        "kind": "owner",
        "writer": chats.writer,
        "ts": 0,
        **scope_fields(scope),
    }
    if session_owner(engine, session_id) is None:
        chats.collection.add([_owner_key(session_id)], [""], [owner_meta])
    check_session_owner(engine, session_id, caller, "append to")


def history(engine: Engine, session_id: str, *, scope: Scope | None = None) -> list[Message]:
    """Every message of a session, evicted ones included, oldest first; with ``scope``, only
    the session's owner may read it (``NotOwner``)."""
    check_session(session_id)
    check_session_owner(engine, session_id, scope, "read")
    where = {"session": session_id, "kind": "message"}
    return [decode(*r) for r in query(chats_of(engine).collection, where)]


def erase_user_messages(engine: Engine, user_id: str) -> int:
    """Delete every chat message written in ``user_id``'s scope; returns how many.

    For ``Memento.erase_user``. The sessions' window marks written in that scope go too (they
    name the user); the episodic archives are the user's memories and go with them.
    """
    chats = chats_of(engine)
    found = query(chats.collection, {"user_id": user_id, "kind": "message"})
    marks = query(chats.collection, {"user_id": user_id, "kind": "mark"})
    owned = query(chats.collection, {"user_id": user_id, "kind": "owner"})
    chats.collection.delete(ids=[record[0] for record in [*found, *marks, *owned]])
    for session_id in {meta["session"] for _, meta, _ in [*found, *marks, *owned]}:
        log = chats.sessions.get(session_id)
        if log is not None:
            with log.lock:  # forget what this process held; the next call reloads
                log.loaded, log.tail, log.system, log.pending = False, [], None, None
                log.marks, log.last_key = dict(NO_MARKS), ""
                log.owner = None
    return len(found)


def check_session(session_id: object) -> None:
    if check_scope_value(session_id, "session_id") is None:
        raise InvalidScope("a chat needs a session_id")


def key_ts(key: str) -> int:
    return int(key[:17]) if key else 0


def encode(message: Message, scope: Scope) -> dict[str, Any]:
    form = message.to_openai()
    del form["content"]
    return {
        "kind": "message",
        "ts": key_ts(message.id or ""),
        "at": to_micros(message.created_at),
        "role": message.role.value,
        **scope_fields(scope),
        "doc": json.dumps(form, ensure_ascii=False),
    }


def decode(record_id: str, meta: Mapping[str, Any], document: str) -> Message:
    message = Message.from_openai({**json.loads(meta["doc"]), "content": document})
    said = from_micros(int(meta.get("at") or meta["ts"]))
    return dataclasses.replace(message, id=record_id, created_at=said)


def scope_fields(scope: Scope) -> dict[str, str]:
    return {
        "user_id": scope.user_id or "",
        "agent_id": scope.agent_id or "",
        "project_id": scope.project_id or "",
    }


def scope_of(meta: Mapping[str, Any]) -> Scope:
    return Scope(
        user_id=meta["user_id"] or None,
        agent_id=meta["agent_id"] or None,
        project_id=meta["project_id"] or None,
    )


def query(
    collection: SideRecords, where: Mapping[str, Any]
) -> list[tuple[str, Mapping[str, Any], str]]:
    """(id, metadata, document) of the records matching every clause, sorted by id (key)."""
    clauses = [{name: value} for name, value in where.items()]
    found = collection.find({"$and": clauses} if len(clauses) > 1 else clauses[0])
    return [(r.id, r.metadata, r.document) for r in found]
