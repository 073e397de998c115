"""Memento for AutoGen: ``AssistantAgent(memory=[MementoMemory(...)])``.

Importing this package (or its ``plugin`` module, as Memento's plugin discovery does) loads no
framework code: each name below is imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memento_autogen.config import MementoMemoryConfig
    from memento_autogen.memory import MementoMemory
    from memento_autogen.tool import remember_tool

__version__ = "0.1.0"

_SOURCES = {
    "MementoMemory": "memento_autogen.memory",
    "MementoMemoryConfig": "memento_autogen.config",
    "remember_tool": "memento_autogen.tool",
}

__all__ = [
    "MementoMemory",
    "MementoMemoryConfig",
    "__version__",
    "remember_tool",
]


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(source), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
