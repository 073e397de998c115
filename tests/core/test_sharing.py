"""Every instance sees every write: instances in one process, and processes on one store.

In one process, instances of a store share its candidate index, so a write through one is in
the next recall of another. An embedded store has one writing process: a second one is refused
with ``StoreLocked`` naming the holder, and may open read-only; it then catches up from the
store's change feed. Child processes use ``HashEmbedder`` so they start fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    Embedder,
    Memento,
    MemoryNotFound,
    Privacy,
    ReadOnlyStore,
    Scope,
    StoreLocked,
    StoreNotFound,
)
from memento_core.testing import HashEmbedder

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann", project_id="apollo")
BEN = Scope(user_id="ben", project_id="apollo")
CATCH_UP_SECONDS = 10.0
"""How long a test waits for another process's write before failing: far above the documented
bound (0.25 s plus the write's own commit), so a loaded machine does not fail it."""

CHILD = textwrap.dedent(
    """
    import json, sys
    from memento_core import Memento, MementoError, Scope
    from memento_core.testing import HashEmbedder

    path, mode = sys.argv[1], sys.argv[2]
    try:
        mem = Memento.open(path, embedder=HashEmbedder(), read_only=mode == "read")
    except MementoError as err:
        print(json.dumps({"error": type(err).__name__, "message": str(err)}), flush=True)
        sys.exit(3)
    print(json.dumps({"ready": True}), flush=True)
    n = 0
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command["do"] == "recall":
                hits = mem.recall(command["query"], scope=Scope(user_id=command["user"]), limit=5)
                out = {"ids": [h.item.id for h in hits]}
            elif command["do"] == "remember":
                out = {"id": mem.remember(command["text"], scope=Scope(user_id=command["user"]))}
            elif command["do"] == "remember_forever":
                while True:
                    mem.remember(f"child note number {n}", scope=Scope(user_id="kid"))
                    print(json.dumps({"stored": n}), flush=True)
                    n += 1
            else:
                out = {"unknown": command["do"]}
        except MementoError as err:
            out = {"error": type(err).__name__, "message": str(err)}
        print(json.dumps(out), flush=True)
    """
)


class ChildStore:
    """A child process holding the store open; commands go in as JSON lines, results come out."""

    def __init__(self, path: Path, mode: str, log: Path) -> None:
        self.stderr = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"},
        )
        self.first = self.read()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the child exited (code {self.process.poll()})"
        result: dict[str, Any] = json.loads(line)
        return result

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.read()

    def recall_until(self, query: str, user: str, wanted: bool, memory_id: str) -> list[str]:
        """Recall until ``memory_id`` is (or is no longer) among the hits, or time is up."""
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while True:
            ids: list[str] = self.ask(do="recall", query=query, user=user)["ids"]
            if (memory_id in ids) == wanted or time.monotonic() > deadline:
                return ids
            time.sleep(0.05)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        self.stderr.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "shared-store"
    with Memento.open(path, embedder=HashEmbedder()):
        pass  # created, and closed: the lock is free
    yield path


# ------------------------------------------------------------ one process


def test_instances_in_one_process_see_each_others_writes(store_factory: StoreFactory) -> None:
    mem, other = store_factory.open("shared"), store_factory.open("shared")
    try:
        wifi = mem.remember("The wifi password is tulip-42.", scope=ANN)
        assert [h.item.id for h in other.recall("wifi password", scope=ANN)] == [wifi]

        other.update(wifi, content="The wifi password is now orchid-7.")
        assert "orchid-7" in mem.recall("wifi password", scope=ANN)[0].item.content
        assert mem.recall("orchid", scope=ANN)[0].item.id == wifi

        other.pin(wifi)
        assert mem.get(wifi).pinned

        other.forget(wifi)
        assert mem.recall("wifi password", scope=ANN) == []
        mem.restore(wifi)
        assert [h.item.id for h in other.recall("wifi password", scope=ANN)] == [wifi]

        other.forget(wifi, hard=True)
        assert mem.recall("wifi password", scope=ANN) == []
        with pytest.raises(MemoryNotFound):
            mem.get(wifi, include_deleted=True)

        shared = other.remember("Standups move to Thursday.", scope=BEN, privacy=Privacy.TEAM)
        assert [h.item.id for h in mem.recall("standup day", scope=ANN)] == [shared]
        other.erase_user("ben")
        assert mem.recall("standup day", scope=ANN) == []
    finally:
        other.close()
        mem.close()


