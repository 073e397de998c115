"""Typed links between memories, and feedback events about them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memento_core import _history as history
from memento_core._drafts import MAX_TITLE_CHARS, check_id
from memento_core._model import (
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    Scope,
    check_text,
    finite_number,
    parse_enum,
)
from memento_core._ownership import caller_user, owned
from memento_core._storage import link_id
from memento_core._usage import used_fields
from memento_core.errors import InvalidInput

if TYPE_CHECKING:
    from memento_core._engine import Engine

MAX_SCORE = 1e6
"""Feedback scores beyond this are refused (an int too large for a float would overflow)."""


def link(
    engine: Engine,
    source_id: str,
    type: LinkType | str,
    target_id: str,
    *,
    note: str | None,
    caller: Scope | None = None,
) -> Link:
    """Record a typed link between two existing memories (idempotent: linking again returns
    the first link, its time and note included). With a caller, both ends must be memories it
    may see, and the link records its user as ``made_by``. Linking changes neither memory, so
    another user's shared memory may be linked; what an erasure takes along is decided by
    ownership (``_lifecycle.erase``), never by links."""
    engine.check_writable()
    link_type = parse_enum(LinkType, type, "link type")
    if source_id == target_id:
        raise InvalidInput("a memory cannot link to itself")
    if note is not None:
        check_text(note, "note", max_chars=MAX_TITLE_CHARS)
    engine.get(source_id, scope=caller, include_deleted=True)
    engine.get(target_id, scope=caller, include_deleted=True)
    made_by = None if caller is None else caller_user(caller) or None
    created = Link(source_id, link_type, target_id, note=note, made_by=made_by)
    with engine.store.lock:
        existing = engine.store.link(created)
        if existing is not None:
            return existing
        engine.store.add_links([created])
    return created


def unlink(
    engine: Engine,
    source_id: str,
    type: LinkType | str,
    target_id: str,
    *,
    caller: Scope | None = None,
) -> None:
    """Remove a link, logging ``unlinked`` in both memories' histories. With a caller, only a
    link it made or one from a memory it owns; an unknown link raises ``InvalidInput``."""
    engine.check_writable()
    link_type = parse_enum(LinkType, type, "link type")
    source = engine.get(source_id, scope=caller, include_deleted=True)
    engine.get(target_id, scope=caller, include_deleted=True)
    with engine.store.lock:
        found = engine.store.link(Link(source_id, link_type, target_id))
        if found is None:
            raise InvalidInput(
                f"there is no {link_type.value} link from {source_id} to {target_id}"
            )
        if caller is not None and found.made_by != (caller_user(caller) or None):
            owned(engine, source.id, caller, "unlink")
        before = {
            "source_id": source_id,
            "target_id": target_id,
            "link_type": link_type.value,
            "linked_at": found.created_at.isoformat(),
            "made_by": found.made_by,
            "note": found.note,
        }
        entries: list[tuple[history.Entry, dict[str, Any]]] = [
            (history.Entry(source_id, history.ChangeKind.UNLINKED, before, {}, target_id), {}),
            (history.Entry(target_id, history.ChangeKind.UNLINKED, before, {}, source_id), {}),
        ]
        # Logged and committed first: a crash before the delete leaves the link, and
        # unlinking again finishes the job.
        history.set_fields(engine, entries, history.actor_of(caller))
        engine.store.delete_links([found])


def links(engine: Engine, memory_id: str) -> list[Link]:
    """Every link from or to this memory, oldest first."""
    check_id(memory_id)
    found = engine.store.links_touching([memory_id])
    return sorted(found, key=lambda one: (one.created_at, link_id(one)))


def feedback(
    engine: Engine,
    memory_id: str,
    kind: FeedbackKind | str,
    *,
    score: float,
    note: str | None,
    caller: Scope | None = None,
) -> FeedbackEvent:
    """Record how a memory served; the counter feeds ranking's usage term. Feedback changes the
    memory's counters, so a caller gives it only on memories it owns."""
    engine.check_writable()
    feedback_kind = parse_enum(FeedbackKind, kind, "feedback kind")
    number = finite_number(score)
    if number is None or abs(number) > MAX_SCORE:
        raise InvalidInput(f"score must be a finite number within ±{MAX_SCORE:g}, got {score!r}")
    if note is not None:
        check_text(note, "note", max_chars=MAX_TITLE_CHARS)
    with engine.store.lock:
        item = owned(engine, memory_id, caller, "give feedback on")
        by = None if caller is None else caller_user(caller) or None
        event = FeedbackEvent(memory_id, feedback_kind, number, note=note, by=by)
        engine.store.add_event(event)
        count = item.feedback.get(feedback_kind.value, 0) + 1
        engine.store.set_fields(
            [memory_id],
            {**used_fields(item, event.at, uses=0), f"fb_{feedback_kind.value}": count},
        )
    return event


def feedback_events(engine: Engine, memory_id: str) -> list[FeedbackEvent]:
    check_id(memory_id)
    return sorted(engine.store.find_events([memory_id]), key=lambda e: (e.at, e.kind.value))
