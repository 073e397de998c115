"""Helpers shared by the AutoGen adapter tests."""

from __future__ import annotations

from typing import Any, TypedDict

from autogen_core.memory import MemoryContent, MemoryMimeType


class ScopeFields(TypedDict):
    user_id: str
    agent_id: str


ALICE: ScopeFields = {"user_id": "alice", "agent_id": "assistant"}
"""The scope of the ``memory`` fixture: Alice's memories, written by the agent "assistant"."""


def text(content: str, **metadata: Any) -> MemoryContent:
    return MemoryContent(content=content, mime_type=MemoryMimeType.TEXT, metadata=metadata or None)
