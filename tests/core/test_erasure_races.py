"""Erasure wins every race with another process on a real ``chroma run``: a hard forget, a
privacy change or an ``erase_user`` racing a fold of the postings in another process (held at
the worst moment, killed there, or just running beside it) leaves no trace of what it took out —
id, word or user name — in any raw collection, record ids included, read with Chroma's own
client. And a memory another process writes next never ``follows`` one erased meanwhile."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import chromadb
import pytest

from memento_core import Memento, MemoryDraft, Scope
from memento_core.testing import HashEmbedder

pytestmark = pytest.mark.server

LIMIT = 12
CHILD = Path(__file__).with_name("_race_child.py")
CAROL = Scope(user_id="carol")
DAVE = Scope(user_id="dave")
MALLORY = Scope(user_id="mallory", project_id="apollo")
TOPICS = ["the ferry timetable changes in spring", "the lighthouse needs new paint",
          "the harbour café opens at seven", "the tide tables are on the noticeboard"]  # fmt: skip


class RaceChild:
    """``_race_child.py`` on the same store: one JSON command a line in, one result out."""

    def __init__(self, url: str, prefix: str, log: Path) -> None:
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), url, prefix, str(LIMIT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"},
        )
        assert self.read() == {"ready": True}

    def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def read(self, timeout: float = 120.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.process.kill()
            self._log.flush()
            log = Path(self._log.name).read_text()[-3000:]
            raise AssertionError(f"the child said nothing; its log ends:\n{log}")
        found: dict[str, Any] = json.loads(line)
        return found

    def close(self) -> None:
        if self.process.poll() is None:
            self.send(op="exit")
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._log.close()


@pytest.fixture
def store(chroma_server: str, tmp_path: Path) -> Iterator[tuple[Memento, str, str]]:
    """A fresh server store (this process's instance, its URL and prefix) with its public
    partition and mallory's mirrored, and written to since (a tail to fold)."""
    prefix = f"race{uuid4().hex[:10]}"
    with Memento.open(
        url=chroma_server,
        collection_prefix=prefix,
        embedder=HashEmbedder(),
        partition_load_limit=LIMIT,
    ) as mem:
        mem.remember_many(
            [
                MemoryDraft(content=f"note {n}: {TOPICS[n % 4]}", scope=CAROL, privacy="public")
                for n in range(30)
            ]
            + [
                MemoryDraft(content=f"mallory private {n}: quexotic{n} plans", scope=MALLORY)
                for n in range(20)
            ]
        )
        mem.mirror_large_partitions()
        yield mem, chroma_server, prefix


def _client(url: str) -> Any:
    host, port = url.rsplit("//", 1)[1].split(":")
    return chromadb.HttpClient(host=host, port=int(port))


def _traces(url: str, prefix: str, needles: list[str], only: str = "") -> list[str]:
    """Every record of the store's raw collections (whose name holds ``only``) whose id,
    document or metadata names one of ``needles``."""
    client = _client(url)
    found = []
    for collection in client.list_collections():
        name = getattr(collection, "name", collection)
        if not name.startswith(prefix) or only not in name:
            continue
        got = client.get_collection(name).get(include=["documents", "metadatas"])
        for record_id, document, meta in zip(got["ids"], got["documents"], got["metadatas"]):
            text = f"{record_id} {document or ''} {json.dumps(meta or {}, ensure_ascii=False)}"
            found += [f"{name}: {text} names {n}" for n in needles if n in text.lower()]
    return found


def _public_victims(mem: Memento) -> list[str]:
    """Two public memories of dave's with words of their own: one folded into the postings'
    base, one in their tail."""
    first = mem.remember("dave's zorblaxian ferry idea", scope=DAVE, privacy="public")
    mem.mirror_large_partitions()
    second = mem.remember("dave's vexillumic harbour idea", scope=DAVE, privacy="public")
    mem.remember("note 31: the ferry timetable changes in autumn", scope=CAROL, privacy="public")
    return [first, second]


def _erase(mem: Memento, how: str, victims: list[str]) -> list[str]:
    """Erase in one of three ways; returns what must leave no trace: in every raw collection
    for an erasure, in the postings and mirrors for a privacy change."""
    if how == "forget":
        for victim in victims:
            mem.forget(victim, hard=True)
        return [*victims, "zorblax", "vexillum"]
    if how == "private":
        for victim in victims:
            mem.update(victim, privacy="private")
        return [*victims, "zorblax", "vexillum"]
    report = mem.erase_user("mallory")
    assert len(report.memories) >= 20
    return [*report.memories, "quexotic", "mallory"]


def _assert_no_trace(url: str, prefix: str, how: str, needles: list[str]) -> None:
    if how == "private":  # still stored, as dave's: only the public partition's copies go
        assert _traces(url, prefix, needles, only="_postings") == []
        assert _traces(url, prefix, needles, only="_mirror_") == []
    else:
        assert _traces(url, prefix, needles) == []


@pytest.mark.parametrize("how", ["forget", "private", "erase_user"])
def test_an_erasure_racing_a_held_fold_in_another_process_leaves_no_trace(
    store: tuple[Memento, str, str], tmp_path: Path, how: str
) -> None:
    """The fold has read the base and the tail; the erasure runs to its end; then the fold
    writes and publishes its generation from what it read."""
    mem, url, prefix = store
    victims = _public_victims(mem)
    mem.remember("mallory private late: quexotic plans again", scope=MALLORY)
    child = RaceChild(url, prefix, tmp_path / "child.log")
    try:
        gate = tmp_path / "go"
        partition = "user:mallory" if how == "erase_user" else "public"
        child.send(op="gate", at="publish", file=str(gate), partition=partition)
        assert child.read() == {"installed": True}
        child.send(op="fold")
        assert child.read() == {"gated": "publish"}
        needles = _erase(mem, how, victims)
        gate.touch()
        assert "folded" in child.read()
        _assert_no_trace(url, prefix, how, needles)
        # Folds go on (no claim left behind, no generation orphaned), and still find none.
        mem.remember("note 32: the lighthouse paint is blue", scope=CAROL, privacy="public")
        child.send(op="fold")
        assert "folded" in child.read()
        hits = mem.recall("lighthouse paint blue", scope=DAVE, limit=3)
        assert "note 32" in hits[0].item.content
        _assert_no_trace(url, prefix, how, needles)
    finally:
        child.close()


@pytest.mark.parametrize("how", ["forget", "erase_user"])
def test_a_fold_killed_after_writing_its_generation_leaves_no_trace_of_an_erasure(
    store: tuple[Memento, str, str], tmp_path: Path, how: str
) -> None:
    """SIGKILL between writing a generation and checking it: the erasure that follows finds
    the unpublished generation too, and later folds start over."""
    mem, url, prefix = store
    victims = _public_victims(mem)
    mem.remember("mallory private late: quexotic plans again", scope=MALLORY)
    child = RaceChild(url, prefix, tmp_path / "child.log")
    try:
        partition = "user:mallory" if how == "erase_user" else "public"
        child.send(op="gate", at="written", file=str(tmp_path / "never"), partition=partition)
        assert child.read() == {"installed": True}
        child.send(op="fold")
        assert child.read() == {"gated": "written"}
        child.process.kill()
        child.process.wait(timeout=30)
        needles = _erase(mem, how, victims)
        _assert_no_trace(url, prefix, how, needles)
        mem.remember("note 32: the lighthouse paint is blue", scope=CAROL, privacy="public")
        mem.mirror_large_partitions()
        _assert_no_trace(url, prefix, how, needles)
    finally:
        child.close()


@pytest.mark.slow  # 15-30 s on its own: `make test-slow` runs it
def test_erasures_and_privacy_changes_beside_processes_folding_leave_no_trace(
    store: tuple[Memento, str, str], tmp_path: Path
) -> None:
    """Unforced: two processes write into the mirrored public partition and fold after each
    write while this one forgets, makes private and erases a user."""
    mem, url, prefix = store
    victims = [
        mem.remember(f"dave's zorblaxian idea {n}", scope=DAVE, privacy="public") for n in range(6)
    ]
    movers = [
        mem.remember(f"dave's vexillumic plan {n}", scope=DAVE, privacy="public") for n in range(6)
    ]
    stop = tmp_path / "stop"
    children = [RaceChild(url, prefix, tmp_path / f"child{n}.log") for n in range(2)]
    try:
        for n, child in enumerate(children):
            child.send(op="loop", rounds=200, user=f"folder{n}", stop=str(stop))
        for victim, mover in zip(victims, movers):
            mem.forget(victim, hard=True)
            mem.update(mover, privacy="private")
            time.sleep(0.2)
        erased = mem.erase_user("mallory").memories
        time.sleep(1.0)
        stop.touch()
        for child in children:
            assert child.read()["rounds"] > 0
    finally:
        for child in children:
            child.close()
    mem.mirror_large_partitions()
    assert _traces(url, prefix, [*victims, *erased, "zorblax", "quexotic", "mallory"]) == []
    assert _traces(url, prefix, [*movers, "vexillum"], only="_postings") == []
    assert _traces(url, prefix, [*movers, "vexillum"], only="_mirror_") == []


def test_a_memory_written_next_never_follows_one_another_process_erased(
    store: tuple[Memento, str, str], tmp_path: Path
) -> None:
    mem, url, prefix = store
    child = RaceChild(url, prefix, tmp_path / "child.log")
    try:
        child.send(op="remember", content="alice's first yarrowish thought", user="alice")
        first = child.read()["id"]
        mem.forget(first, hard=True)
        child.send(op="remember", content="alice's second thought", user="alice")
        second = child.read()["id"]
    finally:
        child.close()
    assert mem.get(second).follows is None
    assert _traces(url, prefix, [first, "yarrow"]) == []
