"""Hotword events on LangGraph's custom stream.

Core detects hotwords (``memento_core.hotwords``); this module only feeds it a graph's text and
writes each event, as its protocol dictionary (``event.to_dict()``), with LangGraph's
``get_stream_writer()``. Consume them with ``graph.stream(..., stream_mode="custom")``.

One ``Conversation`` per (user, thread): a memory fires at most once per thread. The detector of
a user is built from the hotwords of the memories that user may see, on first use; call
``refresh()`` after changing hotwords. Detection state lives in this process (it is derived and
small); a restarted process may fire a thread's hotwords once more.

    hotwords = HotwordStream(mem)
    builder.add_node("hotwords", hotwords.node())          # the latest message, whole

    def chatbot(state):                                    # or the model's reply, as it streams
        chunks = hotwords.stream(model.stream(state["messages"]))
        return {"messages": [reduce(operator.add, chunks)]}
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.config import get_config, get_stream_writer

from memento_core import Memento, Scope
from memento_core.hotwords import (
    Conversation,
    HotwordDetector,
    HotwordEvent,
    HotwordSet,
    adetect_stream,
    detect_stream,
)
from memento_langgraph.messages import as_langchain
from memento_langgraph.nodes import scope_from_config

__all__ = ["HotwordStream", "chunk_text"]

T = TypeVar("T")


def chunk_text(chunk: Any) -> str:
    """The text of a streamed chunk: a string, or a LangChain message (chunk)."""
    if isinstance(chunk, str):
        return chunk
    text = getattr(chunk, "text", None)
    return str(text) if text is not None else ""


class HotwordStream:
    """Detects memories' hotwords in a graph's text and writes the events to the custom stream."""

    def __init__(
        self, memento: Memento, *, word_boundary: bool = False, user_key: str = "user_id"
    ) -> None:
        self.memento = memento
        self.word_boundary = word_boundary
        self.user_key = user_key
        self._detectors: dict[str, HotwordDetector] = {}
        self._conversations: dict[tuple[str, str], Conversation] = {}
        self._lock = threading.Lock()

    def conversation(self, config: RunnableConfig | None = None) -> Conversation:
        """The run's conversation: its user's detector, its thread's fired hotwords."""
        scope = scope_from_config(config or get_config(), user_key=self.user_key)
        user, thread = scope.user_id or "", scope.session_id or ""
        with self._lock:
            found = self._conversations.get((user, thread))
            if found is None:
                detector = self._detectors.get(user)
                if detector is None:
                    detector = self._detectors[user] = self._build(scope)
                found = self._conversations[(user, thread)] = detector.conversation(
                    thread or "default"
                )
            return found

    def refresh(self) -> None:
        """Forget the built detectors (and with them each thread's fired hotwords)."""
        with self._lock:
            self._detectors.clear()
            self._conversations.clear()

    def emit(self, text: str, config: RunnableConfig | None = None) -> tuple[HotwordEvent, ...]:
        """Detect hotwords in a whole text (a message) and write their events; returns them."""
        events = self.conversation(config).feed_message(text)
        _write(events)
        return events

    def stream(
        self,
        chunks: Iterable[T],
        config: RunnableConfig | None = None,
        text_of: Callable[[T], str] = chunk_text,
    ) -> Iterator[T]:
        """Yield ``chunks`` unchanged, writing each event just before the chunk that completed
        its hotword (hotwords split across chunks are found)."""
        writer = _writer()
        for item in detect_stream(self.conversation(config), chunks, text_of):
            if isinstance(item, HotwordEvent):
                writer(item.to_dict())
            else:
                yield item

    async def astream(
        self,
        chunks: AsyncIterable[T],
        config: RunnableConfig | None = None,
        text_of: Callable[[T], str] = chunk_text,
    ) -> AsyncIterator[T]:
        """``stream`` for an async iterable (the detector's first build runs in a thread)."""
        conversation = await asyncio.to_thread(self.conversation, config or get_config())
        writer = _writer()
        async for item in adetect_stream(conversation, chunks, text_of):
            if isinstance(item, HotwordEvent):
                writer(item.to_dict())
            else:
                yield item

    def node(self, messages_key: str = "messages") -> RunnableLambda[Any, dict[str, Any]]:
        """A node that scans the latest message (user input or model reply) for hotwords."""

        def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
            if isinstance(state, dict):
                messages = as_langchain(state.get(messages_key))
            else:
                messages = as_langchain(getattr(state, messages_key, None))
            if messages:
                self.emit(str(messages[-1].text), config)
            return {}

        async def arun(state: Any, config: RunnableConfig) -> dict[str, Any]:
            return await asyncio.to_thread(run, state, config)

        return RunnableLambda(run, afunc=arun, name="memento_hotwords")

    def _build(self, scope: Scope) -> HotwordDetector:
        viewer = Scope(user_id=scope.user_id, project_id=scope.project_id)
        memories = self.memento.items(scope=viewer, include_deleted=False)
        return HotwordDetector(HotwordSet.from_items(memories), word_boundary=self.word_boundary)


def _writer() -> Callable[[Any], None]:
    try:
        return get_stream_writer()
    except (RuntimeError, KeyError):  # outside a graph run: nobody is listening
        return lambda _: None


def _write(events: Iterable[HotwordEvent]) -> None:
    writer = _writer()
    for event in events:
        writer(event.to_dict())
