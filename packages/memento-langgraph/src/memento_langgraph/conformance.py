"""This adapter's driver for the cross-adapter conformance suite (``memento_core.testing``).

Every step goes through LangGraph: memories are written and deleted as items of a
``MementoStore`` (the way LangMem's tools write them), recalled by running a graph with
``recall_node`` (ids and scores read from the injected message), and hotwords come from a graph
node streaming text through ``HotwordStream``, read with ``stream_mode="custom"``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph

from memento_core import Memento
from memento_core.testing import Hit
from memento_langgraph.hotwords import HotwordStream
from memento_langgraph.nodes import MEMORIES_KEY, recall_node
from memento_langgraph.store import MementoStore

NAMESPACE = "memories"
UNLIMITED_TOKENS = 1_000_000


class LangGraphDriver:
    name = "langgraph"
    streams_hotwords = True

    def __init__(self, mem: Memento) -> None:
        self.mem = mem
        self.store = MementoStore(mem, index={"fields": ["text"]})
        self._keys: dict[str, tuple[tuple[str, ...], str]] = {}

    def remember(self, text: str, *, user_id: str) -> str:
        namespace, key = (NAMESPACE, user_id), uuid.uuid4().hex
        self.store.put(namespace, key, {"text": text})
        memory_id = self.store.mapping.memory_id(namespace, key)
        self._keys[memory_id] = (namespace, key)
        return memory_id

    def recall(self, query: str, *, user_id: str, limit: int) -> list[Hit]:
        builder = StateGraph(MessagesState)
        builder.add_node(
            "recall", recall_node(self.mem, limit=limit, token_budget=UNLIMITED_TOKENS)
        )
        builder.add_edge(START, "recall")
        builder.add_edge("recall", END)
        state = builder.compile().invoke(
            {"messages": [HumanMessage(query)]},
            {"configurable": {"user_id": user_id, "thread_id": "conformance"}},
        )
        injected = [
            m for m in state["messages"] if MEMORIES_KEY in getattr(m, "additional_kwargs", {})
        ]
        listed = injected[-1].additional_kwargs[MEMORIES_KEY] if injected else []
        return [Hit(entry["id"], entry["score"]) for entry in listed]

    def forget(self, memory_id: str, *, user_id: str) -> None:
        namespace, key = self._keys.pop(memory_id)
        self.store.delete(namespace, key)

    def hotword_events(self, chunks: Sequence[str], *, connection_id: str) -> list[dict[str, Any]]:
        hotwords = HotwordStream(self.mem)

        def speak(state: MessagesState) -> dict[str, Any]:
            for _ in hotwords.stream(list(chunks)):
                pass
            return {}

        builder = StateGraph(MessagesState)
        builder.add_node("speak", speak)
        builder.add_edge(START, "speak")
        builder.add_edge("speak", END)
        config: RunnableConfig = {
            "configurable": {"user_id": "conformance", "thread_id": connection_id}
        }
        state: MessagesState = {"messages": []}
        return list(builder.compile().stream(state, config, stream_mode="custom"))


def driver(mem: Memento) -> LangGraphDriver:
    return LangGraphDriver(mem)
