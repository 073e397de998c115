"""Memento for AutoGen: ``AssistantAgent(memory=[MementoMemory(...)])``."""

from memento_autogen.config import MementoMemoryConfig
from memento_autogen.memory import MementoMemory
from memento_autogen.tool import remember_tool

__version__ = "0.1.0"

__all__ = [
    "MementoMemory",
    "MementoMemoryConfig",
    "__version__",
    "remember_tool",
]
