"""One sendmsg turn: from START to END, with memory around the graph run.

The frames, in order: START; ``history`` (searching, replayed; left out with ``no_history``);
``memory`` (searching, found with the count of hotword memories); the hotword frames of the
user's message; ``think`` start; the reply as ``stream`` frames, each hotword's frames just
before the frame that completes it, ``voice_ready`` after each sentence when the voice hook
gives one, ``on_chain_*`` events when the space passes them; ``think`` end; END.

A failure after START — the graph, the model, the store — is answered with an error frame, then
``think`` end (if thinking had started) and END: the connection stays open for the next request.
A cancelled turn (the client went away) sends nothing more.

Memory: the user's message is saved before the graph runs and the reply after it finishes, so a
turn cut short keeps what the user said and never half a reply. ``no_save`` saves neither;
``no_history`` gives the graph no earlier turns (and ``{{history}}`` is empty).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel

from memento_core import (
    MAX_CONTENT_CHARS,
    ChatMemory,
    Conversation,
    HotwordDetector,
    HotwordEvent,
    Memento,
    Message,
    Role,
    adetect_stream,
)
from memento_gateway.frames import (
    HISTORY_DONE,
    HISTORY_SEARCHING,
    MAX_PIECE_CHARS,
    MEMORY_SEARCHING,
    THINK_END,
    THINK_START,
    TurnIds,
    chain_event_frame,
    error_frame,
    hotword_frame,
    memory_found,
    new_sent_uid,
)
from memento_gateway.keys import Space
from memento_gateway.requests import SendMsg
from memento_gateway.sentences import SentenceSplitter
from memento_gateway.voice import Sentence, VoiceHook

__all__ = ["Room", "Turn"]

Send = Callable[[dict[str, Any]], Awaitable[None]]
PASSED_EVENTS = frozenset(
    {"on_chain_start", "on_chain_end", "on_chat_model_start", "on_chat_model_end"}
)
NOSTREAM_TAG = "nostream"  # LangGraph's tag for a model whose tokens are not to be streamed


class Room:
    """A room on one connection: its chat memory and its hotword conversation."""

    def __init__(self, chat: ChatMemory, connection_id: str) -> None:
        self.chat = chat
        self.connection_id = connection_id
        self.saved = False  # anything saved through this connection: archive it at the end
        self._detector: HotwordDetector | None = None
        self._conversation: Conversation | None = None

    def conversation(self, detector: HotwordDetector) -> Conversation:
        """The room's conversation; a new one when the hotwords changed (so a memory could
        fire once more in this room after its hotwords were edited)."""
        if self._conversation is None or detector is not self._detector:
            self._detector, self._conversation = detector, detector.conversation(self.connection_id)
        return self._conversation


def fill_variables(text: str, *, visitor_name: str, history: str) -> str:
    """The message variables ``{{visitor_name}}`` and ``{{history}}``, filled in."""
    return text.replace("{{visitor_name}}", visitor_name).replace("{{history}}", history)


def render_history(messages: list[Message]) -> str:
    """Earlier turns as ``{{history}}`` shows them: one ``role: text`` line each."""
    lines = [f"{m.role.value}: {m.content}" for m in messages if m.role is not Role.SYSTEM]
    return "\n".join(line for line in lines if line.split(": ", 1)[1].strip())


def to_langchain(messages: list[Message]) -> list[BaseMessage]:
    """The window as LangChain messages (text only; tool exchanges are not replayed)."""
    out: list[BaseMessage] = []
    for message in messages:
        if message.role is Role.USER:
            out.append(HumanMessage(message.content, id=message.id))
        elif message.role is Role.ASSISTANT and message.content.strip():
            out.append(AIMessage(message.content, id=message.id))
        elif message.role is Role.SYSTEM:
            out.append(SystemMessage(message.content, id=message.id))
    return out


def chunk_text(chunk: Any) -> str:
    text = getattr(chunk, "text", "")
    return text if isinstance(text, str) else ""


def final_text(output: Any) -> str:
    """The reply in a run's final output, for runnables that stream no tokens: a string, a
    message, or the last message of a ``messages`` list."""
    if isinstance(output, dict):
        output = output.get("messages", output)
    if isinstance(output, list) and output:
        output = output[-1]
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        return output.text
    return ""


def pieces_of(text: str) -> list[str]:
    """``text`` cut so each piece fits one stream frame."""
    return [text[i : i + MAX_PIECE_CHARS] for i in range(0, len(text), MAX_PIECE_CHARS)]


class Turn:
    """Runs one request; ``run`` sends every frame through ``send``."""

    def __init__(
        self,
        *,
        mem: Memento,
        space: Space,
        request: SendMsg,
        ids: TurnIds,
        room: Room,
        send: Send,
        voice: VoiceHook | None,
    ) -> None:
        self.mem = mem
        self.space = space
        self.request = request
        self.ids = ids
        self.room = room
        self.send = send
        self.voice = voice if request.return_voice == 1 else None
        self.scope = space.scope_for(request.user_id)
        self.splitter = SentenceSplitter() if space.sentences else None
        self.sent_uid = new_sent_uid()
        self.sentence: list[str] = []
        self.reply: list[str] = []
        self.conversation: Conversation | None = None

    async def run(self) -> None:
        ids, send = self.ids, self.send
        await send(ids.start())
        thinking = False
        try:
            graph_input = await self._prepare()
            await send(ids.info("think", THINK_START))
            thinking = True
            await self._stream(graph_input)
            await self._save_reply()
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the turn fails; the connection goes on
            await send(error_frame(ids.connection_id, str(err) or type(err).__name__))
        if thinking:
            await send(ids.info("think", THINK_END))
        await send(ids.end())

    async def _prepare(self) -> Any:
        """History, memory and the user's message: the graph's input."""
        request, ids, send, chat = self.request, self.ids, self.send, self.room.chat
        earlier: list[Message] = []
        if not request.no_history:
            await send(ids.info("history", HISTORY_SEARCHING))
            earlier = await chat.awindow()
            await send(ids.info("history", HISTORY_DONE))
        await send(ids.info("memory", MEMORY_SEARCHING))
        detector = await self.mem.ahotword_detector(self.scope)
        recalled = ""
        if request.msg.strip() and self.space.recall_budget > 0:
            injection = await self.mem.amemory_injection(
                request.msg, token_budget=self.space.recall_budget, scope=self.scope
            )
            recalled = injection.text
        await send(ids.info("memory", memory_found(len(detector.hotword_set))))
        self.conversation = self.room.conversation(detector)
        if request.msg:
            for event in self.conversation.feed_message(request.msg):
                await send(hotword_frame(event))
        if request.msg and not request.no_save:
            await chat.aappend(Message.user(request.msg))
            self.room.saved = True
        variables = {
            "visitor_name": request.visitor_name or request.user_id,
            "history": render_history(earlier),
        }
        messages: list[BaseMessage] = []
        if self.space.system_prompt:
            messages.append(SystemMessage(fill_variables(self.space.system_prompt, **variables)))
        if recalled:
            messages.append(SystemMessage(recalled))
        messages += to_langchain(earlier)
        if request.msg:
            messages.append(HumanMessage(fill_variables(request.msg, **variables)))
        return {"messages": messages} if isinstance(self.space.graph, Pregel) else messages

    def _config(self) -> RunnableConfig:
        configurable: dict[str, Any] = {
            "thread_id": self.room.chat.session_id,
            "user_id": self.scope.user_id,
            "room_uid": self.request.room_uid,
        }
        if self.request.model is not None:
            configurable["model"] = self.request.model
        return RunnableConfig(configurable=configurable)

    async def _events(self, graph_input: Any) -> AsyncIterator[str | dict[str, Any]]:
        """The reply's text chunks, and the events to pass through, in the run's order."""
        streamed = False
        output: Any = None
        chain_events = self.request.chain_events
        if chain_events is None:
            chain_events = self.space.chain_events
        run = self.space.graph.astream_events(graph_input, config=self._config(), version="v2")
        try:
            async for event in run:
                kind = event["event"]
                if kind == "on_chat_model_stream":
                    if NOSTREAM_TAG in (event.get("tags") or ()):
                        continue
                    text = chunk_text(event["data"].get("chunk"))
                    if text:
                        streamed = True
                        yield text
                    continue
                if kind == "on_chain_end" and not event.get("parent_ids"):
                    output = event["data"].get("output")
                if chain_events and kind in PASSED_EVENTS:
                    yield chain_event_frame(dict(event))
        finally:
            close = getattr(run, "aclose", None)  # an async generator: closing it cancels the run
            if close is not None:
                await close()
        if not streamed:
            text = final_text(output)
            if text:
                yield text

    async def _stream(self, graph_input: Any) -> None:
        assert self.conversation is not None  # set by _prepare
        items = adetect_stream(
            self.conversation,
            self._events(graph_input),
            lambda item: item if isinstance(item, str) else "",
        )
        async with contextlib.aclosing(items) as stream:
            async for item in stream:
                if isinstance(item, HotwordEvent):
                    await self.send(hotword_frame(item))
                elif isinstance(item, str):
                    await self._text(item)
                else:
                    await self.send(item)
        await self._end_sentence()

    async def _text(self, text: str) -> None:
        parts = self.splitter.feed(text) if self.splitter is not None else [(text, False)]
        for part, starts_sentence in parts:
            if starts_sentence:
                await self._end_sentence()
            self.sentence.append(part)
            self.reply.append(part)
            if self.request.stream:
                for piece in pieces_of(part):
                    await self.send(self.ids.stream(self.sent_uid, piece))

    async def _end_sentence(self) -> None:
        text = "".join(self.sentence)
        if not text:
            return
        if not self.request.stream:  # one frame per sentence instead of one per chunk
            for piece in pieces_of(text):
                await self.send(self.ids.stream(self.sent_uid, piece))
        if self.voice is not None and text.strip():
            sentence = Sentence(
                space_id=self.space.space_id,
                room_uid=self.request.room_uid,
                stream_uid=self.ids.stream_uid,
                sent_uid=self.sent_uid,
                text=text,
            )
            voice = await self.voice(sentence)
            if voice is not None:
                frame = self.ids.voice_ready(self.sent_uid, text, voice.url, voice.length)
                await self.send(frame)
        self.sentence = []
        self.sent_uid = new_sent_uid()

    async def _save_reply(self) -> None:
        reply = "".join(self.reply)
        if self.request.no_save or not reply.strip():
            return
        # A reply longer than one message holds is saved as several, in order.
        parts = [reply[i : i + MAX_CONTENT_CHARS] for i in range(0, len(reply), MAX_CONTENT_CHARS)]
        await self.room.chat.aextend([Message.assistant(part) for part in parts if part.strip()])
        self.room.saved = True
