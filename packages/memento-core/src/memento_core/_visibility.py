"""Who may see a memory, and whether it is live: the rules, written once.

Visibility is fail-closed: a viewer sees public memories, its own user's memories, and team
memories of its own project — nothing else, whatever a filter says. A viewer without a user is
the store's anonymous user: it sees memories stored without a user (so a single-user app needs
no scopes at all) and never any user's private ones. A memory is live when it is not
soft-deleted and not expired, unless pinned (pinned memories never expire).

The rule has three encodings, for three places it is decided: on a memory read by id
(``is_visible``), as a store query (``visibility_clause``) and over the candidate index's arrays
(``visible_mask``). A property test holds them to the same answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memento_core._model import MemoryItem, Privacy, Scope
from memento_core._storage import to_micros
from memento_core.errors import InvalidScope

PRIVACY_CODES = {Privacy.PRIVATE.value: 0, Privacy.TEAM.value: 1, Privacy.PUBLIC.value: 2}
"""How the candidate index stores privacy (one byte a memory)."""


@dataclass(frozen=True)
class Visibility:
    """Who may see a memory: its owner, its project and its privacy (``""`` for none)."""

    user_id: str
    project_id: str
    privacy: str


def visibility_of(item: MemoryItem) -> Visibility:
    return Visibility(item.scope.user_id or "", item.scope.project_id or "", item.privacy.value)


def check_viewer(viewer: object) -> Scope:
    """A viewer must be a ``Scope``: a dict here would be read as field names, not a viewer."""
    if not isinstance(viewer, Scope):
        raise InvalidScope(f"scope must be a Scope, got {type(viewer).__name__}: {viewer!r}")
    return viewer


def may_see(viewer: Scope, owner: Visibility) -> bool:
    """The rule itself: public, or the viewer's own user, or a team memory of its project."""
    if owner.privacy == Privacy.PUBLIC.value:
        return True
    if owner.user_id == (viewer.user_id or ""):
        return True
    return (
        owner.privacy == Privacy.TEAM.value
        and bool(viewer.project_id)
        and owner.project_id == viewer.project_id
    )


def is_visible(item: MemoryItem, viewer: Scope) -> bool:
    """``may_see`` decided on a memory read by id."""
    return may_see(viewer, visibility_of(item))


def visibility_clause(viewer: Scope) -> dict[str, Any]:
    """``may_see`` as a store ``where`` clause."""
    check_viewer(viewer)
    visible: list[dict[str, Any]] = [{"privacy": Privacy.PUBLIC.value}]
    visible.append({"user_id": viewer.user_id or ""})
    if viewer.project_id:
        visible.append(
            {"$and": [{"privacy": Privacy.TEAM.value}, {"project_id": viewer.project_id}]}
        )
    return {"$or": visible}


def visible_mask(
    privacy: Any,
    owners: Any,
    projects: Any,
    *,
    viewer_owner: int | None,
    viewer_project: int | None,
) -> Any:
    """``may_see`` over the candidate index's arrays (numpy): ``privacy`` by ``PRIVACY_CODES``,
    owners and projects as codes; ``viewer_owner`` / ``viewer_project`` are the viewer's user
    and project codes, None when no memory has them (the anonymous user is the code of "")."""
    visible = privacy == PRIVACY_CODES[Privacy.PUBLIC.value]
    if viewer_owner is not None:
        visible |= owners == viewer_owner
    if viewer_project is not None:
        visible |= (privacy == PRIVACY_CODES[Privacy.TEAM.value]) & (projects == viewer_project)
    return visible


def is_live(item: MemoryItem, now: datetime) -> bool:
    if item.deleted_at is not None:
        return False
    return item.pinned or item.expires_at is None or item.expires_at > now


def live_clause(now: datetime) -> list[dict[str, Any]]:
    """``is_live`` as store ``where`` clauses (to be joined with ``$and``)."""
    unexpired = {"$or": [{"pinned": True}, {"expires_at": {"$gt": to_micros(now)}}]}
    return [{"deleted_at": 0}, unexpired]
