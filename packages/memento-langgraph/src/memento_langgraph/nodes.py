"""Nodes that give an existing graph memory: recall before the model, remember after it.

Both read the scope from the run's config: ``config["configurable"]["user_id"]`` (the key is
configurable) is the user, ``thread_id`` the session. Memento is the one passed in, or else the
graph's store when it is a ``MementoStore`` (``graph.compile(store=MementoStore(mem))``).

In a ``StateGraph``::

    builder.add_node("recall", recall_node())      # START → recall → chatbot → remember
    builder.add_node("remember", remember_node())

With LangGraph's prebuilt agent::

    create_react_agent(model, tools, pre_model_hook=recall_node(output="llm_input_messages"),
                       post_model_hook=remember_node(), store=MementoStore(mem))

Each node is a ``RunnableLambda`` with a sync and an async body; the async one does its store
work in a thread, so ``ainvoke`` never blocks the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal
from uuid import uuid4

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.messages import SystemMessage as LCSystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.config import get_store

from memento_core import (
    MAX_CONTENT_CHARS,
    InvalidScope,
    Memento,
    MemoryType,
    Scope,
)
from memento_langgraph.messages import INJECTED_PREFIX, as_langchain
from memento_langgraph.store import MementoStore

__all__ = ["MEMORIES_KEY", "recall_node", "remember_node", "scope_from_config"]

MEMORIES_KEY = "memento_memories"
"""The injected system message's ``additional_kwargs`` key listing what it holds, best first:
``[{"id": ..., "score": ...}]`` — for a later node that cites or rates its memories."""

Update = dict[str, Any]


def scope_from_config(config: RunnableConfig, *, user_key: str = "user_id") -> Scope:
    """The run's Memento scope: its user (required) and its thread as the session."""
    configurable = config.get("configurable") or {}
    user = configurable.get(user_key)
    if user is None or not str(user).strip():
        raise InvalidScope(
            f"Memento's nodes need the user in config['configurable'][{user_key!r}], e.g. "
            f"graph.invoke(..., {{'configurable': {{'{user_key}': 'alice', 'thread_id': 't1'}}}})"
        )
    thread = configurable.get("thread_id")
    return Scope(user_id=str(user), session_id=str(thread) if thread is not None else None)


def recall_node(
    memento: Memento | None = None,
    *,
    token_budget: int = 800,
    limit: int = 8,
    messages_key: str = "messages",
    user_key: str = "user_id",
    output: Literal["messages", "llm_input_messages"] = "messages",
    filter: Mapping[str, Any] | None = None,
) -> RunnableLambda[Any, Update]:
    """A node that recalls memories for the latest user message and injects them.

    The memories come from core's ``memory_injection`` (the best ``limit`` for the user, packed
    into ``token_budget`` tokens) as one system message, whose
    ``additional_kwargs[MEMORIES_KEY]`` lists their ids and scores. ``output="messages"`` adds
    it to the state's messages, replacing the one the node added before (through
    ``add_messages``, as in ``MessagesState``), so a thread holds one at most;
    ``output="llm_input_messages"`` is the prebuilt agent's ``pre_model_hook`` form: the model
    sees it first, before the conversation, and the state does not keep it.
    """

    def run(state: Any, config: RunnableConfig) -> Update:
        messages = as_langchain(_field(state, messages_key))
        query = _latest_user_text(messages)
        injected: list[BaseMessage] = []
        if query:
            mem = _resolve(memento)
            scope = scope_from_config(config, user_key=user_key)
            found = mem.memory_injection(
                query, token_budget=token_budget, scope=scope, limit=limit, filter=filter
            )
            if found.text:
                injected = [
                    LCSystemMessage(
                        found.text,
                        id=f"{INJECTED_PREFIX}{uuid4().hex}",
                        additional_kwargs={
                            MEMORIES_KEY: [{"id": m.id, "score": m.score} for m in found.items]
                        },
                    )
                ]
        earlier = [m for m in messages if (m.id or "").startswith(INJECTED_PREFIX)]
        if output == "llm_input_messages":
            kept = [m for m in messages if not (m.id or "").startswith(INJECTED_PREFIX)]
            return {"llm_input_messages": [*injected, *kept]}
        if not injected and not earlier:
            return {}
        return {messages_key: [*(RemoveMessage(id=m.id or "") for m in earlier), *injected]}

    return _node(run, "memento_recall")


def remember_node(
    memento: Memento | None = None,
    *,
    messages_key: str = "messages",
    user_key: str = "user_id",
    type: MemoryType | str = MemoryType.EPISODIC,
    tags: Sequence[str] = ("langgraph",),
) -> RunnableLambda[Any, Update]:
    """A node that stores the latest exchange — the last user message and the model's reply
    after it — as one episodic memory of the user, in the thread's session. It changes no state.

    It does nothing until the reply has text (a tool-calling step is not an answer), and the
    same exchange is stored once (Memento keys memories by content and scope).
    """

    def run(state: Any, config: RunnableConfig) -> Update:
        exchange = _last_exchange(as_langchain(_field(state, messages_key)))
        if exchange is None:
            return {}
        question, answer = exchange
        scope = scope_from_config(config, user_key=user_key)
        text = f"User: {question.text}\nAssistant: {answer.text}"
        _resolve(memento).remember(
            text[:MAX_CONTENT_CHARS],
            scope=scope,
            type=type,
            source="chat",
            tags=tags,
            origin_trace={
                "langgraph": {"thread_id": scope.session_id, "messages": [question.id, answer.id]}
            },
        )
        return {}

    return _node(run, "memento_remember")


def _node(run: Callable[[Any, RunnableConfig], Update], name: str) -> RunnableLambda[Any, Update]:
    def sync(state: Any, config: RunnableConfig) -> Update:
        return run(state, config)

    async def asynchronous(state: Any, config: RunnableConfig) -> Update:
        # The thread inherits this task's context, so get_store() still finds the graph's store.
        return await asyncio.to_thread(run, state, config)

    return RunnableLambda(sync, afunc=asynchronous, name=name)


def _resolve(memento: Memento | None) -> Memento:
    if memento is not None:
        return memento
    try:
        store = get_store()
    except RuntimeError:  # not inside a graph run
        store = None
    if isinstance(store, MementoStore):
        return store.memento
    raise TypeError(
        "this node needs a Memento: pass one (recall_node(mem)) or compile the graph with "
        "store=MementoStore(mem)"
    )


def _field(state: Any, key: str) -> Any:
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def _latest_user_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return str(message.text).strip()
    return ""


def _last_exchange(messages: Sequence[BaseMessage]) -> tuple[BaseMessage, BaseMessage] | None:
    answer: BaseMessage | None = None
    for message in reversed(messages):
        if isinstance(message, AIMessage) and answer is None and str(message.text).strip():
            answer = message
        elif isinstance(message, HumanMessage):
            if answer is None or not str(message.text).strip():
                return None
            return message, answer
    return None
