"""The MCP tools: thin mappings from tool arguments to ``ScopedMemento`` calls.

Each tool is a plain (sync) function: the SDK runs it on a worker thread, so store and model
work never blocks the event loop. Arguments are typed and described for the client; core checks
their values again. Errors are ``MementoError``s, which the server turns into tool errors.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from memento_core import MAX_CONTENT_CHARS, InvalidInput, as_utc
from memento_mcp.scoped import ScopedMemento
from memento_mcp.views import (
    DueItem,
    FeedbackView,
    Forgotten,
    LinkView,
    PinState,
    RecallHit,
    RecallResult,
    Remembered,
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


class RecallFilters(BaseModel):
    """Narrow recall; every field is optional and all given ones must hold."""

    model_config = ConfigDict(extra="forbid")

    type: MemoryType | list[MemoryType] | None = Field(
        default=None, description="Only memories of this type (or of one of these types)."
    )
    tags: list[str] | None = Field(default=None, description="Only memories with all these tags.")
    project_id: str | None = Field(default=None, description="Only memories of this project.")
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
            Literal["private", "team", "public"],
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
    def recall(
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        filters: Annotated[
            RecallFilters | None, Field(description="Optional narrowing of the results.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT)] = 10,
    ) -> RecallResult:
        """The memories that best match the query, best first, each with its score and the
        reason it came back (relevance, recency, importance, usage and the matched words)."""
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
    def summarize_thread(
        session_id: Annotated[str, Field(description="The chat session to summarise.")],
    ) -> ThreadSummary:
        """Summarise a whole chat session of yours into one episodic memory.

        Summarising an unchanged session again returns the same memory.
        """
        memory_id = scoped.summarize_thread(session_id)
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
