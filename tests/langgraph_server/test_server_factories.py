"""``memento_langgraph.server``'s factories as a LangGraph server enters them: configured from
the environment, one Memento for the store and the checkpointer, closed when both are left,
and one clear line when the settings or the store are wrong — in process, through
``langgraph dev`` itself, and through the checkpointer service a deployed server's core calls
(``prune``, which ``langgraph dev``'s in-memory runtime does not reach).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from _server_support import free_port, launch, prepare_project
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph

from memento_core import Embedder, Memento, MemoryDraft, Scope
from memento_langgraph.server import ServerConfigError, checkpointer, store

SETTINGS = (
    "MEMENTO_PATH",
    "MEMENTO_URL",
    "MEMENTO_COLLECTION_PREFIX",
    "MEMENTO_EMBEDDING_MODEL",
    "MEMENTO_PROJECT",
    "MEMENTO_INDEX_FIELDS",
    "LANGGRAPH_STORE",
)
DEFAULT_LOAD_LIMIT = 500
"""``Memento.open``'s ``partition_load_limit``: a partition past it is mirrored, not loaded."""
BIG_USER = Scope(user_id="big")
WARM_SECONDS = 180
"""A guard against a warm-up that never mirrors, not a timing assertion."""
EXIT_SECONDS = 180
"""A guard against a misconfigured server that does not exit, not a timing assertion."""
HOLDER = """
import sys, time
from memento_core import Memento
with Memento.open(sys.argv[1]):
    print("holding", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A clean slate of Memento's server settings; the test sets what it needs."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Path]:
    """An embedded store held open for writing by another process."""
    path = tmp_path / "held"
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "holding"
        yield path
    finally:
        process.kill()
        process.wait()


def _can_open_elsewhere(path: Path) -> bool:
    """Whether another process can open the embedded store for writing now."""
    probe = "import sys\nfrom memento_core import Memento\nMemento.open(sys.argv[1]).close()"
    result = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0 and "StoreLocked" not in result.stderr:
        raise AssertionError(result.stderr)
    return result.returncode == 0


async def _enter_both(stack: AsyncExitStack) -> tuple[Any, Any]:
    return await stack.enter_async_context(store()), await stack.enter_async_context(checkpointer())


async def test_one_memento_for_both_closed_when_both_are_left(
    environ: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "store"
    environ.setenv("MEMENTO_PATH", str(path))
    environ.setenv("MEMENTO_INDEX_FIELDS", "text, title")
    environ.setenv("MEMENTO_PROJECT", "shop")
    environ.setenv("LANGGRAPH_STORE", json.dumps({"path": "x", "ttl": {"default_ttl": 30}}))
    async with AsyncExitStack() as stack:
        lg_store, saver = await _enter_both(stack)
        assert lg_store.memento is saver.memento
        assert lg_store.index_config["fields"] == ["text", "title"]
        assert lg_store.ttl_config == {"default_ttl": 30.0}
        await lg_store.aput(("memories", "ann"), "k", {"text": "Ann sails", "other": "x"})
        hits = saver.memento.recall("sailing", scope=Scope(user_id="ann"))
        assert [h.item.content for h in hits] == ["Ann sails"]
        assert not _can_open_elsewhere(path)  # held while the server runs
    assert _can_open_elsewhere(path)  # closed on shutdown


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({"MEMENTO_PATH": "{tmp}/store", "MEMENTO_URL": "http://127.0.0.1:1"}, "MEMENTO_PATH"),
        ({"MEMENTO_URL": "localhost:8000"}, "MEMENTO_URL"),
        ({"MEMENTO_PATH": "{tmp}/store", "MEMENTO_PROJECT": "tab\tin name"}, "MEMENTO_PROJECT"),
        ({"MEMENTO_PATH": "{tmp}/store", "MEMENTO_PROJECT": "p" * 300}, "MEMENTO_PROJECT"),
    ],
)
async def test_bad_settings_fail_at_start_with_one_line(
    environ: pytest.MonkeyPatch, tmp_path: Path, settings: dict[str, str], names: str
) -> None:
    for name, value in settings.items():
        environ.setenv(name, value.replace("{tmp}", str(tmp_path)))
    for factory in (store, checkpointer):
        with pytest.raises(ServerConfigError) as caught:
            async with factory():
                pass
        assert names in str(caught.value) and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing created


async def test_an_unreachable_chroma_server_fails_at_start(environ: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    environ.setenv("MEMENTO_URL", url)
    with pytest.raises(ServerConfigError, match=r"StoreUnavailable") as caught:
        async with store():
            pass
    assert url in str(caught.value) and "\n" not in str(caught.value)


async def test_a_store_of_another_embedding_space_fails_at_start(
    environ: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "store"
    with Memento.open(path) as mem:  # built with the default model
        mem.remember("built with fp32 MiniLM", scope=Scope(user_id="u"))
    environ.setenv("MEMENTO_PATH", str(path))
    environ.setenv("MEMENTO_EMBEDDING_MODEL", "all-MiniLM-L6-v2-int8")
    with pytest.raises(ServerConfigError, match=r"EmbedderMismatch") as caught:
        async with checkpointer():
            pass
    assert "\n" not in str(caught.value)
    with Memento.open(path) as mem:  # unharmed
        assert [h.item.content for h in mem.recall("MiniLM", scope=Scope(user_id="u"))] == [
            "built with fp32 MiniLM"
        ]


async def test_a_locked_embedded_store_fails_at_start(
    environ: pytest.MonkeyPatch, holder: Path
) -> None:
    environ.setenv("MEMENTO_PATH", str(holder))
    with pytest.raises(ServerConfigError, match=r"StoreLocked") as caught:
        async with store():
            pass
    assert str(holder) in str(caught.value) and "\n" not in str(caught.value)


def test_langgraph_dev_exits_with_the_line_when_misconfigured(tmp_path: Path) -> None:
    workdir = prepare_project(tmp_path / "project", extra_graphs=False)
    url = f"http://127.0.0.1:{free_port()}"
    server = launch(workdir, {"MEMENTO_URL": url})
    try:
        code = server.process.wait(timeout=EXIT_SECONDS)
    finally:
        server.stop()
    assert code != 0
    lines = [line for line in server.log().splitlines() if "cannot open the Memento store" in line]
    assert lines, server.log()[-4000:]
    assert all(f"at {url}" in line and "StoreUnavailable" in line for line in lines)


# ---------------------------------------------------------------------------- deployed server


@pytest.fixture
def server_checkpointer(environ: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """langgraph-api's checkpointer module with ``memento_langgraph.server:checkpointer`` as the
    custom checkpointer, as ``"checkpointer": {"path": ...}`` configures it."""
    environ.setenv("MEMENTO_PATH", str(tmp_path / "store"))
    # langgraph-api's settings are read when it is imported; these are langgraph dev's.
    for name, value in {
        "REDIS_URI": "fake",
        "DATABASE_URI": ":memory:",
        "MIGRATIONS_PATH": "__inmem",
        "LANGGRAPH_RUNTIME_EDITION": "inmem",
    }.items():
        environ.setenv(name, os.environ.get(name, value))
    from langgraph_api._checkpointer import _adapter  # type: ignore[import-untyped]

    environ.setattr(_adapter, "CUSTOM_CHECKPOINTER", checkpointer)
    environ.setattr(_adapter, "CHECKPOINTER_STACK", threading.local())
    environ.setattr(_adapter, "_CHECKPOINTER_CAPABILITIES", None)
    yield _adapter


async def test_prune_through_the_servers_checkpointer_service(server_checkpointer: Any) -> None:
    from langgraph_api.grpc.servicers.checkpointer import (  # type: ignore[import-untyped]
        CheckpointerServicerImpl,
    )
    from langgraph_grpc_common.proto import checkpointer_pb2  # type: ignore[import-untyped]

    adapter = await server_checkpointer.get_checkpointer()
    try:
        caps = server_checkpointer.get_checkpointer_capabilities()
        assert caps.has_adelete_for_runs and caps.has_acopy_thread and caps.has_aprune
        builder = StateGraph(MessagesState)
        builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
        builder.add_edge(START, "reply")
        builder.add_edge("reply", END)
        graph: Any = builder.compile(checkpointer=adapter)
        threads: dict[str, RunnableConfig] = {
            t: {"configurable": {"thread_id": t}} for t in ("t1", "t2")
        }
        for config in threads.values():
            for n in range(3):
                await graph.ainvoke({"messages": [("user", f"message {n}")]}, config)
        before = await graph.aget_state(threads["t1"])
        assert len([c async for c in adapter.alist(threads["t1"])]) == 9

        service = CheckpointerServicerImpl()
        strategy = checkpointer_pb2.PruneRequest.PruneStrategy
        await service.Prune(
            checkpointer_pb2.PruneRequest(thread_ids=["t1"], strategy=strategy.KEEP_LATEST), None
        )
        kept = [c async for c in adapter.alist(threads["t1"])]
        assert len(kept) == 1
        after = await graph.aget_state(threads["t1"])
        assert after.values == before.values and len(after.values["messages"]) == 6
        assert len([c async for c in adapter.alist(threads["t2"])]) == 9  # untouched

        await service.Prune(
            checkpointer_pb2.PruneRequest(thread_ids=["t2"], strategy=strategy.DELETE_ALL), None
        )
        assert [c async for c in adapter.alist(threads["t2"])] == []
        assert len([c async for c in adapter.alist(threads["t1"])]) == 1
    finally:
        await server_checkpointer.exit_checkpointer()


async def test_large_partitions_are_mirrored_in_the_background(
    environ: pytest.MonkeyPatch, tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "store"
    # Written without a load limit, as a store from before mirrors: its writer makes none.
    with Memento.open(path, embedder=embedder, partition_load_limit=None) as mem:
        drafts = [
            MemoryDraft(content=f"note {n}: the harbour opens at {n % 24}h", scope=BIG_USER)
            for n in range(DEFAULT_LOAD_LIMIT + 20)
        ]
        mem.remember_many(drafts)
        assert mem.index_status().searched_in_store == 0
    environ.setenv("MEMENTO_PATH", str(path))
    async with store() as lg_store:
        deadline = time.monotonic() + WARM_SECONDS
        while lg_store.memento.index_status().searched_in_store == 0:
            assert time.monotonic() < deadline, "no partition was mirrored"
            await asyncio.sleep(0.2)
