"""Memory history: every change to a memory, kept beside it, and a memory as it stood then.

**What is written.** Creating a memory writes nothing here: its ``created`` event is the memory
record itself (``created_at``, its scope, and its first content — the current one with every
later edit undone). Feedback events and links are read from their own collections. Only the
rarer changes — update, pin, forget, restore, review, sleep's supersede and merge, unlink —
write one log record each to the side collection ``<prefix>_history`` (metadata only, an empty
document: nothing in it is full-text indexed).

**Commit.** A memory record holds ``history_head``: how many of its logged changes count. A
change writes its log record first (number ``head + 1``), then the change itself with the new
head in the same Chroma write. A process killed in between leaves a record no head reaches:
it is not history (``changes`` ignores it) and the next change overwrites it.

**Reading.** ``changes`` lists a memory's events in order for whoever may see the memory.
``states_at`` undoes a memory's changes made after a moment (recall's ``known_at``); recall
reads no history otherwise. Erasing a memory erases its log; erasing a user blanks them as the
actor of changes to memories they did not own.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memento_core._model import MemoryItem, MemoryType, Privacy, Scope, utcnow
from memento_core._storage import HISTORY_HEAD, SideRecords, from_micros, to_micros

if TYPE_CHECKING:
    from memento_core._engine import Engine

COLLECTION = "history"
OWNER = "owner"
"""The actor of a change made without a caller: the application, as the store's owner."""
WORKER = "worker"
"""The actor of a change made by maintenance: sleep's supersedes and merges, expiry."""
ERASED = "erased"
"""The actor of a change made by a user since erased (``erase_user``)."""

Actor = Scope | str


class ChangeKind(str, enum.Enum):
    CREATED = "created"
    DERIVED = "derived"
    """Created by sleep from episodes (``origin_trace`` names them)."""
    UPDATED = "updated"
    PINNED = "pinned"
    UNPINNED = "unpinned"
    FORGOTTEN = "forgotten"
    RESTORED = "restored"
    EXPIRED = "expired"
    FEEDBACK = "feedback"
    REVIEWED = "reviewed"
    SUPERSEDED = "superseded"
    MERGED = "merged"
    LINKED = "linked"
    UNLINKED = "unlinked"


@dataclass(frozen=True)
class MemoryChange:
    """One event in a memory's history (``Memento.changes``)."""

    memory_id: str
    kind: ChangeKind
    at: datetime
    actor: Actor
    """The caller's ``Scope`` (of feedback and links, the user who gave or made them: those
    records keep no more); ``"owner"`` (the application, no caller), ``"worker"``
    (maintenance) or ``"erased"`` (a user since erased)."""
    before: Mapping[str, Any] = field(default_factory=dict)
    """Fields as they were (JSON values: times as ISO 8601 strings)."""
    after: Mapping[str, Any] = field(default_factory=dict)
    """Fields as the change left them; ``created`` gives the first content and fields."""
    related: str | None = None
    """The other memory: the newer fact (superseded), the one merged into, a link's other end."""
    seq: int = 0
    """The change's number in the memory's log; 0 for events read from elsewhere."""


@dataclass(frozen=True)
class Entry:
    """A change about to be logged."""

    memory_id: str
    kind: ChangeKind
    before: Mapping[str, Any] = field(default_factory=dict)
    after: Mapping[str, Any] = field(default_factory=dict)
    related: str | None = None


# ------------------------------------------------------------------ field values

TIMES = ("expires_at", "valid_from", "valid_to", "deleted_at", "review_due_at")
EDITABLE = (
    "content", "title", "data", "tags", "hotwords", "importance", "privacy", "type",
    "expires_at", "valid_from", "valid_to",
)  # fmt: skip
"""The fields ``update`` changes, in the order a change lists them."""
UNDOABLE = {*EDITABLE, "pinned", "deleted_at", "superseded_by", "review_step", "review_due_at"}


