"""LangMem's memory tools on a MementoStore: written for any ``BaseStore``, they work unchanged.

The tools are what a LangMem agent calls: ``manage_memory`` (create, update, delete) and
``search_memory``, with the namespace templated on the run's ``user_id``. They run inside a
graph so that ``get_store()`` and the config reach them, as in an agent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from memento_core import Memento, Scope
from memento_langgraph import MementoStore

langmem = pytest.importorskip("langmem")

Fresh = Callable[[str], str]


class Calls(TypedDict, total=False):
    calls: list[tuple[str, dict[str, Any]]]
    results: list[Any]


def run_tools(store: MementoStore, user: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Invoke LangMem's tools in order inside a one-node graph compiled with ``store``."""
    namespace = ("memories", "{user_id}")
    tools = {
        "manage": langmem.create_manage_memory_tool(namespace=namespace),
        "search": langmem.create_search_memory_tool(namespace=namespace),
    }

    def node(state: Calls, config: RunnableConfig) -> Calls:
        return {"results": [tools[name].invoke(args, config) for name, args in state["calls"]]}

    builder = StateGraph(Calls)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile(store=store)
    return list(graph.invoke({"calls": calls}, {"configurable": {"user_id": user}})["results"])


def test_langmem_tools_create_search_update_and_delete(shared_mem: Memento, fresh: Fresh) -> None:
    store = MementoStore(shared_mem, project_id=fresh("langmem"))
    user, other = fresh("alice"), fresh("bob")
    created = run_tools(
        store,
        user,
        [
            ("manage", {"content": "Alice is allergic to peanuts."}),
            ("manage", {"content": "Alice's favourite tea is a smoky lapsang souchong."}),
        ],
    )
    memory_key = created[0].split()[-1]  # "created memory <key>"

    (found,) = run_tools(store, user, [("search", {"query": "what food allergy?", "limit": 2})])
    hits = json.loads(found) if isinstance(found, str) else found
    assert "peanuts" in str(hits[0]["value"]) and hits[0]["score"] is not None
    # The item is a Memento memory of the user: core recalls it in the user's scope.
    recalled = shared_mem.recall("peanut allergy", scope=Scope(user_id=user), limit=1)
    assert "peanuts" in recalled[0].item.content

    (stranger,) = run_tools(store, other, [("search", {"query": "what food allergy?"})])
    assert "peanuts" not in str(stranger)

    run_tools(
        store,
        user,
        [
            (
                "manage",
                {"content": "Alice is allergic to cashews.", "id": memory_key, "action": "update"},
            )
        ],
    )
    (after,) = run_tools(store, user, [("search", {"query": "allergy"})])
    assert "cashews" in str(after) and "peanuts" not in str(after)

    run_tools(store, user, [("manage", {"id": memory_key, "action": "delete"})])
    (gone,) = run_tools(store, user, [("search", {"query": "allergy"})])
    assert "cashews" not in str(gone)
