"""The package's public names, the key table loader, and the console command end to end."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

import memento_gateway
from memento_core import Embedder, InvalidInput, Memento, Scope
from memento_gateway import Space, load_keys, load_runnable
from memento_gateway.cli import preload_public

RUN_SECONDS = 600  # a guard against a hung command, not a timing assertion

GRAPH_MODULE = textwrap.dedent(
    """
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langgraph.graph import START, MessagesState, StateGraph

    model = FakeListChatModel(responses=["명령으로 띄운 그래프입니다."])

    async def chatbot(state):
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "chatbot")
    graph = builder.compile()

    def build(mem):
        return graph

    not_a_graph = 42
    """
)


def isort_order(name: str) -> tuple[int, str]:
    """Ruff's ``__all__`` order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def test_all_is_sorted_and_resolves() -> None:
    names = list(memento_gateway.__all__)
    assert names == sorted(names, key=isort_order) and len(names) == len(set(names))
    assert [name for name in names if not hasattr(memento_gateway, name)] == []


@pytest.fixture
def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "gw_app.py").write_text(GRAPH_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "gw_app"


def test_load_runnable_takes_a_graph_or_a_factory(app_module: str, mem: Memento) -> None:
    graph = load_runnable(f"{app_module}:graph", mem)
    assert load_runnable(f"{app_module}:build", mem) is graph


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("gw_app", "expected module:attr, got 'gw_app'"),
        ("gw_app:missing", "'gw_app' has no attribute 'missing'"),
        ("gw_app:not_a_graph", "gw_app:not_a_graph is a int, not a graph or runnable"),
        ("no_such_module_here:graph", "cannot import 'no_such_module_here'"),
    ],
)
def test_load_runnable_errors(app_module: str, mem: Memento, target: str, expected: str) -> None:
    with pytest.raises(InvalidInput, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_runnable(target, mem)


def test_load_keys_builds_spaces(app_module: str, mem: Memento, tmp_path: Path) -> None:
    table = {
        "k1": {"space_id": "shop", "return_voice": 1, "system_prompt": "Hi {{visitor_name}}"},
        "k2": {"space_id": "off", "usable": False},
    }
    (tmp_path / "keys.json").write_text(json.dumps(table), encoding="utf-8")
    keys = load_keys(tmp_path / "keys.json", f"{app_module}:graph", mem)
    shop = asyncio.run(keys.resolve("k1"))
    off = asyncio.run(keys.resolve("k2"))
    assert isinstance(shop, Space) and shop.return_voice == 1 and shop.usable
    assert off is not None and not off.usable and off.graph is shop.graph
    assert asyncio.run(keys.resolve("k3")) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{broken", "cannot read the key table"),
        ("[]", "must be a non-empty JSON object"),
        ('{"k": {"project_id": "p"}}', "each entry needs a space_id"),
        ('{"k": {"space_id": "s", "colour": "red"}}', "unknown fields ['colour']"),
        ('{"k": {"space_id": "s", "return_voice": 3}}', "return_voice must be 0 or 1, got 3"),
    ],
)
def test_load_keys_errors(
    app_module: str, mem: Memento, tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "keys.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInput) as refused:
        load_keys(path, f"{app_module}:graph", mem)
    assert expected in str(refused.value) and "\n" not in str(refused.value)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_command_preloads_the_public_memories_beside_the_server(
    tmp_path: Path, embedder: Embedder
) -> None:
    with Memento.open(tmp_path / "shared", embedder=embedder) as mem:
        mem.remember("the office opens at eight", scope=Scope(user_id="bob"), privacy="public")
        mem.remember("bob's locker code is 4411", scope=Scope(user_id="bob"))
    with Memento.open(tmp_path / "shared", embedder=embedder) as mem:
        preload_public(mem)
        assert mem.index_status().memories == 1  # the public one, no user's own
    mem.close()
    preload_public(mem)  # a store failing here is reported by the first turn instead


def test_the_console_command_serves_a_graph(tmp_path: Path) -> None:
    (tmp_path / "gw_app.py").write_text(GRAPH_MODULE, encoding="utf-8")
    (tmp_path / "keys.json").write_text(json.dumps({"cli-key": {"space_id": "cli"}}))
    port = _free_port()
    command = Path(sys.executable).parent / "memento-gateway"
    server = subprocess.Popen(
        [str(command), "gw_app:build", "--keys", "keys.json", "--path", "store",
         "--port", str(port)],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert banner.startswith(f"serving on ws://127.0.0.1:{port}"), banner

        async def converse() -> list[dict[str, Any]]:
            async with connect(f"ws://127.0.0.1:{port}") as ws:
                request = {"action": "sendmsg", "room_uid": "r", "user_id": "u", "msg": "안녕",
                           "api_key": "cli-key"}  # fmt: skip
                await ws.send(json.dumps(request, ensure_ascii=False))
                frames: list[dict[str, Any]] = []
                while not frames or frames[-1]["status"] != "END":
                    frames.append(json.loads(await ws.recv()))
                return frames

        frames = asyncio.run(asyncio.wait_for(converse(), RUN_SECONDS))
    finally:
        server.terminate()
        server.wait(timeout=30)
    streamed = "".join(f["msg"] for f in frames if f["status"] == "stream")
    assert streamed == "명령으로 띄운 그래프입니다."


def test_the_console_command_reports_a_bad_key_table(tmp_path: Path) -> None:
    command = Path(sys.executable).parent / "memento-gateway"
    result = subprocess.run(
        [str(command), "x:y", "--keys", "missing.json", "--path", "store"],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("memento-gateway: cannot read the key table 'missing.json'")
