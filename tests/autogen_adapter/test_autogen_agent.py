"""MementoMemory inside a real AssistantAgent; only the LLM is AutoGen's replay client."""

from __future__ import annotations

import json
from collections.abc import Sequence

from _autogen_support import text
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    MemoryQueryEvent,
    ToolCallExecutionEvent,
)
from autogen_core import FunctionCall
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    CreateResult,
    ModelFamily,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.replay import ReplayChatCompletionClient

from memento_autogen import MementoMemory, MementoMemoryConfig, RememberTool, remember_tool
from memento_core import Memento, MemoryType, Scope

TOOL_MODEL = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
)


def memory_events(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[MemoryQueryEvent]:
    return [m for m in messages if isinstance(m, MemoryQueryEvent)]


def calls_remember(**arguments: object) -> CreateResult:
    call = FunctionCall(id="call-1", name="remember", arguments=json.dumps(arguments))
    return CreateResult(
        finish_reason="function_calls",
        content=[call],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


async def test_the_agent_recalls_into_its_model_context(memory: MementoMemory) -> None:
    for fact in (
        "Alice drinks green tea every morning",
        "The billing service runs on MariaDB 10.6",
        "Deploys go out every Tuesday after the standup",
    ):
        await memory.add(text(fact))
    client = ReplayChatCompletionClient(["Green tea, I'd say."])
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])

    result = await agent.run(task="What should I offer Alice to drink?")

    (event,) = memory_events(result.messages)
    assert event.content[0].content == "Alice drinks green tea every morning"
    assert event.content[0].metadata and event.content[0].metadata["score"] > 0
    context = await agent.model_context.get_messages()
    listings = [m for m in context if isinstance(m, SystemMessage)]
    assert len(listings) == 1
    assert "1. Alice drinks green tea every morning" in listings[0].content
    sent_to_model = client.create_calls[0]["messages"]
    assert any("Alice drinks green tea" in str(m.content) for m in sent_to_model)


async def test_no_memory_event_when_nothing_is_relevant(mem: Memento) -> None:
    memory = MementoMemory(MementoMemoryConfig(user_id="alice", score_threshold=0.5), store=mem)
    await memory.add(text("The billing service runs on MariaDB 10.6"))
    client = ReplayChatCompletionClient(["Hello!"])
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])

    result = await agent.run(task="Good morning, how are you?")

    assert memory_events(result.messages) == []
    context = await agent.model_context.get_messages()
    assert not any(isinstance(m, SystemMessage) for m in context)


async def test_update_context_recalls_for_the_newest_user_message(memory: MementoMemory) -> None:
    await memory.add(text("Alice drinks green tea every morning"))
    await memory.add(text("The billing service runs on MariaDB 10.6"))
    context = UnboundedChatCompletionContext(
        [
            UserMessage(content="What does Alice drink?", source="user"),
            AssistantMessage(content="Green tea.", source="assistant"),
            UserMessage(content=["Which database does billing use?"], source="user"),
        ]
    )

    result = await memory.update_context(context)

    assert result.memories.results[0].content == "The billing service runs on MariaDB 10.6"
    messages = await context.get_messages()
    assert len(messages) == 4
    assert isinstance(messages[-1], SystemMessage)
    assert messages[-1].content.splitlines()[1] == "1. The billing service runs on MariaDB 10.6"


async def test_update_context_without_a_user_message_changes_nothing(
    memory: MementoMemory,
) -> None:
    await memory.add(text("Alice drinks green tea every morning"))
    context = UnboundedChatCompletionContext([SystemMessage(content="You are helpful.")])
    result = await memory.update_context(context)
    assert result.memories.results == []
    assert len(await context.get_messages()) == 1


async def test_the_agent_remembers_through_the_tool(memory: MementoMemory, mem: Memento) -> None:
    client = ReplayChatCompletionClient(
        [calls_remember(fact="Alice is allergic to peanuts", importance=0.9, tags=["health"])],
        model_info=TOOL_MODEL,
    )
    agent = AssistantAgent(
        "assistant", model_client=client, tools=[remember_tool(memory)], memory=[memory]
    )

    result = await agent.run(task="Please note that I am allergic to peanuts.")

    (execution,) = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert not execution.content[0].is_error
    (item,) = mem.items(scope=Scope(user_id="alice"))
    assert item.content == "Alice is allergic to peanuts"
    assert (item.type, item.source, item.importance, item.tags) == (
        MemoryType.SEMANTIC,
        "tool",
        0.9,
        ("health",),
    )

    later = AssistantAgent(
        "assistant", model_client=ReplayChatCompletionClient(["No peanuts!"]), memory=[memory]
    )
    (event,) = memory_events((await later.run(task="Can I cook peanut noodles?")).messages)
    assert event.content[0].content == "Alice is allergic to peanuts"


async def test_a_bad_tool_call_is_reported_to_the_model_and_stores_nothing(
    memory: MementoMemory, mem: Memento
) -> None:
    client = ReplayChatCompletionClient(
        [calls_remember(fact="Alice likes jazz", importance=3)], model_info=TOOL_MODEL
    )
    agent = AssistantAgent("assistant", model_client=client, tools=[remember_tool(memory)])

    result = await agent.run(task="I like jazz.")

    (execution,) = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert execution.content[0].is_error
    assert "importance" in execution.content[0].content
    assert mem.items(scope=Scope(user_id="alice")) == []


async def test_an_agent_with_the_remember_tool_dumps_and_loads(
    memory: MementoMemory, mem: Memento
) -> None:
    client = ReplayChatCompletionClient(
        [calls_remember(fact="Alice's locker code is 7291", importance=0.8)],
        model_info=TOOL_MODEL,
    )
    agent = AssistantAgent(
        "assistant", model_client=client, tools=[remember_tool(memory)], memory=[memory]
    )

    loaded = AssistantAgent.load_component(agent.dump_component())
    result = await loaded.run(task="My locker code is 7291, keep it.")

    (execution,) = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert not execution.content[0].is_error, execution.content[0].content
    (item,) = mem.items(scope=Scope(user_id="alice"))
    assert (item.content, item.source, item.importance) == (
        "Alice's locker code is 7291",
        "tool",
        0.8,
    )
    tool = remember_tool(memory, name="note")
    again = RememberTool.load_component(tool.dump_component())
    assert (again.name, again.description, again.schema) == (
        tool.name,
        tool.description,
        tool.schema,
    )
    assert again.memory.config == memory.config
