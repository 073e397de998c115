"""Typed links between memories, and feedback events about them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memento_core._drafts import MAX_TITLE_CHARS, check_id
from memento_core._model import (
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    check_text,
    parse_enum,
)
from memento_core._storage import link_id
from memento_core._usage import used_fields
from memento_core.errors import InvalidInput

if TYPE_CHECKING:
    from memento_core._engine import Engine


def link(
    engine: Engine, source_id: str, type: LinkType | str, target_id: str, *, note: str | None
) -> Link:
    """Record a typed link between two existing memories (idempotent: linking again returns
    the first link, its time and note included)."""
    engine.check_writable()
    link_type = parse_enum(LinkType, type, "link type")
    if source_id == target_id:
        raise InvalidInput("a memory cannot link to itself")
    if note is not None:
        check_text(note, "note", max_chars=MAX_TITLE_CHARS)
    engine.get(source_id, include_deleted=True)
    engine.get(target_id, include_deleted=True)
    created = Link(source_id, link_type, target_id, note=note)
    with engine.store.lock:
        existing = engine.store.link(link_id(created))
        if existing is not None:
            return existing
        engine.store.add_links([created])
    return created


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
) -> FeedbackEvent:
    """Record how a memory served; the counter feeds ranking's usage term."""
    engine.check_writable()
    feedback_kind = parse_enum(FeedbackKind, kind, "feedback kind")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or score != score:
        raise InvalidInput(f"score must be a number, got {score!r}")
    if note is not None:
        check_text(note, "note", max_chars=MAX_TITLE_CHARS)
    with engine.store.lock:
        item = engine.get(memory_id, include_deleted=True)
        event = FeedbackEvent(memory_id, feedback_kind, float(score), note=note)
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
