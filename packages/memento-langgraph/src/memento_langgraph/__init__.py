"""Memento for LangGraph: a store, a checkpointer and graph nodes over Memento's memory.

Importing this package (or its ``plugin`` module, as Memento's plugin discovery does) loads no
framework code: each name below is imported on first use.
"""

import typing as _typing
from importlib import import_module as _import_module

if _typing.TYPE_CHECKING:
    from memento_langgraph.hotwords import HotwordStream, chunk_text
    from memento_langgraph.messages import INJECTED_PREFIX, archive_messages, to_memento_messages
    from memento_langgraph.namespaces import NamespaceMapping
    from memento_langgraph.nodes import MEMORIES_KEY, recall_node, remember_node, scope_from_config
    from memento_langgraph.saver import EndOfThread, MementoSaver
    from memento_langgraph.store import UNINDEXED, MementoStore

__version__ = "0.1.0"

_SOURCES = {
    "EndOfThread": "memento_langgraph.saver",
    "HotwordStream": "memento_langgraph.hotwords",
    "INJECTED_PREFIX": "memento_langgraph.messages",
    "MEMORIES_KEY": "memento_langgraph.nodes",
    "MementoSaver": "memento_langgraph.saver",
    "MementoStore": "memento_langgraph.store",
    "NamespaceMapping": "memento_langgraph.namespaces",
    "UNINDEXED": "memento_langgraph.store",
    "archive_messages": "memento_langgraph.messages",
    "chunk_text": "memento_langgraph.hotwords",
    "recall_node": "memento_langgraph.nodes",
    "remember_node": "memento_langgraph.nodes",
    "scope_from_config": "memento_langgraph.nodes",
    "to_memento_messages": "memento_langgraph.messages",
}

__all__ = [
    "INJECTED_PREFIX",
    "MEMORIES_KEY",
    "UNINDEXED",
    "EndOfThread",
    "HotwordStream",
    "MementoSaver",
    "MementoStore",
    "NamespaceMapping",
    "__version__",
    "archive_messages",
    "chunk_text",
    "recall_node",
    "remember_node",
    "scope_from_config",
    "to_memento_messages",
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
