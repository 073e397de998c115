"""Memento for LangGraph: a store, a checkpointer and graph nodes over Memento's memory."""

from memento_langgraph.hotwords import HotwordStream, chunk_text
from memento_langgraph.messages import INJECTED_PREFIX, archive_messages, to_memento_messages
from memento_langgraph.namespaces import NamespaceMapping
from memento_langgraph.nodes import MEMORIES_KEY, recall_node, remember_node, scope_from_config
from memento_langgraph.saver import EndOfThread, MementoSaver
from memento_langgraph.store import UNINDEXED, MementoStore

__version__ = "0.1.0"

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
