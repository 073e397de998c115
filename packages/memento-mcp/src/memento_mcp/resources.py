"""The MCP resources: ``memory://{id}`` and the search resource ``memory://search?query=…``.

Both read through ``ScopedMemento``: a memory the configured user may not see is "not found",
whatever id or query the URI holds. The search URI is parsed strictly, so a misspelt or
repeated parameter is an error that names it rather than a silently different search.
"""

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from mcp.server.mcpserver import Context, MCPServer, ResourceSecurity

from memento_core import InvalidInput
from memento_mcp.scoped import ScopedMemento
from memento_mcp.tools import MAX_RECALL_LIMIT
from memento_mcp.views import MemoryView, RecallHit, RecallResult

SEARCH_URI = "memory://search"
DEFAULT_SEARCH_LIMIT = 10
_SINGLE = ("query", "limit")
_REPEATABLE = ("type", "tag")


class InvalidSearchUri(InvalidInput):
    """A search resource URI that does not say what to search for, or says it wrongly."""


@dataclass(frozen=True)
class Search:
    query: str
    limit: int = DEFAULT_SEARCH_LIMIT
    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    @classmethod
    def parse(cls, uri: str) -> "Search":
        """Read ``memory://search?query=…[&limit=N][&type=T…][&tag=X…]``.

        ``+`` and ``%20`` both mean a space. Unknown or repeated parameters are refused.
        """
        usage = f"use {SEARCH_URI}?query=<text>[&limit=N][&type=<type>][&tag=<tag>]"
        parts = urlsplit(uri)
        if parts.scheme != "memory" or parts.netloc != "search" or parts.path or parts.fragment:
            raise InvalidSearchUri(f"{uri!r} is not a search URI; {usage}")
        try:
            pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
        except ValueError as err:
            raise InvalidSearchUri(f"malformed query string in {uri!r} ({err}); {usage}") from err
        values: dict[str, list[str]] = {}
        for name, value in pairs:
            if name not in _SINGLE + _REPEATABLE:
                known = ", ".join(_SINGLE + _REPEATABLE)
                raise InvalidSearchUri(f"unknown search parameter {name!r}; known: {known}")
            values.setdefault(name, []).append(value)
        for name in _SINGLE:
            if len(values.get(name, ())) > 1:
                raise InvalidSearchUri(f"search parameter {name!r} is given more than once")
        if "query" not in values:
            raise InvalidSearchUri(f"the search resource needs a query; {usage}")
        return cls(
            query=values["query"][0],
            limit=_limit(values["limit"][0]) if "limit" in values else DEFAULT_SEARCH_LIMIT,
            types=tuple(values.get("type", ())),
            tags=tuple(values.get("tag", ())),
        )

    def run(self, scoped: ScopedMemento) -> RecallResult:
        found = scoped.recall(
            self.query,
            limit=self.limit,
            filter={"types": list(self.types) or None, "tags": list(self.tags) or None},
        )
        return RecallResult(query=self.query, items=[RecallHit.of(r) for r in found])


def _limit(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_RECALL_LIMIT:
        raise InvalidSearchUri(
            f"limit must be a whole number from 1 to {MAX_RECALL_LIMIT}, got {text!r}"
        )
    return int(text)


def register_resources(server: MCPServer[Any], scoped: ScopedMemento) -> None:
    """Add the search and memory resources to ``server``, read as ``scoped``'s user."""

    # Registered before memory://{id}, so "memory://search…" is a search, not a memory id.
    # Search text may look like a path ("/etc", "a/../b"); it never reaches a file system.
    @server.resource(
        SEARCH_URI + "{?query,limit,type,tag}",
        name="search",
        title="Search memories",
        mime_type="application/json",
        security=ResourceSecurity(exempt_params={"query", "limit", "type", "tag"}),
    )
    def search(
        ctx: Context,
        query: str | None = None,
        limit: str | None = None,
        type: str | None = None,
        tag: str | None = None,
    ) -> str:
        """The memories best matching ``query`` (as the recall tool returns them), as JSON:
        memory://search?query=<text>[&limit=N][&type=<type>][&tag=<tag>]."""
        return Search.parse(_requested_uri(ctx)).run(scoped).model_dump_json(indent=2)

    @server.resource("memory://{id}", name="memory", title="A memory", mime_type="application/json")
    def memory(id: str) -> str:
        """One memory with its links, as JSON."""
        item = scoped.get(id)
        return MemoryView.of(item, scoped.links(id)).model_dump_json(indent=2)


def _requested_uri(ctx: Context) -> str:
    """The URI exactly as the client sent it: the template match drops unknown parameters and
    keeps only the first of repeated ones, which would hide mistakes."""
    params = ctx.request_context.params or {}
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidSearchUri("the request carries no resource URI")
    return uri
