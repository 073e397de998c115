"""This adapter's driver for the cross-adapter conformance suite (``memento_core.testing``).

Every step is an MCP tool call made with the SDK's own ``Client``, connected in-process to a
server built for the step's user (``build_server(mem, Scope(user_id=...))``), so the scope
comes from the server's configuration exactly as in production. MCP has no hotword path: the
client's model streams on the client side and never passes through the server, so this driver
sits out the hotword scenario (``streams_hotwords = False``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mcp import Client

from memento_core import Memento, Scope
from memento_core.errors import MementoError
from memento_core.testing import Hit
from memento_mcp.server import build_server


class MCPDriver:
    name = "mcp"
    streams_hotwords = False

    def __init__(self, mem: Memento) -> None:
        self.mem = mem

    def _call(self, user_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async def call() -> dict[str, Any]:
            async with Client(build_server(self.mem, Scope(user_id=user_id))) as client:
                result = await client.call_tool(tool, arguments)
            if result.is_error or result.structured_content is None:
                raise MementoError(f"MCP tool {tool} failed: {result.content!r}")
            return dict(result.structured_content)

        return asyncio.run(call())

    def remember(self, text: str, *, user_id: str) -> str:
        return str(self._call(user_id, "remember", {"content": text})["memory_id"])

    def recall(self, query: str, *, user_id: str, limit: int) -> list[Hit]:
        found = self._call(user_id, "recall", {"query": query, "limit": limit})
        return [Hit(hit["id"], hit["score"]) for hit in found["items"]]

    def forget(self, memory_id: str, *, user_id: str) -> None:
        self._call(user_id, "forget", {"memory_id": memory_id, "hard": True})

    def hotword_events(self, chunks: Sequence[str], *, connection_id: str) -> list[dict[str, Any]]:
        raise NotImplementedError("MCP has no streaming path through the server (see module)")


def driver(mem: Memento) -> MCPDriver:
    return MCPDriver(mem)
