"""SIGKILL in the middle of ``remember``, of ``sleep`` and of LangGraph checkpoint writes.

A child process (``_child.py``) prints each id only after the call that wrote it returned; the
parent kills it with SIGKILL at a seeded random moment (after a seeded number of acknowledged
writes, plus a seeded delay so the kill usually lands inside the next call), then reopens the
store and checks that it opens, that every acknowledged write is there, and that it still works.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _faults import Child, HashEmbedder, seeded

from memento_core import Embedder, LinkType, Memento, MemoryDraft, MemoryType, Scope
from memento_core._storage._directory import FOLD_AT

WRITER = Scope(user_id="writer")
TEMPLATE = "durable memory number {n} about the harbour"


@pytest.fixture
def children() -> Iterator[list[Child]]:
    """Children a test starts; any still running at teardown are killed."""
    started: list[Child] = []
    yield started
    for child in started:
        child.stop()


def kill_after(child: Child, name: str, *, low: int, high: int, delay: float = 0.05) -> None:
    rng = seeded(name)
    child.wait_ready()
    child.read_until(rng.randint(low, high))
    time.sleep(rng.uniform(0.0, delay))  # not an assertion: only where the kill lands
    child.kill()


def check_acknowledged(mem: Memento, acknowledged: dict[int, str]) -> None:
    for n, memory_id in acknowledged.items():
        item = mem.get(memory_id)
        assert item.content == TEMPLATE.format(n=n)
        assert item.tags == (f"n:{n}",)
    # At most the one write in flight when the kill came may have landed too; nothing else.
    stored = {i.id: i for i in mem.items() if i.content != "written after the crash"}
    assert set(acknowledged.values()) <= set(stored)
    assert len(stored) <= len(acknowledged) + 1
    unacknowledged = set(stored) - set(acknowledged.values())
    for memory_id in unacknowledged:
        assert stored[memory_id].content == TEMPLATE.format(n=len(acknowledged))


def test_remember_killed_with_the_real_embedder(
    tmp_path: Path, embedder: Embedder, children: list[Child]
) -> None:
    path = tmp_path / "store"
    config = {"store": {"path": str(path)}, "embedder": "real", "job": "remember",
              "template": TEMPLATE}  # fmt: skip
    child = Child(config, tmp_path)
    children.append(child)
    kill_after(child, "remember-real", low=5, high=40)

    with Memento.open(path, embedder=embedder) as mem:
        check_acknowledged(mem, child.acknowledged)
        hits = mem.recall(TEMPLATE.format(n=3), scope=WRITER, limit=3)
        assert child.acknowledged[3] in [hit.item.id for hit in hits]
        after = mem.remember("written after the crash", scope=WRITER)
    with Memento.open(path, embedder=embedder) as again:
        assert again.get(after).content == "written after the crash"
        check_acknowledged(again, child.acknowledged)


def test_remember_killed_past_a_directory_fold_leaves_every_write_findable(
    tmp_path: Path, children: list[Child]
) -> None:
    """An embedded writer lists its writes in the partition directory every ``FOLD_AT``
    memories (the feed lists the rest): killed between two folds, a fresh process still
    recalls every acknowledged write, folded or not."""
    path = tmp_path / "store"
    config = {"store": {"path": str(path)}, "embedder": "hash", "job": "remember",
              "template": TEMPLATE}  # fmt: skip
    child = Child(config, tmp_path)
    children.append(child)
    kill_after(child, "remember-fold", low=FOLD_AT + 5, high=2 * FOLD_AT + 20, delay=0.02)

    with Memento.open(path, embedder=HashEmbedder()) as mem:
        check_acknowledged(mem, child.acknowledged)
        found = {
            hit.item.id
            for n in child.acknowledged
            for hit in mem.recall(TEMPLATE.format(n=n), scope=WRITER, limit=1)
        }
        assert set(child.acknowledged.values()) <= found


@pytest.mark.parametrize("mode", ["embedded", pytest.param("server", marks=pytest.mark.server)])
def test_remember_killed_writing_to_a_mirrored_partition_leaves_every_write_findable(
    tmp_path: Path, request: pytest.FixtureRequest, children: list[Child], mode: str
) -> None:
    """A memory goes into its partition's mirror before it is stored: a writer killed at any
    point leaves no acknowledged write that a process searching the mirror cannot find."""
    if mode == "server":
        place: dict[str, Any] = {
            "url": request.getfixturevalue("chroma_server"),
            "collection_prefix": f"killm{time.monotonic_ns() % 10**9}",
        }
        store = {"url": place["url"], "prefix": place["collection_prefix"]}
    else:
        place = {"path": tmp_path / "store"}
        store = {"path": str(place["path"])}
    with Memento.open(**place, embedder=HashEmbedder(), partition_load_limit=20) as mem:
        mem.remember_many([MemoryDraft(f"seed memory {n}", scope=WRITER) for n in range(30)])
        assert mem.index_status().searched_in_store == 1  # mirrored by the batch that crossed
    config = {"store": store, "embedder": "hash", "job": "remember", "template": TEMPLATE,
              "load_limit": 20}  # fmt: skip
    child = Child(config, tmp_path)
    children.append(child)
    kill_after(child, f"remember-mirrored-{mode}", low=5, high=60, delay=0.02)

    with Memento.open(**place, embedder=HashEmbedder(), partition_load_limit=20) as mem:
        stored = {i.content: i.id for i in mem.items() if not i.content.startswith("seed")}
        assert set(child.acknowledged.values()) <= set(stored.values())
        for content, memory_id in stored.items():  # the write in flight too, if it landed
            hits = mem.recall(content, scope=WRITER, limit=1)
            assert [hit.item.id for hit in hits] == [memory_id]
        assert mem.index_status().memories == 0  # the writer's partition is in its mirror


@pytest.mark.server
def test_remember_killed_in_server_mode(
    tmp_path: Path, chroma_server: str, children: list[Child]
) -> None:
    prefix = f"kill{time.monotonic_ns() % 10**9}"
    config = {"store": {"url": chroma_server, "prefix": prefix}, "embedder": "hash",
              "job": "remember", "template": TEMPLATE}  # fmt: skip
    child = Child(config, tmp_path)
    children.append(child)
    kill_after(child, "remember-server", low=20, high=120, delay=0.02)

    with Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        check_acknowledged(mem, child.acknowledged)
        after = mem.remember("written after the crash", scope=WRITER)
        assert mem.get(after).content == "written after the crash"


# ------------------------------------------------------------------------------- sleep

EPISODES = 480
"""Pairs of near-identical episodes: 240 clusters, four chunks of sleep's writes."""
EPISODE = "episode {n} of topic{g} alpha{g} bravo{g} charlie{g} delta{g} echo{g}"
SLEEPER = Scope(user_id="sleeper")


