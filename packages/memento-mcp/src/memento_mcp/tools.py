"""The MCP tools: thin mappings from tool arguments to ``ScopedMemento`` calls.

Each tool is a plain (sync) function: the SDK runs it on a worker thread, so store and model
work never blocks the event loop. Arguments are typed and described for the client; core checks
their values again. Errors are ``MementoError``s, which the server turns into tool errors.
"""

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import uuid4

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from memento_core import MAX_CONTENT_CHARS, InvalidInput, as_utc
from memento_mcp.scoped import ScopedMemento
from memento_mcp.views import (
    ChangeLog,
    ChangeView,
    DueItem,
    FeedbackView,
    Forgotten,
    LinkView,
    MemoryView,
    PinState,
    RecallHit,
    RecallResult,
    Remembered,
    Restored,
    ReviewDue,
    Reviewed,
    SleepSummary,
    ThreadSummary,
    memory_uri,
)

MAX_RECALL_LIMIT = 100
MAX_REVIEW_LIMIT = 50
"""Core's ``review_due`` returns at most this many cards."""

MemoryType = Literal["episodic", "semantic", "procedural", "working"]
MemoryId = Annotated[str, Field(description="A memory id, as remember or recall returned it.")]
Privacy = Literal["private", "team", "public"]


class ChatTurn(BaseModel):
    """One message of a conversation, as chat APIs write it."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class RecallFilters(BaseModel):
    """Narrow recall; every field is optional and all given ones must hold."""

    model_config = ConfigDict(extra="forbid")

    type: MemoryType | list[MemoryType] | None = Field(
        default=None, description="Only memories of this type (or of one of these types)."
    )
    tags: list[str] | None = Field(default=None, description="Only memories with all these tags.")
    project_id: str | None = Field(default=None, description="Only memories of this project.")
    agent_id: str | None = Field(
        default=None, description="Only memories written by this agent (say, another assistant)."
    )
    session_id: str | None = Field(default=None, description="Only memories of this session.")
    time_from: datetime | None = Field(
        default=None, description="Only memories created at or after this time (ISO 8601)."
    )
    time_to: datetime | None = Field(
        default=None, description="Only memories created at or before this time (ISO 8601)."
    )

    def as_core_filter(self) -> dict[str, Any]:
        if self.time_from and self.time_to and as_utc(self.time_from) > as_utc(self.time_to):
            raise InvalidInput(f"time_from ({self.time_from}) is after time_to ({self.time_to})")
        return {
            "types": self.type,
            "tags": self.tags,
            "project_id": self.project_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "since": self.time_from,
            "until": self.time_to,
        }


def register_tools(server: MCPServer[Any], scoped: ScopedMemento) -> None:
    """Add Memento's tools to ``server``, every one acting for ``scoped``'s user."""

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    def remember(
        content: Annotated[
            str,
            Field(description=f"The text to remember (at most {MAX_CONTENT_CHARS} characters)."),
        ],
        type: Annotated[
            MemoryType,
            Field(
                description="episodic: something that happened; semantic: a fact or preference; "
                "procedural: how to do something; working: short-lived context."
            ),
        ] = "episodic",
        tags: Annotated[
            list[str] | None, Field(description="Labels such as 'pref:coffee' or 'tech:mariadb'.")
        ] = None,
        importance: Annotated[float, Field(ge=0.0, le=1.0, description="0 to 1.")] = 0.5,
        source: Annotated[
            str, Field(description="Where it came from: chat, tool, file, url, …")
        ] = "mcp",
        privacy_scope: Annotated[
            Privacy,
            Field(
                description="private: only you; team: everyone in the server's project; "
                "public: everyone using this store."
            ),
        ] = "private",
        title: Annotated[str | None, Field(description="An optional short label.")] = None,
    ) -> Remembered:
        """Store a memory for the configured user and return its id.

        Remembering the same content again returns the same id and changes nothing.
        """
        memory_id = scoped.remember(
            content,
            type=type,
            tags=tags or (),
            importance=importance,
            source=source,
            privacy=privacy_scope,
            title=title,
        )
        return Remembered(memory_id=memory_id, uri=memory_uri(memory_id))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def get(memory_id: MemoryId) -> MemoryView:
        """One memory in full: its whole content, data payload, hotwords, tags, scores and the
        links to memories you can see. Use it when recall's snippet was truncated."""
        return MemoryView.of(scoped.get(memory_id), scoped.links(memory_id))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def memory_changes(memory_id: MemoryId) -> ChangeLog:
        """A memory's history, oldest first: when it was created (with its first content),
        each edit with the fields before and after, pins, forgets and restores, feedback,
        reviews, links, and what sleep did to it — each with who acted and when."""
        changes = scoped.changes(memory_id)
        return ChangeLog(memory_id=memory_id, changes=[ChangeView.of(c) for c in changes])

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def recall(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        filters: Annotated[
            RecallFilters | None, Field(description="Optional narrowing of the results.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT)] = 10,
    ) -> RecallResult:
        """The memories that best match the query, best first, each with its score and the
        reason it came back (relevance, recency, importance, usage and the matched words).
        Each shows a snippet of its content; ``truncated`` says when it was cut, and ``get``
        returns the whole memory."""
        core_filter = filters.as_core_filter() if filters else None
        found = scoped.recall(query, limit=limit, filter=core_filter)
        return RecallResult(query=query, items=[RecallHit.of(r) for r in found])

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    def pin(memory_id: MemoryId) -> PinState:
        """Pin one of your memories: it never expires and is never offered for forgetting."""
        return PinState(memory_id=memory_id, pinned=scoped.pin(memory_id).pinned)

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    def unpin(memory_id: MemoryId) -> PinState:
        """Unpin one of your memories: it expires again under the store's retention policy."""
        return PinState(memory_id=memory_id, pinned=scoped.unpin(memory_id).pinned)

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def forget(
        memory_id: MemoryId,
        hard: Annotated[
            bool,
            Field(
                description="false: hide it (restorable); true: erase it with its links and "
                "feedback, for good."
            ),
        ] = False,
    ) -> Forgotten:
        """Forget one of your memories."""
        scoped.forget(memory_id, hard=hard)
        return Forgotten(memory_id=memory_id, hard=hard, restorable=not hard)

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    def restore(memory_id: MemoryId) -> Restored:
        """Bring back one of your memories that forget hid (a soft forget); a hard forget
        cannot be undone."""
        item = scoped.restore(memory_id)
        return Restored(memory_id=memory_id, restored=item.deleted_at is None)

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    def update(
        memory_id: MemoryId,
        content: Annotated[
            str | None,
            Field(
                description=f"New text (at most {MAX_CONTENT_CHARS} characters); embedded again."
            ),
        ] = None,
        title: Annotated[str | None, Field(description="A new short label.")] = None,
        data: Annotated[
            dict[str, Any] | None, Field(description="A new key-value payload (JSON object).")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="The new tags (replace).")] = None,
        hotwords: Annotated[
            list[str] | None, Field(description="The new hotword variants, in order (replace).")
        ] = None,
        importance: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
        privacy_scope: Annotated[Privacy | None, Field(description="Who may see it.")] = None,
        type: MemoryType | None = None,
        expires_at: Annotated[
            datetime | None, Field(description="When it expires (ISO 8601).")
        ] = None,
    ) -> MemoryView:
        """Change one of your memories in place; fields left out keep their value. The id,
        creation time, usage, links and provenance stay. Returns the memory as now stored."""
        item = scoped.update(
            memory_id,
            content=content,
            title=title,
            data=data,
            tags=tags,
            hotwords=hotwords,
            importance=importance,
            privacy=privacy_scope,
            type=type,
            expires_at=expires_at,
        )
        return MemoryView.of(item, scoped.links(memory_id) if item.deleted_at is None else [])

    @server.tool(annotations=ToolAnnotations(destructive_hint=False))
    def summarize_thread(
        session_id: Annotated[
            str | None,
            Field(description="A chat session already stored, to summarise."),
        ] = None,
        messages: Annotated[
            list[ChatTurn] | None,
            Field(
                description="Instead of session_id: recent messages of your conversation, "
                "oldest first, kept as a new session (its id comes back) and summarised."
            ),
        ] = None,
    ) -> ThreadSummary:
        """Summarise a chat session of yours into one episodic memory. Pass ``messages`` to
        summarise the conversation you are having (Memento keeps them as a new session's
        history); pass ``session_id`` for a session already stored.

        Summarising an unchanged session again returns the same memory.
        """
        if messages and session_id is not None:
            raise InvalidInput(
                "messages start a new session: leave session_id out (the new id comes back)"
            )
        if messages:
            session_id = f"mcp-{uuid4().hex}"
            memory_id = scoped.summarize_messages(session_id, [m.model_dump() for m in messages])
        elif session_id is not None:
            memory_id = scoped.summarize_thread(session_id)
        else:
            raise InvalidInput("give a session_id, or messages to summarise")
        summary = scoped.get(memory_id).content
        return ThreadSummary(
            memory_id=memory_id, uri=memory_uri(memory_id), session_id=session_id, summary=summary
        )

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    def link(
        source_id: MemoryId,
        type: Annotated[
            Literal["cause_of", "derived_from", "duplicates", "contradicts"],
            Field(description="How the source relates to the target."),
        ],
        target_id: MemoryId,
        note: Annotated[str | None, Field(description="An optional short note.")] = None,
    ) -> LinkView:
        """Record a typed link between two memories you can see (linking again is a no-op)."""
        return LinkView.of(scoped.link(source_id, type, target_id, note=note))

    # Unstructured: the export is text, and a structured copy would send it twice.
    @server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    def export(
        format: Annotated[
            Literal["ndjson", "markdown", "csv"],
            Field(
                description="ndjson is lossless (it can be imported); markdown and csv read well."
            ),
        ] = "ndjson",
    ) -> str:
        """Export your own memories (with their links and feedback in ndjson)."""
        return "".join(scoped.export(format))

    @server.tool(annotations=ToolAnnotations(destructive_hint=False))
    def feedback(
        memory_id: MemoryId,
        kind: Annotated[
            Literal["used", "edited", "neglected", "helpful", "not_helpful"],
            Field(description="How the memory served; it feeds future ranking."),
        ],
        score: Annotated[float, Field(allow_inf_nan=False)] = 1.0,
        note: Annotated[str | None, Field(description="An optional short note.")] = None,
    ) -> FeedbackView:
        """Record how a recalled memory served."""
        return FeedbackView.of(scoped.feedback(memory_id, kind, score=score, note=note))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def review_due(
        limit: Annotated[int, Field(ge=1, le=MAX_REVIEW_LIMIT)] = 20,
    ) -> ReviewDue:
        """Memories whose spaced-review card is due, most overdue first."""
        return ReviewDue(items=[DueItem.of(item) for item in scoped.review_due(limit=limit)])

    @server.tool(annotations=ToolAnnotations(destructive_hint=False))
    def review(
        memory_id: MemoryId,
        grade: Annotated[
            int, Field(ge=0, le=5, description="0: forgotten … 3: recalled with effort … 5: easy.")
        ],
    ) -> Reviewed:
        """Grade the review of one of your memories; its card moves on (grade 3 or more) or
        starts over."""
        item = scoped.review(memory_id, grade)
        return Reviewed(
            memory_id=memory_id, review_step=item.review_step, next_review_at=item.review_due_at
        )

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    def sleep(
        since: Annotated[
            datetime | None,
            Field(description="Only episodes created at or after this time (ISO 8601)."),
        ] = None,
    ) -> SleepSummary:
        """Consolidate your episodic memories into semantic facts (with links to their sources);
        near-duplicate facts are merged and conflicting ones marked. Running it again on the
        same memories changes nothing."""
        report = scoped.sleep(since=since)
        return SleepSummary(
            considered=report.considered,
            clusters=report.clusters,
            written=report.written,
            consolidated=report.consolidated,
            merged=[list(pair) for pair in report.merged],
            contradictions=[list(pair) for pair in report.contradictions],
        )
