"""A WebSocket chat server that streams a reply and delivers memories as their hotwords go by.

A client sends one request per message::

    {"action": "sendmsg", "room_uid": ..., "user_id": ..., "msg": ..., "api_key": ...}

and receives, one event per frame (each at most 32 KB)::

    {"status": "START", "connection_id": ..., "room_uid": ..., "msg": "", "msgtype": "info"}
    {"status": "hotword_detected", ...}        hotwords in the user's message
    {"status": "stream", "connection_id": ..., "data": {"chunk": {"content": "..."}},
     "msgtype": "stream"}                      the reply, chunk by chunk, with
    {"status": "hotword_detected", ...}        each hotword's events just before the chunk
    {"status": "memory_dict", ...}             that completes it
    {"status": "END", "connection_id": ..., "room_uid": ..., "msg": <the whole reply>,
     "msgtype": "info"}

A missing field is answered with ``{"status": "connected", "msg": "room_uid is required",
"msgtype": "error"}`` (likewise ``user_id``, ``msg``, ``api_key``). Each memory fires once per
conversation (one WebSocket connection and room); a payload too large for a frame is not sent, and
the client fetches the memory by ``hotword_uid`` instead (``mem.get(uid)``).

The reply here is scripted (it echoes the message and adds a canned sentence); a real server would
stream its model's output through ``adetect_stream`` the same way.

    HF_HUB_OFFLINE=1 .venv/bin/python examples/hotword_stream_server.py [--port 8765] [--path DIR]

seeds a few memories with hotwords into an embedded store and serves them; try it with
``python -m websockets ws://127.0.0.1:8765`` and send
``{"action":"sendmsg","room_uid":"r1","user_id":"demo","msg":"조말론 어디 있어요?","api_key":"k"}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from memento_core.hotwords import Conversation, HotwordDetector, HotwordEvent, adetect_stream

REQUIRED_FIELDS = ("room_uid", "user_id", "msg", "api_key")
MAX_FRAME_BYTES = 32_768

DetectorFor = Callable[[str], Awaitable[HotwordDetector]]
"""Gives the detector for a user id (the hotwords that user may see)."""


def scripted_reply(message: str) -> list[str]:
    """A stand-in for a model: the reply, cut into the small chunks a model would stream."""
    text = f"You said: {message} Noted, I will keep that in mind."
    return [text[start : start + 5] for start in range(0, len(text), 5)]


def error_event(message: str) -> dict[str, str]:
    return {"status": "connected", "msg": message, "msgtype": "error"}


def stream_event(connection_id: str, content: str) -> dict[str, Any]:
    return {
        "status": "stream",
        "connection_id": connection_id,
        "data": {"chunk": {"content": content}},
        "msgtype": "stream",
    }


def check_request(raw: str | bytes) -> dict[str, str] | str:
    """The request's fields, or the error message to send back."""
    try:
        request = json.loads(raw)
    except ValueError:
        return "message is not valid JSON"
    if not isinstance(request, dict) or request.get("action") != "sendmsg":
        return 'expected {"action": "sendmsg", ...}'
    for field in REQUIRED_FIELDS:
        value = request.get(field)
        if not isinstance(value, str) or not value:
            return f"{field} is required"
    return {field: request[field] for field in REQUIRED_FIELDS}


