"""Working memory: a chat window per session, a view over the session's durable history.

Every message appended is written to the store (``<prefix>_messages``); eviction only moves the
window. The window is derived, never remembered: it is the current system message plus every
other message from the *window start* on, less the tool results whose call is no longer in it.
The start, the *system floor* (set by a reset) and the *archive mark* (evicted messages up to it
are in episodic memory) are persisted, one record per writer; each only ever moves forward, and
the largest across writers wins. So reopening the store rebuilds every window exactly.

Order: a message's key is (time in µs, writer id, writer counter), sortable as text. A writer
(one per open store) issues strictly increasing keys, and never a key below one it has seen, so
each writer's messages keep their order and a message follows everything its writer had read
when it was appended. Messages of different writers interleave by time. No message is lost: keys
never collide, and writes never overwrite.

Rules the window keeps: a token window counts the system message and stays within budget; a
message window holds at most N messages besides the system one. The oldest message leaves first
and takes its tool results with it. A message that cannot fit even alone (with the system
message, and with the tool call it answers) is refused with ``MessageTooLarge``; nothing is
stored. ``ttl`` after the last message the window expires (a reset, history kept).

Long-term memory: evicted messages are archived into episodic memory in chunks
(``WindowPolicy.snapshot_on_overflow``), and when a window ends (expired, reset, closed) what
is not archived yet is archived (``archive_on_end``; the worker does it for sessions nobody
touches again, ``archive_idle_sessions``). Archives are lossless: a memory per turn plus a
summary (``memento_core._chat_archive``). The archive mark says how far a session is archived.

The ``ChatMemory`` objects of one session in one process share its state; on a Chroma server
each call first picks up what other processes wrote. Open an embedded store once per process.

A session belongs to the user (with agent and project) whose scope first wrote to it: an owner
record is kept beside its messages (``memento_core._chat_records`` stores both). A chat opened
with another user's scope is refused (``NotOwner``) on every call — window, append, history,
reset, archive — so a session id is not a capability; summaries of a session (overflow and
archive) are the owner's memories, never the caller's. A chat opened without a scope is the
application acting as the store's owner.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from memento_core._chat_archive import archive_messages, archive_session
from memento_core._chat_records import (
    NO_MARKS,
    SessionLog,
    chats_of,
    check_session,
    check_session_owner,
    claim_session,
    decode,
    encode,
    history,
    key_ts,
    query,
    scope_fields,
    scope_of,
    session_owner,
)
from memento_core._engine import Engine
from memento_core._messages import Message, Role, as_message
from memento_core._model import Scope, as_utc, utcnow
from memento_core._storage import from_micros
from memento_core._summarize import ExtractiveSummarizer, Summarizer
from memento_core._tokens import TokenCounter, count_message, default_counter
from memento_core._twins import async_twin
from memento_core.errors import InvalidInput, InvalidScope


class _HasEngine(Protocol):
    """A ``Memento``: ``ChatMemory(mem, session_id)`` works as ``mem.chat(session_id)``."""

    _engine: Engine


__all__ = [
    "DEFAULT_TTL",
    "ChatMemory",
    "FromSession",
    "MessageTooLarge",
    "WindowPolicy",
    "archive_idle_sessions",
]

DEFAULT_TTL = timedelta(hours=48)
DEFAULT_MAX_TOKENS = 4_096
MAX_WINDOW = 10**9
"""A message window that never fills (the worker's view of a session it archives)."""
LOOKBACK_MICROS = 30_000_000
"""How far back a server sync looks for other writers' records: a write taking longer than
this to land shows in this process's windows only after a reopen (history always has it)."""


class MessageTooLarge(InvalidInput):
    """A message that cannot fit the window even alone; it was not stored."""

    def __init__(self, message: str, *, size: int, budget: int) -> None:
        super().__init__(message)
        self.size = size
        self.budget = budget


@dataclass(frozen=True)
class WindowPolicy:
    """How much a chat window holds, and what happens to what leaves it.

    ``max_tokens`` counts the system message; ``max_messages`` does not, unless
    ``count_system`` (LangChain4j's ``MessageWindowChatMemory`` counts it: ``max_messages=10``
    then holds the system message and 9 others). Neither given means a 4,096-token window.
    With ``snapshot_on_overflow``, evicted messages are archived into episodic memory once
    ``snapshot_chunk`` of them have gathered (tokens for a token window, else messages; default
    a quarter of the window). ``ttl=None`` never expires the window. With ``archive_on_end``,
    a window that expires, is reset or is closed first archives what is not archived yet
    (see ``archive_messages``).
    """

    max_messages: int | None = None
    max_tokens: int | None = None
    snapshot_on_overflow: bool = True
    snapshot_chunk: int | None = None
    ttl: timedelta | None = DEFAULT_TTL
    count_system: bool = False
    archive_on_end: bool = True

    def __post_init__(self) -> None:
        for name in ("max_messages", "max_tokens", "snapshot_chunk"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InvalidInput(f"{name} must be a whole number ≥ 1, got {value!r}")
        if self.count_system and self.max_messages is None:
            raise InvalidInput("count_system applies to a message window: give max_messages")
        if self.max_messages is None and self.max_tokens is None:
            object.__setattr__(self, "max_tokens", DEFAULT_MAX_TOKENS)
        if self.ttl is not None and (
            not isinstance(self.ttl, timedelta) or self.ttl <= timedelta(0)
        ):
            raise InvalidInput(f"ttl must be a positive timedelta or None, got {self.ttl!r}")

    @property
    def chunk(self) -> int:
        size = self.max_tokens if self.max_tokens is not None else self.max_messages
        return self.snapshot_chunk or max(1, (size or 1) // 4)


@dataclass(frozen=True)
class FromSession:
    """Initial memory: the last ``last`` messages of an earlier session (system left out)."""

    session_id: str
    last: int = 20

    def __post_init__(self) -> None:
        check_session(self.session_id)
        if isinstance(self.last, bool) or not isinstance(self.last, int) or self.last < 1:
            raise InvalidInput(f"last must be a whole number ≥ 1, got {self.last!r}")


class ChatMemory:
    """The working memory of one session: a window over its history (see the module docs).

    ``initial`` seeds a session that has no history yet: messages, or ``FromSession(...)``.
    Nothing touches the store until the first call, so building one never blocks.
    """

    def __init__(
        self,
        store: Engine | _HasEngine,
        session_id: str,
        *,
        scope: Scope | None = None,
        policy: WindowPolicy | None = None,
        initial: FromSession | Iterable[Message | Mapping[str, Any]] | None = None,
        counter: TokenCounter | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        check_session(session_id)
        if scope is not None and scope.session_id not in (None, session_id):
            raise InvalidScope(f"scope.session_id {scope.session_id!r} is not {session_id!r}")
        if policy is not None and not isinstance(policy, WindowPolicy):
            raise InvalidInput(f"policy must be a WindowPolicy, got {type(policy).__name__}")
        self.session_id = session_id
        self._caller = scope
        self.scope = (scope or Scope()).with_session(session_id)
        self.policy = policy or WindowPolicy()
        self.counter = counter or default_counter()
        self.summarizer = summarizer or ExtractiveSummarizer()
        if initial is None or isinstance(initial, FromSession):
            self._initial: FromSession | list[Message] | None = initial
        else:
            self._initial = [as_message(m) for m in initial]
        engine = store if isinstance(store, Engine) else store._engine
        self._engine = engine
        self._chats = chats_of(engine)
        self._log = self._chats.log(session_id)
        self._costs: dict[str, int] = {}

    def append(self, message: Message | Mapping[str, Any], *, no_save: bool = False) -> Message:
        """Add a message (or an OpenAI-style dict); returns it as stored, with ``id``.

        A system message replaces the current one, or is ignored if it says the same. A tool
        result must answer a tool call in the window, once. With ``no_save`` the message is
        checked and returned but written nowhere: the turn leaves no trace in history or memory.
        """
        return self.extend([message], no_save=no_save)[0]

    def extend(
        self, messages: Iterable[Message | Mapping[str, Any]], *, no_save: bool = False
    ) -> list[Message]:
        """Append several messages in order: all are stored, or (on an error) none."""
        checked = [as_message(m) for m in messages]
        if no_save:
            return checked
        with self._log.lock:
            self._ready("append to")
            return self._commit(checked)

    def set_system(self, content: str | Message) -> Message:
        """Set the system message (kept in every window, counted in a token budget)."""
        return self.append(content if isinstance(content, Message) else Message.system(content))

    def window(self, *, no_history: bool = False) -> list[Message]:
        """The current context, oldest first, the system message first. With ``no_history``
        only the system message: answer this turn without the session's earlier messages."""
        with self._log.lock:
            self._ready("read")
            system = [self._log.system] if self._log.system else []
            return system if no_history else system + _visible(self._log.tail)

    def tokens(self) -> int:
        """The window's size in tokens, per-message overhead included."""
        return sum(self._cost(m) for m in self.window())

    def history(self) -> list[Message]:
        """Every message ever appended to this session (evicted ones too), oldest first."""
        return history(self._engine, self.session_id, scope=self._caller)

    def reset(self, *, purge: bool = False) -> None:
        """Empty the window, system message included; history is kept, and what was not archived
        yet is archived first (``WindowPolicy.archive_on_end``). ``purge`` deletes the
        session's messages from the store for good, unarchived (episodic archives made of them
        earlier remain)."""
        log = self._log
        with log.lock:
            if not purge:
                self._ready("reset")
                self._reset()
                return
            check_session_owner(self._engine, self.session_id, self._caller, "purge")
            self._chats.collection.delete(where={"session": self.session_id})
            log.tail, log.system, log.pending, log.marks = [], None, [], dict(NO_MARKS)
            log.owner, log.loaded = None, True

    def archive(self, summarizer: Summarizer | None = None) -> str:
        """Archive the whole session into episodic memory and return its summary's id (see
        ``summarize_thread``); the window stays as it is."""
        chosen = summarizer or self.summarizer
        with self._log.lock:
            self._ready("archive")
            summary, last = archive_session(
                self._engine, self.session_id, chosen, self._owner_scope()
            )
            if last > self._log.marks["snap"]:
                self._write([], {"snap": last})
                self._log.pending = []
            return summary

    def close(self) -> str | None:
        """The session is over: archive what is not archived yet (with ``archive_on_end``)
        and empty the window. Returns the new archive's summary id, if one was written.
        History is kept; appending again starts a new window."""
        with self._log.lock:
            check_session_owner(self._engine, self.session_id, self._caller, "close")
            self._catch_up()
            return self._reset()

    aappend = async_twin(append)
    aextend = async_twin(extend)
    aset_system = async_twin(set_system)
    awindow = async_twin(window)
    atokens = async_twin(tokens)
    ahistory = async_twin(history)
    areset = async_twin(reset)
    aarchive = async_twin(archive)
    aclose = async_twin(close)

    # ------------------------------------------------------------------ window

    def _cost(self, message: Message) -> int:
        key = message.id or ""
        if key not in self._costs:
            self._costs[key] = count_message(message, self.counter)
        return self._costs[key]

    def _over(self, tail: list[Message], system: Message | None) -> bool:
        visible = _visible(tail)
        if self.policy.max_messages is not None and len(visible) > self._room(system):
            return True
        if self.policy.max_tokens is None:
            return False
        used = sum(self._cost(m) for m in visible) + (self._cost(system) if system else 0)
        return used > self.policy.max_tokens

    def _fit(
        self, tail: list[Message], system: Message | None
    ) -> tuple[list[Message], list[Message]]:
        """Drop the oldest message (and orphaned tool results before it) until the window fits."""
        evicted: list[Message] = []
        while tail and self._over(tail, system):
            first = next((n for n, m in enumerate(tail) if m.role is not Role.TOOL), len(tail))
            evicted += tail[: first + 1]
            tail = tail[first + 1 :]
        return tail, evicted

    def _commit(self, incoming: list[Message]) -> list[Message]:
        log = self._log
        tail, system, evicted = list(log.tail), log.system, []
        result: list[Message] = []
        fresh: list[Message] = []
        for message in incoming:
            key, ts = self._chats.next_key(log.seen_ts)
            # A caller's created_at (imported history) is when it was said; else it is now.
            said = as_utc(message.created_at, "created_at") if message.created_at else None
            message = dataclasses.replace(message, id=key, created_at=said or from_micros(ts))
            unit = [message]
            if message.role is Role.SYSTEM:
                if system is not None and message == system:
                    result.append(system)
                    continue
                system = message
            else:
                if message.role is Role.TOOL:
                    unit = _answered_call(message, _visible(tail)) + unit
                tail.append(message)
            tail, dropped = self._fit(tail, system)
            evicted += dropped
            kept = message.role is Role.SYSTEM or any(m.id == key for m in _visible(tail))
            if not kept or self._over([], system):
                raise self._too_large(unit, system)
            result.append(message)
            fresh.append(message)
        snap, pending = self._overflow(evicted)
        self._write(fresh, {"start": _start(tail, evicted, log.marks["start"]), "snap": snap})
        log.tail, log.system, log.pending = tail, system, pending
        if len(self._costs) > 2 * (len(tail) + len(pending or ())) + 64:  # forget evicted ones
            live = {m.id or "" for m in [*tail, *(pending or ()), *([system] if system else [])]}
            self._costs = {key: cost for key, cost in self._costs.items() if key in live}
        return result

    def _room(self, system: Message | None) -> int:
        """How many messages besides the system one a message window holds."""
        room = self.policy.max_messages or 0
        return room - 1 if self.policy.count_system and system is not None else room

    def _too_large(self, unit: list[Message], system: Message | None) -> MessageTooLarge:
        message, policy = unit[-1], self.policy
        if policy.max_messages is not None and len(unit) > self._room(system):
            beside = (
                " beside the system message" if self._room(system) < policy.max_messages else ""
            )
            what = "this tool result and the call it answers make" if len(unit) > 1 else "a"
            return MessageTooLarge(
                f"{what} {len(unit)} message{'s' if len(unit) > 1 else ''}; the window holds "
                f"{self._room(system)}{beside}",
                size=len(unit),
                budget=self._room(system),
            )
        size = sum(self._cost(m) for m in unit)
        budget = policy.max_tokens or 0
        what = " with the tool call it answers" if message.role is Role.TOOL else ""
        if system is not None and system is not message:
            what += f" beside a system message of {self._cost(system)}"
        return MessageTooLarge(
            f"a {message.role.value} message of {size} tokens{what} does not fit a {budget}-token"
            " window; shorten it or raise max_tokens",
            size=size,
            budget=budget,
        )

    def _owner_scope(self) -> Scope:
        """Whose archives this session's are: its owner's, never the caller's."""
        owner = session_owner(self._engine, self.session_id) or self.scope
        return owner.with_session(self.session_id)

    def _reset(self) -> str | None:
        """End the window: archive what is not archived yet (``archive_on_end``; else only the
        overflow waiting for a snapshot), then empty it. Returns the archive's summary id."""
        log = self._log
        summary = None
        if self.policy.archive_on_end:
            summary = self._archive_rest("end")
        else:
            self._overflow([], force=True)
        marker, _ = self._chats.next_key(log.seen_ts)  # after every record seen so far
        self._write([], {"start": marker, "floor": marker, "snap": marker})
        log.tail, log.system, log.pending = [], None, []
        return summary

    def _archive_rest(self, reason: str) -> str | None:
        """Archive every message after the archive mark; the mark moves past them."""
        log = self._log
        rest = self._read_range(log.marks["snap"], "~")
        if not rest:
            self._write([], {"snap": log.last_key})  # only system messages: nothing to keep
            return None
        try:
            summary: str | None = archive_messages(
                self._engine, self.summarizer, rest, self._owner_scope(), reason=reason
            )
        except InvalidInput:  # nothing with text: bare tool calls, empty results
            summary = None
        self._write([], {"snap": rest[-1].id or ""})
        log.pending = []
        return summary

    def _overflow(
        self, evicted: list[Message], *, force: bool = False
    ) -> tuple[str, list[Message] | None]:
        """Archive evicted messages into episodic memory once a chunk of them has gathered.

        Runs before the eviction is written: if archiving fails, nothing changed. Returns the
        new archive mark and the messages still waiting (to store after the write succeeds).
        """
        log = self._log
        if not self.policy.snapshot_on_overflow or not (evicted or force):
            return log.marks["snap"], log.pending
        pending = log.pending
        if pending is None:
            pending = self._read_range(log.marks["snap"], log.marks["start"])
        pending = pending + evicted
        size = len(pending)
        if self.policy.max_tokens is not None:
            size = sum(self._cost(m) for m in pending)
        if not pending or (size < self.policy.chunk and not force):
            return log.marks["snap"], pending
        # InvalidInput: the evicted messages hold no text (empty tool results).
        with contextlib.suppress(InvalidInput):
            archive_messages(
                self._engine, self.summarizer, pending, self._owner_scope(), reason="overflow"
            )
        return pending[-1].id or "", []

    # ----------------------------------------------------------------- storage

    def _ready(self, action: str) -> None:
        """Check the caller owns the session, load it once, catch up with other writers,
        expire it, keep it in policy."""
        check_session_owner(self._engine, self.session_id, self._caller, action)
        log = self._log
        self._expire(utcnow())
        tail, evicted = self._fit(log.tail, log.system)
        if evicted:
            snap, pending = self._overflow(evicted)
            self._write([], {"start": _start(tail, evicted, log.marks["start"]), "snap": snap})
            log.tail, log.pending = tail, pending

    def _expire(self, now: datetime) -> str | None:
        """Load or sync the session, and end its window if it has been idle past the ttl."""
        log = self._log
        self._catch_up()
        if self.policy.ttl is not None and (log.tail or log.system):
            idle = now - (from_micros(log.last_ts) or now)
            if idle > self.policy.ttl:
                return self._reset()
        return None

    def _catch_up(self) -> None:
        """Load the session once; on a server, pick up what other writers recorded since."""
        if not self._log.loaded:
            self._load()
        elif self._chats.shared:
            self._sync()

    def _load(self) -> None:
        log, sid, col = self._log, self.session_id, self._chats.collection
        for _, meta, _ in query(col, {"session": sid, "kind": "mark"}):
            self._take_marks(meta)
        self._take(query(col, {"session": sid, "kind": "message", "ts": _since(log, "start")}))
        self._take(query(col, {"session": sid, "role": "system", "ts": _since(log, "floor")}))
        if not (log.marks["start"] or log.tail or log.system) and self._initial is not None:
            self._seed(self._initial)  # a new session; loading it again is harmless if this fails
        log.loaded = True

    def _seed(self, seed: FromSession | list[Message]) -> None:
        """Start a new session with its initial memory (copies: the messages get new ids)."""
        if isinstance(seed, FromSession):
            where = {"session": seed.session_id, "kind": "message"}
            records = query(self._chats.collection, where)
            owner = self.scope.user_id
            earlier_owner = session_owner(self._engine, seed.session_id)
            if (owner and any(meta["user_id"] != owner for _, meta, _ in records)) or (
                self._caller is not None
                and earlier_owner is not None
                and earlier_owner.user_id != self._caller.user_id
            ):
                raise InvalidInput(f"session {seed.session_id!r} has no messages to start from")
            earlier = [m for m in (decode(*r) for r in records) if m.role is not Role.SYSTEM]
            seed = _visible(earlier[-seed.last :])
        if seed:
            self._commit([dataclasses.replace(m, id=None, created_at=None) for m in seed])

    def _sync(self) -> None:
        """Pick up what other writers (other processes) recorded since this one last looked."""
        log = self._log
        where = {
            "session": self.session_id,
            "writer": {"$ne": self._chats.writer},
            "ts": {"$gte": log.seen_ts - LOOKBACK_MICROS},
        }
        records = query(self._chats.collection, where)
        for _, meta, _ in records:
            if meta["kind"] == "mark":
                self._take_marks(meta)
        self._take(records)

    def _take_marks(self, meta: Mapping[str, Any]) -> None:
        log = self._log
        for name in log.marks:
            log.marks[name] = max(log.marks[name], str(meta[name]))
        log.seen_ts = max(log.seen_ts, int(meta["ts"]))

    def _take(self, records: list[tuple[str, Mapping[str, Any], str]]) -> None:
        """Merge message records into the window state, in key order."""
        log = self._log
        known = {m.id for m in log.tail} | {log.system.id if log.system else None}
        for record_id, meta, document in records:
            if meta["kind"] != "message" or record_id in known:
                continue
            log.seen_ts = max(log.seen_ts, int(meta["ts"]))
            log.last_ts = max(log.last_ts, int(meta["ts"]))
            log.last_key = max(log.last_key, record_id)
            message = decode(record_id, meta, document)
            if message.role is not Role.SYSTEM:
                bisect.insort(log.tail, message, key=lambda m: m.id or "")
            elif log.system is None or record_id > (log.system.id or ""):
                log.system = message
        log.tail = [m for m in log.tail if (m.id or "") >= log.marks["start"]]
        if log.system is not None and (log.system.id or "") < log.marks["floor"]:
            log.system = None

    def _read_range(self, after: str, before: str) -> list[Message]:
        where = {"session": self.session_id, "kind": "message", "ts": {"$gte": key_ts(after)}}
        found = [decode(*r) for r in query(self._chats.collection, where)]
        return [m for m in found if after < (m.id or "") < before and m.role is not Role.SYSTEM]

    def _write(self, messages: list[Message], marks: Mapping[str, str]) -> None:
        """One upsert: the new messages and, if a mark moved, this writer's mark record."""
        log, chats = self._log, self._chats
        base = {"session": self.session_id, "writer": chats.writer}
        ids = [m.id or "" for m in messages]
        documents = [m.content for m in messages]
        metadatas = [{**base, **encode(m, self.scope)} for m in messages]
        moved = {name: max(log.marks[name], marks.get(name, "")) for name in log.marks}
        if moved != log.marks or messages:
            _, ts = chats.next_key(log.seen_ts)
            last = max([log.last_key, *ids])
            ttl = self.policy.ttl.total_seconds() if self.policy.ttl is not None else 0.0
            ids.append(f"mark:{chats.writer}:{self.session_id}")
            documents.append("")
            # What the worker needs to archive a session nobody touches again (see
            # ``archive_idle_sessions``): its last message, ttl, owner, and whether it is open.
            metadatas.append(
                {
                    **base,
                    **scope_fields(self.scope),
                    "kind": "mark",
                    "ts": ts,
                    **moved,
                    "last": last,
                    "ttl": ttl,
                    "open": self.policy.archive_on_end and bool(ttl) and last > moved["snap"],
                }
            )
        if not ids:
            return
        if messages and log.owner is None:
            claim_session(self._engine, self.session_id, self.scope, self._caller)
        chats.collection.put(ids, documents, metadatas)
        log.marks = moved
        for record_id, meta in zip(ids, metadatas):
            log.seen_ts = max(log.seen_ts, meta["ts"])
            if meta["kind"] == "message":
                log.last_ts = max(log.last_ts, meta["ts"])
                log.last_key = max(log.last_key, record_id)


def archive_idle_sessions(engine: Engine, *, now: datetime | None = None) -> list[str]:
    """Archive the unarchived messages of every chat session idle past its window's ttl and
    end its window, as the next call on it would; returns the summary ids written.

    For the maintenance worker: a session nobody touches again still reaches episodic memory.
    Sessions whose window never expires (``ttl=None``) or that do not archive on end
    (``archive_on_end=False``) are left alone.
    """
    moment = as_utc(now, "now") if now else utcnow()
    chats = chats_of(engine)
    sessions: dict[str, list[Mapping[str, Any]]] = {}
    for _, meta, _ in query(chats.collection, {"kind": "mark", "open": True}):
        sessions.setdefault(str(meta["session"]), []).append(meta)
    written: list[str] = []
    for session_id, marks in sorted(sessions.items()):
        latest = max(marks, key=lambda meta: int(meta["ts"]))
        last = max(str(meta["last"]) for meta in marks)
        ttl = timedelta(seconds=float(latest["ttl"]))
        idle = moment - (from_micros(key_ts(last)) or moment)
        if not latest["ttl"] or idle <= ttl:
            continue
        memory = ChatMemory(
            engine,
            session_id,
            scope=scope_of(latest),
            policy=WindowPolicy(max_messages=MAX_WINDOW, ttl=ttl),
        )
        log = memory._log
        with log.lock:  # decided again under the lock: someone may have written since
            summary = memory._expire(moment)
            if summary is not None:
                written.append(summary)
            if log.last_key <= log.marks["snap"]:
                # Settled: later passes need not look at this session's marks again.
                where = {"session": session_id, "kind": "mark", "open": True}
                still = query(chats.collection, where)  # as now stored: the reset moved marks
                settled = [{**meta, "open": False} for _, meta, _ in still]
                chats.collection.put([r[0] for r in still], [""] * len(still), settled)
    return written


def _visible(tail: Sequence[Message]) -> list[Message]:
    """The tail without tool results whose call has left it."""
    calls: set[str] = set()
    out: list[Message] = []
    for message in tail:
        if message.role is Role.TOOL and message.tool_call_id not in calls:
            continue
        calls.update(call.id for call in message.tool_calls)
        out.append(message)
    return out


def _answered_call(result: Message, window: list[Message]) -> list[Message]:
    """The window from the assistant message whose call ``result`` answers; refuses orphans."""
    for n, message in enumerate(window):
        if any(call.id == result.tool_call_id for call in message.tool_calls):
            if any(m.tool_call_id == result.tool_call_id for m in window[n:]):
                raise InvalidInput(f"tool call {result.tool_call_id!r} already has a result")
            return window[n:]
    raise InvalidInput(
        f"a tool result for call {result.tool_call_id!r} answers no tool call in the window"
    )


def _start(tail: list[Message], evicted: list[Message], start: str) -> str:
    if tail:
        return tail[0].id or ""
    return f"{evicted[-1].id}~" if evicted else start


def _since(log: SessionLog, mark: str) -> dict[str, int]:
    return {"$gte": key_ts(log.marks[mark])}
