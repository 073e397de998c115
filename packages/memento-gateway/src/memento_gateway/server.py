"""The gateway: the sendmsg protocol over WebSocket, and ``GET /v4/memory/{uid}`` beside it.

One connection answers its requests one at a time, in order. Each room used on a connection is a
chat session in Memento's working memory and a hotword conversation (a memory fires once per
room per connection); when the connection ends, every room it saved to is archived into episodic
memory (``ChatMemory.archive``). A client that goes away mid-reply cancels the graph run.
Incoming frames over 32 KB close the connection with 1009 (websockets' ``max_size``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from memento_core import InvalidInput, Memento, WindowPolicy
from memento_gateway.frames import MAX_FRAME_BYTES, TurnIds, encode, error_frame, new_connection_id
from memento_gateway.identities import check_identities
from memento_gateway.keys import KeyRegistry, Space, StaticKeys
from memento_gateway.memory_http import MEMORY_PATH, memory_response
from memento_gateway.requests import (
    API_KEY_NOT_EXIST,
    API_KEY_NOT_USABLE,
    RequestError,
    SendMsg,
    parse_envelope,
    read_request,
)
from memento_gateway.turn import Room, Turn
from memento_gateway.voice import VoiceHook

__all__ = ["DEFAULT_WINDOW", "Gateway"]

log = logging.getLogger("memento_gateway")

DEFAULT_WINDOW = WindowPolicy(max_messages=40)
"""A room's window unless its space sets one: the last 40 messages, whatever their length (a
token window would refuse a reply longer than itself)."""


class Gateway:
    """Serves the graphs of ``keys``' spaces over the sendmsg protocol, with ``mem``'s memory.

    ``voice`` makes ``voice_ready`` frames (see ``memento_gateway.voice``); without it there are
    none. Start it with ``await gateway.serve(host, port)`` (``port=0``: any free port).
    """

    def __init__(self, mem: Memento, keys: KeyRegistry, *, voice: VoiceHook | None = None) -> None:
        self.mem = mem
        self.keys = keys
        self.voice = voice
        self.running_turns = 0
        """Turns under way now, over every connection."""

    async def serve(self, host: str = "127.0.0.1", port: int = 0, **kwargs: Any) -> Server:
        """Start listening; ``kwargs`` go to ``websockets.asyncio.server.serve``.

        Compression is off unless asked for (``compression="deflate"``): stream frames are a
        few hundred bytes, and deflating each one cost more CPU than any other step of the
        gateway's own per-frame work (``benchmarks/gateway.py``).

        With a ``StaticKeys`` table, a store holding users whose owner changed when space and
        user ids began to be escaped is refused first (``ChangedIdentities``); with another
        ``KeyRegistry``, call ``check_identities`` for its spaces before serving.
        """
        kwargs.setdefault("compression", None)
        if isinstance(self.keys, StaticKeys):
            spaces = self.keys.spaces
            await asyncio.to_thread(
                check_identities,
                self.mem,
                {s.space_id for s in spaces if s.user_id is None},
                {s.user_id for s in spaces if s.user_id is not None},
            )
        server: Server = await serve(
            self.handle,
            host,
            port,
            max_size=MAX_FRAME_BYTES,
            process_request=self.process_request,
            **kwargs,
        )
        return server

    async def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """Answers ``GET /v4/memory/{uid}``; any other path goes on to the WebSocket."""
        if request.path.startswith(MEMORY_PATH):
            return await memory_response(connection, request, self.mem, self.keys)
        return None

    async def handle(self, websocket: ServerConnection) -> None:
        """One connection, until the client closes it."""
        connection_id = new_connection_id()
        rooms: dict[str, Room] = {}

        async def send(frame: dict[str, Any]) -> None:
            await websocket.send(encode(frame))

        closed = asyncio.ensure_future(websocket.wait_closed())
        try:
            async for raw in websocket:
                answer = asyncio.ensure_future(self._answer(raw, connection_id, rooms, send))
                await asyncio.wait({answer, closed}, return_when=asyncio.FIRST_COMPLETED)
                if not answer.done():  # the client left mid-turn: stop the graph
                    answer.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                    await answer
                if closed.done():
                    break
        except ConnectionClosed:
            pass
        finally:
            closed.cancel()
            await self._archive(rooms)

    async def _answer(
        self, raw: str | bytes, connection_id: str, rooms: dict[str, Room], send: Any
    ) -> None:
        try:
            envelope, api_key = parse_envelope(raw)
            try:
                space = await self.keys.resolve(api_key)
            except Exception as err:  # the registry's own failure: tell the client, go on
                log.exception("resolving an api_key failed")
                raise RequestError(f"api_key could not be checked: {err}") from err
            if space is None:
                raise RequestError(API_KEY_NOT_EXIST)
            if not space.usable:
                raise RequestError(API_KEY_NOT_USABLE)
            request = read_request(
                envelope,
                api_key,
                default_return_voice=space.return_voice,
                allow_empty_msg=space.allow_empty_msg,
            )
        except RequestError as err:
            await send(error_frame(connection_id, str(err)))
            return
        room = self._room(rooms, space, request, connection_id)
        ids = TurnIds.new(
            connection_id,
            request.room_uid,
            is_stream=request.stream,
            return_voice=request.return_voice,
        )
        turn = Turn(
            mem=self.mem,
            space=space,
            request=request,
            ids=ids,
            room=room,
            send=send,
            voice=self.voice,
        )
        self.running_turns += 1
        try:
            await turn.run()
        finally:
            self.running_turns -= 1

    def _room(
        self, rooms: dict[str, Room], space: Space, request: SendMsg, connection_id: str
    ) -> Room:
        session_id = space.session_for(request.user_id, request.room_uid)
        room = rooms.get(session_id)
        if room is None:
            chat = self.mem.chat(
                session_id,
                scope=space.scope_for(request.user_id),
                policy=space.window or DEFAULT_WINDOW,
            )
            room = rooms[session_id] = Room(chat, connection_id)
        return room

    async def _archive(self, rooms: dict[str, Room]) -> None:
        """The rooms' sessions end with the connection: summarise each into episodic memory."""
        for room in rooms.values():
            if not room.saved:
                continue
            try:
                await room.chat.aarchive()
            except InvalidInput:  # nothing left to summarise (e.g. only empty turns)
                continue
            except Exception:  # one failed archive must not keep the others from running
                log.exception("archiving room session %s failed", room.chat.session_id)
