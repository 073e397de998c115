"""The browse page's list: the last census's listing filtered, sorted and cut into pages here,
then only the page's memories read (``Memento.get_many``) and checked again as they are now.

The listing is as of the census (its age is on the page; a change made here has it recounted):
a memory changed since by another process shows as it is now, and one that no longer matches
the filters is left off its page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from memento_core import Census, Listed, Memento, MemoryItem, Scope
from memento_inspector.forms import PAGE_SIZE, BrowseQuery


@dataclass(frozen=True)
class Page:
    items: list[MemoryItem]
    total: int
    pages: int


def _state(item: MemoryItem, now: datetime) -> str:
    if item.deleted_at is not None:
        return "forgotten"
    if not item.pinned and item.expires_at is not None and item.expires_at <= now:
        return "expired"
    return "live"


def _keeps(query: BrowseQuery) -> Callable[[Listed | MemoryItem, str], bool]:
    """The query's filters, for a listed memory or one read (with its state)."""

    def keeps(one: Listed | MemoryItem, state: str) -> bool:
        user = one.user_id if isinstance(one, Listed) else one.scope.user_id
        return (
            (query.state == "all" or state == query.state)
            and (query.user is None or user == query.user)
            and (query.type is None or one.type.value == query.type)
            and (query.privacy is None or one.privacy.value == query.privacy)
            and (query.pinned is None or one.pinned == query.pinned)
            and all(tag in one.tags for tag in query.tags)
            and (query.since is None or one.created_at >= query.since)
            and (query.until is None or one.created_at <= query.until)
        )

    return keeps


def matching(census: Census, query: BrowseQuery) -> list[Listed]:
    keeps = _keeps(query)
    found = [one for one in census.listing if keeps(one, census.state_of(one))]
    if query.order == "newest":
        found.reverse()
    elif query.order == "importance":
        found.sort(key=lambda one: -one.importance)  # stable: newest first among equals
    return found


async def page(mem: Memento, scope: Scope | None, census: Census, query: BrowseQuery) -> Page:
    found = matching(census, query)
    start = (query.page - 1) * PAGE_SIZE
    chosen = [one.id for one in found[start : start + PAGE_SIZE]]
    items = await mem.aget_many(chosen, scope=scope, include_deleted=True)
    now = datetime.now(timezone.utc)
    keeps = _keeps(query)
    return Page(
        items=[item for item in items if keeps(item, _state(item, now))],
        total=len(found),
        pages=max(1, -(-len(found) // PAGE_SIZE)),
    )


def in_session(census: Census, session_id: str) -> Sequence[str]:
    """The ids of the listed memories of a chat session (its archived turns and summaries)."""
    return [one.id for one in census.listing if one.session_id == session_id]
