"""A graph the server tests add beside the example's: one slow step, so that a second run on
its thread can roll the first back (``multitask_strategy="rollback"``) while it runs."""

from __future__ import annotations

import time
from typing import Any

from langgraph.graph import END, START, MessagesState, StateGraph

SLOW_SECONDS = 20.0
"""Long enough to be cancelled mid-step; the tests never wait for it to end."""


def first(state: MessagesState) -> dict[str, Any]:
    return {"messages": [("ai", "started")]}


def slow(state: MessagesState) -> dict[str, Any]:
    asked = next(m for m in reversed(state["messages"]) if m.type == "human")
    if str(asked.content).startswith("slow"):
        time.sleep(SLOW_SECONDS)
    return {"messages": [("ai", "done")]}


builder = StateGraph(MessagesState)
builder.add_node("first", first)
builder.add_node("slow", slow)
builder.add_edge(START, "first")
builder.add_edge("first", "slow")
builder.add_edge("slow", END)
graph = builder.compile()
