"""SIGKILL in the middle of changes: a change and its history record are kept together or not
at all. A child process updates and pins one memory in a loop, printing each step after it
returned; the parent kills it at a seeded moment, reopens the store and replays the history:
from the first version, the logged changes must lead exactly to the memory as stored."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _faults import Child, HashEmbedder, seeded

from memento_core import Memento, MemoryChange, Scope

WRITER = Scope(user_id="writer")


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.stop()


def replayed(changes: list[MemoryChange]) -> dict[str, Any]:
    """The content and pin the history leads to, each change checked against the one before."""
    state = {"content": changes[0].after["content"], "pinned": False}
    for change in changes[1:]:
        for name, value in change.before.items():
            assert state[name] == value, f"change {change.seq} starts from another state"
        state.update(change.after)
    return state


def check(mem: Memento, child: Child) -> str:
    memory_id = child.acknowledged[0]
    item = mem.get(memory_id)
    changes = mem.changes(memory_id)
    logged = [c for c in changes if c.seq]
    assert [c.seq for c in logged] == list(range(1, len(logged) + 1))
    # Every acknowledged step is there; at most the one in flight landed too.
    assert max(child.acknowledged) <= len(logged) <= max(child.acknowledged) + 1
    assert replayed(changes) == {"content": item.content, "pinned": item.pinned}
    return memory_id


@pytest.mark.parametrize("run", range(3))
def test_changes_killed_keep_each_change_with_its_record(
    tmp_path: Path, children: list[Child], run: int
) -> None:
    path = tmp_path / "store"
    child = Child({"store": {"path": str(path)}, "embedder": "hash", "job": "change"}, tmp_path)
    children.append(child)
    rng = seeded(f"history-{run}")
    child.wait_ready()
    child.read_until(rng.randint(5, 40))
    time.sleep(rng.uniform(0.0, 0.05))  # not an assertion: only where the kill lands
    child.kill()

    with Memento.open(path, embedder=HashEmbedder()) as mem:
        memory_id = check(mem, child)
        # A record the kill left uncommitted is no history, and the next change takes its place.
        mem.update(memory_id, content="after the crash", scope=WRITER)
        changes = mem.changes(memory_id)
        assert changes[-1].after == {"content": "after the crash"}
        assert replayed(changes)["content"] == "after the crash"
