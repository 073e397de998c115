"""Records as Chroma stores them: flat metadata for ``where`` clauses, the rest as JSON.

Times are whole microseconds since the epoch (floats would lose the last digits); fields that
no ``where`` compares with their default are written only when set (see ``item_metadata``).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from memento_core._model import (
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
)
from memento_core.errors import InvalidInput

NEVER = 2**62
"""``expires_at`` of a memory that never expires (microseconds; far beyond any real date)."""
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
FEEDBACK_KEYS = tuple(f"fb_{kind.value}" for kind in FeedbackKind)
INT64 = range(-(2**63), 2**63)
"""The whole numbers Chroma's metadata holds; a larger one fails deep inside a write (or
is silently turned into a float)."""
_FIELD_NAMES = {
    "retention_s": "retention_seconds",
    **{k: f"feedback {k[3:]}" for k in FEEDBACK_KEYS},
}


def check_storable(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` as given, if Chroma can hold every value as it is: whole numbers within 64
    bits, finite floats. Otherwise ``InvalidInput`` naming the field."""
    for key, value in meta.items():
        for one in value if isinstance(value, list) else (value,):
            if isinstance(one, bool) or not isinstance(one, (int, float)):
                continue
            if isinstance(one, int) and one not in INT64:
                name = _FIELD_NAMES.get(key, key)
                raise InvalidInput(f"{name} is too large to store (64-bit whole numbers only)")
            if isinstance(one, float) and not math.isfinite(one):
                raise InvalidInput(f"{_FIELD_NAMES.get(key, key)} must be a finite number")
    return dict(meta)