def seed_episodes(path: Path, log_dir: Path, children: list[Child]) -> dict[int, str]:
    config = {"store": {"path": str(path)}, "embedder": "hash", "job": "remember",
              "template": EPISODE, "group": 2, "count": EPISODES, "batch": True,
              "scope": {"user_id": "sleeper"}}  # fmt: skip
    child = Child(config, log_dir, "seed")
    children.append(child)
    child.wait_ready()
    child.finish()
    assert len(child.acknowledged) == EPISODES
    return child.acknowledged


def consolidation_state(mem: Memento) -> dict[str, Any]:
    """What a sleep produced, without times: facts with their sources, and consolidated ids."""
    items = mem.items(scope=SLEEPER, include_deleted=True)
    facts = [i for i in items if i.type is MemoryType.SEMANTIC]
    episodes = [i for i in items if i.type is MemoryType.EPISODIC]
    links = [link for link in mem.all_links() if link.type is LinkType.DERIVED_FROM]
    return {
        "facts": sorted(
            (f.content, bool(f.deleted_at), tuple(sorted(f.origin_trace["derived_from"])))
            for f in facts
        ),
        "links": sorted((link.source_id, link.target_id) for link in links),
        "consolidated": sorted(e.id for e in episodes if e.consolidated_at),
    }


