"""API keys: each resolves to a space — the graph it talks to and the memory it may use.

A space is a project in Memento: team memories of ``project_id`` are the space's own, and its
users are the space's users. The user a request acts as comes from the key and never from the
client alone: a key bound to one user (``Space.user_id``) always acts as that user; otherwise
the client's ``user_id`` is taken *inside the space* (``"<space_id>:<user_id>"``, each part
escaped: ``memento_gateway.identities``), so claiming a name another space or the store uses
directly reaches nothing of theirs, whatever characters either id holds. A request without a
user (``GET /v4/memory`` without ``user_id``) acts as the space itself: it sees the space's team
memories and public ones. A room is one chat session of one user in one space.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.runnables import Runnable

from memento_core import InvalidInput, Scope, WindowPolicy, check_claimable
from memento_gateway.identities import bound_user, client_user, space_user

__all__ = ["KeyRegistry", "Space", "StaticKeys"]

MAX_SPACE_ID_CHARS = 64


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Space:
    """What an API key gives access to.

    ``graph`` is a compiled LangGraph graph (it gets ``{"messages": [...]}``) or any LangChain
    runnable (it gets the list of messages). ``system_prompt`` may use ``{{visitor_name}}`` and
    ``{{history}}``. ``recall_budget`` is how many tokens of the user's long-term memories are
    put before the conversation (0: none). ``sentences=False`` keeps one ``sent_uid`` for a whole
    reply; ``chain_events`` passes ``on_chain_*`` and ``on_chat_model_start``/``_end`` events
    through (a request may ask for them or decline with its ``chain_events`` parameter).
    """

    space_id: str
    graph: Runnable[Any, Any]
    project_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    usable: bool = True
    return_voice: int = 0
    system_prompt: str | None = None
    allow_empty_msg: bool = False
    sentences: bool = True
    chain_events: bool = False
    recall_budget: int = 800
    window: WindowPolicy | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.space_id, str) or not 1 <= len(self.space_id) <= MAX_SPACE_ID_CHARS:
            raise InvalidInput(f"space_id must be 1 to {MAX_SPACE_ID_CHARS} characters")
        # A room's session digests "<space>\x00<user>\x00<room>": no part may hold the separator.
        if any(unicodedata.category(c) == "Cc" for c in self.space_id):
            raise InvalidInput(f"space_id holds a control character: {self.space_id!r}")
        if not isinstance(self.graph, Runnable):
            raise InvalidInput(
                f"graph must be a LangChain runnable, got {type(self.graph).__name__}"
            )
        if self.return_voice not in (0, 1) or isinstance(self.return_voice, bool):
            raise InvalidInput(f"return_voice must be 0 or 1, got {self.return_voice!r}")
        if isinstance(self.recall_budget, bool) or not isinstance(self.recall_budget, int):
            raise InvalidInput(f"recall_budget must be a whole number, got {self.recall_budget!r}")
        # A space may not act as, or in the project of, an adapter's own records; nor name
        # itself or its fixed user like them (escaped, they would reach nothing, but the
        # operator meant something this refusal tells them is not theirs).
        check_claimable(Scope(user_id=self.user_id or self.space_id, project_id=self.project))
        check_claimable(
            Scope(user_id=self.user_for(None), agent_id=self.agent_id, project_id=self.project)
        )

    @property
    def project(self) -> str:
        return self.project_id or self.space_id

    def user_for(self, client_user_id: str | None) -> str:
        """The Memento user a request acts as (see the module docstring)."""
        if self.user_id is not None:
            return bound_user(self.user_id)
        if client_user_id is None:
            # Never no user at all: core's anonymous viewer sees every memory stored without a
            # user, whatever its project. No client id maps to this one (they all get a ":").
            return space_user(self.space_id)
        return client_user(self.space_id, client_user_id)

    def scope_for(self, client_user_id: str | None) -> Scope:
        """The scope a request of this user acts and recalls with."""
        return Scope(
            user_id=self.user_for(client_user_id), agent_id=self.agent_id, project_id=self.project
        )

    def session_for(self, client_user_id: str, room_uid: str) -> str:
        """The chat session of a room: one per (space, user, room), fixed length."""
        user = self.user_for(client_user_id)
        return "room-" + _digest(f"{self.space_id}\x00{user}\x00{room_uid}")[:40]


class KeyRegistry(Protocol):
    """Resolves an API key. ``None`` means the key does not exist (``api_key is not exist``); a
    space with ``usable=False`` answers ``api_key is not usable``."""

    async def resolve(self, api_key: str) -> Space | None: ...


class StaticKeys:
    """A fixed key → space table. Keys are kept as SHA-256 digests, never as given."""

    def __init__(self, spaces: Mapping[str, Space]) -> None:
        self._spaces = {_digest(key): space for key, space in spaces.items()}

    async def resolve(self, api_key: str) -> Space | None:
        return self._spaces.get(_digest(api_key))

    @property
    def spaces(self) -> list[Space]:
        """Every space of the table, one entry per key."""
        return list(self._spaces.values())
