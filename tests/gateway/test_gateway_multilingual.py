"""The gateway in Korean: a paraphrase recalled into the graph with the ``multilingual``
embedder, and the console command giving a new store that embedder while an existing store
keeps its own space."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, Recorder, chat_graph, fake_model, request, turn
from langchain_core.messages import SystemMessage
from websockets.asyncio.client import connect

from memento_core import Embedder, Memento, OnnxEmbedder, Scope, plugins
from memento_gateway import Space

RUN_SECONDS = 600  # a guard against a hung command, not a timing assertion
USER = "s8dfkjsdf"
FACT = "왼쪽 무릎 연골 수술을 받아서 계단 오르내리기가 힘들어요."
OTHERS = [
    "계단 대신 엘리베이터를 타는 게 습관이 됐어요.",
    "라테는 우유 거품이 부드러워야 맛있어요.",
    "주말에는 보통 늦잠을 자요.",
]
GRAPH_MODULE = """
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import START, MessagesState, StateGraph

model = FakeListChatModel(responses=["네."])

async def chatbot(state):
    return {"messages": [await model.ainvoke(state["messages"])]}

builder = StateGraph(MessagesState)
builder.add_node("chatbot", chatbot)
builder.add_edge(START, "chatbot")
graph = builder.compile()
"""


@pytest.fixture
def embedder() -> Embedder:
    """The stores of this module are multilingual (the conftest's ``mem`` uses this)."""
    return plugins.embedder("multilingual")


async def test_a_korean_paraphrase_is_recalled_into_the_graph(serving: Any, mem: Memento) -> None:
    recorder = Recorder()
    space = Space("shop", chat_graph(fake_model("알겠어요."), recorder))
    for text in [FACT, *OTHERS]:
        mem.remember(text, scope=space.scope_for(USER))
    harness = await serving({KEY: space})
    async with harness.connect() as ws:
        await turn(ws, request(msg="다리 관절은 괜찮아?"))
    [system] = [m for m in recorder.calls[0] if isinstance(m, SystemMessage)]
    # The memories reach the graph best first: the paraphrased fact leads.
    content = str(system.content)
    assert FACT in content
    assert all(content.index(FACT) < content.index(o) for o in OTHERS if o in content)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_once(directory: Path, *extra: str) -> str:
    """Start ``memento-gateway`` on ``directory/store``, hold one turn, stop it; its output."""
    (directory / "gw_ko.py").write_text(GRAPH_MODULE, encoding="utf-8")
    (directory / "keys.json").write_text(json.dumps({"k": {"space_id": "ko"}}))
    port = _free_port()
    command = Path(sys.executable).parent / "memento-gateway"
    server = subprocess.Popen(
        [str(command), "gw_ko:graph", "--keys", "keys.json", "--path", "store",
         "--port", str(port), *extra],
        cwd=directory,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert banner.startswith("serving on"), banner

        async def converse() -> None:
            async with connect(f"ws://127.0.0.1:{port}") as ws:
                await ws.send(
                    json.dumps(
                        {
                            "action": "sendmsg",
                            "room_uid": "r",
                            "user_id": "u",
                            "msg": "안녕",
                            "api_key": "k",
                        },
                        ensure_ascii=False,
                    )
                )
                while json.loads(await ws.recv())["status"] != "END":
                    pass

        asyncio.run(asyncio.wait_for(converse(), RUN_SECONDS))
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=60)
    return banner + out


def test_the_command_gives_a_new_store_the_multilingual_embedder(tmp_path: Path) -> None:
    _serve_once(tmp_path)
    with Memento.open(tmp_path / "store") as mem:
        assert mem.info.embedder == plugins.embedder("multilingual").name


def test_the_command_keeps_an_existing_stores_space(tmp_path: Path) -> None:
    with Memento.open(tmp_path / "store", embedder=OnnxEmbedder()) as mem:
        mem.remember("The shop opens at nine.", scope=Scope(user_id="u"))
    _serve_once(tmp_path)
    with Memento.open(tmp_path / "store") as mem:
        assert mem.info.embedder == "all-MiniLM-L6-v2"
        assert mem.stats().memories == 1
