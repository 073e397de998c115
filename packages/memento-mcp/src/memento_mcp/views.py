"""What the MCP tools and resources return: pydantic models, so clients get an output schema."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from memento_core import FeedbackEvent, Link, MemoryChange, MemoryItem, Recalled

SNIPPET_CHARS = 240


def memory_uri(memory_id: str) -> str:
    return f"memory://{memory_id}"


def snippet(text: str, width: int = SNIPPET_CHARS) -> str:
    """The text on one line, cut at ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def is_cut(text: str, width: int = SNIPPET_CHARS) -> bool:
    """Whether ``snippet`` cuts ``text`` short."""
    return len(" ".join(text.split())) > width


class LinkView(BaseModel):
    source_id: str
    type: str
    target_id: str
    created_at: datetime
    note: str | None = None

    @classmethod
    def of(cls, link: Link) -> LinkView:
        return cls(
            source_id=link.source_id,
            type=link.type.value,
            target_id=link.target_id,
            created_at=link.created_at,
            note=link.note,
        )


class ChangeView(BaseModel):
    """One event of a memory's history."""

    change: str
    at: datetime
    actor: str = Field(description="The user who acted, or owner / worker / erased.")
    before: dict[str, Any]
    after: dict[str, Any]
    related: str | None = None

    @classmethod
    def of(cls, change: MemoryChange) -> ChangeView:
        actor = change.actor if isinstance(change.actor, str) else change.actor.user_id or ""
        return cls(
            change=change.kind.value,
            at=change.at,
            actor=actor,
            before=dict(change.before),
            after=dict(change.after),
            related=change.related,
        )


class ChangeLog(BaseModel):
    memory_id: str
    changes: list[ChangeView]


class MemoryView(BaseModel):
    """One memory as ``memory://{id}`` shows it."""

    id: str
    uri: str
    type: str
    content: str
    title: str | None
    data: dict[str, Any] | None = Field(description="The memory's key-value payload, if any.")
    hotwords: list[str] = Field(description="Variants that trigger it in a stream, in order.")
    tags: list[str]
    importance: float
    pinned: bool
    forgotten: bool = Field(description="Soft-deleted: hidden from recall until restored.")
    privacy: str
    source: str
    user_id: str | None
    agent_id: str | None
    project_id: str | None
    session_id: str | None
    created_at: datetime
    updated_at: datetime | None
    last_accessed_at: datetime | None
    expires_at: datetime | None
    review_due_at: datetime | None
    access_count: int
    feedback: dict[str, int]
    superseded_by: str | None
    links: list[LinkView] = Field(default_factory=list)

    @classmethod
    def of(cls, item: MemoryItem, links: list[Link] | None = None) -> MemoryView:
        return cls(
            id=item.id,
            uri=memory_uri(item.id),
            type=item.type.value,
            content=item.content,
            title=item.title,
            data=dict(item.data) if item.data is not None else None,
            hotwords=list(item.hotwords),
            tags=list(item.tags),
            importance=item.importance,
            pinned=item.pinned,
            forgotten=item.deleted_at is not None,
            privacy=item.privacy.value,
            source=item.source,
            user_id=item.scope.user_id,
            agent_id=item.scope.agent_id,
            project_id=item.scope.project_id,
            session_id=item.scope.session_id,
            created_at=item.created_at,
            updated_at=item.updated_at,
            last_accessed_at=item.last_accessed_at,
            expires_at=item.expires_at,
            review_due_at=item.review_due_at,
            access_count=item.access_count,
            feedback=dict(item.feedback),
            superseded_by=item.superseded_by,
            links=[LinkView.of(link) for link in links or ()],
        )


class RecallHit(BaseModel):
    id: str
    uri: str
    snippet: str = Field(
        description=f"The content on one line, cut at {SNIPPET_CHARS} characters (see truncated)."
    )
    truncated: bool = Field(
        description="The snippet was cut: call get with the id for the whole memory."
    )
    content_chars: int = Field(description="Length of the whole content, in characters.")
    score: float
    recall_reason: str = Field(description="Why it came back: each weighted part of the score.")
    matched_terms: list[str]
    type: str
    tags: list[str]
    pinned: bool
    created_at: datetime

    @classmethod
    def of(cls, found: Recalled) -> RecallHit:
        item = found.item
        return cls(
            id=item.id,
            uri=memory_uri(item.id),
            snippet=snippet(item.content),
            truncated=is_cut(item.content),
            content_chars=len(item.content),
            score=round(found.score, 6),
            recall_reason=str(found.reason),
            matched_terms=list(found.reason.matched_terms),
            type=item.type.value,
            tags=list(item.tags),
            pinned=item.pinned,
            created_at=item.created_at,
        )


class RecallResult(BaseModel):
    query: str
    items: list[RecallHit]


class Remembered(BaseModel):
    memory_id: str
    uri: str


class PinState(BaseModel):
    memory_id: str
    pinned: bool


class Forgotten(BaseModel):
    memory_id: str
    hard: bool
    restorable: bool


class ThreadSummary(BaseModel):
    memory_id: str
    uri: str
    session_id: str = Field(description="The session summarised (new if messages were given).")
    summary: str


class Restored(BaseModel):
    memory_id: str
    restored: bool


class FeedbackView(BaseModel):
    memory_id: str
    kind: str
    score: float
    at: datetime

    @classmethod
    def of(cls, event: FeedbackEvent) -> FeedbackView:
        return cls(memory_id=event.memory_id, kind=event.kind.value, score=event.score, at=event.at)


class DueItem(BaseModel):
    id: str
    uri: str
    snippet: str
    review_due_at: datetime | None
    review_step: int

    @classmethod
    def of(cls, item: MemoryItem) -> DueItem:
        return cls(
            id=item.id,
            uri=memory_uri(item.id),
            snippet=snippet(item.content),
            review_due_at=item.review_due_at,
            review_step=item.review_step,
        )


class ReviewDue(BaseModel):
    items: list[DueItem]


class Reviewed(BaseModel):
    memory_id: str
    review_step: int
    next_review_at: datetime | None


class SleepSummary(BaseModel):
    considered: int = Field(description="Unconsolidated episodes looked at.")
    clusters: int
    written: list[str] = Field(description="Ids of the semantic facts written.")
    consolidated: list[str] = Field(description="Ids of the episodes folded into facts.")
    merged: list[list[str]] = Field(description="(newer, older) near-duplicate facts merged.")
    contradictions: list[list[str]] = Field(description="(newer, older) conflicting facts.")
