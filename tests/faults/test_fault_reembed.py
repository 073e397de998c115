"""``memento-core reembed`` killed (SIGKILL) midway and run again, and readers beside an in-place
run: the real command line in a child process, MiniLM fp32 as the old space, int8 as the new.

A killed run leaves the source whole (in place: the store opens in its old space, every record
there), its half-built target is refused, and the same command run again continues — what was
re-embedded is not embedded again — and ends with every record kept. A reader never sees a
space half copied or vectors of the other model."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _faults import HERE, ChromaServer, child_env, own_server

from memento_core import (
    Embedder,
    EmbedderMismatch,
    Memento,
    MemoryDraft,
    OnnxEmbedder,
    Scope,
    StoreError,
)

# SIGKILLed runs of the real CLI, ~45 s in all: the default suite is at its 10-minute budget,
# so these run with `make test-slow`.
pytestmark = pytest.mark.slow

ANN = Scope(user_id="ann")
MEMORIES = 300
BATCH = 10
KILL_AFTER = 40
"""Memories the child must report re-embedded before it is killed."""
DONE = re.compile(r"re-embedded (\d+)/(\d+) memories")


@pytest.fixture(scope="module")
def int8() -> OnnxEmbedder:
    return OnnxEmbedder("all-MiniLM-L6-v2-int8")


@pytest.fixture
def source(tmp_path: Path, embedder: Embedder) -> Path:
    return filled(tmp_path / "store", embedder)


def filled(path: Path, embedder: Embedder) -> Path:
    with Memento.open(path, embedder=embedder) as mem:
        ids = mem.remember_many(
            [
                MemoryDraft(f"note {n}: the ferry to island {n % 17} leaves at dawn", scope=ANN)
                for n in range(MEMORIES)
            ]
        )
        mem.link(ids[0], "cause_of", ids[1], scope=ANN)
        mem.feedback(ids[2], "helpful", scope=ANN)
        mem.update(ids[3], content="note 3: the ferry was cancelled", scope=ANN)
        mem.chat("s1", scope=ANN).append({"role": "user", "content": "when is the ferry?"})
        mem.recall("ferry to island 4", scope=ANN)
    return path


def snapshot(path: Path, embedder: Embedder) -> dict[str, Any]:
    with Memento.open(path, embedder=embedder, read_only=True) as mem:
        ids = [item.id for item in mem.items(include_deleted=True)]
        return {
            "export": "".join(mem.export()),
            "changes": {i: [(c.kind, c.before, c.after) for c in mem.changes(i)] for i in ids},
            "chat": [(m.role, m.content) for m in mem.history("s1")],
        }


def reembed(*arguments: str, into: str = "all-MiniLM-L6-v2-int8") -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "memento_core", "reembed", "--embedder", into,
               "--batch-size", str(BATCH), *arguments]  # fmt: skip
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True
    )


def kill_midway(child: subprocess.Popen[str]) -> int:
    """SIGKILL the child once it reported ``KILL_AFTER`` memories done; returns how many it
    had reported."""
    assert child.stderr is not None
    done = 0
    for line in child.stderr:
        found = DONE.search(line)
        if found:
            done = int(found[1])
            if done >= KILL_AFTER:
                child.send_signal(signal.SIGKILL)
                break
    child.wait()
    assert child.returncode == -signal.SIGKILL, f"the run ended first ({child.returncode})"
    return done


def finish(child: subprocess.Popen[str]) -> str:
    out, err = child.communicate(timeout=600)
    assert child.returncode == 0, err
    return out


def test_a_killed_run_into_a_directory_is_refused_then_continued(
    source: Path, tmp_path: Path, embedder: Embedder, int8: OnnxEmbedder
) -> None:
    before = snapshot(source, embedder)
    target = tmp_path / "new"
    reported = kill_midway(reembed("--path", str(source), "--to", str(target)))
    with pytest.raises(StoreError, match="unfinished re-embedding"):
        Memento.open(target, embedder=int8)
    other = subprocess.run(
        [sys.executable, "-m", "memento_core", "reembed", "--path", str(source), "--to",
         str(target), "--embedder", "onnx"],
        capture_output=True, text=True, env=child_env(), timeout=600,
    )  # fmt: skip
    assert other.returncode == 2
    assert other.stderr.count("\n") == 1
    assert f"holds an unfinished re-embedding of {source} (memento) into " in other.stderr
    assert snapshot(source, embedder) == before  # the source is as it was
    out = finish(reembed("--path", str(source), "--to", str(target)))
    summary = re.search(r"(\d+) embedded, (\d+) done by an earlier run", out)
    assert summary, out
    embedded, kept = int(summary[1]), int(summary[2])
    assert kept >= reported and embedded + kept == MEMORIES
    assert snapshot(target, int8) == before


def test_a_killed_run_in_place_leaves_the_old_space_then_continues(
    source: Path, embedder: Embedder, int8: OnnxEmbedder
) -> None:
    before = snapshot(source, embedder)
    reported = kill_midway(reembed("--path", str(source), "--in-place"))
    assert snapshot(source, embedder) == before  # the old space, whole
    with pytest.raises(EmbedderMismatch):
        Memento.open(source, embedder=int8)
    out = finish(reembed("--path", str(source), "--in-place"))
    kept = re.search(r"(\d+) done by an earlier run", out)
    assert kept and int(kept[1]) >= reported, out
    assert snapshot(source, int8) == before
    with pytest.raises(EmbedderMismatch):
        Memento.open(source, embedder=embedder)


def test_readers_beside_an_in_place_run_see_one_space_whole(
    tmp_path: Path, int8: OnnxEmbedder
) -> None:
    # From int8 to fp32: fp32 gives a text the same vector in any batch, so a memory embedded
    # for the new space matches its text to 1e-6, and one of the old space by ~0.99 (int8
    # quantises each batch by its own range: its vectors move a little with the batch).
    source = filled(tmp_path / "store", int8)
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, str(HERE / "_reembed_reader.py"), str(source), str(stop), "ann"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True,
    )  # fmt: skip
    assert reader.stdout is not None
    looks: list[dict[str, Any]] = []
    try:
        assert json.loads(reader.stdout.readline()) == {"ready": True}
        looks.append(json.loads(reader.stdout.readline()))  # one look before the run
        finish(reembed("--path", str(source), "--in-place", into="onnx"))
        while looks[-1].get("space") != "all-MiniLM-L6-v2":  # one look after it
            line = reader.stdout.readline()
            assert line, reader.stderr.read() if reader.stderr else ""
            looks.append(json.loads(line))
    finally:
        stop.touch()
        reader.wait(timeout=120)
    seen = [look for look in looks if "space" in look]
    assert seen[0]["space"] == "all-MiniLM-L6-v2-int8" and seen[-1]["space"] != seen[0]["space"]
    for look in seen:
        assert look["count"] == MEMORIES, look  # never a space half copied
        if look["space"] == "all-MiniLM-L6-v2":
            assert look["worst"] > 0.9999, look  # every vector of the new model
        else:
            assert look["worst"] > 0.95, look
    errors = [look["error"] for look in looks if "error" in look]
    assert len(errors) <= 1, errors  # at most a reader caught as the old space was dropped


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ChromaServer]:
    """A server of the test's own: the command line uses the default collection prefix."""
    root = tmp_path / "chroma"
    root.mkdir()
    yield from own_server(root)


def test_a_process_with_a_server_store_open_is_told_it_was_reembedded(
    server: ChromaServer, embedder: Embedder, int8: OnnxEmbedder
) -> None:
    with Memento.open(url=server.url, embedder=embedder) as mem:
        coffee = mem.remember("Alice takes her coffee black.", scope=ANN)
        assert mem.recall("coffee", scope=ANN)[0].item.id == coffee
        finish(reembed("--url", server.url, "--in-place"))
        with pytest.raises(StoreError) as caught:
            mem.remember("Bob drinks tea.", scope=ANN)
            mem.recall("tea", scope=ANN)
        message = str(caught.value)
        assert "was re-embedded into 'all-MiniLM-L6-v2-int8' by another process" in message
        assert "open it again" in message and "\n" not in message
    with Memento.open(url=server.url, embedder=int8) as mem:
        assert [i.id for i in mem.items()] == [coffee]
