"""A chatbot served by ``langgraph dev`` with Memento as the server's store and checkpointer.

``langgraph.json`` beside this file names the graph below and Memento's factories; the server
opens one Memento store for both. The graph itself uses only LangGraph's API:

- ``get_store()`` holds long-term memories under ``("memories", user_id)``: what a user states
  in one thread is recalled in every other thread of that user (and shows in the server's
  ``/store`` endpoints, Studio's memory view).
- The checkpointer holds each thread: its messages, its history, an interrupt's pause.

With ``configurable.confirm`` set, the graph asks before remembering (``interrupt``); resume
the run with ``Command(resume=True)`` to keep the memory, ``False`` to drop it.

Run it offline (the chat model is a stand-in that answers from the memories it is shown)::

    cd examples/langgraph_server
    MEMENTO_PATH=.memento langgraph dev --no-browser

then talk to it with ``langgraph-sdk`` (see the README's "Deploy with a LangGraph server").
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_store
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

MEMORY_LIMIT = 3


class OfflineModel(BaseChatModel):
    """A stand-in for an LLM: it acknowledges statements and answers questions by quoting the
    first memory in the system message. No network, no weights."""

    @property
    def _llm_type(self) -> str:
        return "offline-memory-echo"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        question = str(next(m for m in reversed(messages) if isinstance(m, HumanMessage)).content)
        memories = [
            line.removeprefix("- ")
            for m in messages
            if isinstance(m, SystemMessage)
            for line in str(m.content).splitlines()[1:]
        ]
        if not question.rstrip().endswith("?"):
            reply = "Thanks, I'll remember that."
        elif memories:
            reply = f"From what you told me before: {memories[0]}"
        else:
            reply = "I don't know yet."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


model = OfflineModel()


def _user(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("user_id") or "anonymous")


def _last_question(state: MessagesState) -> str:
    return str(next(m for m in reversed(state["messages"]) if isinstance(m, HumanMessage)).content)


def chatbot(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    """Answer with the user's memories (from any thread) in front of the model."""
    found = get_store().search(
        ("memories", _user(config)), query=_last_question(state), limit=MEMORY_LIMIT
    )
    prompt: list[BaseMessage] = list(state["messages"])
    if found:
        lines = "\n".join(f"- {item.value['text']}" for item in found)
        prompt.insert(0, SystemMessage(f"What you know about the user:\n{lines}"))
    return {"messages": [model.invoke(prompt)]}


def remember(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    """Keep a statement (not a question) as a memory of the user, asking first if told to."""
    text = _last_question(state)
    if text.rstrip().endswith("?"):
        return {}
    if (config.get("configurable") or {}).get("confirm") and not interrupt({"remember": text}):
        return {}
    get_store().put(("memories", _user(config)), uuid.uuid4().hex, {"text": text})
    return {}


builder = StateGraph(MessagesState)
builder.add_node("chatbot", chatbot)
builder.add_node("remember", remember)
builder.add_edge(START, "chatbot")
builder.add_edge("chatbot", "remember")
builder.add_edge("remember", END)
# No store or checkpointer here: the server passes its own (Memento's, per langgraph.json).
graph = builder.compile()