def as_json(value: Any) -> Any:
    """A field's value as JSON (times as ISO 8601, enums as their value, tuples as lists)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, timedelta):
        return int(value.total_seconds())
    if isinstance(value, tuple):
        return list(value)
    return value


def _from_json(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in TIMES:
        return datetime.fromisoformat(value)
    if name in ("tags", "hotwords"):
        return tuple(value)
    if name == "type":
        return MemoryType(value)
    if name == "privacy":
        return Privacy(value)
    return value


def fields_of(item: MemoryItem, names: Iterable[str]) -> dict[str, Any]:
    return {name: as_json(getattr(item, name)) for name in names}


def diff(old: MemoryItem, new: MemoryItem, names: Iterable[str] = EDITABLE) -> Entry | None:
    """The ``updated`` entry from ``old`` to ``new``; None when no field changed."""
    changed = [n for n in names if getattr(old, n) != getattr(new, n)]
    if not changed:
        return None
    return Entry(old.id, ChangeKind.UPDATED, fields_of(old, changed), fields_of(new, changed))


def with_fields(item: MemoryItem, values: Mapping[str, Any]) -> MemoryItem:
    """``item`` with logged field values put back (``before`` of a change undoes it). Only
    memory fields are logged under their own names (a link's type is ``link_type``)."""
    chosen = {k: _from_json(k, v) for k, v in values.items() if k in UNDOABLE}
    for name in ("pinned", "review_step"):
        if name in chosen and chosen[name] is None:
            del chosen[name]
    return dataclasses.replace(item, **chosen)


def actor_of(caller: Scope | None, default: str = OWNER) -> Actor:
    return default if caller is None else caller


def _actor_json(actor: Actor) -> Any:
    return actor.as_dict() if isinstance(actor, Scope) else actor


def _actor_from_json(value: Any) -> Actor:
    return Scope(**value) if isinstance(value, dict) else str(value)


def _actor_user(actor: Actor) -> str:
    return (actor.user_id or "") if isinstance(actor, Scope) else ""


# ----------------------------------------------------------------------- writing


def _log(engine: Engine) -> SideRecords:
    return engine.store.side_records(COLLECTION)


def _record_id(memory_id: str, seq: int) -> str:
    return f"{memory_id}:{seq:08d}"


def log(engine: Engine, entries: Sequence[Entry], actor: Actor, at: datetime) -> dict[str, int]:
    """Write log records for ``entries`` (not yet history: the caller commits each memory's
    returned head in the write that makes the change). Call under the store lock."""
    heads = engine.store.history_heads(sorted({e.memory_id for e in entries}))
    ids, metadatas = [], []
    for entry in entries:
        heads[entry.memory_id] = seq = heads.get(entry.memory_id, 0) + 1
        ids.append(_record_id(entry.memory_id, seq))
        metadatas.append(_metadata(entry, seq, actor, at))
    _log(engine).put(ids, [""] * len(ids), metadatas)
    return heads


def _metadata(entry: Entry, seq: int, actor: Actor, at: datetime) -> dict[str, Any]:
    body = {
        "actor": _actor_json(actor),
        "before": dict(entry.before),
        "after": dict(entry.after),
    }
    return {
        "memory_id": entry.memory_id,
        "seq": seq,
        "kind": entry.kind.value,
        "at": to_micros(at),
        "actor_user": _actor_user(actor),
        "related": entry.related or "",
        "body": json.dumps(body, ensure_ascii=False, sort_keys=True),
    }


def set_fields(
    engine: Engine,
    changes: Sequence[tuple[Entry, Mapping[str, Any]]],
    actor: Actor,
    at: datetime | None = None,
) -> None:
    """Change flat fields of memories and log each change, committed in the same write."""
    if not changes:
        return
    moment = at or utcnow()
    with engine.store.lock:
        heads = log(engine, [entry for entry, _ in changes], actor, moment)
        ids = [entry.memory_id for entry, _ in changes]
        engine.store.set_fields(
            ids, [{**fields, HISTORY_HEAD: heads[i]} for i, (_, fields) in zip(ids, changes)]
        )


# ----------------------------------------------------------------------- reading


def _change(record_meta: Mapping[str, Any]) -> MemoryChange:
    body = json.loads(record_meta["body"])
    return MemoryChange(
        memory_id=str(record_meta["memory_id"]),
        kind=ChangeKind(record_meta["kind"]),
        at=from_micros(int(record_meta["at"])) or utcnow(),
        actor=_actor_from_json(body["actor"]),
        before=body["before"],
        after=body["after"],
        related=record_meta.get("related") or None,
        seq=int(record_meta["seq"]),
    )


def logged(engine: Engine, memory_ids: Sequence[str]) -> dict[str, list[MemoryChange]]:
    """The committed logged changes of these memories, by memory, oldest first."""
    heads = engine.store.history_heads(list(memory_ids))
    wanted = [i for i, head in heads.items() if head]
    found: dict[str, list[MemoryChange]] = {}
    if not wanted:
        return found
    for record in _log(engine).find({"memory_id": {"$in": wanted}}):
        change = _change(record.metadata)
        if change.seq <= heads[change.memory_id]:  # beyond the head: never committed
            found.setdefault(change.memory_id, []).append(change)
    for changes in found.values():
        changes.sort(key=lambda c: c.seq)
    return found


def first_version(item: MemoryItem, changes: Sequence[MemoryChange]) -> MemoryItem:
    """The memory as created: every logged change undone."""
    for change in reversed(changes):
        item = with_fields(item, change.before)
    return item


def changes(engine: Engine, item: MemoryItem, now: datetime) -> list[MemoryChange]:
    """Every event of ``item`` in order: its creation, logged changes, feedback, links made
    and its expiry (see ``Memento.changes``)."""
    own = logged(engine, [item.id]).get(item.id, [])
    first = first_version(item, own)
    derived = item.source == "consolidation"
    actor: Actor = WORKER if derived else (item.scope if item.scope != Scope() else OWNER)
    events = [
        MemoryChange(
            item.id,
            ChangeKind.DERIVED if derived else ChangeKind.CREATED,
            item.created_at,
            actor,
            after={**fields_of(first, EDITABLE), "scope": item.scope.as_dict()},
        ),
        *own,
    ]
    for event in engine.store.find_events([item.id]):
        events.append(
            MemoryChange(
                item.id,
                ChangeKind.FEEDBACK,
                event.at,
                Scope(user_id=event.by) if event.by else OWNER,
                after={"feedback": event.kind.value, "score": event.score, "note": event.note},
            )
        )
    for link in engine.store.links_touching([item.id]):
        events.append(
            _linked(
                item.id,
                link.source_id,
                link.target_id,
                link.type.value,
                link.created_at,
                link.made_by,
                link.note,
            )
        )
    for change in own:  # a link since removed was made once: its unlink record tells when
        if change.kind is ChangeKind.UNLINKED and change.before.get("linked_at"):
            before = change.before
            events.append(
                _linked(
                    item.id,
                    before["source_id"],
                    before["target_id"],
                    before["link_type"],
                    datetime.fromisoformat(before["linked_at"]),
                    before.get("made_by"),
                    before.get("note"),
                    related=change.related,
                )
            )
    if item.expires_at is not None and not item.pinned and item.expires_at <= now:
        events.append(MemoryChange(item.id, ChangeKind.EXPIRED, item.expires_at, WORKER))
    order = {ChangeKind.CREATED: 0, ChangeKind.DERIVED: 0}
    events.sort(key=lambda e: (e.at, order.get(e.kind, 1)))
    return events


def _linked(
    memory_id: str,
    source_id: str,
    target_id: str,
    link_type: str,
    at: datetime,
    made_by: str | None,
    note: str | None,
    *,
    related: str | None = None,
) -> MemoryChange:
    other = target_id if source_id == memory_id else source_id
    return MemoryChange(
        memory_id,
        ChangeKind.LINKED,
        at,
        Scope(user_id=made_by) if made_by else OWNER,
        after={
            "link_type": link_type,
            "source_id": source_id,
            "target_id": target_id,
            "note": note,
        },
        related=related if related is not None else other,
    )


def states_at(engine: Engine, items: Sequence[MemoryItem], moment: datetime) -> list[MemoryItem]:
    """These memories as stored at ``moment`` (transaction time): those stored later left
    out, every logged change made since undone (a memory forgotten since is back, a later
    edit is undone). Reads the log of these memories only."""
    known = [item for item in items if item.created_at <= moment]
    found = logged(engine, [item.id for item in known])
    states = []
    for item in known:
        for change in reversed(found.get(item.id, [])):
            if change.at <= moment:
                break
            item = with_fields(item, change.before)
        states.append(item)
    return states


# ---------------------------------------------------------------------- erasure


def erase(engine: Engine, memory_ids: Sequence[str]) -> None:
    """Delete the log of erased memories, and their ids from other memories' logs."""
    listed = sorted(set(memory_ids))
    if not listed:
        return
    records = _log(engine)
    records.delete(where={"memory_id": {"$in": listed}})
    _rewrite(records, {"related": {"$in": listed}}, related="")


def forget_actor(engine: Engine, user_id: str) -> None:
    """An erased user's name leaves the logs of memories they changed but did not own."""
    _rewrite(_log(engine), {"actor_user": user_id}, actor=ERASED)


def _rewrite(
    records: SideRecords, where: Mapping[str, Any], *, related: str | None = None,
    actor: str | None = None,
) -> None:  # fmt: skip
    found = records.find(where)
    if not found:
        return
    metadatas = []
    for record in found:
        meta = dict(record.metadata)
        body = json.loads(meta["body"])
        if related is not None:
            meta["related"] = related
            for side in ("before", "after"):  # an unlink record names both ends
                for key in ("source_id", "target_id"):
                    if body[side].get(key) == record.metadata["related"]:
                        body[side][key] = ""
        if actor is not None:
            body["actor"], meta["actor_user"] = actor, ""
            for side in ("before", "after"):
                if "made_by" in body[side]:
                    body[side]["made_by"] = None
        meta["body"] = json.dumps(body, ensure_ascii=False, sort_keys=True)
        metadatas.append(meta)
    records.put([r.id for r in found], [""] * len(found), metadatas)


# ------------------------------------------------------------------ export/import


def change_json(change: MemoryChange) -> dict[str, Any]:
    """A change as a JSON object (the CLI's, the MCP tool's and the export's)."""
    return {
        "memory_id": change.memory_id,
        "seq": change.seq,
        "change": change.kind.value,
        "at": change.at.isoformat(),
        "actor": _actor_json(change.actor),
        "before": dict(change.before),
        "after": dict(change.after),
        "related": change.related,
    }


def export_records(engine: Engine, memory_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The committed log records of these memories as export records, in a fixed order."""
    found = logged(engine, memory_ids)
    return [
        {"kind": "change", **change_json(change)}
        for memory_id in sorted(found)
        for change in found[memory_id]
    ]


def change_metadata(change: MemoryChange) -> dict[str, Any]:
    """The log record's metadata of an imported change."""
    entry = Entry(change.memory_id, change.kind, change.before, change.after, change.related)
    return _metadata(entry, change.seq, change.actor, change.at)


def import_records(engine: Engine, changes: Sequence[MemoryChange]) -> dict[str, dict[str, Any]]:
    """Write imported log records; returns each memory's head, to commit with the memory."""
    ids = [_record_id(c.memory_id, c.seq) for c in changes]
    metadatas = [change_metadata(c) for c in changes]
    records = _log(engine)
    for start in range(0, len(ids), 1_000):
        records.put(ids[start : start + 1_000], [""] * len(ids[start : start + 1_000]),
                    metadatas[start : start + 1_000])  # fmt: skip
    heads: dict[str, dict[str, Any]] = {}
    for change in changes:
        head = heads.setdefault(change.memory_id, {HISTORY_HEAD: 0})
        head[HISTORY_HEAD] = max(head[HISTORY_HEAD], change.seq)
    return heads


def parse_actor(value: Any) -> Actor:
    """An exported actor: a scope object or one of the named actors."""
    if isinstance(value, dict):
        return Scope(
            **{k: value.get(k) for k in ("user_id", "agent_id", "project_id", "session_id")}
        )
    if value in (OWNER, WORKER, ERASED):
        return str(value)
    raise ValueError(f"actor must be a scope object or one of owner, worker, erased; got {value!r}")
