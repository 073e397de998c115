"""The sendmsg gateway serving a LangGraph graph, with memories that fire on their hotwords.

    HF_HUB_OFFLINE=1 .venv/bin/python examples/hotword_stream_server.py [--port 8765] [--path DIR]

seeds a few memories into an embedded store (a temporary one by default) and serves a one-node
graph over the product's WebSocket protocol. The model is LangChain's fake one, so this runs
offline; point ``Space(graph=...)`` at your own graph instead. Try it with
``python -m websockets ws://127.0.0.1:8765`` and send::

    {"action": "sendmsg", "room_uid": "r1", "user_id": "demo", "msg": "조말론 어디 있어요?",
     "api_key": "demo-key"}

The same, from the command line: ``memento-gateway module:build --keys keys.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import START, MessagesState, StateGraph

from memento_core import Memento
from memento_gateway import Gateway, Space, StaticKeys

REPLY = "조말론 매장은 3층 에스컬레이터 옆에 있어요. 34번가 플래그십 매장도 들러 보세요. "


def build(mem: Memento) -> Any:
    """The graph: one node calling the (fake, streaming) chat model."""
    model = FakeListChatModel(responses=[REPLY])

    async def chatbot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "chatbot")
    return builder.compile()


def seed(mem: Memento, space: Space) -> None:
    demo = space.scope_for("demo")  # the client "demo" inside this key's space
    mem.remember(
        "Jo Malone London is on the third floor, next to the escalators.",
        scope=demo,
        hotwords=["조말론", "조 말론 런던", "Jo Malone"],
        data={"brand": "Jo Malone London", "floor": 3},
    )
    mem.remember("34th Street is where the flagship store is.", scope=demo, hotwords=["34번가"])


async def main() -> None:
    parser = argparse.ArgumentParser(description="sendmsg gateway example")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--path", default=None, help="store directory (default: a temporary one)")
    args = parser.parse_args()
    mem = Memento.open(args.path or tempfile.mkdtemp(prefix="memento-gateway-"))
    space = Space("demo-shop", build(mem))
    seed(mem, space)
    gateway = Gateway(mem, StaticKeys({"demo-key": space}))
    async with await gateway.serve(args.host, args.port) as server:
        print(f"serving on ws://{args.host}:{args.port} (Ctrl-C to stop)", flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(main())
