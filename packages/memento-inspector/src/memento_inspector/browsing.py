"""The browse page's list: the last census's listing, as arrays, filtered, sorted and cut into
pages here; then only the page's memories are read (``Memento.get_many``) and checked again as
they are now.

The listing is as of the census (its age is on the page; a change made here has it recounted):
a memory changed since by another process shows as it is now, and one that no longer matches
the filters is left off its page. Arrays, built once per census, keep a page's filtering at
100,000 memories within milliseconds.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from memento_core import Census, MemoryItem, MemoryType, Privacy
from memento_inspector.forms import PAGE_SIZE, BrowseQuery

TYPES = {kind.value: n for n, kind in enumerate(MemoryType)}
PRIVACIES = {level.value: n for n, level in enumerate(Privacy)}
STATES = {"live": 0, "forgotten": 1, "expired": 2}


def restorable_only(census: Census, user: str) -> Census:
    """``census`` (of what ``user`` may see) without the forgotten memories of others: a
    forgotten memory is shown only to whoever may restore it, so counts agree with lists."""
    listing = tuple(one for one in census.listing if one.deleted_at is None or one.user_id == user)
    if len(listing) == len(census.listing):
        return census
    per_day = Counter(one.created_at.date() for one in listing)
    return replace(
        census,
        listing=listing,
        forgotten=sum(one.deleted_at is not None for one in listing),
        written_per_day=dict(sorted(per_day.items())),
    )


@dataclass(frozen=True)
class Page:
    items: list[MemoryItem]
    total: int
    pages: int


class Catalog:
    """A census's listing as arrays, oldest first."""

    def __init__(self, census: Census) -> None:
        listing = census.listing
        self.census = census
        self.ids = [one.id for one in listing]
        self.users: dict[str, int] = {}
        self.user = np.array(
            [self.users.setdefault(one.user_id or "", len(self.users)) for one in listing],
            dtype=np.int32,
        )
        self.type = np.array([TYPES[one.type.value] for one in listing], dtype=np.int8)
        self.privacy = np.array([PRIVACIES[one.privacy.value] for one in listing], dtype=np.int8)
        self.pinned = np.array([one.pinned for one in listing], dtype=bool)
        self.state = np.array([STATES[census.state_of(one)] for one in listing], dtype=np.int8)
        self.created = np.array([one.created_at.timestamp() for one in listing], dtype=np.float64)
        self.importance = np.array([one.importance for one in listing], dtype=np.float64)
        self.sessions = [one.session_id for one in listing]
        self._tags = [one.tags for one in listing]
        self._tag_masks: dict[str, Any] = {}
        self._lock = threading.Lock()

    def tagged(self, tag: str) -> Any:
        with self._lock:
            mask = self._tag_masks.get(tag)
            if mask is None:
                mask = np.array([tag in tags for tags in self._tags], dtype=bool)
                self._tag_masks[tag] = mask
            return mask

    def matching(self, query: BrowseQuery) -> Any:
        """The positions of the memories the query keeps, in its order."""
        keep = np.ones(len(self.ids), dtype=bool)
        if query.state != "all":
            keep &= self.state == STATES[query.state]
        if query.user is not None:
            keep &= self.user == self.users.get(query.user, -1)
        if query.type is not None:
            keep &= self.type == TYPES[query.type]
        if query.privacy is not None:
            keep &= self.privacy == PRIVACIES[query.privacy]
        if query.pinned is not None:
            keep &= self.pinned == query.pinned
        for tag in query.tags:
            keep &= self.tagged(tag)
        if query.since is not None:
            keep &= self.created >= query.since.timestamp()
        if query.until is not None:
            keep &= self.created <= query.until.timestamp()
        found = np.flatnonzero(keep)[::-1]  # newest first
        if query.order == "oldest":
            return found[::-1]
        if query.order == "importance":  # stable: newest first among equals
            return found[np.argsort(-self.importance[found], kind="stable")]
        return found

    def in_session(self, session_id: str) -> list[str]:
        """The ids of the memories of a chat session (its archived turns and summaries)."""
        return [i for i, s in zip(self.ids, self.sessions) if s == session_id]


def _state(item: MemoryItem, now: datetime) -> str:
    if item.deleted_at is not None:
        return "forgotten"
    if not item.pinned and item.expires_at is not None and item.expires_at <= now:
        return "expired"
    return "live"


def still_matches(item: MemoryItem, query: BrowseQuery, now: datetime) -> bool:
    """The query's filters on a memory as read now."""
    return (
        (query.state == "all" or _state(item, now) == query.state)
        and (query.user is None or item.scope.user_id == query.user)
        and (query.type is None or item.type.value == query.type)
        and (query.privacy is None or item.privacy.value == query.privacy)
        and (query.pinned is None or item.pinned == query.pinned)
        and all(tag in item.tags for tag in query.tags)
        and (query.since is None or item.created_at >= query.since)
        and (query.until is None or item.created_at <= query.until)
    )


async def page(
    read: Callable[[list[str]], Awaitable[list[MemoryItem]]], catalog: Catalog, query: BrowseQuery
) -> Page:
    """The query's page; ``read`` reads memories by id as the viewer may see them now."""
    found = catalog.matching(query)
    start = (query.page - 1) * PAGE_SIZE
    items = await read([catalog.ids[n] for n in found[start : start + PAGE_SIZE]])
    now = datetime.now(timezone.utc)
    return Page(
        items=[item for item in items if still_matches(item, query, now)],
        total=len(found),
        pages=max(1, -(-len(found) // PAGE_SIZE)),
    )
