"""Hotword events in LlamaIndex streams: ``stream_chat`` / ``astream_chat`` responses, streamed
completions and agent ``AgentStream`` events.

The wrappers yield the stream's items unchanged, with each ``HotwordEvent`` just before the item
whose ``delta`` completed its hotword (core's ``detect_stream`` rules: chunking does not change
what fires; each memory fires once per conversation).

    conversation = memento.hotword_detector().conversation("connection-1")
    for item in hotword_stream(llm.stream_chat(messages), conversation):
        if isinstance(item, HotwordEvent):
            send(item.to_dict())
        else:
            print(item.delta, end="")
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Generator, Iterable
from typing import TypeVar

from memento_core import Conversation, HotwordEvent, adetect_stream, detect_stream

T = TypeVar("T")


def delta_of(item: object) -> str:
    """The new text of a stream item: its ``delta`` (ChatResponse, CompletionResponse,
    AgentStream), or the item itself if it is a string; '' otherwise."""
    if isinstance(item, str):
        return item
    delta = getattr(item, "delta", None)
    return delta if isinstance(delta, str) else ""


def hotword_stream(
    stream: Iterable[T], conversation: Conversation
) -> Generator[T | HotwordEvent, None, None]:
    """``stream`` with hotword events interleaved (see the module docs)."""
    return detect_stream(conversation, stream, delta_of)


def ahotword_stream(
    stream: AsyncIterable[T], conversation: Conversation
) -> AsyncGenerator[T | HotwordEvent, None]:
    """The async twin of ``hotword_stream``: for ``astream_chat`` and agent event streams."""
    return adetect_stream(conversation, stream, delta_of)
