"""Which Memento user a (space, client user id) pair acts as, one user per pair.

A part is percent-escaped (``%`` → ``%25``, ``:`` → ``%3A``, ``#`` → ``%23``) so that the one
unescaped ``:`` of ``"<space>:<client>"`` says where the space ends, whatever either holds:
space ``acme`` with client ``eu:bob`` is ``acme:eu%3Abob``, space ``acme:eu`` with client
``bob`` is ``acme%3Aeu:bob``. Ids with none of those characters map as they always did
(``acme:bob``), so existing stores keep working. Forms no escaped part can take:

- ``<space>#space`` — the space itself (a request without a user);
- ``<space>:#<hex>`` — a client id too long for a scope (256 characters), as a SHA-256 digest;
- ``<user>`` / ``#<hex>`` — a key bound to ``user``: the escaped user (no ``:``, no ``#``,
  so never a space's client), or its digest when too long.

Before the escaping existed, ``acme:eu:bob`` was both of the pairs above. A store holding a
user that changes owner under this mapping is refused (``ChangedIdentities``) rather than
handed to a different client; see ``check_identities``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from memento_core import Memento, StoreError

__all__ = ["ChangedIdentities", "bound_user", "check_identities", "client_user", "space_user"]

MAX_SCOPE_CHARS = 256
_ESCAPES = {"%": "%25", ":": "%3A", "#": "%23"}
_ESCAPED = re.compile(r"(?:[^%:#]|%25|%3A|%23)*")
_DIGEST_PART = re.compile(r"#[0-9a-f]{32,64}")
_MARKS = "gateway_identities"
_MARK_ID = "escaped"


class ChangedIdentities(StoreError):
    """The store holds users that the gateway's (space, user) mapping would now give to a
    different client, or to none. ``users`` names them."""

    def __init__(self, users: Iterable[str]) -> None:
        self.users = sorted(users)
        shown = ", ".join(repr(u) for u in self.users[:10])
        more = f" and {len(self.users) - 10} more" if len(self.users) > 10 else ""
        super().__init__(
            f"the store holds gateway users whose meaning changed when space and user ids "
            f"were escaped: {shown}{more}; export them, erase or rename them, then start again"
        )


def escape(part: str) -> str:
    """``part`` with ``%``, ``:`` and ``#`` percent-escaped (unchanged if it has none)."""
    return "".join(_ESCAPES.get(c, c) for c in part)


def _unescape(escaped: str) -> str | None:
    """The part ``escaped`` was made from, or None if no part escapes to it."""
    if not _ESCAPED.fullmatch(escaped):
        return None
    return re.sub(r"%(25|3A|23)", lambda m: {"25": "%", "3A": ":", "23": "#"}[m[1]], escaped)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def space_user(space_id: str) -> str:
    """The user a request without a user acts as: the space itself."""
    return f"{escape(space_id)}#space"


def client_user(space_id: str, client_user_id: str) -> str:
    """The user a client's ``user_id`` is inside ``space_id``."""
    prefix = escape(space_id) + ":"
    user = prefix + escape(client_user_id)
    if len(user) > MAX_SCOPE_CHARS:  # still one user per client id, just hashed
        # A 64-character space escapes to at most 192: the digest is cut to fit, never below 62.
        user = prefix + "#" + _digest(client_user_id)[: MAX_SCOPE_CHARS - len(prefix) - 1]
    return user


def bound_user(user_id: str) -> str:
    """The user a key bound to ``user_id`` acts as."""
    user = escape(user_id)
    return user if len(user) <= MAX_SCOPE_CHARS else "#" + _digest(user_id)


def _new_owners(user: str, spaces: set[str], bound: set[str]) -> set[tuple[str, str]]:
    """Which configured (space, client) pairs map to ``user`` now."""
    owners = {("bound", b) for b in bound if bound_user(b) == user}
    head, colon, rest = user.partition(":")
    space = _unescape(head)
    if colon and space in spaces:
        if _DIGEST_PART.fullmatch(rest):
            owners.add((space, rest))
        elif (client := _unescape(rest)) is not None:
            owners.add((space, client))
    if not colon and user.endswith("#space") and _unescape(user[:-6]) in spaces:
        owners.add((str(_unescape(user[:-6])), "#space"))
    return owners


def _old_owners(user: str, spaces: set[str], bound: set[str]) -> set[tuple[str, str]]:
    """Which configured (space, client) pairs mapped to ``user`` before the escaping (a plain
    ``"<space>:<client>"``; a long client id as ``"<space>:#<digest>"``)."""
    owners = {("bound", b) for b in bound if b == user}
    for space in spaces:
        if user.startswith(space + ":"):
            owners.add((space, user[len(space) + 1 :]))
        if user == space + "#space":
            owners.add((space, "#space"))
    return owners


def changed_users(users: Iterable[str], spaces: set[str], bound: set[str]) -> list[str]:
    """The ``users`` that a (space, client) pair of ``spaces`` or a ``bound`` user reached
    before the escaping and that now belong to other pairs, or to none. (A user no pair
    reached was never the gateway's: nothing of a client's changes hands.)"""
    changed = []
    for user in users:
        old = _old_owners(user, spaces, bound)
        if old and old != _new_owners(user, spaces, bound):
            changed.append(user)
    return changed


def check_identities(mem: Memento, spaces: set[str], bound: set[str]) -> None:
    """Refuse (``ChangedIdentities``) a store holding users that the given space ids and
    bound user ids reached before the escaping and that would now belong to another client,
    or to none. A store found clean is marked: from then on every gateway user in it was
    written with this mapping, so later starts (with any spaces) skip the scan."""
    marks = None if mem.read_only else mem.side_records(_MARKS)
    if marks is not None and marks.get([_MARK_ID]):
        return
    users = {i.scope.user_id for i in mem.items(include_deleted=True) if i.scope.user_id}
    changed = changed_users(users, spaces, bound)
    if changed:
        raise ChangedIdentities(changed)
    if marks is not None:
        marks.put([_MARK_ID], ["gateway users are escaped (space:user)"], [{"kind": "mark"}])
