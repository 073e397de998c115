"""The MCP prompt ``memory_injection``: the memories relevant to a query, within a token budget."""

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer, UserMessage
from pydantic import Field

from memento_mcp.scoped import ScopedMemento

DEFAULT_TOKEN_BUDGET = 1200


def register_prompts(server: MCPServer[Any], scoped: ScopedMemento) -> None:
    """Add the ``memory_injection`` prompt to ``server``, recalling as ``scoped``'s user."""

    @server.prompt(name="memory_injection", title="Inject relevant memories")
    def memory_injection(
        query: Annotated[str, Field(description="What the conversation is about.")],
        token_budget: Annotated[
            int, Field(description="The most tokens the memories may take (default 1200).")
        ] = DEFAULT_TOKEN_BUDGET,
    ) -> list[UserMessage]:
        """The memories most relevant to the query, best first, packed into the token budget
        (the last one shortened to fit), as context to put before the conversation."""
        injection = scoped.inject(query, token_budget=token_budget)
        if not injection.text:
            return [UserMessage(f"Memento holds no memories relevant to: {query}")]
        return [UserMessage(injection.text)]