def test_closing_one_instance_leaves_the_other_writing(store_path: Path) -> None:
    first = Memento.open(store_path, embedder=HashEmbedder())
    second = Memento.open(store_path, embedder=HashEmbedder())
    first.close()
    memory_id = second.remember("Still writable after the first instance closed.", scope=ANN)
    assert second.get(memory_id).content.startswith("Still writable")
    second.close()


# ------------------------------------------------------------ processes


def test_a_second_writing_process_is_refused_with_the_path_and_the_holder(
    store_path: Path, tmp_path: Path
) -> None:
    with Memento.open(store_path, embedder=HashEmbedder()) as mem:
        kept = mem.remember("Written by the holder.", scope=ANN)
        child = ChildStore(store_path, "write", tmp_path / "writer.log")
        try:
            assert child.first["error"] == "StoreLocked"
            message = child.first["message"]
            assert str(store_path.resolve()) in message
            assert f"pid {os.getpid()}" in message
            assert "read_only=True" in message and "chroma run" in message
        finally:
            child.close()
        # Nothing stored was harmed, and the holder writes on.
        assert mem.get(kept).content == "Written by the holder."
        mem.remember("And still writing.", scope=ANN)


def test_a_lock_error_is_one_clear_line_in_the_same_tree(store_path: Path) -> None:
    assert issubclass(StoreLocked, RuntimeError)
    error = StoreLocked(str(store_path), "pid 1, `python app.py`, since 2026-01-01 10:00:00")
    assert "\n" not in str(error) and "pid 1" in str(error)


def test_a_read_only_process_sees_remembers_forgets_and_erasures_of_the_writer(
    store_path: Path, tmp_path: Path
) -> None:
    with Memento.open(store_path, embedder=HashEmbedder()) as mem:
        reader = ChildStore(store_path, "read", tmp_path / "reader.log")
        try:
            assert reader.first == {"ready": True}
            assert reader.ask(do="recall", query="wifi password", user="ann")["ids"] == []

            wifi = mem.remember("The wifi password is tulip-42.", scope=ANN)
            assert wifi in reader.recall_until("wifi password", "ann", True, wifi)

            mem.update(wifi, content="The office wifi password changed to orchid seven.")
            assert wifi in reader.recall_until("orchid seven", "ann", True, wifi)

            mem.forget(wifi)  # soft: reaches the reader's cached records through the feed
            assert wifi not in reader.recall_until("wifi password", "ann", False, wifi)
            mem.restore(wifi)
            assert wifi in reader.recall_until("wifi password", "ann", True, wifi)

            mem.forget(wifi, hard=True)
            assert wifi not in reader.recall_until("wifi password", "ann", False, wifi)

            note = mem.remember("Ann's locker is number 12.", scope=ANN)
            assert note in reader.recall_until("locker number", "ann", True, note)
            mem.erase_user("ann")
            assert note not in reader.recall_until("locker number", "ann", False, note)

            refused = reader.ask(do="remember", text="A reader's own note.", user="ann")
            assert refused["error"] == "ReadOnlyStore"
        finally:
            reader.close()
        assert [i.content for i in mem.items()] == []  # the reader wrote nothing


def _recall_ids_until(mem: Memento, query: str, memory_id: str) -> list[str]:
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while True:
        ids = [h.item.id for h in mem.recall(query, scope=ANN)]
        if memory_id in ids or time.monotonic() > deadline:
            return ids
        time.sleep(0.05)


