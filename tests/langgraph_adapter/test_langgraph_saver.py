"""MementoSaver: the official conformance suite, durability, and archiving finished threads."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict
from uuid import uuid4

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from memento_core import Embedder, Memento, MemoryType, Scope
from memento_langgraph import MementoSaver

Fresh = Callable[[str], str]
ALL_CAPABILITIES = {
    "put",
    "put_writes",
    "get_tuple",
    "list",
    "delete_thread",
    "delete_for_runs",
    "copy_thread",
    "prune",
}


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def open_memento(
    request: pytest.FixtureRequest, embedder: Embedder, tmp_path: Path
) -> Callable[[], Memento]:
    """Opens a new, empty Memento in the current mode each time it is called."""
    url = request.getfixturevalue("chroma_server") if request.param == "server" else None

    def opener() -> Memento:
        name = f"s{uuid4().hex[:12]}"
        if url is not None:
            return Memento.open(url=url, collection_prefix=name, embedder=embedder)
        return Memento.open(tmp_path / name, embedder=embedder)

    return opener


async def test_the_official_conformance_suite_passes(open_memento: Callable[[], Memento]) -> None:
    @checkpointer_test(name=f"MementoSaver-{uuid4().hex[:6]}")
    async def fresh_saver() -> AsyncIterator[MementoSaver]:
        yield MementoSaver(open_memento())

    report = await validate(fresh_saver)

    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert report.passed_all_base(), failures
    assert report.passed_all(), failures
    assert {name for name, r in report.results.items() if r.detected} == ALL_CAPABILITIES
    assert report.conformance_level() == "FULL"


# ----------------------------------------------------------------------------- graphs


def chat_graph(saver: MementoSaver, replies: list[str]) -> CompiledStateGraph[Any, Any, Any, Any]:
    model = GenericFakeChatModel(messages=iter([AIMessage(r) for r in replies]))

    def chatbot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "chatbot")
    builder.add_edge("chatbot", END)
    return builder.compile(checkpointer=saver)


def config(thread: str, user: str | None = None) -> RunnableConfig:
    configurable = {"thread_id": thread}
    if user is not None:
        configurable["user_id"] = user
    return {"configurable": configurable}


def archives(mem: Memento, thread: str) -> list[Any]:
    return [
        item
        for item in mem.items(include_deleted=False)
        if "chat-archive" in item.tags and item.scope.session_id == thread
    ]


def test_a_deleted_thread_is_archived_into_episodic_memory(
    open_memento: Callable[[], Memento], fresh: Fresh
) -> None:
    mem = open_memento()
    saver = MementoSaver(mem)
    thread, user = fresh("thread"), fresh("dana")
    graph = chat_graph(saver, ["Noted, Lisbon in May.", "Window seat, noted."])
    graph.invoke({"messages": [("user", "I am flying to Lisbon in May.")]}, config(thread, user))
    graph.invoke({"messages": [("user", "I prefer a window seat.")]}, config(thread, user))

    saver.delete_thread(thread)

    assert saver.get_tuple(config(thread)) is None
    [archive] = archives(mem, thread)
    assert archive.type is MemoryType.EPISODIC
    assert archive.scope == Scope(user_id=user, session_id=thread)
    assert "Lisbon" in archive.content
    assert [m.content for m in mem.history(thread)] == [
        "I am flying to Lisbon in May.",
        "Noted, Lisbon in May.",
        "I prefer a window seat.",
        "Window seat, noted.",
    ]
    # The archive keeps each turn as a memory of its own, derived into the summary.
    archived = {archive.id} | {x.target_id for x in mem.links(archive.id)}
    recalled = mem.recall("where am I flying?", scope=Scope(user_id=user), limit=1)
    assert recalled[0].item.id in archived and "Lisbon" in recalled[0].item.content


def test_archiving_can_be_switched_off(open_memento: Callable[[], Memento], fresh: Fresh) -> None:
    mem = open_memento()
    saver = MementoSaver(mem, archive_on_delete=False)
    thread = fresh("thread")
    chat_graph(saver, ["ok"]).invoke({"messages": [("user", "hello")]}, config(thread, "u"))

    saver.delete_thread(thread)

    assert saver.get_tuple(config(thread)) is None
    assert archives(mem, thread) == []


def test_end_of_thread_archives_and_keeps_the_thread(
    open_memento: Callable[[], Memento], fresh: Fresh
) -> None:
    def said_goodbye(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> bool:
        messages = checkpoint["channel_values"].get("messages") or []
        return any("goodbye" in str(m.text).lower() for m in messages)

    mem = open_memento()
    saver = MementoSaver(mem, end_of_thread=said_goodbye)
    thread, user = fresh("thread"), fresh("eve")
    graph = chat_graph(saver, ["Sure, oat milk.", "Goodbye!"])
    graph.invoke({"messages": [("user", "Remember I take oat milk.")]}, config(thread, user))
    assert archives(mem, thread) == []

    graph.invoke({"messages": [("user", "Thanks, goodbye.")]}, config(thread, user))

    [archive] = archives(mem, thread)
    assert archive.scope.user_id == user
    assert saver.get_tuple(config(thread)) is not None
    assert saver.archive_thread(thread) == archive.id  # archiving again changes nothing
    assert len(mem.history(thread)) == 4


async def test_async_delete_archives_too(open_memento: Callable[[], Memento], fresh: Fresh) -> None:
    mem = open_memento()
    saver = MementoSaver(mem)
    thread = fresh("thread")
    graph = chat_graph(saver, ["Got it: the meeting moved to Friday."])
    await graph.ainvoke(
        {"messages": [("user", "The meeting moved to Friday.")]}, config(thread, "fay")
    )

    assert await saver.aarchive_thread(fresh("no-such-thread")) is None
    await saver.adelete_thread(thread)

    assert await saver.aget_tuple(config(thread)) is None
    assert [a.scope.user_id for a in archives(mem, thread)] == ["fay"]


def test_checkpoints_survive_reopening_the_store(embedder: Embedder, tmp_path: Path) -> None:
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        chat_graph(MementoSaver(mem), ["Hi Gus."]).invoke(
            {"messages": [("user", "I am Gus.")]}, config("t1", "gus")
        )

    with Memento.open(tmp_path / "store", embedder=embedder) as reopened:
        graph = chat_graph(MementoSaver(reopened), ["Your name is Gus."])
        state = graph.get_state(config("t1"))
        assert [m.content for m in state.values["messages"]] == ["I am Gus.", "Hi Gus."]
        out = graph.invoke({"messages": [("user", "Who am I?")]}, config("t1"))
        assert len(out["messages"]) == 4
        assert len(list(graph.get_state_history(config("t1")))) >= 6


def test_thread_ids_need_not_be_strings(open_memento: Callable[[], Memento]) -> None:
    saver = MementoSaver(open_memento())
    graph = chat_graph(saver, ["forty-two"])
    graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": 42}})

    state = graph.get_state({"configurable": {"thread_id": 42}})
    assert [m.content for m in state.values["messages"]] == ["hi", "forty-two"]
    assert saver.get_tuple({"configurable": {"thread_id": "42"}}) is not None


def test_copy_thread_gives_the_copy_the_same_state(
    open_memento: Callable[[], Memento], fresh: Fresh
) -> None:
    saver = MementoSaver(open_memento())
    source, target = fresh("source"), fresh("target")
    graph = chat_graph(saver, ["one", "two"])
    graph.invoke({"messages": [("user", "first")]}, config(source))

    saver.copy_thread(source, target)
    graph.invoke({"messages": [("user", "second")]}, config(target))

    assert [m.content for m in graph.get_state(config(source)).values["messages"]] == [
        "first",
        "one",
    ]
    assert [m.content for m in graph.get_state(config(target)).values["messages"]] == [
        "first",
        "one",
        "second",
        "two",
    ]


# ----------------------------------------------------------------------------- delta channels


def extend(state: list[Any] | None, batches: list[list[Any]]) -> list[Any]:
    out = list(state or [])
    for batch in batches:
        out.extend(batch)
    return out


class Ledger(TypedDict):
    entries: Annotated[list[Any], DeltaChannel(extend, snapshot_frequency=4)]


def ledger_graph(saver: MementoSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    def count(state: Ledger) -> dict[str, Any]:
        return {"entries": [len(state.get("entries") or [])]}

    builder = StateGraph(Ledger)
    builder.add_node("count", count)
    builder.add_edge(START, "count")
    builder.add_edge("count", END)
    return builder.compile(checkpointer=saver)


def test_prune_keep_latest_keeps_what_delta_channels_need(
    open_memento: Callable[[], Memento],
) -> None:
    saver = MementoSaver(open_memento())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DeltaChannel is a beta feature and says so
        graph = ledger_graph(saver)
        for n in range(5):
            graph.invoke({"entries": [f"in{n}"]}, config("ledger"))
        before = graph.get_state(config("ledger")).values["entries"]
        stored = len(list(saver.list(config("ledger"))))

        saver.prune(["ledger"], strategy="keep_latest")

        kept = len(list(saver.list(config("ledger"))))
        assert 1 < kept < stored  # the newest checkpoint and the ancestors back to a snapshot
        assert graph.get_state(config("ledger")).values["entries"] == before
        assert len(before) == 10


def test_unknown_prune_strategy_is_refused(open_memento: Callable[[], Memento]) -> None:
    with pytest.raises(ValueError, match="strategy"):
        MementoSaver(open_memento()).prune(["t"], strategy="keep_some")


def test_versions_increase_and_differ_between_forks(open_memento: Callable[[], Memento]) -> None:
    saver = MementoSaver(open_memento())
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    fork = saver.get_next_version(first, None)
    assert first < second and first < fork and second != fork