class HotwordStreamServer:
    """Serves ``sendmsg`` requests; one ``Conversation`` per connection and room."""

    def __init__(
        self,
        detector_for: DetectorFor,
        *,
        reply: Callable[[str], Iterable[str]] = scripted_reply,
        api_keys: frozenset[str] | None = None,
    ) -> None:
        self.detector_for = detector_for
        self.reply = reply
        self.api_keys = api_keys  # None: any non-empty key is accepted

    async def handle(self, websocket: ServerConnection) -> None:
        connection_id = uuid.uuid4().hex
        conversations: dict[tuple[str, str], Conversation] = {}
        try:
            async for raw in websocket:
                request = check_request(raw)
                if isinstance(request, str):
                    await send(websocket, error_event(request))
                elif self.api_keys is not None and request["api_key"] not in self.api_keys:
                    await send(websocket, error_event("api_key is not valid"))
                else:
                    key = (request["room_uid"], request["user_id"])
                    if key not in conversations:
                        detector = await self.detector_for(request["user_id"])
                        conversations[key] = detector.conversation(connection_id)
                    await self.answer(websocket, conversations[key], request)
        except ConnectionClosed:
            pass  # the client went away; its conversations go with the connection

    async def answer(
        self, websocket: ServerConnection, conversation: Conversation, request: dict[str, str]
    ) -> None:
        connection_id, room_uid = conversation.connection_id, request["room_uid"]
        await send(websocket, marker("START", connection_id, room_uid, ""))
        for event in conversation.feed_message(request["msg"]):
            await send(websocket, event)
        reply: list[str] = []
        async for item in adetect_stream(conversation, as_async(self.reply(request["msg"]))):
            if isinstance(item, HotwordEvent):
                await send(websocket, item)
            else:
                reply.append(item)
                await send(websocket, stream_event(connection_id, item))
        await send(websocket, marker("END", connection_id, room_uid, "".join(reply)))


def marker(status: str, connection_id: str, room_uid: str, msg: str) -> dict[str, str]:
    return {
        "status": status,
        "connection_id": connection_id,
        "room_uid": room_uid,
        "msg": msg,
        "msgtype": "info",
    }


async def as_async(chunks: Iterable[str]) -> AsyncIterator[str]:
    for chunk in chunks:
        yield chunk
        await asyncio.sleep(0)  # as a model's stream would, let other connections run


async def send(websocket: ServerConnection, event: HotwordEvent | dict[str, Any]) -> None:
    text = (
        event.to_json()
        if isinstance(event, HotwordEvent)
        else json.dumps(event, ensure_ascii=False)
    )
    if len(text.encode("utf-8")) > MAX_FRAME_BYTES:  # only a long reply chunk could get here
        raise ValueError(f"an event of {len(text.encode('utf-8'))} bytes does not fit one frame")
    await websocket.send(text)


async def start(server: HotwordStreamServer, host: str = "127.0.0.1", port: int = 0) -> Server:
    """Start serving; ``port=0`` picks a free port (see ``server.sockets``)."""
    started: Server = await serve(server.handle, host, port)
    return started


def seed_store(path: str) -> Callable[[str], HotwordDetector]:
    """Open an embedded store, remember a few memories with hotwords, and return its detectors."""
    from memento_core import Memento, Scope

    mem = Memento.open(path)
    demo = Scope(user_id="demo")
    mem.remember(
        "Jo Malone London is on the third floor, next to the escalators.",
        scope=demo,
        hotwords=["조말론", "조 말론 런던", "조 말론", "Jo Malone"],
        data={"brand": "Jo Malone London", "floor": 3},
    )
    mem.remember(
        "Do Son beach is 20 km south-east of Hai Phong.",
        scope=demo,
        hotwords=["도손", "Do Son"],
        data={"city": "Hai Phong", "distance_km": 20},
    )
    mem.remember("34th Street is where the flagship store is.", scope=demo, hotwords=["34번가"])
    return lambda user_id: mem.hotword_detector(Scope(user_id=user_id))


async def main() -> None:
    parser = argparse.ArgumentParser(description="Hotword streaming WebSocket server (example)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--path", default=None, help="store directory (default: a temporary one)")
    args = parser.parse_args()
    detector_of = seed_store(args.path or tempfile.mkdtemp(prefix="memento-hotwords-"))

    async def detector_for(user_id: str) -> HotwordDetector:
        return await asyncio.to_thread(detector_of, user_id)  # the store may do I/O

    async with await start(HotwordStreamServer(detector_for), args.host, args.port) as server:
        print(f"serving on ws://{args.host}:{args.port} (Ctrl-C to stop)")
        await server.serve_forever()


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(main())
