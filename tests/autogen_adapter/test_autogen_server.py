"""MementoMemory built from a config that names a Chroma server (a real `chroma run`)."""

from __future__ import annotations

from uuid import uuid4

import pytest
from _autogen_support import ALICE, text
from autogen_core.memory import Memory

from memento_autogen import MementoMemory, MementoMemoryConfig

pytestmark = pytest.mark.server


async def test_a_memory_on_a_server_is_shared_by_two_instances(chroma_server: str) -> None:
    config = MementoMemoryConfig(
        url=chroma_server, collection_prefix=f"ag{uuid4().hex[:10]}", **ALICE
    )
    writer = MementoMemory(config)
    await writer.add(text("Alice's standup is at 9:30 in room Nova"))
    await writer.add(text("Alice prefers short answers"))

    # A second instance, as another process would build it from the same JSON config.
    reader = Memory.load_component(writer.dump_component().model_dump(mode="json"))
    assert isinstance(reader, MementoMemory)
    found = (await reader.query("When is the standup?")).results
    assert found[0].content == "Alice's standup is at 9:30 in room Nova"

    await reader.clear()
    assert (await writer.query("standup")).results == []
    await writer.close()
    await reader.close()
