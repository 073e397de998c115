"""A store seen through the server's configured scope: the one place MCP meets the security rule.

The MCP server acts for one user, fixed by its configuration (CLI flags or environment), never by
a tool or resource argument. ``ScopedMemento`` enforces that:

- every read passes the configured scope to core, which filters visibility in the store query
  (public memories, the user's own, and team memories of the configured project);
- every write lands in the configured scope;
- an id the scope cannot see is "not found" (``MemoryNotFound``), the same error as an unknown id,
  so ids leak nothing;
- every change passes the scope to core as the caller, so core's ownership rule applies: pin,
  unpin, forget, review and feedback need the user to own the memory (a visible memory of
  another user raises ``NotOwner``, exported here as ``NotOwned`` too); a link records the user
  who made it, and no hard forget or erasure follows a link into another user's memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memento_core import (
    FeedbackEvent,
    InvalidInput,
    InvalidScope,
    Link,
    MemoryChange,
    MemoryItem,
    MemoryNotFound,
    NotOwner,
    Privacy,
    Recalled,
    Scope,
    check_claimable,
)

if TYPE_CHECKING:
    from memento_core import Injection, Memento, SleepReport

EXPORT_FORMATS = ("ndjson", "markdown", "csv")


NotOwned = NotOwner
"""The memory is visible to the configured user but belongs to someone else (core's error)."""


class ScopedMemento:
    """``mem`` as the user of ``scope`` sees it. ``scope.user_id`` is required."""

    def __init__(self, mem: Memento, scope: Scope) -> None:
        if not isinstance(scope, Scope) or not scope.user_id:
            raise InvalidScope("the MCP server needs a configured user (--user or MEMENTO_USER)")
        if scope.session_id is not None:
            raise InvalidScope("the server's scope is a user, agent and project; not a session")
        check_claimable(scope)  # adapters' own projects are nobody's to claim
        self.mem = mem
        self.scope = scope

    @property
    def user_id(self) -> str:
        return self.scope.user_id or ""

    # ------------------------------------------------------------------- reading

    def get(self, memory_id: str) -> MemoryItem:
        """The memory, if the scope may see it; ``MemoryNotFound`` otherwise."""
        return self.mem.get(memory_id, scope=self.scope)

    def changes(self, memory_id: str) -> list[MemoryChange]:
        """The history of a memory the scope may see; ``MemoryNotFound`` otherwise."""
        return self.mem.changes(memory_id, scope=self.scope)

    def recall(
        self, query: str, *, limit: int, filter: Mapping[str, Any] | None = None
    ) -> list[Recalled]:
        return self.mem.recall(query, scope=self.scope, limit=limit, filter=filter)

    def links(self, memory_id: str) -> list[Link]:
        """Links of a visible memory whose other end the scope may see too."""
        self.get(memory_id)
        visible: list[Link] = []
        for link in self.mem.links(memory_id):
            other = link.target_id if link.source_id == memory_id else link.source_id
            try:
                self.get(other)
            except MemoryNotFound:
                continue
            visible.append(link)
        return visible

    def inject(self, query: str, *, token_budget: int) -> Injection:
        """The memories relevant to ``query``, packed into ``token_budget`` tokens."""
        return self.mem.memory_injection(query, token_budget=token_budget, scope=self.scope)

    def review_due(self, *, limit: int) -> list[MemoryItem]:
        """Due cards the scope may see, most overdue first (core returns at most 50)."""
        return self.mem.review_due(self.scope)[:limit]

    def export(self, fmt: str) -> Iterator[str]:
        """The user's own memories (soft-deleted ones too in NDJSON), with the links between
        them and their feedback events, as lines of ``fmt``. Other users' memories are never
        exported, even public ones."""
        if fmt not in EXPORT_FORMATS:
            raise InvalidInput(
                f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}"
            )
        return self.mem.export(fmt, user_id=self.user_id)

    def remember(
        self,
        content: str,
        *,
        type: str,
        tags: Sequence[str],
        importance: float,
        source: str,
        privacy: str,
        title: str | None,
    ) -> str:
        if privacy == Privacy.TEAM.value and not self.scope.project_id:
            raise InvalidScope(
                "a team memory is shared within a project, and this server has none configured "
                "(start it with --project)"
            )
        return self.mem.remember(
            content,
            scope=self.scope,
            type=type,
            tags=tags,
            importance=importance,
            source=source,
            privacy=privacy,
            title=title,
        )

    def pin(self, memory_id: str) -> MemoryItem:
        self.get(memory_id)  # a hidden memory is "not found", whether deleted or another's
        return self.mem.pin(memory_id, scope=self.scope)

    def unpin(self, memory_id: str) -> MemoryItem:
        self.get(memory_id)
        return self.mem.unpin(memory_id, scope=self.scope)

    def forget(self, memory_id: str, *, hard: bool) -> None:
        self.get(memory_id)
        self.mem.forget(memory_id, hard=hard, scope=self.scope)

    def restore(self, memory_id: str) -> MemoryItem:
        """Undo a soft forget of one of the user's memories."""
        return self.mem.restore(memory_id, scope=self.scope)

    def update(self, memory_id: str, **fields: Any) -> MemoryItem:
        """Change fields of one of the user's memories in place (see ``Memento.update``)."""
        self.mem.get(memory_id, scope=self.scope, include_deleted=True)
        if fields.get("privacy") == Privacy.TEAM.value and not self.scope.project_id:
            raise InvalidScope(
                "a team memory is shared within a project, and this server has none configured "
                "(start it with --project)"
            )
        return self.mem.update(memory_id, scope=self.scope, **fields)

    def review(self, memory_id: str, grade: int) -> MemoryItem:
        return self.mem.review(memory_id, grade, scope=self.scope)

    def link(self, source_id: str, type: str, target_id: str, *, note: str | None) -> Link:
        self.get(source_id)
        self.get(target_id)
        return self.mem.link(source_id, type, target_id, note=note, scope=self.scope)

    def feedback(
        self, memory_id: str, kind: str, *, score: float, note: str | None
    ) -> FeedbackEvent:
        self.get(memory_id)
        return self.mem.feedback(memory_id, kind, score=score, note=note, scope=self.scope)

    def sleep(self, *, since: datetime | None) -> SleepReport:
        """Consolidate the user's own episodes (core's ``sleep`` reads only ``scope.user_id``)."""
        return self.mem.sleep(self.scope, since=since)

    def summarize_thread(self, session_id: str) -> str:
        """Summarise one of the user's chat sessions into an episodic memory of theirs (core
        answers a session holding another user's messages as if it were empty)."""
        return self.mem.summarize_thread(session_id, scope=self.scope)

    def summarize_messages(self, session_id: str, messages: Sequence[Mapping[str, Any]]) -> str:
        """Keep ``messages`` (OpenAI-style dicts) as a new chat session of the user's, then
        summarise it: a client that keeps its conversation itself hands it over this way.
        ``session_id`` must be new (the caller makes one), so no existing session, another
        user's included, is ever written to."""
        self.mem.chat(session_id, scope=self.scope.with_session(session_id)).extend(messages)
        return self.summarize_thread(session_id)
