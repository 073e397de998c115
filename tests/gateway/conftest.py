"""Fixtures for the gateway: a real Memento on an embedded Chroma, a real LangGraph graph over
LangChain's fake streaming chat model, and the gateway on a loopback port with a real client."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from websockets.asyncio.client import ClientConnection, connect

from memento_core import Embedder, Memento
from memento_gateway import MAX_FRAME_BYTES, Gateway, Space, StaticKeys

KEY = "key-shop"
OTHER_KEY = "key-other"
DISABLED_KEY = "key-disabled"


class Recorder:
    """What the model was given, call by call."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []
        self.finished = 0


def chat_graph(
    model: Any, recorder: Recorder | None = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A one-node MessagesState graph that calls ``model`` (streamed under astream_events)."""

    async def chatbot(state: MessagesState) -> dict[str, Any]:
        if recorder is not None:
            recorder.calls.append(list(state["messages"]))
        reply = await model.ainvoke(state["messages"])
        if recorder is not None:
            recorder.finished += 1
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "chatbot")
    return builder.compile()


class ChunkedFakeModel(GenericFakeChatModel):
    """LangChain's generic fake model, streaming given chunks as they are (the parent splits on
    whitespace, which never cuts a Korean word in two)."""

    chunks: list[str]

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self.chunks:
            yield ChatGenerationChunk(message=AIMessageChunk(content=chunk))


def chunked_model(chunks: list[str]) -> ChunkedFakeModel:
    return ChunkedFakeModel(messages=iter([]), chunks=chunks)


def fake_model(*responses: str, **options: Any) -> FakeListChatModel:
    """LangChain's fake chat model: streams each response one character at a time."""
    return FakeListChatModel(responses=list(responses), **options)


@pytest.fixture
def mem(tmp_path: Path, embedder: Embedder) -> Iterator[Memento]:
    with Memento.open(tmp_path / "store", embedder=embedder) as store:
        yield store


class Harness:
    """A running gateway and the way to talk to it."""

    def __init__(self, gateway: Gateway, server: Any, url: str) -> None:
        self.gateway = gateway
        self.server = server
        self.url = url
        self.http = url.replace("ws://", "http://")

    async def close(self) -> None:
        """Stop serving; returns once every connection's handler is done (rooms archived)."""
        self.server.close()
        await self.server.wait_closed()

    def connect(self) -> Any:
        """A client that, like the spec's, refuses any frame over 32 KB (closing with 1009)."""
        return connect(self.url, max_size=MAX_FRAME_BYTES)


async def start(mem: Memento, spaces: dict[str, Space], **options: Any) -> tuple[Gateway, Any]:
    gateway = Gateway(mem, StaticKeys(spaces), **options)
    server = await gateway.serve("127.0.0.1", 0)
    return gateway, server


@pytest.fixture
async def serving(mem: Memento) -> AsyncIterator[Any]:
    """``await serving(spaces, **gateway_options)`` starts a gateway; all are closed after."""
    servers: list[Any] = []

    async def run(spaces: dict[str, Space], **options: Any) -> Harness:
        gateway, server = await start(mem, spaces, **options)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return Harness(gateway, server, f"ws://127.0.0.1:{port}")

    yield run
    for server in servers:
        server.close()
        await server.wait_closed()


def request(**fields: Any) -> str:
    base: dict[str, Any] = {
        "action": "sendmsg",
        "room_uid": "51VPKp3F0yPX",
        "user_id": "s8dfkjsdf",
        "msg": "안녕 반가워요",
        "api_key": KEY,
    }
    base.update(fields)
    fields = {k: v for k, v in base.items() if v is not ...}
    text = json.dumps(fields, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate travels as a JSON escape, as a client sends it
        text = json.dumps(fields)
    return text


async def http_get(url: str, **headers: str) -> tuple[int, dict[str, Any]]:
    """A plain HTTP GET (urllib, in a thread): the status and the JSON body."""

    def get() -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as response:
                return int(response.status), json.loads(response.read())
        except urllib.error.HTTPError as err:
            return int(err.code), json.loads(err.read())

    return await asyncio.to_thread(get)


async def turn(ws: ClientConnection, raw: str) -> list[dict[str, Any]]:
    """Send one request; the frames up to END (or the lone error frame of a refused one)."""
    await ws.send(raw)
    frames: list[dict[str, Any]] = []
    while True:
        frame = json.loads(await ws.recv())
        frames.append(frame)
        if frame.get("status") == "END":
            return frames
        if len(frames) == 1 and frame.get("msgtype") == "error":
            return frames
