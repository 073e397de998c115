"""The ``memento`` entry point of memento-mcp-server (found by ``memento_core.plugins``)."""

from __future__ import annotations

from collections.abc import Callable

from memento_core.plugins import AdapterInfo, hookimpl


@hookimpl
def memento_register_adapters(register: Callable[[AdapterInfo], None]) -> None:
    register(
        AdapterInfo(
            name="mcp",
            framework="MCP",
            package="memento-mcp-server",
            description="an MCP server (stdio, streamable HTTP): memory tools, memory:// "
            "resources, the memory_injection prompt",
            conformance_driver="memento_mcp.conformance:driver",
        )
    )
