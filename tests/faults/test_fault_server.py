"""Several processes on one Chroma server, and the server restarted under a writer.

Four ``_child.py`` writers start together (a start file releases them) on one ``chroma run``;
afterwards every acknowledged memory is there exactly once, whether the four wrote distinct
content or the same content in the same scope (Memento's dedup must hold across processes).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from _faults import Child, ChromaServer, HashEmbedder, own_server, seeded

from memento_core import Memento, Scope

pytestmark = pytest.mark.server

WRITER_SCOPE = Scope(user_id="writer")
WRITERS = 4
PER_WRITER = 25


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.stop()


def run_writers(
    tmp_path: Path,
    url: str,
    prefix: str,
    children: list[Child],
    template: str,
    *,
    first: dict[str, object] | None = None,
    **options: object,
) -> list[Child]:
    """Start the writers, release them at once when all are ready, wait for them all.
    ``first``: extra options for the first writer only."""
    go_file = tmp_path / "go"
    for k in range(WRITERS):
        extra = (first or {}) if k == 0 else {}
        config = {"store": {"url": url, "prefix": prefix}, "embedder": "hash", "job": "remember",
                  "template": template.replace("{k}", str(k)), "count": PER_WRITER,
                  "go_file": str(go_file), **options, **extra}  # fmt: skip
        children.append(Child(config, tmp_path, f"writer{k}"))
    for child in children:
        child.wait_ready()
    go_file.touch()
    for child in children:
        child.finish()
    return children


def test_four_writers_distinct_content(
    tmp_path: Path, chroma_server: str, children: list[Child]
) -> None:
    prefix = f"distinct{time.monotonic_ns() % 10**9}"
    writers = run_writers(
        tmp_path, chroma_server, prefix, children, "writer {k} wrote note {n} on the quay"
    )
    with Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        stored = {item.id: item for item in mem.items()}
        assert len(stored) == WRITERS * PER_WRITER
        for k, writer in enumerate(writers):
            assert len(writer.acknowledged) == PER_WRITER
            for n, memory_id in writer.acknowledged.items():
                assert stored[memory_id].content == f"writer {k} wrote note {n} on the quay"
        assert mem.stats().memories == WRITERS * PER_WRITER


def test_four_writers_same_content_same_scope(
    tmp_path: Path, chroma_server: str, children: list[Child]
) -> None:
    """All four remember the same texts at the same moment (in one batch each, so their
    existence checks likely all come before any write); the first writer then pins each. One
    record per text, the same id for every writer, and no acknowledged pin undone by another
    writer's insert of the same memory arriving late."""
    prefix = f"same{time.monotonic_ns() % 10**9}"
    template = "the shared note {n} everyone writes"
    writers = run_writers(
        tmp_path, chroma_server, prefix, children, template, batch=True, first={"pin": True}
    )
    ids = writers[0].acknowledged
    assert len(ids) == PER_WRITER
    for writer in writers[1:]:
        assert writer.acknowledged == ids
    with Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        items = mem.items()
        assert Counter(item.content for item in items) == {
            template.format(n=n): 1 for n in range(PER_WRITER)
        }
        assert {item.id for item in items} == set(ids.values())
        unpinned = [item.content for item in items if not item.pinned]
        assert unpinned == [], "a concurrent insert overwrote a memory written before it"


def test_an_insert_held_past_its_existence_check_changes_nothing(
    tmp_path: Path, chroma_server: str, children: list[Child]
) -> None:
    """The race behind concurrent dedup, made certain: a writer checks that the content is new,
    then waits (its embedder is gated) while this process stores the same content and pins it;
    released, the writer must neither duplicate the memory nor undo the pin."""
    prefix = f"held{time.monotonic_ns() % 10**9}"
    gate = tmp_path / "gate"
    template = "the contested note {n}"
    config = {"store": {"url": chroma_server, "prefix": prefix}, "embedder": "gated",
              "gate_file": str(gate), "job": "remember", "template": template,
              "count": 1}  # fmt: skip
    held = Child(config, tmp_path, "held")
    children.append(held)
    held.wait_ready()
    assert held.read() == {"embedding": True}  # past its existence check, before its insert

    with Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        memory_id = mem.remember(template.format(n=0), scope=WRITER_SCOPE, tags=["n:0"])
        mem.pin(memory_id)
        gate.touch()
        held.finish()
        assert held.acknowledged == {0: memory_id}
        [item] = mem.items()
        assert item.id == memory_id
        assert item.pinned, "the held writer's insert overwrote the pinned memory"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ChromaServer]:
    """A ``chroma run`` of this test's own, which it may kill and start again."""
    root = tmp_path / "server"
    root.mkdir()
    yield from own_server(root)


def test_server_killed_and_restarted_under_a_writer(
    tmp_path: Path, server: ChromaServer, children: list[Child]
) -> None:
    """The server is SIGKILLed mid-run and started again on the same data. The writer, which
    retries on ``StoreUnavailable``, gets clear errors meanwhile and carries on once it is back;
    nothing it was told was stored is lost."""
    rng = seeded("server-restart")
    template = "written across a server restart, number {n}"
    config = {"store": {"url": server.url, "prefix": "restart"}, "embedder": "hash",
              "job": "remember", "template": template, "retry": True}  # fmt: skip
    writer = Child(config, tmp_path, "writer")
    children.append(writer)
    writer.wait_ready()
    writer.read_until(rng.randint(10, 40))
    time.sleep(rng.uniform(0.0, 0.02))
    server.kill()
    while not writer.errors:
        writer.read()
    before_restart = len(writer.acknowledged)
    server.start()
    writer.read_until(before_restart + 20)
    writer.kill()

    for error in writer.errors:
        assert error["error"] == "StoreUnavailable", error
        assert server.url in error["message"], error
        assert "chroma run" in error["message"] and "retry" in error["message"], error
    with Memento.open(url=server.url, collection_prefix="restart", embedder=HashEmbedder()) as mem:
        stored = {item.id: item for item in mem.items()}
        for n, memory_id in writer.acknowledged.items():
            assert stored[memory_id].content == template.format(n=n)
        # No duplicates: at most the write in flight at the kill landed besides.
        assert len(stored) <= len(writer.acknowledged) + 1