def to_micros(value: datetime | None) -> int:
    """Exact integer microseconds since the epoch (floats would lose the last digits)."""
    if value is None:
        return 0
    return (value - EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime | None:
    if not value or value >= NEVER:
        return None
    return EPOCH + timedelta(microseconds=int(value))


def item_metadata(item: MemoryItem, text_hash: str, *, replacing: bool = False) -> dict[str, Any]:
    """Flat, filterable fields; the rest travels as one JSON string under ``doc``.

    Fields that ``where`` clauses compare with their default value (``deleted_at`` 0, say) are
    always written; the others only when they differ from it, since every key is a row in
    Chroma's metadata table and reads by id slow down as that table grows (a 107-id read at
    100k memories: 21 ms with 28 keys each, 6 ms with 5). ``item_from_record`` reads a missing
    field as its default. Chroma merges the metadata of an upsert into the stored one, so a
    ``replacing`` write gives those fields as None, which removes them.
    """
    meta: dict[str, Any] = {
        "type": item.type.value,
        "user_id": item.scope.user_id or "",
        "project_id": item.scope.project_id or "",
        "privacy": item.privacy.value,
        "importance": item.importance,
        "pinned": item.pinned,
        "created_at": to_micros(item.created_at),
        "last_accessed_at": to_micros(item.last_accessed_at),
        "expires_at": to_micros(item.expires_at) if item.expires_at else NEVER,
        "deleted_at": to_micros(item.deleted_at),
        "text_hash": text_hash,
        "review_due_at": to_micros(item.review_due_at),
        "consolidated_at": to_micros(item.consolidated_at),
        "doc": json.dumps(
            {
                "title": item.title,
                "data": item.data,
                "source": item.source,
                "tags": list(item.tags),
                "hotwords": list(item.hotwords),
                "origin_trace": item.origin_trace,
                # Exact: Chroma's float metadata may move a last digit; this one compares.
                "importance": item.importance,
            },
            ensure_ascii=False,
            sort_keys=True,
        ),
    }
    optional: dict[str, Any] = {
        "agent_id": item.scope.agent_id or "",
        "session_id": item.scope.session_id or "",
        "access_count": item.access_count,
        "has_hotwords": bool(item.hotwords),
        "updated_at": to_micros(item.updated_at),
        "retention_s": int(item.retention.total_seconds()) if item.retention else 0,
        "review_step": item.review_step,
        "superseded_by": item.superseded_by or "",
        "follows": item.follows or "",
        "tags": list(item.tags),
        "valid_from": to_micros(item.valid_from),
        "valid_to": to_micros(item.valid_to),
        **{key: int(item.feedback.get(key[3:], 0)) for key in FEEDBACK_KEYS},
    }
    for key, value in optional.items():
        if value:
            meta[key] = value
        elif replacing:
            meta[key] = None
    return check_storable(meta)


@functools.lru_cache(maxsize=4096)
def stored_scope(
    user_id: str | None, agent_id: str | None, project_id: str | None, session_id: str | None
) -> Scope:
    """A stored memory's scope. Many records share one, and building a ``Scope`` checks each
    value (a recall reads ~100 records): the frozen ``Scope`` is built once and shared."""
    return Scope(user_id=user_id, agent_id=agent_id, project_id=project_id, session_id=session_id)


def item_from_record(memory_id: str, content: str, meta: Mapping[str, Any]) -> MemoryItem:
    doc = json.loads(meta["doc"])
    return MemoryItem(
        id=memory_id,
        content=content,
        type=MemoryType(meta["type"]),
        title=doc["title"],
        data=doc["data"],
        source=doc["source"],
        scope=stored_scope(
            meta["user_id"] or None,
            meta.get("agent_id") or None,
            meta["project_id"] or None,
            meta.get("session_id") or None,
        ),
        privacy=Privacy(meta["privacy"]),
        importance=float(doc.get("importance", meta["importance"])),
        pinned=bool(meta["pinned"]),
        tags=tuple(doc["tags"]),
        hotwords=tuple(doc["hotwords"]),
        created_at=from_micros(meta["created_at"]) or EPOCH,
        last_accessed_at=from_micros(meta["last_accessed_at"]),
        expires_at=from_micros(meta["expires_at"]),
        access_count=int(meta.get("access_count", 0)),
        feedback={k[3:]: int(meta[k]) for k in FEEDBACK_KEYS if meta.get(k)},
        origin_trace=doc["origin_trace"],
        deleted_at=from_micros(meta["deleted_at"]),
        updated_at=from_micros(meta.get("updated_at", 0)),
        retention=timedelta(seconds=meta["retention_s"]) if meta.get("retention_s") else None,
        review_due_at=from_micros(meta.get("review_due_at", 0)),
        review_step=int(meta.get("review_step", 0)),
        consolidated_at=from_micros(meta.get("consolidated_at", 0)),
        superseded_by=meta.get("superseded_by") or None,
        follows=meta.get("follows") or None,
        valid_from=from_micros(meta.get("valid_from", 0)),
        valid_to=from_micros(meta.get("valid_to", 0)),
    )


def link_id(link: Link) -> str:
    """A link's record id: ``source:type:target``, ``%`` and ``:`` in the memory ids
    percent-escaped, so the two unescaped ``:`` part it whatever the ids hold (ids without
    them keep the id they always had)."""
    return f"{_escape(link.source_id)}:{link.type.value}:{_escape(link.target_id)}"


def legacy_link_id(link: Link) -> str:
    """The id a link got before the escaping (the same unless an id holds ``%`` or ``:``)."""
    return f"{link.source_id}:{link.type.value}:{link.target_id}"


def _escape(memory_id: str) -> str:
    return memory_id.replace("%", "%25").replace(":", "%3A")


def link_metadata(link: Link) -> dict[str, Any]:
    return check_storable(
        {
            "source_id": link.source_id,
            "target_id": link.target_id,
            "type": link.type.value,
            "created_at": to_micros(link.created_at),
            "made_by": link.made_by or "",
        }
    )


def event_metadata(event: FeedbackEvent) -> dict[str, Any]:
    return check_storable(
        {
            "memory_id": event.memory_id,
            "kind": event.kind.value,
            "score": event.score,
            "at": to_micros(event.at),
            **({"by": event.by} if event.by else {}),
        }
    )


def link_from_record(meta: Mapping[str, Any], note: str) -> Link:
    return Link(
        source_id=meta["source_id"],
        type=LinkType(meta["type"]),
        target_id=meta["target_id"],
        created_at=from_micros(meta["created_at"]) or EPOCH,
        note=note or None,
        made_by=meta.get("made_by") or None,
    )


def event_from_record(meta: Mapping[str, Any], note: str) -> FeedbackEvent:
    return FeedbackEvent(
        memory_id=meta["memory_id"],
        kind=FeedbackKind(meta["kind"]),
        score=float(meta["score"]),
        at=from_micros(meta["at"]) or EPOCH,
        note=note or None,
        by=meta.get("by") or None,
    )
