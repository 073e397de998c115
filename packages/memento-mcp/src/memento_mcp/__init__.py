"""Memento over the Model Context Protocol: a store's memories as MCP tools, resources and a prompt.

``build_server(mem, scope)`` gives an ``MCPServer`` acting for one configured user; the
``memento-mcp-server`` command serves it over stdio or streamable HTTP.

Importing this package (or its ``plugin`` module, as Memento's plugin discovery does) loads no
framework code: each name below is imported on first use.
"""

import typing as _typing
from importlib import import_module as _import_module

if _typing.TYPE_CHECKING:
    from memento_mcp.auth import BearerTokenGuard
    from memento_mcp.scoped import NotOwned, ScopedMemento
    from memento_mcp.server import MementoMCPServer, build_server

__version__ = "0.1.0"

_SOURCES = {
    "BearerTokenGuard": "memento_mcp.auth",
    "MementoMCPServer": "memento_mcp.server",
    "NotOwned": "memento_mcp.scoped",
    "ScopedMemento": "memento_mcp.scoped",
    "build_server": "memento_mcp.server",
}

__all__ = [
    "BearerTokenGuard",
    "MementoMCPServer",
    "NotOwned",
    "ScopedMemento",
    "__version__",
    "build_server",
]


def __getattr__(name: str) -> _typing.Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(source), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
