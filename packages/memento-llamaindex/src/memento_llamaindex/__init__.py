"""Memento for LlamaIndex: chat memory, a ``Memory`` block and chat store, and a retriever."""

from memento_llamaindex.block import MementoMemoryBlock
from memento_llamaindex.chat_memory import MementoChatMemory
from memento_llamaindex.chat_store import MementoChatStore
from memento_llamaindex.mapping import from_memento_message, to_memento_message
from memento_llamaindex.retriever import MementoRetriever
from memento_llamaindex.streaming import ahotword_stream, hotword_stream

__version__ = "0.1.0"

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