def check_consistent(mem: Memento, episodes: dict[int, str]) -> None:
    """Every source kept; every fact linked to all its sources; every consolidated episode the
    source of a fact."""
    items = {i.id: i for i in mem.items(scope=SLEEPER, include_deleted=True)}
    for n, memory_id in episodes.items():
        assert items[memory_id].content == EPISODE.format(n=n, g=n // 2)
        assert items[memory_id].deleted_at is None
    derived: dict[str, set[str]] = {}
    for link in mem.all_links():
        if link.type is LinkType.DERIVED_FROM:
            derived.setdefault(link.source_id, set()).add(link.target_id)
    facts = [i for i in items.values() if i.type is MemoryType.SEMANTIC]
    assert facts
    for fact in facts:
        sources = set(fact.origin_trace["derived_from"])
        assert sources <= set(episodes.values())
        assert sources <= derived.get(fact.id, set()), f"fact {fact.id} lost its source links"
        assert all(items[s].consolidated_at for s in sources)
    linked_sources = set().union(*derived.values())
    for item in items.values():
        if item.type is MemoryType.EPISODIC and item.consolidated_at:
            assert item.id in linked_sources, f"{item.id} consolidated into no fact"


KILL_POINTS = [
    pytest.param({"pause_after_facts": 1}, id="after-first-facts"),
    pytest.param({"pause_after_facts": 3}, id="after-third-facts"),
    pytest.param({"progress": 2}, id="seeded-moment"),
]


@pytest.mark.parametrize("kill_point", KILL_POINTS)
def test_sleep_killed_then_run_again(
    tmp_path: Path, children: list[Child], kill_point: dict[str, int]
) -> None:
    path, reference_path = tmp_path / "store", tmp_path / "reference"
    episodes = seed_episodes(path, tmp_path, children)
    shutil.copytree(path, reference_path)  # the same episodes, for an uninterrupted sleep

    config = {"store": {"path": str(path)}, "embedder": "hash", "job": "sleep",
              "user": "sleeper", **kill_point}  # fmt: skip
    child = Child(config, tmp_path, "sleep")
    children.append(child)
    child.wait_ready()
    stranded: list[str] = []
    if "pause_after_facts" in kill_point:
        # Killed between storing a chunk's facts and linking them to their sources.
        while not stranded:
            stranded = child.read().get("facts_stored", [])
    else:
        for _ in range(kill_point["progress"]):  # chunks finished, then a seeded moment
            assert "progress" in child.read()
        time.sleep(seeded("sleep").uniform(0.0, 0.4))
    # At a seeded moment the sleep may already be over; what follows holds either way.
    child.kill(may_have_finished="pause_after_facts" not in kill_point)

    with Memento.open(path, embedder=HashEmbedder()) as mem:
        # Opens; no source lost; every fact written so far names sources that exist.
        items = {i.id: i for i in mem.items(scope=SLEEPER, include_deleted=True)}
        for n, memory_id in episodes.items():
            assert items[memory_id].content == EPISODE.format(n=n, g=n // 2)
        for fact in (i for i in items.values() if i.type is MemoryType.SEMANTIC):
            assert set(fact.origin_trace["derived_from"]) <= set(episodes.values())
        linked = {link.source_id for link in mem.all_links()}
        assert stranded == [] or not linked & set(stranded)  # the kill did land in between

        mem.sleep(SLEEPER)
        check_consistent(mem, episodes)
        resumed = consolidation_state(mem)
        again = mem.sleep(SLEEPER)
        assert again.written == [] and again.consolidated == []
        assert consolidation_state(mem) == resumed

    with Memento.open(reference_path, embedder=HashEmbedder()) as reference:
        reference.sleep(SLEEPER)
        # Interrupted and resumed ends exactly where one uninterrupted sleep does.
        assert consolidation_state(reference) == resumed


# ------------------------------------------------------------------------- checkpoints


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def store_config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "server":
        url = request.getfixturevalue("chroma_server")
        return {"url": url, "prefix": f"cp{time.monotonic_ns() % 10**9}"}
    return {"path": str(tmp_path / "store")}


def open_config(store: dict[str, str]) -> Memento:
    if "url" in store:
        return Memento.open(
            url=store["url"], collection_prefix=store["prefix"], embedder=HashEmbedder()
        )
    return Memento.open(store["path"], embedder=HashEmbedder())


def test_checkpoint_writes_killed(
    tmp_path: Path, children: list[Child], store_config: dict[str, str]
) -> None:
    from _child import State, step
    from langgraph.graph import END, START, StateGraph

    from memento_langgraph import MementoSaver

    config = {"store": store_config, "embedder": "hash", "job": "checkpoint", "thread": "t1"}
    child = Child(config, tmp_path, "graph")
    children.append(child)
    rng = seeded("checkpoint")
    child.wait_ready()
    for _ in range(rng.randint(5, 30)):
        child.read()
    time.sleep(rng.uniform(0.0, 0.05))
    child.kill()
    steps = [record for record in child.records if "checkpoint_id" in record]

    with open_config(store_config) as mem:
        saver = MementoSaver(mem)
        for acknowledged in steps:
            found = saver.get_tuple(
                {"configurable": {"thread_id": "t1", "checkpoint_ns": "",
                                  "checkpoint_id": acknowledged["checkpoint_id"]}}
            )  # fmt: skip
            assert found is not None, acknowledged
            assert found.checkpoint["channel_values"]["log"] == acknowledged["log"]
        # No checkpoint, even the one cut short, refers to a value that was not stored.
        listed = list(saver.list({"configurable": {"thread_id": "t1"}}))
        assert listed
        for checkpoint_tuple in listed:
            versions = checkpoint_tuple.checkpoint["channel_versions"]
            values = checkpoint_tuple.checkpoint["channel_values"]
            if "log" in versions:
                assert values["log"] == [f"step {k}" for k in range(len(values["log"]))]
        latest = saver.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
        assert latest is not None
        done = len(steps[-1]["log"])
        assert done <= len(latest.checkpoint["channel_values"]["log"]) <= done + 1

        # The graph carries on from the reopened checkpointer.
        builder = StateGraph(State)
        builder.add_node("step", step)
        builder.add_edge(START, "step")
        builder.add_edge("step", END)
        graph = builder.compile(checkpointer=saver)
        result = graph.invoke({"log": []}, {"configurable": {"thread_id": "t1"}})
        assert result["log"] == [f"step {k}" for k in range(len(result["log"]))]
        assert len(result["log"]) == len(latest.checkpoint["channel_values"]["log"]) + 1
