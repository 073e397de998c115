"""An AutoGen assistant with Memento as its long-term memory.

Two sessions with the same user: in the first the agent stores a fact with its `remember` tool;
in the second, a fresh agent (empty chat history) gets the memories that fit the question
recalled into its context before it answers, with the reason each one came back.

    HF_HUB_OFFLINE=1 .venv/bin/python examples/autogen_agent.py

Offline by default: AutoGen's ReplayChatCompletionClient plays the model's side, so the model's
words are scripted, while the memory is real (an embedded store in a temporary directory and the
bundled MiniLM model). With OPENAI_API_KEY set (and `pip install "autogen-ext[openai]"`), a real
model answers instead: OPENAI_MODEL picks it (default gpt-4o-mini) and OPENAI_BASE_URL any
OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
from collections.abc import Sequence

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import (
    MemoryQueryEvent,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from autogen_core import EVENT_LOGGER_NAME, FunctionCall
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_ext.models.replay import ReplayChatCompletionClient
from rich.console import Console

from memento_autogen import MementoMemory, MementoMemoryConfig, remember_tool

console = Console(highlight=False)

SYSTEM_MESSAGE = (
    "You are Alice's personal assistant. When she tells you something worth keeping about "
    "herself, store it with the remember tool. Use the memories you are given when they help."
)
FIRST_SESSION = "By the way, I'm allergic to peanuts. Please keep that in mind."
SECOND_SESSION = (
    "Can you suggest a snack and a drink for this afternoon? Something with nuts maybe?"
)


def scripted_model(session: int) -> ChatCompletionClient:
    """The replay client's script: the first session calls the tool, the second answers."""
    if session == 1:
        call = FunctionCall(
            id="call-1",
            name="remember",
            arguments=json.dumps(
                {"fact": "Alice is allergic to peanuts", "importance": 0.9, "tags": ["health"]}
            ),
        )
        script: list[str | CreateResult] = [
            CreateResult(
                finish_reason="function_calls",
                content=[call],
                usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                cached=False,
            ),
            "Noted: no peanuts for you, ever.",
        ]
    else:
        script = ["Green tea with roasted almonds: no peanuts, and no coffee after noon."]
    model_info = ModelInfo(
        vision=False,
        function_calling=True,
        json_output=False,
        family=ModelFamily.UNKNOWN,
        structured_output=False,
    )
    return ReplayChatCompletionClient(script, model_info=model_info)


def model_for(session: int) -> ChatCompletionClient:
    if not os.environ.get("OPENAI_API_KEY"):
        return scripted_model(session)
    try:
        from autogen_ext.models.openai import OpenAIChatCompletionClient
    except ImportError as err:
        raise SystemExit('OPENAI_API_KEY is set: pip install "autogen-ext[openai]"') from err
    return OpenAIChatCompletionClient(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))


def show(result: TaskResult) -> None:
    for message in result.messages:
        if isinstance(message, TextMessage):
            console.print(f"[bold]{message.source}:[/] {message.content}")
        elif isinstance(message, MemoryQueryEvent):
            console.print("[bold cyan]memories recalled into the context:[/]")
            for memory in message.content:
                show_memory(memory)
        elif isinstance(message, ToolCallRequestEvent):
            for call in message.content:
                console.print(f"[magenta]tool call[/] {call.name}({call.arguments})")
        elif isinstance(message, ToolCallExecutionEvent):
            for outcome in message.content:
                console.print(f"[magenta]tool result[/] {outcome.content}")


def show_memory(memory: MemoryContent) -> None:
    why = memory.metadata or {}
    content = json.dumps(memory.content) if isinstance(memory.content, dict) else memory.content
    mime = memory.mime_type
    mime_text = mime.value if isinstance(mime, MemoryMimeType) else mime
    console.print(f"  {why.get('score', 0):.3f}  {content!s}  [dim]({mime_text})[/]")
    console.print(f"         [dim]{why.get('reason', '')}[/]")


async def seed(memory: MementoMemory) -> None:
    """What Alice's earlier sessions left behind: text, a Markdown note, a JSON profile."""
    contents: Sequence[MemoryContent] = [
        MemoryContent(
            content="Alice drinks green tea; no coffee after noon.",
            mime_type=MemoryMimeType.TEXT,
            metadata={"tags": ["pref:drink"], "importance": 0.7},
        ),
        MemoryContent(
            content="# Alice's week\n- Monday: climbing gym\n- Thursday: piano lesson",
            mime_type=MemoryMimeType.MARKDOWN,
            metadata={"memory_type": "episodic"},
        ),
        MemoryContent(
            content={"name": "Alice", "city": "Lisbon", "diet": "vegetarian"},
            mime_type=MemoryMimeType.JSON,
            metadata={"tags": ["profile"], "importance": 0.8},
        ),
    ]
    for content in contents:
        await memory.add(content)


async def main() -> None:
    directory = tempfile.mkdtemp(prefix="memento-autogen-")
    # score_threshold drops memories that barely relate to the message (relevance 0..1).
    config = MementoMemoryConfig(
        path=directory, user_id="alice", agent_id="assistant", k=3, score_threshold=0.12
    )
    memory = MementoMemory(config)
    offline = not os.environ.get("OPENAI_API_KEY")
    if offline:  # the replay client logs that it ignores tool_choice and counts tokens roughly
        logging.getLogger(EVENT_LOGGER_NAME).setLevel(logging.ERROR)
    mode = "the offline replay client" if offline else "a real model"
    console.print(f"[bold]Memento store[/] in {directory}; the model is {mode}.")
    await seed(memory)

    console.print("\n[bold]Session 1[/]")
    agent = AssistantAgent(
        "assistant",
        model_client=model_for(1),
        memory=[memory],
        tools=[remember_tool(memory)],
        system_message=SYSTEM_MESSAGE,
        reflect_on_tool_use=True,
    )
    show(await agent.run(task=FIRST_SESSION))

    console.print("\n[bold]Session 2[/] (a new agent, no chat history; the memory is all it has)")
    agent = AssistantAgent(
        "assistant",
        model_client=model_for(2),
        memory=[memory],
        tools=[remember_tool(memory)],
        system_message=SYSTEM_MESSAGE,
    )
    show(await agent.run(task=SECOND_SESSION))

    console.print("\n[bold]The memory's component config[/] (what agent.dump_component() holds):")
    console.print_json(memory.dump_component().model_dump_json())
    await memory.close()


if __name__ == "__main__":
    asyncio.run(main())
