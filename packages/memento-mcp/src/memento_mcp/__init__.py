"""Memento over the Model Context Protocol: a store's memories as MCP tools, resources and a prompt.

``build_server(mem, scope)`` gives an ``MCPServer`` acting for one configured user; the
``memento-mcp`` command serves it over stdio or streamable HTTP.
"""

from memento_mcp.auth import BearerTokenGuard
from memento_mcp.scoped import NotOwned, ScopedMemento
from memento_mcp.server import MementoMCPServer, build_server

__version__ = "0.1.0"

__all__ = [
    "BearerTokenGuard",
    "MementoMCPServer",
    "NotOwned",
    "ScopedMemento",
    "__version__",
    "build_server",
]
