"""Real LangGraph graphs with MementoStore, MementoSaver and the memory nodes (only the chat
model is a fake: GenericFakeChatModel)."""

from __future__ import annotations

import functools
import json
import operator
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_store
from langgraph.func import entrypoint
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from memento_core import InvalidScope, Memento, Scope
from memento_langgraph import (
    INJECTED_PREFIX,
    HotwordStream,
    MementoSaver,
    MementoStore,
    recall_node,
    remember_node,
)

Fresh = Callable[[str], str]


class RecordingModel(GenericFakeChatModel):
    """The fake chat model, keeping every prompt it was given."""

    prompts: list[list[BaseMessage]] = []  # noqa: RUF012  # pydantic copies the default per instance

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def model(*replies: str) -> RecordingModel:
    return RecordingModel(messages=iter([AIMessage(r) for r in replies]))


def config(user: str | None, thread: str) -> RunnableConfig:
    configurable = {"thread_id": thread}
    if user is not None:
        configurable["user_id"] = user
    return {"configurable": configurable}


def memory_text(prompt: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in prompt if isinstance(m, SystemMessage))


def chatbot_with_memory(
    mem: Memento, chat_model: RecordingModel
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """An ordinary chatbot graph that gained memory: two nodes, a store, a checkpointer."""

    def chatbot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [chat_model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("recall", recall_node())
    builder.add_node("chatbot", chatbot)
    builder.add_node("remember", remember_node())
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "chatbot")
    builder.add_edge("chatbot", "remember")
    builder.add_edge("remember", END)
    return builder.compile(store=MementoStore(mem), checkpointer=MementoSaver(mem))


# ----------------------------------------------------------------------------- the store in graphs


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_nodes_reach_the_store_three_ways(
    shared_mem: Memento, fresh: Fresh, mode: str
) -> None:
    user = fresh("ivy")
    store = MementoStore(shared_mem)

    def write(state: MessagesState, store: BaseStore) -> dict[str, Any]:
        store.put(("memories", user), "tea", {"text": f"{user} drinks jasmine tea"})
        return {}

    def search(state: MessagesState, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        hits = runtime.store.search(("memories", user), query="what tea?")
        return {"messages": [AIMessage(hits[0].value["text"])]}

    def read(state: MessagesState) -> dict[str, Any]:
        item = get_store().get(("memories", user), "tea")
        assert item is not None
        return {"messages": [AIMessage(f"stored at {item.created_at:%Y}")]}

    builder = StateGraph(MessagesState)
    for name, node in (("write", write), ("search", search), ("read", read)):
        builder.add_node(name, node)
    builder.add_edge(START, "write")
    builder.add_edge("write", "search")
    builder.add_edge("search", "read")
    builder.add_edge("read", END)
    graph = builder.compile(store=store, checkpointer=MementoSaver(shared_mem))
    run_config = config(user, fresh("thread"))
    if mode == "sync":
        out = graph.invoke({"messages": [("user", "hi")]}, run_config)
    else:  # sync nodes under ainvoke still use the store's sync methods
        out = await graph.ainvoke({"messages": [("user", "hi")]}, run_config)

    assert out["messages"][1].content == f"{user} drinks jasmine tea"
    assert out["messages"][2].content.startswith("stored at 20")
    recalled = shared_mem.recall("jasmine tea", scope=Scope(user_id=user), limit=1)
    assert recalled[0].item.data == {"text": f"{user} drinks jasmine tea"}


async def test_the_functional_api_uses_store_and_checkpointer(
    shared_mem: Memento, fresh: Fresh
) -> None:
    store, saver = MementoStore(shared_mem), MementoSaver(shared_mem)
    root = fresh("visits")

    @entrypoint(store=store, checkpointer=saver)
    def visit(name: str, *, previous: int | None = None) -> int:
        seen = get_store().get((root,), name)
        visits = (seen.value["visits"] if seen else 0) + 1
        get_store().put((root,), name, {"visits": visits})
        return visits

    @entrypoint(store=store, checkpointer=saver)
    async def avisit(name: str, *, previous: int | None = None) -> int:
        seen = await get_store().aget((root,), name)
        visits = (seen.value["visits"] if seen else 0) + 1
        await get_store().aput((root,), name, {"visits": visits})
        return visits

    thread = config(None, fresh("thread"))
    assert visit.invoke("ann", thread) == 1
    assert await visit.ainvoke("ann", thread) == 2
    assert await avisit.ainvoke("ann", config(None, fresh("other-thread"))) == 3
    assert visit.get_state(thread).values == 2
    stored = store.get((root,), "ann")
    assert stored is not None and stored.value == {"visits": 3}


# ----------------------------------------------------------------------------- recall and remember


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_second_thread_is_answered_with_what_the_first_taught(
    shared_mem: Memento, fresh: Fresh, mode: str
) -> None:
    user = fresh("jo")
    chat_model = model("Noted: your dog is called Biscuit.", "Your dog is Biscuit.", "Biscuit!")
    graph = chatbot_with_memory(shared_mem, chat_model)

    async def run(text: str, thread: str) -> dict[str, Any]:
        payload = {"messages": [("user", text)]}
        if mode == "sync":
            return graph.invoke(payload, config(user, thread))
        return await graph.ainvoke(payload, config(user, thread))

    await run("My dog is called Biscuit.", fresh("first"))
    second = fresh("second")
    await run("What is my dog called?", second)

    assert "Biscuit" in memory_text(chat_model.prompts[1])
    assert "Biscuit" not in memory_text(chat_model.prompts[0])  # nothing known yet
    remembered = shared_mem.recall("dog", scope=Scope(user_id=user), limit=5)
    assert any(
        r.item.content
        == "User: My dog is called Biscuit.\nAssistant: Noted: your dog is called Biscuit."
        for r in remembered
    )

    out = await run("And again: my dog's name?", second)
    injected = [m for m in out["messages"] if (m.id or "").startswith(INJECTED_PREFIX)]
    assert len(injected) == 1  # the node replaces its earlier memories message
    assert out["messages"][-1].content == "Biscuit!"


def test_memories_written_through_the_store_are_recalled(shared_mem: Memento, fresh: Fresh) -> None:
    """What a store-based tool (LangMem's manage-memory tool, say) saved is what recall finds."""
    user = fresh("kim")
    MementoStore(shared_mem).put(
        ("memories", user), "allergy", {"content": "Kim is allergic to peanuts"}
    )
    chat_model = model("I will avoid peanuts.")
    graph = chatbot_with_memory(shared_mem, chat_model)

    graph.invoke({"messages": [("user", "Suggest a snack for me")]}, config(user, fresh("t")))

    assert "allergic to peanuts" in memory_text(chat_model.prompts[0])


def test_users_do_not_see_each_others_memories(shared_mem: Memento, fresh: Fresh) -> None:
    lee, max_ = fresh("lee"), fresh("max")
    chat_model = model("Noted, your PIN hint is blue whale.", "I don't know.")
    graph = chatbot_with_memory(shared_mem, chat_model)

    graph.invoke({"messages": [("user", "My PIN hint is blue whale")]}, config(lee, fresh("t1")))
    graph.invoke({"messages": [("user", "What is my PIN hint?")]}, config(max_, fresh("t2")))

    assert "blue whale" not in memory_text(chat_model.prompts[1])


def test_the_nodes_need_a_user(shared_mem: Memento, fresh: Fresh) -> None:
    graph = chatbot_with_memory(shared_mem, model("hello"))
    with pytest.raises(InvalidScope, match="user_id"):
        graph.invoke({"messages": [("user", "hi")]}, config(None, fresh("t")))


def test_the_nodes_need_a_memento(fresh: Fresh) -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("recall", recall_node())
    builder.add_edge(START, "recall")
    graph = builder.compile()
    with pytest.raises(TypeError, match="MementoStore"):
        graph.invoke({"messages": [("user", "hi")]}, config("u", fresh("t")))


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_prebuilt_agent_gains_memory_through_its_hooks(
    shared_mem: Memento, fresh: Fresh, mode: str
) -> None:
    user = fresh("noa")
    shared_mem.remember("Noa's favourite city is Porto.", scope=Scope(user_id=user))
    chat_model = model("Porto, as you told me.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain
        agent = create_react_agent(
            chat_model,
            [],
            pre_model_hook=recall_node(output="llm_input_messages"),
            post_model_hook=remember_node(),
            store=MementoStore(shared_mem),
            checkpointer=MementoSaver(shared_mem),
        )
    payload = {"messages": [("user", "Which city do I like best?")]}
    run_config = config(user, fresh("t"))
    out = (
        agent.invoke(payload, run_config)
        if mode == "sync"
        else await agent.ainvoke(payload, run_config)
    )

    prompt = chat_model.prompts[0]
    assert isinstance(prompt[0], SystemMessage) and "Porto" in str(prompt[0].content)
    assert [type(m).__name__ for m in out["messages"]] == ["HumanMessage", "AIMessage"]
    stored = shared_mem.recall("favourite city", scope=Scope(user_id=user), limit=5)
    assert any(r.item.content.endswith("Assistant: Porto, as you told me.") for r in stored)


# ----------------------------------------------------------------------------- hotwords


@pytest.fixture
def traveller(shared_mem: Memento, fresh: Fresh) -> tuple[str, str]:
    user = fresh("ola")
    memory_id = shared_mem.remember(
        "Ola's beach trip to Do Son is in June.",
        scope=Scope(user_id=user),
        hotwords=["도손", "Do Son"],
        data={"place": "Do Son", "month": "June"},
    )
    return user, memory_id


def hotword_graph(mem: Memento, hotwords: HotwordStream) -> CompiledStateGraph[Any, Any, Any, Any]:
    chat_model = GenericFakeChatModel(messages=iter([AIMessage("Do Son is lovely in June.")] * 3))

    def chatbot(state: MessagesState) -> dict[str, Any]:
        chunks = list(hotwords.stream(chat_model.stream(state["messages"])))
        return {"messages": [AIMessage(str(functools.reduce(operator.add, chunks).content))]}

    builder = StateGraph(MessagesState)
    builder.add_node("hotwords", hotwords.node())
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "hotwords")
    builder.add_edge("hotwords", "chatbot")
    builder.add_edge("chatbot", END)
    return builder.compile(checkpointer=MementoSaver(mem))


def test_hotword_events_go_to_the_custom_stream_once_per_thread(
    shared_mem: Memento, traveller: tuple[str, str], fresh: Fresh
) -> None:
    user, memory_id = traveller
    graph = hotword_graph(shared_mem, HotwordStream(shared_mem))
    thread = fresh("t")

    first = list(
        graph.stream(
            {"messages": [("user", "도손에 가요")]}, config(user, thread), stream_mode="custom"
        )
    )
    again = list(
        graph.stream(
            {"messages": [("user", "Do Son again")]}, config(user, thread), stream_mode="custom"
        )
    )

    assert [{k: v for k, v in e.items() if k != "msg"} for e in first] == [
        {
            "status": "hotword_detected",
            "connection_id": thread,
            "hotword": "도손",
            "hotword_uid": memory_id,
            "msgtype": "info",
        },
        {
            "status": "memory_dict",
            "connection_id": thread,
            "hotword": "도손",
            "hotword_uid": memory_id,
            "msgtype": "hotword",
        },
    ]
    assert first[0]["msg"] == "도손"  # the memory's primary hotword
    assert {p["k"]: p["v"] for p in json.loads(first[1]["msg"])} == {
        "place": "Do Son",
        "month": "June",
    }
    assert again == []  # a memory fires once per conversation, whichever variant


async def test_hotwords_split_across_streamed_chunks_are_found(
    shared_mem: Memento, traveller: tuple[str, str], fresh: Fresh
) -> None:
    user, memory_id = traveller
    graph = hotword_graph(shared_mem, HotwordStream(shared_mem))
    thread = fresh("t")

    events = [
        event
        async for event in graph.astream(
            {"messages": [("user", "any beach tips?")]}, config(user, thread), stream_mode="custom"
        )
    ]

    # The model streams "Do", " ", "Son", ... : the hotword completes in a later chunk.
    assert [(e["status"], e["hotword"], e["hotword_uid"]) for e in events] == [
        ("hotword_detected", "Do Son", memory_id),
        ("memory_dict", "Do Son", memory_id),
    ]


def test_hotwords_outside_a_graph_are_returned(
    shared_mem: Memento, traveller: tuple[str, str], fresh: Fresh
) -> None:
    user, memory_id = traveller
    hotwords = HotwordStream(shared_mem)
    run_config = config(user, fresh("t"))

    events = hotwords.emit("Going to Do Son", run_config)
    chunks: Iterator[str] = hotwords.stream(iter(["Do", " So", "n!"]), config(user, fresh("t2")))

    assert [e.hotword_uid for e in events] == [memory_id, memory_id]
    assert list(chunks) == ["Do", " So", "n!"]
    assert hotwords.emit("Do Son", run_config) == ()
