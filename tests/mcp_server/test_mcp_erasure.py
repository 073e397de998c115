"""The right to erasure reaches every place a user's data lives (issue 21): one user writes
through MCP (a real stdio server), core, LangGraph (checkpointer and store), LlamaIndex (chat
store) and AutoGen; ``erase_user`` then leaves no trace on any API path, nor in any raw Chroma
collection of the store, read with ``chromadb`` itself."""

from __future__ import annotations

import asyncio
import base64
import binascii
import sys
from pathlib import Path
from typing import Any

from _mcp_support import open_session, server_env
from autogen_core.memory import MemoryContent, MemoryMimeType
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from llama_index.core.base.llms.types import ChatMessage
from mcp import StdioServerParameters, stdio_client

from memento_autogen import MementoMemory, MementoMemoryConfig
from memento_core import Embedder, Memento, Message, Scope
from memento_core.testing import raw_traces
from memento_langgraph import MementoSaver, MementoStore
from memento_llamaindex import MementoChatStore

MARK = "QZXV"
"""In every text the user writes; no trace of it, nor of the user's name, may stay."""
USER = "zoewhitlock"
OTHER = Scope(user_id="yusuf")


def _traces(value: str) -> bool:
    if MARK in value or USER in value:
        return True
    try:  # checkpoint documents are base64
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return MARK.encode() in decoded or USER.encode() in decoded


def _write_through_mcp(path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memento_mcp", "--path", str(path), "--user", USER],
        env=server_env(),
    )
    for session in open_session(lambda: stdio_client(params)):
        session.ok("remember", {"content": f"{MARK} via mcp: my locker code is 4471"})
        session.ok(
            "remember", {"content": f"{MARK} via mcp: a public tip", "privacy_scope": "public"}
        )


def _graph(mem: Memento) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"{MARK} noted")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=MementoSaver(mem), store=MementoStore(mem))


def test_erase_user_leaves_no_trace_anywhere(tmp_path: Path, embedder: Embedder) -> None:
    path = tmp_path / "store"
    _write_through_mcp(path)
    user = Scope(user_id=USER, project_id="apollo")
    with Memento.open(path, embedder=embedder) as mem:
        kept = mem.remember("Yusuf's own note about lockers", scope=OTHER, privacy="public")
        mem.remember(f"{MARK} via core: allergic to penicillin", scope=user)
        chat = mem.chat("session-1", scope=user)
        chat.append(Message.user(f"{MARK} via chat: my address is 12 Elm Row"))
        mem.summarize_thread("session-1", scope=user)

        graph = _graph(mem)
        config = {"configurable": {"thread_id": "thread-1", "user_id": USER}}
        graph.invoke({"messages": [HumanMessage(content=f"{MARK} via langgraph")]}, config)
        store = MementoStore(mem)
        store.put((USER, "memories"), "favourite", {"text": f"{MARK} via the store: tea"})

        chat_store = MementoChatStore(store=mem, user_id=USER)
        asyncio.run(chat_store.add_message("li-1", ChatMessage(role="user", content=f"{MARK} li")))
        autogen = MementoMemory(MementoMemoryConfig(user_id=USER), store=mem)
        asyncio.run(
            autogen.add(MemoryContent(content=f"{MARK} via autogen", mime_type=MemoryMimeType.TEXT))
        )
        # The other user's memory is linked from the erased user's: it must survive.
        (mine,) = [i.id for i in mem.items(scope=OTHER) if "public tip" in i.content]
        mem.link(kept, "derived_from", mine, scope=OTHER)
        assert raw_traces(
            path, MARK, USER
        )  # the check below can fail: every path above wrote a trace

        report = mem.erase_user(USER)
        assert report.extra["lg_checkpoints"] > 0 and report.extra["lg_blobs"] > 0

        assert mem.get(kept).content == "Yusuf's own note about lockers"
        assert not [i for i in mem.items(include_deleted=True) if _traces(i.content)]
        assert not [line for line in mem.export() if _traces(line)]
        assert not [r for r in mem.recall(MARK, scope=user, limit=50) if _traces(r.item.content)]
        assert mem.history("session-1") == []
        assert graph.get_state(config).values == {}
        assert _graph(mem).checkpointer.get_tuple(config) is None
        assert store.search((USER,)) == [] and store.get((USER, "memories"), "favourite") is None
        assert asyncio.run(chat_store.get_messages("li-1")) == []
        found = asyncio.run(autogen.query(MARK)).results
        assert not [m for m in found if _traces(str(m.content))]
    assert raw_traces(path, MARK, USER) == []
