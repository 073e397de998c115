"""A LlamaIndex FunctionAgent with Memento as its chat memory and its long-term memory.

Session 1 runs on ``MementoChatMemory`` (a durable ``ChatMemoryBuffer``): the agent stores a
fact with its ``remember`` tool, and the conversation is rebuilt from the store as a restarted
process would. Session 2 runs on LlamaIndex's ``Memory`` with a ``MementoMemoryBlock`` (long-term
recall into the system message) and a ``MementoChatStore`` (the short-term queue, durable too);
its reply is streamed through ``ahotword_stream``, which reports the hotwords of memories it
mentions.

    HF_HUB_OFFLINE=1 .venv/bin/python examples/llamaindex_agent.py

Offline by default: LlamaIndex's MockFunctionCallingLLM plays the model from a script, while the
memory is real (an embedded store in a temporary directory and the bundled MiniLM model). With
OPENAI_API_KEY set and ``pip install llama-index-llms-openai``, a real model answers instead
(OPENAI_MODEL picks it, default gpt-4o-mini).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from llama_index.core.agent.workflow import AgentStream, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory
from rich.console import Console
from rich.markup import escape

from memento_core import HotwordEvent, Memento, Scope
from memento_llamaindex import (
    MementoChatMemory,
    MementoChatStore,
    MementoMemoryBlock,
    ahotword_stream,
)

console = Console(highlight=False)
ALICE = Scope(user_id="alice")
SYSTEM_PROMPT = (
    "You are Alice's assistant. Store facts worth keeping about her with the remember tool, "
    "and use the memories you are given."
)
FIRST = "By the way, I'm allergic to peanuts. Please keep that in mind."
SECOND = "Can you suggest a snack for this afternoon? Something with nuts maybe?"


def scripted_reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The offline model: call `remember` for a new fact, then answer; answer a question."""
    last = messages[-1]
    if last.role == MessageRole.TOOL:
        return ChatMessage(role=MessageRole.ASSISTANT, content="Noted: no peanuts, ever.")
    if "allergic" in (last.content or ""):
        call = ToolCallBlock(
            tool_call_id="call-1",
            tool_name="remember",
            tool_kwargs={"fact": "Alice is allergic to peanuts."},
        )
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content="Roasted almonds with a cup of green tea in Lisbon's sun: no peanuts anywhere.",
    )


def model() -> FunctionCallingLLM:
    if not os.environ.get("OPENAI_API_KEY"):
        return MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=scripted_reply)
    try:
        from llama_index.llms.openai import OpenAI  # type: ignore[import-not-found]
    except ImportError:
        console.print("[yellow]OPENAI_API_KEY is set but llama-index-llms-openai is not "
                      "installed; using the offline model.[/]")  # fmt: skip
        return MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=scripted_reply)
    chosen: FunctionCallingLLM = OpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return chosen


def show(messages: Sequence[ChatMessage]) -> None:
    for message in messages:
        calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
        text = " ".join(f"{c.tool_name}({c.tool_kwargs})" for c in calls) or message.content
        console.print(f"  [bold]{message.role.value:>9}[/] {escape(str(text))}")


async def main() -> None:
    directory = tempfile.mkdtemp(prefix="memento-llamaindex-")
    store = Memento.open(directory)
    offline = not os.environ.get("OPENAI_API_KEY")
    which = "the offline MockFunctionCallingLLM" if offline else "a real model"
    console.print(f"[bold]Memento store[/] in {directory}; the model is {which}.")
    store.remember("Alice drinks green tea; no coffee after noon.", scope=ALICE, importance=0.7)
    store.remember(
        "Alice lives in Lisbon.",
        scope=ALICE,
        hotwords=["Lisbon", "Lisboa"],
        data={"city": "Lisbon", "country": "Portugal"},
    )

    async def remember(fact: str) -> str:
        """Remember a fact about Alice for later conversations."""
        await store.aremember(fact, scope=ALICE, type="semantic", source="tool", importance=0.9)
        return f"Remembered: {fact}"

    console.print("\n[bold]Session 1[/] — MementoChatMemory (a durable ChatMemoryBuffer)")
    chat = MementoChatMemory.from_defaults(store=store, user_id="alice", session_id="alice-1")
    agent = FunctionAgent(tools=[remember], llm=model(), system_prompt=SYSTEM_PROMPT)
    await agent.run(FIRST, memory=chat)
    show(chat.get_all())
    settings = chat.to_dict()
    console.print(f"  [dim]to_dict(): {escape(str(settings))}[/]")
    rebuilt = MementoChatMemory.from_dict(settings, store=store)
    console.print(f"  rebuilt from its settings, as after a restart: "
                  f"{len(rebuilt.get_all())} messages, from the store")  # fmt: skip

    console.print("\n[bold]Session 2[/] — Memory + MementoMemoryBlock + MementoChatStore")
    memory = Memory.from_defaults(
        session_id="alice-2",
        chat_store=MementoChatStore(store=store, user_id="alice"),
        memory_blocks=[MementoMemoryBlock(store=store, user_id="alice", recall_limit=3)],
    )
    llm = model()
    agent = FunctionAgent(tools=[remember], llm=llm, system_prompt=SYSTEM_PROMPT)
    conversation = store.hotword_detector().conversation("alice-2")
    handler = agent.run(SECOND, memory=memory)
    console.print("  [bold]streamed reply:[/] ", end="")
    async for item in ahotword_stream(handler.stream_events(), conversation):
        if isinstance(item, HotwordEvent):
            event = item.to_dict()
            console.print(
                f"\n  [magenta]hotword event[/] {event['msgtype']}: {escape(event['msg'])}"
            )
        elif isinstance(item, AgentStream):
            console.print(item.delta, end="")
    await handler
    console.print()
    if isinstance(llm, MockFunctionCallingLLMWithChatMemoryOfLastCall):
        systems = [m for m in llm.last_chat_messages or [] if m.role == MessageRole.SYSTEM]
        console.print("  [cyan]system messages the model was given (recalled memories last):[/]")
        for message in systems:
            for line in (message.content or "").splitlines():
                console.print(f"    [dim]{escape(line)}[/]")
    show(await memory.aget_all())
    store.close()


if __name__ == "__main__":
    asyncio.run(main())
