"""What a person browsing a store sees: a census of the memories a viewer may see, and pages of
them, read without building a ``MemoryItem`` for every memory.

A census reads only the flat metadata of the visible memories (no text, no JSON); a page reads
the ids of the matches and then only the memories on the page. Both are for front ends that
show a store (the inspector), where ``items`` would read every memory in full on each page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from memento_core._engine import Engine
from memento_core._filters import RecallFilter, filter_clauses
from memento_core._model import MemoryItem, Scope, as_utc, check_scope_value, utcnow
from memento_core._storage import NEVER, from_micros, to_micros
from memento_core._visibility import live_clause, visibility_clause
from memento_core.errors import InvalidFilter

STATES = ("live", "forgotten", "expired", "all")
"""Which memories a page lists: live ones (the default), soft-deleted ones, expired ones (not
deleted, not pinned, past ``expires_at``), or every one of them."""
MAX_PAGE = 500


@dataclass(frozen=True)
class Census:
    """Counts over the memories a viewer may see (``Memento.census``); live memories unless
    said otherwise."""

    memories: int
    by_user: Mapping[str, int]
    """``""`` counts memories stored without a user."""
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


@dataclass(frozen=True)
class MemoryPage:
    """One page of the memories a viewer may see (``Memento.browse``)."""

    items: list[MemoryItem]
    total: int
    """Memories matching, over all pages."""
    offset: int
    limit: int


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
    live = pinned = forgotten = expired = due = expiring = 0
    for meta in engine.store.item_fields(where):
        created = from_micros(meta["created_at"])
        if created is not None:
            per_day[created.date()] = per_day.get(created.date(), 0) + 1
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
    )


def browse(
    engine: Engine,
    scope: Scope | None,
    *,
    filter: RecallFilter | Mapping[str, Any] | None,
    user_id: str | None,
    state: str,
    pinned: bool | None,
    newest_first: bool,
    offset: int,
    limit: int,
    now: datetime | None,
) -> MemoryPage:
    if state not in STATES:
        raise InvalidFilter(f"unknown state {state!r}; expected one of {', '.join(STATES)}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidFilter(f"offset must be a whole number ≥ 0, got {offset!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidFilter(f"limit must be a whole number from 1 to {MAX_PAGE}, got {limit!r}")
    if pinned is not None and not isinstance(pinned, bool):
        raise InvalidFilter(f"pinned must be true, false or left out, got {pinned!r}")
    wanted = filter if isinstance(filter, RecallFilter) else RecallFilter.build(filter)
    moment = as_utc(now, "now") if now else utcnow()
    now_us = to_micros(moment)
    clauses: list[dict[str, Any]] = [] if scope is None else [visibility_clause(scope)]
    if user_id is not None:
        clauses.append({"user_id": check_scope_value(user_id, "user_id filter")})
    clauses.extend(filter_clauses(wanted))
    if state == "live":
        clauses.extend(live_clause(moment))
    elif state == "forgotten":
        clauses.append({"deleted_at": {"$gt": 0}})
    elif state == "expired":
        clauses.extend([{"deleted_at": 0}, {"pinned": False}, {"expires_at": {"$lte": now_us}}])
    if pinned is not None:
        clauses.append({"pinned": pinned})
    where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
    engine.usage.flush()
    ids = engine.store.item_ids_matching(where)  # in the order written
    if newest_first:
        ids.reverse()
    chosen = ids[offset : offset + limit]
    by_id = {item.id: item for item in engine.store.items_by_id(chosen)}
    return MemoryPage(
        items=[by_id[i] for i in chosen if i in by_id],
        total=len(ids),
        offset=offset,
        limit=limit,
    )
