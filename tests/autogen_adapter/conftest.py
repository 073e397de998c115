"""Fixtures for the AutoGen adapter: memories over the session's shared embedding model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from _autogen_support import ALICE

from memento_autogen import MementoMemory, MementoMemoryConfig
from memento_core import Memento


@pytest.fixture
async def memory(mem: Memento) -> AsyncIterator[MementoMemory]:
    """Alice's memory for the agent "assistant" on a fresh store (embedded, then server)."""
    memory = MementoMemory(MementoMemoryConfig(**ALICE), store=mem)
    yield memory
    await memory.close()
