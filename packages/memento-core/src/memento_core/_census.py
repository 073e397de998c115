"""A census of the memories a viewer may see — counts, and a listing of every one of them by its
flat fields — read without any memory's text: what a person looking over a store sees.

For front ends that show a store (the inspector): they count, filter, sort and page over the
listing, then read only the memories on the page (``Memento.get_many``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from memento_core._engine import Engine
from memento_core._model import MemoryType, Privacy, Scope, as_utc, utcnow
from memento_core._storage import EPOCH, NEVER, from_micros, to_micros
from memento_core._visibility import visibility_clause


@dataclass(frozen=True, slots=True)
class Listed:
    """One memory in a census's listing: the fields a list of memories shows and filters on."""

    id: str
    user_id: str | None
    project_id: str | None
    session_id: str | None
    type: MemoryType
    privacy: Privacy
    importance: float
    pinned: bool
    tags: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    deleted_at: datetime | None


@dataclass(frozen=True)
class Census:
    """Counts over the memories a viewer may see (``Memento.census``); live memories unless
    said otherwise."""

    memories: int
    by_user: Mapping[str, int]
    """``""`` counts memories stored without a user; most memories first."""
    by_type: Mapping[str, int]
    by_privacy: Mapping[str, int]
    written_per_day: Mapping[date, int]
    """Memories by the UTC day of ``created_at``, oldest day first (forgotten ones too)."""
    pinned: int
    forgotten: int
    expired: int
    review_due: int
    expiring_within: int
    """Live, unpinned memories whose ``expires_at`` falls within the census's horizon."""
    at: datetime
    """When it was counted."""
    listing: tuple[Listed, ...] = field(default=(), repr=False, compare=False)
    """Every memory counted, forgotten and expired ones too, oldest first (``created_at``)."""

    def state_of(self, listed: Listed) -> str:
        """``live``, ``forgotten`` or ``expired``, as of the census."""
        if listed.deleted_at is not None:
            return "forgotten"
        if not listed.pinned and listed.expires_at is not None and listed.expires_at <= self.at:
            return "expired"
        return "live"


def _listed(memory_id: str, meta: Mapping[str, Any]) -> Listed:
    return Listed(
        id=memory_id,
        user_id=meta["user_id"] or None,
        project_id=meta["project_id"] or None,
        session_id=meta.get("session_id") or None,
        type=MemoryType(meta["type"]),
        privacy=Privacy(meta["privacy"]),
        importance=float(meta["importance"]),
        pinned=bool(meta["pinned"]),
        tags=tuple(meta.get("tags") or ()),
        created_at=from_micros(meta["created_at"]) or EPOCH,
        expires_at=from_micros(meta["expires_at"]),
        deleted_at=from_micros(meta["deleted_at"]),
    )


def census(
    engine: Engine,
    scope: Scope | None,
    *,
    now: datetime | None = None,
    horizon: timedelta = timedelta(days=7),
) -> Census:
    moment = as_utc(now, "now") if now else utcnow()
    now_us, until_us = to_micros(moment), to_micros(moment + horizon)
    engine.usage.flush()
    where = visibility_clause(scope) if scope is not None else None
    by_user: dict[str, int] = {}
    by_type: dict[str, int] = {}
    by_privacy: dict[str, int] = {}
    per_day: dict[date, int] = {}
    listing: list[Listed] = []
    live = pinned = forgotten = expired = due = expiring = 0
    for memory_id, meta in engine.store.item_fields_by_id(where):
        listed = _listed(memory_id, meta)
        listing.append(listed)
        day = listed.created_at.date()
        per_day[day] = per_day.get(day, 0) + 1
        if meta["deleted_at"]:
            forgotten += 1
            continue
        expires = meta["expires_at"]
        if not meta["pinned"] and expires <= now_us:
            expired += 1
            continue
        live += 1
        by_user[meta["user_id"]] = by_user.get(meta["user_id"], 0) + 1
        by_type[meta["type"]] = by_type.get(meta["type"], 0) + 1
        by_privacy[meta["privacy"]] = by_privacy.get(meta["privacy"], 0) + 1
        pinned += bool(meta["pinned"])
        due += 0 < meta.get("review_due_at", 0) <= now_us
        expiring += not meta["pinned"] and expires < min(until_us, NEVER)
    listing.sort(key=lambda one: (one.created_at, one.id))
    return Census(
        memories=live,
        by_user=dict(sorted(by_user.items(), key=lambda kv: (-kv[1], kv[0]))),
        by_type=dict(sorted(by_type.items())),
        by_privacy=dict(sorted(by_privacy.items())),
        written_per_day=dict(sorted(per_day.items())),
        pinned=pinned,
        forgotten=forgotten,
        expired=expired,
        review_due=due,
        expiring_within=expiring,
        at=moment,
        listing=tuple(listing),
    )
