"""What callers ask to remember, and the checks that turn it into a stored item."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memento_core._model import (
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
    as_utc,
    check_importance,
    check_json,
    check_tags,
    check_text,
    check_validity,
    content_key,
    parse_enum,
)
from memento_core._policies import Retention, RetentionPolicy, ReviewPolicy, check_duration
from memento_core.errors import InvalidInput
from memento_core.hotwords import check_hotword_variants

MAX_TITLE_CHARS = 500
MAX_ID_CHARS = 256


@dataclass(frozen=True)
class MemoryDraft:
    """What to remember; ``Memento.remember_many`` takes a list of these."""

    content: str
    type: MemoryType | str = MemoryType.EPISODIC
    scope: Scope = field(default_factory=Scope)
    title: str | None = None
    data: Mapping[str, Any] | None = None
    source: str = "chat"
    privacy: Privacy | str = Privacy.PRIVATE
    importance: float = 0.5
    pinned: bool = False
    tags: Sequence[str] = ()
    hotwords: Sequence[str] = ()
    created_at: datetime | None = None
    expires_at: datetime | None = None
    origin_trace: Any = None
    retention: Retention = None
    """None: the store's retention policy decides; ``FOREVER``: keep; a timedelta: this long."""
    valid_from: datetime | None = None
    """When what it says became true (default: when it is stored)."""
    valid_to: datetime | None = None
    """When what it says stopped being true (default: still true)."""
    id: str | None = None
    """A caller-chosen id. Storing a draft under the id of an existing memory replaces its
    content and fields, keeping its creation time, usage and review state. Without an id,
    the id is derived from the content and scope (so identical content is stored once)."""


def validate_draft(
    draft: MemoryDraft, now: datetime, retention: RetentionPolicy, review: ReviewPolicy
) -> MemoryItem:
    """Check every field of a draft and build the item it will be stored as.

    Retention counts from when the memory is stored, not from ``created_at``: imported
    history lives as long as anything else remembered today.
    """
    if not isinstance(draft, MemoryDraft):
        raise InvalidInput(f"remember_many takes MemoryDraft objects, got {type(draft).__name__}")
    content = check_text(draft.content, "content")
    if not isinstance(draft.scope, Scope):
        raise InvalidInput(f"scope must be a Scope, got {type(draft.scope).__name__}")
    if draft.title is not None:
        check_text(draft.title, "title", max_chars=MAX_TITLE_CHARS)
    if draft.data is not None and not isinstance(draft.data, Mapping):
        raise InvalidInput(f"data must be a dictionary, got {type(draft.data).__name__}")
    if not isinstance(draft.pinned, bool):
        raise InvalidInput(f"pinned must be true or false, got {draft.pinned!r}")
    if not isinstance(draft.source, str) or not draft.source.strip():
        raise InvalidInput(f"source must be a non-empty string, got {draft.source!r}")
    check_text(draft.source, "source", max_chars=MAX_TITLE_CHARS)
    hotwords = check_hotword_variants(draft.hotwords) if draft.hotwords else ()
    memory_type = parse_enum(MemoryType, draft.type, "memory type")
    tags = check_tags(draft.tags)
    importance = check_importance(draft.importance)
    if draft.retention is None:
        lifetime = retention.retention_for(memory_type, tags)
    else:
        lifetime = check_duration(draft.retention, "retention")
    expires_at = as_utc(draft.expires_at, "expires_at") if draft.expires_at is not None else None
    if expires_at is None and lifetime is not None:
        expires_at = now + lifetime
    if draft.id is not None:
        check_id(draft.id)
    valid_from, valid_to = check_validity(draft.valid_from, draft.valid_to)
    return MemoryItem(
        id=draft.id if draft.id is not None else content_key(content, draft.scope),
        content=content,
        type=memory_type,
        title=draft.title,
        data=check_json(dict(draft.data), "data") if draft.data is not None else None,
        source=draft.source,
        scope=draft.scope,
        privacy=parse_enum(Privacy, draft.privacy, "privacy"),
        importance=importance,
        pinned=bool(draft.pinned),
        tags=tags,
        hotwords=hotwords,
        created_at=as_utc(draft.created_at, "created_at") if draft.created_at is not None else now,
        expires_at=expires_at,
        origin_trace=check_json(draft.origin_trace, "origin_trace"),
        retention=lifetime,
        review_due_at=review.first_due(importance, now),
        valid_from=valid_from,
        valid_to=valid_to,
    )


def replacement(new: MemoryItem, old: MemoryItem, now: datetime) -> MemoryItem:
    """``new`` stored under ``old``'s id: its history (creation, usage, review) carries over."""
    return dataclasses.replace(
        new,
        created_at=old.created_at,
        last_accessed_at=old.last_accessed_at,
        access_count=old.access_count,
        feedback=old.feedback,
        review_due_at=old.review_due_at or new.review_due_at,
        review_step=old.review_step,
        consolidated_at=old.consolidated_at,
        superseded_by=old.superseded_by,
        follows=old.follows,
        updated_at=now,
    )


def check_id(memory_id: object) -> None:
    if not isinstance(memory_id, str) or not memory_id or len(memory_id) > MAX_ID_CHARS:
        raise InvalidInput(f"a memory id is a non-empty string, got {memory_id!r}")
