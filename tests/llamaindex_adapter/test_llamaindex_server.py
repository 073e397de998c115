"""The adapter on a Chroma server (a real `chroma run`), shared by two stores."""

from __future__ import annotations

from uuid import uuid4

import pytest
from _llamaindex_support import assistant, user
from llama_index.core.memory import Memory

from memento_core import Embedder, Memento
from memento_llamaindex import MementoChatMemory, MementoChatStore, MementoMemoryBlock

pytestmark = pytest.mark.server


async def test_memory_block_and_chat_store_on_a_server(
    chroma_server: str, embedder: Embedder
) -> None:
    prefix = f"li{uuid4().hex[:10]}"
    writer = Memento.open(url=chroma_server, collection_prefix=prefix, embedder=embedder)
    reader = Memento.open(url=chroma_server, collection_prefix=prefix, embedder=embedder)
    try:
        chat = MementoChatMemory.from_defaults(
            store=writer, collection_prefix=prefix, user_id="alice", session_id="srv"
        )
        await chat.aput_messages([user("My locker is number 42."), assistant("Noted.")])
        # Another process would rebuild the memory from its settings alone.
        data = chat.to_dict()
        assert data["url"] == chroma_server and data["collection_prefix"] == prefix
        again = MementoChatMemory.from_dict(data, store=reader)
        assert [m.content for m in await again.aget_all()] == ["My locker is number 42.", "Noted."]

        block = MementoMemoryBlock(store=writer, user_id="alice")
        await block.aremember([user("Alice's locker is number 42 in the west hall.")])
        memory = Memory.from_defaults(
            session_id="srv-memory",
            chat_store=MementoChatStore(store=reader, user_id="alice"),
            memory_blocks=[MementoMemoryBlock(store=reader, user_id="alice")],
        )
        await memory.aput(user("hello"))
        got = await memory.aget(input="Which locker is mine?")
        assert "west hall" in (got[0].content or "")
        stored = MementoChatStore(store=writer, user_id="alice")
        assert [m.content for m in await stored.get_messages("srv-memory")] == ["hello"]
    finally:
        writer.close()
        reader.close()
