"""An agent run (FunctionAgent with LlamaIndex's function-calling mock LLM) on MementoChatMemory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.workflow import Context

from memento_core import Embedder, Memento, Scope
from memento_llamaindex import MementoChatMemory

# Building a FunctionAgent walks its members with inspect, tripping pydantic's deprecations.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")


def note_parking(level: int = 3) -> str:
    """Note where the car is parked."""
    return f"Parked on level {level}."


def agent(llm: MockFunctionCallingLLMWithChatMemoryOfLastCall) -> FunctionAgent:
    return FunctionAgent(tools=[note_parking], llm=llm, system_prompt="You are Alice's helper.")


async def test_an_agent_run_stores_its_turn_and_sees_recalled_memories(store: Memento) -> None:
    store.remember("Alice's car is a green Fiat 500.", scope=Scope(user_id="alice"))
    memory = MementoChatMemory.from_defaults(store=store, user_id="alice", session_id="run-1")
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()

    result = await agent(llm).run("Please note where I parked my car.", memory=memory)

    assert str(result) == "Tool calls complete."
    stored = memory.get_all()
    assert [m.role for m in stored] == [
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
        MessageRole.ASSISTANT,
    ]
    (call,) = [b for b in stored[1].blocks if isinstance(b, ToolCallBlock)]
    assert call.tool_name == "note_parking"
    assert stored[2].additional_kwargs["tool_call_id"] == call.tool_call_id
    assert stored[2].content == "Parked on level 3."
    # After the tool call the agent asks the memory with the user's message as input: the
    # recalled memories reach the model as a system message.
    seen = [m.content or "" for m in llm.last_chat_messages or []]
    assert any("green Fiat 500" in text for text in seen)


async def test_a_second_run_continues_the_conversation(store: Memento) -> None:
    memory = MementoChatMemory.from_defaults(store=store, session_id="run-2")
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    await agent(llm).run("Note my parking.", memory=memory)
    await agent(llm).run("Thanks!", memory=memory)
    assert [m.content for m in memory.get_all() if m.role == MessageRole.USER] == [
        "Note my parking.",
        "Thanks!",
    ]


async def test_a_workflow_context_holding_the_memory_serialises(tmp_path: Path) -> None:
    memory = MementoChatMemory.from_defaults(path=str(tmp_path / "ctx"), session_id="ctx-1")
    workflow = agent(MockFunctionCallingLLMWithChatMemoryOfLastCall())
    ctx = Context(workflow)
    await workflow.run("Note my parking.", memory=memory, ctx=ctx)
    restored = Context.from_dict(workflow, ctx.to_dict())
    again = await restored.store.get("memory")
    assert isinstance(again, MementoChatMemory) and again is not memory
    assert again.get_all() == memory.get_all()


def test_an_agent_conversation_survives_a_process_restart(
    embedder: Embedder, tmp_path: Path
) -> None:
    path = tmp_path / "restart"
    script = textwrap.dedent(
        f"""
        import asyncio
        from llama_index.core.agent.workflow import FunctionAgent
        from llama_index.core.llms import MockFunctionCallingLLM
        from memento_llamaindex import MementoChatMemory

        def note_parking(level: int = 3) -> str:
            '''Note where the car is parked.'''
            return f"Parked on level {{level}}."

        async def main() -> None:
            memory = MementoChatMemory.from_defaults(path={str(path)!r}, session_id="restart")
            agent = FunctionAgent(tools=[note_parking], llm=MockFunctionCallingLLM())
            await agent.run("Note my parking.", memory=memory)

        asyncio.run(main())
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=300)
    with Memento.open(path, embedder=embedder) as store:
        memory = MementoChatMemory.from_defaults(store=store, session_id="restart")
        stored = memory.get_all()
        assert stored[0].content == "Note my parking."
        assert stored[2].content == "Parked on level 3."
        assert stored[-1].content == "Tool calls complete."
