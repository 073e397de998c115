"""MementoMemory through AutoGen's Memory protocol: add, query, clear, close, on a real store."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from _autogen_support import ALICE, text
from autogen_core import CancellationToken, Image
from autogen_core.memory import MemoryContent, MemoryMimeType
from PIL import Image as PILImage

from memento_autogen import MementoMemory, MementoMemoryConfig
from memento_core import (
    Embedder,
    InvalidContent,
    InvalidInput,
    InvalidScope,
    Memento,
    MemoryItem,
    MemoryNotFound,
    MemoryType,
    Privacy,
    Scope,
)

FACTS = [
    "Alice drinks green tea every morning",
    "The billing service runs on MariaDB 10.6",
    "Deploys go out every Tuesday after the standup",
]


def stored(mem: Memento, user_id: str = "alice") -> list[MemoryItem]:
    return mem.items(scope=Scope(user_id=user_id), include_deleted=False)


async def add_facts(memory: MementoMemory, facts: Sequence[str] = FACTS) -> None:
    for fact in facts:
        await memory.add(text(fact))


# --------------------------------------------------------------------------- query


async def test_query_returns_the_relevant_memory_first_with_its_reason(
    memory: MementoMemory,
) -> None:
    await add_facts(memory)
    results = (await memory.query("What does Alice drink in the morning?")).results
    assert results[0].content == "Alice drinks green tea every morning"
    assert len(results) == 3
    ranks = [r.metadata["rank_score"] for r in results if r.metadata]
    assert ranks == sorted(ranks, reverse=True)  # the order is Memento's ranking
    best = results[0].metadata or {}
    assert "morning" in best["matched_terms"]
    assert best["reason"].startswith("relevance ")
    assert best["relevance"] > (results[1].metadata or {})["relevance"]


async def test_similarity_is_the_true_cosine_of_the_embeddings(
    memory: MementoMemory, embedder: Embedder
) -> None:
    await add_facts(memory)
    question = "Which database does billing use?"
    results = (await memory.query(question)).results
    query_vector = embedder.embed_query(question)
    for result in results:
        document_vector = embedder.embed_documents([str(result.content)])[0]
        cosine = float(np.dot(query_vector, document_vector))
        assert (result.metadata or {})["similarity"] == pytest.approx(max(cosine, 0.0), abs=1e-4)


async def test_k_and_score_threshold_bound_the_results(mem: Memento) -> None:
    config = MementoMemoryConfig(**ALICE, k=2, score_threshold=0.4)
    memory = MementoMemory(config, store=mem)
    await add_facts(memory)
    found = (await memory.query("Alice's morning green tea")).results
    assert [r.content for r in found] == ["Alice drinks green tea every morning"]
    assert all((r.metadata or {})["relevance"] >= 0.4 for r in found)
    assert len((await memory.query("Alice's morning green tea", score_threshold=0.0)).results) == 2
    assert (
        len((await memory.query("Alice's morning green tea", k=3, score_threshold=0)).results) == 3
    )


@pytest.mark.parametrize("threshold", [0.2, 0.35, 0.5, 0.8])
async def test_score_threshold_bounds_the_score_each_result_shows(
    memory: MementoMemory, threshold: float
) -> None:
    """The migration contract from ChromaDBVectorMemory: a threshold of 0.8 never returns a
    result whose ``metadata["score"]`` is below 0.8, and drops nothing scored above it."""
    await add_facts(memory)
    await memory.add(text("Alice drinks black coffee in the afternoon"))
    question = "What does Alice drink in the morning?"
    everything = (await memory.query(question, k=10, score_threshold=0.0)).results
    bounded = (await memory.query(question, k=10, score_threshold=threshold)).results

    assert all((r.metadata or {})["score"] >= threshold for r in bounded)
    expected = [r.content for r in everything if (r.metadata or {})["score"] >= threshold]
    assert [r.content for r in bounded] == expected
    for result in everything:
        shown = result.metadata or {}
        assert 0.0 <= shown["score"] <= 1.0 and shown["score"] == shown["relevance"]


async def test_clear_erases_forgotten_memories_too(memory: MementoMemory, mem: Memento) -> None:
    await memory.add(text("Alice's old address was 4 Rua Augusta"))
    (forgotten,) = stored(mem)
    mem.forget(forgotten.id)  # soft delete: hidden, still stored

    await memory.clear()

    with pytest.raises(MemoryNotFound):
        mem.get(forgotten.id, include_deleted=True)


async def test_query_takes_a_filter_and_refuses_unknown_options(memory: MementoMemory) -> None:
    await memory.add(text("Alice likes oolong tea", tags=["pref:drink"]))
    await memory.add(text("Alice's favourite tea shop is in Hanoi"))
    found = (await memory.query("tea", filter={"tags": ["pref:drink"]})).results
    assert [r.content for r in found] == ["Alice likes oolong tea"]
    with pytest.raises(TypeError, match="n_results"):
        await memory.query("tea", n_results=3)


async def test_a_memory_content_can_be_the_query(memory: MementoMemory) -> None:
    await add_facts(memory)
    query = MemoryContent(content={"topic": "database for billing"}, mime_type="application/json")
    found = (await memory.query(query)).results
    assert found[0].content == "The billing service runs on MariaDB 10.6"


async def test_query_sees_what_the_scope_may_see_and_no_more(mem: Memento) -> None:
    alice = MementoMemory(MementoMemoryConfig(**ALICE), store=mem)
    bob = MementoMemory(MementoMemoryConfig(user_id="bob"), store=mem)
    await alice.add(text("Alice's door code is 4711"))
    await bob.add(text("Bob's door code is 1234"))
    found = (await bob.query("door code")).results
    assert [r.content for r in found] == ["Bob's door code is 1234"]


# ------------------------------------------------------------ add: content and MIME types


@pytest.mark.parametrize(
    ("content", "mime_type", "expected_mime", "expected_content"),
    [
        ("Plain text memory", MemoryMimeType.TEXT, MemoryMimeType.TEXT, "Plain text memory"),
        ("Plain text memory", "text/plain", MemoryMimeType.TEXT, "Plain text memory"),
        ("# Runbook\n- restart the worker", "text/markdown", MemoryMimeType.MARKDOWN, None),
        ("name,drink\nalice,tea", "text/csv", "text/csv", None),
        ({"city": "Hanoi", "street": "Do Son"}, MemoryMimeType.JSON, MemoryMimeType.JSON, None),
        ('{"city": "Hanoi"}', "application/json", MemoryMimeType.JSON, {"city": "Hanoi"}),
    ],
)
async def test_mime_type_and_content_round_trip(
    memory: MementoMemory,
    content: Any,
    mime_type: MemoryMimeType | str,
    expected_mime: MemoryMimeType | str,
    expected_content: Any,
) -> None:
    await memory.add(MemoryContent(content=content, mime_type=mime_type))
    (result,) = (await memory.query("Hanoi runbook tea memory")).results
    assert result.mime_type == expected_mime
    assert result.content == (content if expected_content is None else expected_content)


async def test_a_dict_becomes_a_dictionary_memory(memory: MementoMemory, mem: Memento) -> None:
    payload = {"hotel": "Do Son Resort", "nights": 3, "rooms": ["101", "102"]}
    await memory.add(MemoryContent(content=payload, mime_type=MemoryMimeType.JSON))
    (item,) = stored(mem)
    assert item.data == payload
    assert "Do Son Resort" in item.content


async def test_memories_written_through_core_come_back_as_text_or_json(
    memory: MementoMemory, mem: Memento
) -> None:
    alice = Scope(user_id="alice")
    mem.remember("Alice's locker is number 12", scope=alice)
    mem.remember("Alice's locker code", scope=alice, data={"locker": 12, "code": "0451"})
    found = {r.mime_type: r.content for r in (await memory.query("Alice's locker")).results}
    assert found == {
        MemoryMimeType.TEXT: "Alice's locker is number 12",
        MemoryMimeType.JSON: {"locker": 12, "code": "0451"},
    }


@pytest.mark.parametrize(
    ("content", "mime_type"),
    [
        (b"\x89PNG", MemoryMimeType.BINARY),
        (Image(PILImage.new("RGB", (2, 2))), MemoryMimeType.IMAGE),
        (b"bytes are not text", MemoryMimeType.TEXT),
        ("[1, 2, 3]", MemoryMimeType.JSON),
        ("not json at all", MemoryMimeType.JSON),
        ("   ", MemoryMimeType.TEXT),
    ],
)
async def test_content_memento_cannot_search_is_refused(
    memory: MementoMemory, mem: Memento, content: Any, mime_type: MemoryMimeType
) -> None:
    with pytest.raises(InvalidContent):
        await memory.add(MemoryContent(content=content, mime_type=mime_type))
    assert stored(mem) == []


async def test_identical_content_is_stored_once(memory: MementoMemory, mem: Memento) -> None:
    await memory.add(text("Alice is vegetarian"))
    await memory.add(text("Alice is vegetarian"))
    assert [item.content for item in stored(mem)] == ["Alice is vegetarian"]


# ------------------------------------------------------------------- add: metadata


async def test_metadata_maps_onto_memory_fields(memory: MementoMemory, mem: Memento) -> None:
    await memory.add(
        text(
            "Restart the worker with `make restart`",
            memory_type="procedural",
            tags=["ops", "runbook"],
            importance=0.9,
            privacy="team",
            project_id="apollo",
            session_id="chat-42",
            source="runbook",
            created_at="2024-05-01T09:30:00Z",
        )
    )
    (item,) = stored(mem)
    assert item.type is MemoryType.PROCEDURAL
    assert item.tags == ("ops", "runbook")
    assert item.importance == 0.9
    assert item.privacy is Privacy.TEAM
    assert item.scope == Scope("alice", "assistant", "apollo", "chat-42")
    assert item.source == "runbook"
    assert item.created_at.isoformat() == "2024-05-01T09:30:00+00:00"


async def test_new_memories_take_the_config_defaults(mem: Memento) -> None:
    config = MementoMemoryConfig(
        **ALICE, project_id="apollo", privacy="team", memory_type="episodic"
    )
    await MementoMemory(config, store=mem).add(text("We shipped version 2 today"))
    (item,) = stored(mem)
    assert (item.type, item.privacy, item.source) == (MemoryType.EPISODIC, Privacy.TEAM, "autogen")
    assert item.scope == Scope("alice", "assistant", "apollo")


async def test_other_metadata_comes_back_and_the_callers_objects_stay_unchanged(
    memory: MementoMemory,
) -> None:
    metadata = {"category": "preferences", "type": "units", "nested": {"scale": ["C", "F"]}}
    content = text("Alice wants temperatures in Celsius", **metadata, tags=["pref:units"])
    snapshot = copy.deepcopy(content.model_dump())
    await memory.add(content)
    assert content.model_dump() == snapshot
    (result,) = (await memory.query("temperature units")).results
    returned = result.metadata or {}
    assert {k: returned[k] for k in metadata} == metadata
    assert returned["tags"] == ["pref:units"]
    assert returned["memory_type"] == "semantic" and returned["user_id"] == "alice"
    returned["nested"]["scale"].append("K")
    assert metadata["nested"] == {"scale": ["C", "F"]}


async def test_result_only_keys_are_not_stored(memory: MementoMemory) -> None:
    await memory.add(text("Alice's flight leaves at 7:05", id="my-id", score=99.0, reason="x"))
    (result,) = (await memory.query("flight")).results
    returned = result.metadata or {}
    assert returned["id"] != "my-id"
    assert returned["score"] < 2
    assert returned["reason"].startswith("relevance ")


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"user_id": "bob"}, InvalidScope),
        ({"agent_id": "other-agent"}, InvalidScope),
        ({"memory_type": "dream"}, InvalidInput),
        ({"importance": 7}, InvalidInput),
        ({"tags": "one-string"}, InvalidInput),
        ({"created_at": "last tuesday"}, InvalidInput),
        ({"when": object()}, InvalidInput),
    ],
)
async def test_bad_metadata_is_refused_and_nothing_is_stored(
    memory: MementoMemory, mem: Memento, metadata: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        await memory.add(text("Alice's passport expires in 2031", **metadata))
    assert stored(mem) == [] and stored(mem, "bob") == []


async def test_a_memory_without_a_user_serves_the_anonymous_user(mem: Memento) -> None:
    anonymous = MementoMemory(MementoMemoryConfig(agent_id="assistant"), store=mem)
    alice = MementoMemory(MementoMemoryConfig(**ALICE), store=mem)
    await anonymous.add(text("The office wifi password is on the fridge"))
    await alice.add(text("Alice's wifi at home is called Miso"))
    found = (await anonymous.query("wifi password")).results
    assert [r.content for r in found] == ["The office wifi password is on the fridge"]
    with pytest.raises(InvalidScope):
        await anonymous.add(text("Bob's wifi is called Pixel", user_id="bob"))


# ------------------------------------------------------------------ clear and close


async def test_clear_erases_only_this_memorys_scope(mem: Memento) -> None:
    mine = MementoMemory(MementoMemoryConfig(**ALICE), store=mem)
    other_agent = MementoMemory(MementoMemoryConfig(user_id="alice", agent_id="planner"), store=mem)
    bob = MementoMemory(MementoMemoryConfig(user_id="bob", agent_id="assistant"), store=mem)
    await mine.add(text("Alice's cat is called Miso"))
    await mine.add(text("Alice moved to Lisbon", session_id="chat-7"))
    await other_agent.add(text("Alice's sprint ends on Friday"))
    await bob.add(text("Bob's cat is called Pixel"))
    erased = [item.id for item in stored(mem) if item.scope.agent_id == "assistant"]
    assert len(erased) == 2

    await mine.clear()

    assert (await mine.query("cat Lisbon sprint")).results[0].content == (
        "Alice's sprint ends on Friday"
    )
    assert [item.content for item in stored(mem)] == ["Alice's sprint ends on Friday"]
    assert [item.content for item in stored(mem, "bob")] == ["Bob's cat is called Pixel"]
    for memory_id in erased:
        with pytest.raises(MemoryNotFound):
            mem.get(memory_id, include_deleted=True)


async def test_clear_without_a_user_erases_only_the_anonymous_users_memories(
    mem: Memento,
) -> None:
    anonymous = MementoMemory(MementoMemoryConfig(), store=mem)
    public = MementoMemory(MementoMemoryConfig(user_id="bob", privacy="public"), store=mem)
    await anonymous.add(text("The office closes at six"))
    await public.add(text("The office is closed on public holidays"))

    await anonymous.clear()

    remaining = [item.content for item in mem.items(include_deleted=True)]
    assert remaining == ["The office is closed on public holidays"]


async def test_close_leaves_a_store_passed_in_open(memory: MementoMemory, mem: Memento) -> None:
    await memory.add(text("Alice plays the cello"))
    await memory.close()
    assert [r.item.content for r in mem.recall("cello", scope=Scope(user_id="alice"))] == [
        "Alice plays the cello"
    ]
    assert (await memory.query("cello")).results[0].content == "Alice plays the cello"


# ------------------------------------------------------------------ async behaviour


class ThreadRecordingEmbedder:
    """The session's real model, noting which threads ask it for vectors."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.threads: set[int] = set()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.threads.add(threading.get_ident())
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        self.threads.add(threading.get_ident())
        return self.inner.embed_query(text)


async def test_store_work_runs_off_the_event_loop(embedder: Embedder, tmp_path: Any) -> None:
    recording = ThreadRecordingEmbedder(embedder)
    with Memento.open(tmp_path / "store", embedder=recording) as store:
        memory = MementoMemory(MementoMemoryConfig(**ALICE), store=store)
        await memory.add(text("Alice's bike is a blue Brompton"))
        await memory.query("What bike does Alice ride?")
        await memory.clear()
    assert recording.threads
    assert threading.get_ident() not in recording.threads


async def test_a_cancelled_token_cancels_the_call(memory: MementoMemory) -> None:
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await memory.query("anything", cancellation_token=token)
