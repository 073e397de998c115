"""Concurrent writers to one session lose no message and keep each writer's order."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from memento_core import Memento
from memento_core._chat import ChatMemory, WindowPolicy
from memento_core._messages import Message
from memento_core.testing import HashEmbedder

PER_WRITER = 25
POLICY = WindowPolicy(max_messages=8, snapshot_on_overflow=False)


def run_threads(*writers: tuple[ChatMemory, str]) -> None:
    barrier = threading.Barrier(len(writers))
    errors: list[BaseException] = []

    def write(memory: ChatMemory, name: str) -> None:
        try:
            barrier.wait()
            for n in range(PER_WRITER):
                memory.append(Message.user(f"{name} {n}"))
        except BaseException as err:  # surfaced below: a thread's exception would vanish
            errors.append(err)

    threads = [threading.Thread(target=write, args=writer) for writer in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def check_history(messages: list[Message], writers: list[str]) -> None:
    contents = [m.content for m in messages]
    assert len(contents) == len(writers) * PER_WRITER
    for name in writers:
        own = [c for c in contents if c.split()[0] == name]
        assert own == [f"{name} {n}" for n in range(PER_WRITER)], f"{name} lost or reordered"
    assert [m.id for m in messages] == sorted(m.id or "" for m in messages)
    assert len({m.id for m in messages}) == len(messages)


def test_two_threads_on_one_chat_memory(mem: Memento) -> None:
    memory = ChatMemory(mem, "shared", policy=POLICY)
    run_threads((memory, "left"), (memory, "right"))
    full = memory.history()
    check_history(full, ["left", "right"])
    assert memory.window() == full[-8:]


def test_two_threads_with_their_own_chat_memory(mem: Memento) -> None:
    one = ChatMemory(mem, "shared", policy=POLICY)
    two = ChatMemory(mem, "shared", policy=POLICY)
    run_threads((one, "one"), (two, "two"))
    full = one.history()
    check_history(full, ["one", "two"])
    assert one.window() == two.window() == full[-8:]


CHILD = textwrap.dedent(
    """
    import sys
    from memento_core import Memento
    from memento_core._chat import ChatMemory, WindowPolicy
    from memento_core._messages import Message
    from memento_core.testing import HashEmbedder

    url, prefix, name, count = sys.argv[1:5]
    mem = Memento.open(url=url, collection_prefix=prefix, embedder=HashEmbedder())
    memory = ChatMemory(
        mem, "shared", policy=WindowPolicy(max_messages=8, snapshot_on_overflow=False)
    )
    print("ready", flush=True)
    sys.stdin.readline()  # wait for the go, so both processes write at the same time
    for n in range(int(count)):
        memory.append(Message.user(f"{name} {n}"))
    window = memory.window()
    assert len(window) == 8, window
    """
)


@pytest.mark.server
def test_two_processes_against_a_chroma_server(chroma_server: str, tmp_path: Path) -> None:
    prefix = f"conc{os.getpid()}{tmp_path.name[-6:]}".replace("_", "")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, chroma_server, prefix, name, str(PER_WRITER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("alpha", "omega")
    ]
    watcher = Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder())
    watching = ChatMemory(watcher, "shared", policy=POLICY)
    assert watching.window() == []  # loaded now, before anyone writes
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    with Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        memory = ChatMemory(mem, "shared", policy=POLICY)
        full = memory.history()
        check_history(full, ["alpha", "omega"])
        assert memory.window() == full[-8:]
    assert watching.window() == full[-8:]  # a live window picks up other processes' writes
