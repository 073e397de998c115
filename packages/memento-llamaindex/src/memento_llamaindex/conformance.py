"""The cross-adapter conformance driver: Memento's scenarios done through LlamaIndex's API.

``remember`` goes through ``MementoMemoryBlock`` (a user message, as ``Memory`` flushes it),
``recall`` and ``forget`` through ``MementoRetriever``, and hotword events through a
``stream_chat`` response of LlamaIndex's own ``MockFunctionCallingLLM`` wrapped by
``hotword_stream``.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import MockFunctionCallingLLM

from memento_core import HotwordEvent, Memento
from memento_core.testing import ConformanceDriver, Hit
from memento_llamaindex.block import MementoMemoryBlock
from memento_llamaindex.retriever import MementoRetriever
from memento_llamaindex.streaming import hotword_stream


class LlamaIndexDriver:
    name = "llamaindex"
    streams_hotwords = True

    def __init__(self, mem: Memento) -> None:
        self.mem = mem

    def remember(self, text: str, *, user_id: str) -> str:
        block = MementoMemoryBlock(store=self.mem, user_id=user_id)
        (memory_id,) = block.remember([ChatMessage(role=MessageRole.USER, content=text)])
        return memory_id

    def recall(self, query: str, *, user_id: str, limit: int) -> list[Hit]:
        retriever = MementoRetriever(self.mem, user_id=user_id, similarity_top_k=limit)
        return [Hit(n.node.node_id, float(n.score or 0.0)) for n in retriever.retrieve(query)]

    def forget(self, memory_id: str, *, user_id: str) -> None:
        MementoRetriever(self.mem, user_id=user_id).delete_nodes([memory_id])

    def hotword_events(self, chunks: Sequence[str], *, connection_id: str) -> list[dict[str, Any]]:
        def reply(
            messages: Sequence[ChatMessage], **kwargs: Any
        ) -> Generator[ChatMessage, None, None]:
            for chunk in chunks:
                yield ChatMessage(role=MessageRole.ASSISTANT, content=chunk)

        llm = MockFunctionCallingLLM(response_generator=reply)
        responses = llm.stream_chat([ChatMessage(role=MessageRole.USER, content="Tell me.")])
        conversation = self.mem.hotword_detector().conversation(connection_id)
        return [
            item.to_dict()
            for item in hotword_stream(responses, conversation)
            if isinstance(item, HotwordEvent)
        ]


def driver(mem: Memento) -> ConformanceDriver:
    """The LlamaIndex adapter's conformance driver over ``mem``."""
    return LlamaIndexDriver(mem)
