"""Hotwords in an AutoGen agent's streamed reply.

``with_hotwords`` wraps the stream of ``agent.run_stream(...)`` (or a team's): it yields every
item unchanged and, just before the streaming chunk that completed a memory's hotword, a
``memento_core.hotwords.HotwordEvent`` (``event.to_json()`` is the wire form). The text searched
is the model's streamed tokens — the ``ModelClientStreamingChunkEvent`` items an agent emits
with ``model_client_stream=True`` — so a hotword split across tokens is found, and the final
message, which repeats those tokens, is not searched twice::

    agent = AssistantAgent("assistant", model_client=client, model_client_stream=True)
    async for item in with_hotwords(agent.run_stream(task=question), mem, connection_id="c1"):
        if isinstance(item, HotwordEvent):
            await websocket.send_text(item.to_json())
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterable
from typing import TypeVar

from autogen_agentchat.messages import ModelClientStreamingChunkEvent

from memento_core import Memento, Scope
from memento_core.hotwords import HotwordEvent, adetect_stream

__all__ = ["streamed_text", "with_hotwords"]

T = TypeVar("T")


def streamed_text(item: object) -> str:
    """The model text an item of an AutoGen stream adds: a streaming chunk's content, else ''."""
    if isinstance(item, ModelClientStreamingChunkEvent):
        return item.content
    return ""


async def with_hotwords(
    stream: AsyncIterable[T],
    memento: Memento,
    *,
    connection_id: str,
    scope: Scope | None = None,
    word_boundary: bool = False,
) -> AsyncGenerator[T | HotwordEvent, None]:
    """Yield ``stream``'s items with hotword events interleaved (see the module docstring).

    The hotwords are those of the memories ``scope`` may see (every live memory when None);
    each fires at most once per wrapped stream. ``connection_id`` goes into every event.
    """
    # Building the automaton reads the store: off the event loop.
    detector = await asyncio.to_thread(memento.hotword_detector, scope, word_boundary=word_boundary)
    async for item in adetect_stream(detector.conversation(connection_id), stream, streamed_text):
        yield item
