"""Memento for LlamaIndex: chat memory, a ``Memory`` block and chat store, and a retriever.

Importing this package (or its ``plugin`` module, as Memento's plugin discovery does) loads no
framework code: each name below is imported on first use.
"""

import typing as _typing
from importlib import import_module as _import_module

if _typing.TYPE_CHECKING:
    from memento_llamaindex.block import MementoMemoryBlock
    from memento_llamaindex.chat_memory import MementoChatMemory
    from memento_llamaindex.chat_store import MementoChatStore
    from memento_llamaindex.mapping import from_memento_message, to_memento_message
    from memento_llamaindex.retriever import MementoRetriever
    from memento_llamaindex.streaming import ahotword_stream, hotword_stream

__version__ = "0.1.0"

_SOURCES = {
    "MementoChatMemory": "memento_llamaindex.chat_memory",
    "MementoChatStore": "memento_llamaindex.chat_store",
    "MementoMemoryBlock": "memento_llamaindex.block",
    "MementoRetriever": "memento_llamaindex.retriever",
    "ahotword_stream": "memento_llamaindex.streaming",
    "from_memento_message": "memento_llamaindex.mapping",
    "hotword_stream": "memento_llamaindex.streaming",
    "to_memento_message": "memento_llamaindex.mapping",
}

__all__ = [
    "MementoChatMemory",
    "MementoChatStore",
    "MementoMemoryBlock",
    "MementoRetriever",
    "__version__",
    "ahotword_stream",
    "from_memento_message",
    "hotword_stream",
    "to_memento_message",
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
