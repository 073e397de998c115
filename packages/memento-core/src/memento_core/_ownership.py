"""Who may change a memory: the rule, written once.

Seeing is not owning. A caller (a ``Scope``) may read what ``_visibility`` lets it see, but it
may change or delete only the memories of its own user (the anonymous caller owns the memories
stored without a user). Another user's public or team memory is readable and linkable, never
changeable: changing it raises ``NotOwner``; one the caller may not even see is
``MemoryNotFound``, like an unknown id. A call without a caller is the store's administrator
(the application itself, the CLI): it may change anything.

Cascades follow the same rule whoever erases (``cascades``): erasing memories takes along facts
derived only from them of the same user, or shared user-less facts the application derived
from them; a fact of another user, or one a user linked by hand into someone else's data,
loses its link, never its existence. Links record who made them (``Link.made_by``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memento_core._model import Link, MemoryItem, Scope
from memento_core._visibility import check_viewer
from memento_core.errors import NotOwner

if TYPE_CHECKING:
    from memento_core._engine import Engine


def owner_of(item: MemoryItem) -> str:
    """The user a memory belongs to (``""``: the anonymous user)."""
    return item.scope.user_id or ""


def caller_user(caller: Scope) -> str:
    return caller.user_id or ""


def owns(caller: Scope, item: MemoryItem) -> bool:
    return caller_user(caller) == owner_of(item)


def owned(
    engine: Engine,
    memory_id: str,
    caller: Scope | None,
    action: str,
    *,
    include_deleted: bool = True,
) -> MemoryItem:
    """The memory ``caller`` is about to change: ``MemoryNotFound`` when it may not see it,
    ``NotOwner`` when it may see but not change it. Without a caller, any memory."""
    if caller is not None:
        check_viewer(caller)
    # Callers write fields computed from this read (counters): noted usage goes in first, or
    # its later write would undo theirs.
    engine.usage.flush()
    item = engine.get(memory_id, scope=caller, include_deleted=include_deleted)
    if caller is not None and not owns(caller, item):
        raise NotOwner(f"memory {memory_id!r}", action)
    return item


def cascades(link: Link, derived: MemoryItem, source_owner: str | None) -> bool:
    """Whether erasing the source of a ``derived_from`` link may take ``derived`` along.

    Only a link made by the application (``made_by`` None: consolidation, the app itself) or by
    ``derived``'s own user carries erasure; and a user's memory goes only with sources of that
    same user. So a user-less shared fact derived from a user's memories goes with them (it is
    made of their data), while no user's memory is ever erased by someone else's erasure or by
    a link someone else made — it loses the link instead."""
    owner = owner_of(derived)
    if link.made_by is not None and link.made_by != owner:
        return False
    return owner == "" or source_owner == owner
