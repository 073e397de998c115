"""Erasure lives in the store (issue 21): a user's checkpoints, blobs and writes go whichever
instance or process erases — a fresh ``Memento`` that never built a saver, or the CLI in
another process — and the raw Chroma collections keep no trace of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from memento_core import Embedder, Memento
from memento_core.testing import raw_traces
from memento_langgraph import MementoSaver

MARK = "QZXV"
"""In every text the erased user writes; no trace of it, nor of her name, may stay."""
USER = "zoewhitlock"
KEEP = "Bob's thread about the allotment"


def _graph(saver: MementoSaver) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"noted: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def _config(thread: str, user: str | None = None) -> Any:
    configurable = {"thread_id": thread, **({"user_id": user} if user else {})}
    return {"configurable": configurable}


def _write(path: Path, embedder: Embedder) -> None:
    """Her threads (two turns each) and bob's, on an instance closed afterwards."""
    with Memento.open(path, embedder=embedder) as mem:
        saver = MementoSaver(mem, archive_on_delete=False)
        graph = _graph(saver)
        for thread in ("her-1", "her-2"):
            for turn in ("my locker code is 4471", "and my bank is Northwind"):
                graph.invoke({"messages": [HumanMessage(f"{MARK} {turn}")]}, _config(thread, USER))
        graph.invoke({"messages": [HumanMessage(KEEP)]}, _config("bob-1", "bob"))
        # A pending write whose config names no user takes its checkpoint's user.
        latest = saver.get_tuple(_config("her-1"))
        assert latest is not None
        saver.put_writes(latest.config, [("messages", f"{MARK} pending")], task_id="t1")
        assert saver.get_tuple(_config("her-1")) is not None
    assert raw_traces(path, MARK, USER)  # the check below can fail: her records are there


def _erase_with_a_fresh_instance(path: Path, embedder: Embedder) -> None:
    with Memento.open(path, embedder=embedder) as mem:
        report = mem.erase_user(USER)
    assert min(report.extra[name] for name in ("lg_checkpoints", "lg_blobs", "lg_writes")) > 0


def _erase_with_the_cli(path: Path, embedder: Embedder) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memento_core", "erase-user", USER, "--path", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert f"erased user {USER}" in done.stdout


@pytest.mark.parametrize("erase", [_erase_with_a_fresh_instance, _erase_with_the_cli])
def test_erasure_reaches_checkpoints_from_anywhere(
    erase: Any, tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "store"
    _write(path, embedder)

    erase(path, embedder)

    with Memento.open(path, embedder=embedder) as mem:
        saver = MementoSaver(mem)
        for thread in ("her-1", "her-2"):
            assert saver.get_tuple(_config(thread)) is None
            assert list(saver.list(_config(thread))) == []
        kept = saver.get_tuple(_config("bob-1"))
        assert kept is not None
        assert [m.content for m in kept.checkpoint["channel_values"]["messages"]] == [
            KEEP,
            f"noted: {KEEP}",
        ]
    assert raw_traces(path, MARK, USER) == []


def test_blobs_and_writes_stored_without_their_user_get_it_once(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Records of earlier versions: checkpoints named their user, blobs and writes did not."""
    path = tmp_path / "store"
    _write(path, embedder)
    with Memento.open(path, embedder=embedder) as mem:
        for name in ("lg_blobs", "lg_writes"):  # as earlier versions stored them
            records = mem.side_records(name)
            old = records.find()
            records.delete(ids=[r.id for r in old])  # an upsert would keep the stored key
            records.add(
                [r.id for r in old],
                [r.document for r in old],
                [{k: v for k, v in r.metadata.items() if k != "user_id"} for r in old],
            )
            assert not records.find({"user_id": USER})
        mem.side_records("lg_migrations").delete(ids=["checkpoint-users"])

    with Memento.open(path, embedder=embedder) as mem:
        MementoSaver(mem)  # a writable saver opening the store tags them
        assert mem.side_records("lg_blobs").find({"user_id": USER})
    _erase_with_a_fresh_instance(path, embedder)
    with Memento.open(path, embedder=embedder) as mem:
        assert MementoSaver(mem).get_tuple(_config("her-1")) is None
        assert MementoSaver(mem).get_tuple(_config("bob-1")) is not None
    assert raw_traces(path, MARK, USER) == []
