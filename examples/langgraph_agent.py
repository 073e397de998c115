"""A LangGraph chatbot gains long-term memory from Memento.

The chatbot is an ordinary LangGraph graph: START → chatbot → END over ``MessagesState``. It gains
memory with two nodes and two compile arguments — nothing else changes:

    builder.add_node("recall", recall_node())      # the user's memories → a system message
    builder.add_node("remember", remember_node())  # the exchange → an episodic memory
    builder.compile(store=MementoStore(mem), checkpointer=MementoSaver(mem))

Then, in a second thread, the same user is answered with what the first thread taught.

Run it offline (a fake chat model that answers from the memories it is shown):

    HF_HUB_OFFLINE=1 .venv/bin/python examples/langgraph_agent.py

With a real model: install LangChain's model factory and a provider, and name the model::

    .venv/bin/pip install langchain langchain-openai      # or langchain-anthropic, …
    export OPENAI_API_KEY=...                             # the provider's key
    MEMENTO_CHAT_MODEL=openai:gpt-4o-mini .venv/bin/python examples/langgraph_agent.py

``--path DIR`` keeps the Memento store in ``DIR`` (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph

from memento_core import Memento
from memento_langgraph import MementoSaver, MementoStore, recall_node, remember_node


class OfflineModel(BaseChatModel):
    """A stand-in for an LLM: it acknowledges statements and answers questions by quoting the
    memories the recall node put in front of it. No network, no weights."""

    @property
    def _llm_type(self) -> str:
        return "offline-memory-echo"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        question = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        memories = [
            line.removeprefix("- ")
            for m in messages
            if isinstance(m, SystemMessage)
            for line in str(m.content).splitlines()[1:]
        ]
        if not str(question.content).rstrip().endswith("?"):
            reply = "Thanks, I'll remember that."
        elif memories:
            reply = f"From what you told me before: {memories[0]}"
        else:
            reply = "I don't know yet."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


def chat_model() -> BaseChatModel:
    """``$MEMENTO_CHAT_MODEL`` (``provider:model``) through LangChain, else the offline model."""
    name = os.environ.get("MEMENTO_CHAT_MODEL")
    if not name:
        return OfflineModel()
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as err:
        raise SystemExit(
            "MEMENTO_CHAT_MODEL needs LangChain's model factory: pip install langchain "
            "and the provider's package (e.g. langchain-openai)"
        ) from err
    model: BaseChatModel = init_chat_model(name)
    return model


def chatbot_graph(model: BaseChatModel, *, with_memory: Memento | None = None) -> Any:
    """The existing chatbot; ``with_memory`` adds Memento's two nodes, store and checkpointer."""

    def chatbot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    if with_memory is None:
        builder.add_edge(START, "chatbot")
        builder.add_edge("chatbot", END)
        return builder.compile()

    builder.add_node("recall", recall_node())
    builder.add_node("remember", remember_node())
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "chatbot")
    builder.add_edge("chatbot", "remember")
    builder.add_edge("remember", END)
    return builder.compile(store=MementoStore(with_memory), checkpointer=MementoSaver(with_memory))


def say(graph: Any, user: str, thread: str, text: str) -> str:
    config = {"configurable": {"user_id": user, "thread_id": thread}}
    reply = graph.invoke({"messages": [("user", text)]}, config)["messages"][-1]
    print(f"  [{thread}] {user}: {text}")
    print(f"  [{thread}] bot:  {reply.content}")
    return str(reply.content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, help="keep the Memento store here")
    args = parser.parse_args(argv)
    model = chat_model()

    print("Without memory, a new thread starts from nothing:")
    plain = chatbot_graph(model)
    say(plain, "alice", "thread-1", "My sister Maya lives in Porto.")
    say(plain, "alice", "thread-2", "Where does my sister live?")

    with (
        tempfile.TemporaryDirectory(prefix="memento-langgraph-") as tmp,
        Memento.open(args.path or Path(tmp) / "memory") as mem,
    ):
        print("\nWith Memento, the second thread knows what the first one taught:")
        graph = chatbot_graph(model, with_memory=mem)
        say(graph, "alice", "thread-1", "My sister Maya lives in Porto.")
        answer = say(graph, "alice", "thread-2", "Where does my sister live?")

        print("\nAnd another user learns nothing of Alice's:")
        say(graph, "bob", "thread-3", "Where does my sister live?")

        archive_id = MementoSaver(mem).archive_thread("thread-1")
        if archive_id:
            print(f"\nThread 1 archived as episodic memory {archive_id[:12]}…:")
            print("  " + mem.get(archive_id).content.replace("\n", "\n  "))
    return 0 if "Porto" in answer else 1


if __name__ == "__main__":
    raise SystemExit(main())
