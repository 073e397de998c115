"""The cross-adapter conformance scenarios, the retriever and hotwords in LlamaIndex streams."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.schema import TextNode

from memento_core import Embedder, HotwordEvent, Memento, MemoryNotFound, Scope, plugins
from memento_core.testing import ConformanceDriver, CoreDriver, run_all
from memento_llamaindex import MementoRetriever, ahotword_stream, hotword_stream
from memento_llamaindex.conformance import driver


@pytest.fixture
def quiet_store(embedder: Embedder, tmp_path: Path) -> Iterator[Memento]:
    """A store that does not track usage, so recalling does not move later scores."""
    with Memento.open(tmp_path / "conformance", embedder=embedder, track_usage=False) as mem:
        yield mem


def test_the_adapter_passes_the_conformance_scenarios(quiet_store: Memento) -> None:
    adapter = driver(quiet_store)
    assert isinstance(adapter, ConformanceDriver)
    run_all([CoreDriver(quiet_store), adapter], quiet_store)


def test_the_plugin_registers_the_adapter_and_its_driver(quiet_store: Memento) -> None:
    plugins.reset()
    info = plugins.adapters()["llamaindex"]
    assert (info.framework, info.package) == ("LlamaIndex", "memento-llamaindex")
    assert info.load_driver() is driver


async def test_the_retriever_returns_memory_ids_and_mementos_scores(
    quiet_store: Memento,
) -> None:
    store = quiet_store  # the retriever's recall must not count as a use the next one ranks by
    alice = Scope(user_id="alice")
    tea = store.remember("Alice drinks green tea every morning.", scope=alice, tags=["drink"])
    store.remember("Alice's bike is red.", scope=alice)
    store.remember("Bob drinks coffee.", scope=Scope(user_id="bob"))
    retriever = MementoRetriever(store, user_id="alice", similarity_top_k=2)
    found = await retriever.aretrieve("what does Alice drink?")
    expected = store.recall("what does Alice drink?", scope=alice, limit=2)
    assert [n.node.node_id for n in found] == [r.item.id for r in expected]
    # Recency moves the score by a hair between the two calls.
    assert [n.score for n in found] == pytest.approx([r.score for r in expected], abs=1e-6)
    top = found[0]
    assert top.node.node_id == tea and isinstance(top.node, TextNode)
    assert top.node.get_content() == "Alice drinks green tea every morning."
    assert top.node.metadata["tags"] == ["drink"] and "relevance" in top.node.metadata["reason"]
    assert retriever.retrieve("coffee") and all(
        "Bob" not in n.node.get_content() for n in retriever.retrieve("coffee")
    )


def test_the_retriever_deletes_only_its_own_memories(store: Memento) -> None:
    mine = store.remember("Alice's locker code is 1234.", scope=Scope(user_id="alice"))
    theirs = store.remember("Bob's locker code is 9876.", scope=Scope(user_id="bob"))
    public = store.remember("Lockers close at 10pm.", privacy="public")
    retriever = MementoRetriever(store, user_id="alice")
    with pytest.raises(MemoryNotFound):
        retriever.delete_nodes([mine, theirs])
    with pytest.raises(MemoryNotFound):
        retriever.delete_nodes([public])  # visible, but not Alice's to delete
    assert store.get(mine) and store.get(theirs) and store.get(public)
    retriever.delete_nodes([mine])
    with pytest.raises(MemoryNotFound):
        store.get(mine)


def test_bad_retriever_settings_are_refused(store: Memento) -> None:
    with pytest.raises(ValueError, match="similarity_top_k"):
        MementoRetriever(store, similarity_top_k=0)
    with pytest.raises(ValueError, match="unknown filter"):
        MementoRetriever(store, filter={"colour": "red"})
    with pytest.raises(TypeError, match="open Memento"):
        MementoRetriever("./memory")  # type: ignore[arg-type]


def _streaming_llm(chunks: list[str]) -> MockFunctionCallingLLM:
    def reply(messages: object, **kwargs: object) -> Iterator[ChatMessage]:
        return (ChatMessage(role=MessageRole.ASSISTANT, content=c) for c in chunks)

    return MockFunctionCallingLLM(response_generator=reply)


def _async_streaming_llm(chunks: list[str]) -> MockFunctionCallingLLM:
    async def reply(messages: object, **kwargs: object) -> AsyncIterator[ChatMessage]:
        for chunk in chunks:
            yield ChatMessage(role=MessageRole.ASSISTANT, content=chunk)

    return MockFunctionCallingLLM(response_generator=reply)


async def test_hotword_events_come_just_before_the_chunk_that_completes_them(
    store: Memento,
) -> None:
    store.remember(
        "Do Son is a seaside town.", hotwords=["도손", "Do Son"], data={"place": "Do Son"}
    )
    chunks = ["We went to Do", " So", "n; 도손 again."]
    detector = store.hotword_detector()
    items = list(
        hotword_stream(_streaming_llm(chunks).stream_chat([]), detector.conversation("sync"))
    )
    kinds = [type(i).__name__ if isinstance(i, HotwordEvent) else i.delta for i in items]
    assert kinds == ["We went to Do", " So", "HotwordDetected", "MemoryDict", "n; 도손 again."]
    events = [i for i in items if isinstance(i, HotwordEvent)]
    assert [e.to_dict()["msgtype"] for e in events] == ["info", "hotword"]  # fires once
    responses = [i for i in items if isinstance(i, ChatResponse)]
    assert "".join(r.delta or "" for r in responses) == "".join(chunks)

    stream = await _async_streaming_llm(chunks).astream_chat([])
    async_items = [i async for i in ahotword_stream(stream, detector.conversation("async"))]
    assert [e.to_dict()["msgtype"] for e in async_items if isinstance(e, HotwordEvent)] == [
        "info",
        "hotword",
    ]