def test_writes_made_while_this_process_did_not_hold_the_lock_reach_its_index(
    store_path: Path, tmp_path: Path
) -> None:
    # A process that takes the lock stops reading the feed once it has read it; writes made by
    # another process before it took the lock, or after it let the lock go, must still show.
    reader = Memento.open(store_path, embedder=HashEmbedder(), read_only=True)
    try:
        assert reader.recall("parking spot", scope=ANN) == []  # ann's partitions loaded
        child = ChildStore(store_path, "write", tmp_path / "first.log")
        before = child.ask(do="remember", text="Ann parks in spot B7.", user="ann")["id"]
        child.close()  # the child's lock goes with it
        with Memento.open(store_path, embedder=HashEmbedder()) as writer:
            assert before in _recall_ids_until(writer, "parking spot", before)
            own = writer.remember("Ann's parking permit renews in May.", scope=ANN)
            assert own in [h.item.id for h in writer.recall("parking permit", scope=ANN)]
        child = ChildStore(store_path, "write", tmp_path / "second.log")
        after = child.ask(do="remember", text="Ann moved to parking spot C3.", user="ann")["id"]
        child.close()
        assert after in _recall_ids_until(reader, "parking spot", after)
    finally:
        reader.close()


def test_in_process_read_only_instances_refuse_writes_and_harm_nothing(store_path: Path) -> None:
    with Memento.open(store_path, embedder=HashEmbedder()) as writer:
        kept = writer.remember("Kept safe.", scope=ANN)
    with Memento.open(store_path, embedder=HashEmbedder(), read_only=True) as reader:
        for attempt in (
            lambda: reader.remember("nope", scope=ANN),
            lambda: reader.forget(kept),
            lambda: reader.pin(kept),
            lambda: reader.link(kept, "cause_of", kept + "x"),
            lambda: reader.erase_user("ann"),
        ):
            with pytest.raises(ReadOnlyStore, match="read-only"):
                attempt()
        assert reader.get(kept).content == "Kept safe."
        assert [h.item.id for h in reader.recall("kept safe", scope=ANN)] == [kept]


def test_a_read_only_open_where_no_store_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no-store-here"
    with pytest.raises(StoreNotFound, match=r"no Memento store at .*no-store-here") as raised:
        Memento.open(missing, embedder=HashEmbedder(), read_only=True)
    assert raised.value.path == str(missing) and "\n" not in str(raised.value)
    assert isinstance(raised.value, FileNotFoundError)
    assert not missing.exists()
    empty = tmp_path / "empty-directory"
    empty.mkdir()
    with pytest.raises(StoreNotFound):
        Memento.open(empty, embedder=HashEmbedder(), read_only=True)
    assert list(empty.iterdir()) == []


def test_a_writer_killed_mid_write_leaves_the_reader_working_and_the_lock_free(
    store_path: Path, tmp_path: Path
) -> None:
    with Memento.open(store_path, embedder=HashEmbedder(), read_only=True) as reader:
        writer = ChildStore(store_path, "write", tmp_path / "writer.log")
        try:
            assert writer.first == {"ready": True}
            assert writer.process.stdin is not None
            writer.process.stdin.write(json.dumps({"do": "remember_forever"}) + "\n")
            writer.process.stdin.flush()
            stored = [writer.read()["stored"] for _ in range(15)]
            os.kill(writer.process.pid, signal.SIGKILL)  # mid-write: it never stops on its own
            writer.process.wait(timeout=30)
        finally:
            writer.close()
        acknowledged = {f"child note number {n}" for n in stored}
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while True:
            hits = reader.recall("child note number", scope=Scope(user_id="kid"), limit=50)
            found = {h.item.content for h in hits}
            if acknowledged <= found or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert acknowledged <= found

    # The kernel let go of the dead writer's lock: a new writer opens and sees every
    # acknowledged write.
    with Memento.open(store_path, embedder=HashEmbedder()) as successor:
        contents = {i.content for i in successor.items(scope=Scope(user_id="kid"))}
        assert acknowledged <= contents
        successor.remember("The successor writes on.", scope=ANN)


def test_the_cli_reads_while_another_process_holds_the_store(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "held"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "memento_core.cli", *argv, "--path", str(path)]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)

    with Memento.open(path, embedder=embedder) as mem:
        mem.remember("The boiler code is 4711.", scope=ANN)
        found = cli("recall", "boiler code", "--user", "ann")
        assert found.returncode == 0, found.stderr
        assert "4711" in found.stdout

        refused = cli("remember", "A second writer's note.", "--user", "ann")
        assert refused.returncode == 2
        (line,) = refused.stderr.strip().splitlines()
        assert line.startswith("memento-core: error: ") and f"pid {os.getpid()}" in line
        assert [i.content for i in mem.items(scope=ANN)] == ["The boiler code is 4711."]
