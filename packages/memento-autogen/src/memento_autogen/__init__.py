"""Memento for AutoGen: ``AssistantAgent(memory=[MementoMemory(...)])``.

Importing this package (or its ``plugin`` module, as Memento's plugin discovery does) loads no
framework code: each name below is imported on first use.
"""

import typing as _typing
from importlib import import_module as _import_module

if _typing.TYPE_CHECKING:
    from memento_autogen.config import MementoMemoryConfig
    from memento_autogen.memory import MementoMemory
    from memento_autogen.tool import RememberTool, RememberToolConfig, remember_tool

__version__ = "0.1.0"

_SOURCES = {
    "MementoMemory": "memento_autogen.memory",
    "MementoMemoryConfig": "memento_autogen.config",
    "RememberTool": "memento_autogen.tool",
    "RememberToolConfig": "memento_autogen.tool",
    "remember_tool": "memento_autogen.tool",
}

__all__ = [
    "MementoMemory",
    "MementoMemoryConfig",
    "RememberTool",
    "RememberToolConfig",
    "__version__",
    "remember_tool",
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
