"""Usage counting: injection notes uses and recall notes accesses; ranking sees noted uses at
once; they are written while recall is idle."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import pytest

from memento_core import Embedder, Memento, MemoryItem, Scope
from memento_core._usage import UsageRecorder

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann", project_id="apollo")
USAGE_ONLY = {
    "relevance": 0.0,
    "recency": 0.0,
    "importance": 0.0,
    "usage": 1.0,
    "context": 0.0,
    "expansion": 0.0,
}


def test_an_injected_memory_counts_as_used_in_the_next_recall_before_it_is_written(
    mem: Memento,
) -> None:
    used = mem.remember("The wifi password is on the fridge", scope=ANN)
    other = mem.remember("The wifi router is in the hall", scope=ANN)
    injection = mem.memory_injection("wifi password", scope=ANN, limit=1)
    assert [i.id for i in injection.items] == [used]
    again = mem.recall("wifi", scope=ANN, limit=2, weights=USAGE_ONLY)
    counts = {r.item.id: r.item.access_count for r in again}
    assert counts == {used: 1, other: 0}  # only what went into the prompt was used
    assert again[0].item.id == used and again[0].reason.usage > 0.0
    assert mem.get(used).access_count == 1  # get counts the noted uses in
    assert mem.get(other).last_accessed_at is not None  # recalled (by the injection): accessed


def test_recall_alone_does_not_make_a_memory_win_the_next_recall(mem: Memento) -> None:
    first = mem.remember("Standup is at 9:30 in room Aurora", scope=ANN)
    second = mem.remember("Standup is at 9:30 in room Borealis", scope=ANN)
    for _ in range(5):
        results = mem.recall("standup room", scope=ANN, limit=1)
    recalled = results[0].item.id
    assert results[0].reason.usage == 0.0
    stored = {memory_id: mem.get(memory_id) for memory_id in (first, second)}
    assert stored[recalled].access_count == 0 and stored[recalled].last_accessed_at is not None
    both = mem.recall("standup room", scope=ANN, limit=2, weights=USAGE_ONLY)
    assert [r.reason.usage for r in both] == [0.0, 0.0]


def test_feedback_and_review_count_as_uses(mem: Memento) -> None:
    memory_id = mem.remember("Invoices go to billing@example.com", scope=ANN)
    mem.feedback(memory_id, "used")
    mem.review(memory_id, 4)
    [found] = mem.recall("invoices", scope=ANN, limit=1, weights=USAGE_ONLY)
    assert found.reason.usage > 0.0


def test_noted_uses_show_in_get_and_survive_close_and_reopen(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:
        used = mem.remember("The spare key is under the blue pot", scope=ANN)
        mem.memory_injection("where is the spare key", scope=ANN, limit=1)
        mem.memory_injection("spare key", scope=ANN, limit=1)
        # Counted in by every get, and counted once: a get is a read, not another use.
        assert [mem.get(used).access_count for _ in range(3)] == [2, 2, 2]
    with store_factory.open() as reopened:  # close wrote what was noted
        assert reopened.get(used).access_count == 2


def test_a_review_after_noted_uses_adds_to_them(store_factory: StoreFactory) -> None:
    with store_factory.open() as mem:
        memory_id = mem.remember("Payroll runs on the 25th", scope=ANN)
        mem.memory_injection("when does payroll run", scope=ANN, limit=1)
        assert mem.review(memory_id, 4).access_count == 2
    with store_factory.open() as reopened:
        assert reopened.get(memory_id).access_count == 2  # the review's write kept the use


@pytest.mark.server
def test_uses_are_written_once_recall_is_idle(chroma_server: str, embedder: Embedder) -> None:
    def open_store() -> Memento:
        return Memento.open(url=chroma_server, collection_prefix=prefix, embedder=embedder)

    prefix = f"usage{uuid4().hex[:12]}"
    with open_store() as writer, open_store() as reader:
        used = writer.remember("Deploys go out every Tuesday", scope=ANN)
        writer.memory_injection("when do deploys go out", scope=ANN, limit=1)
        deadline = time.monotonic() + 10
        while reader.get(used).access_count == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert reader.get(used).access_count == 1  # written without any read-back by the writer


class Recorded:
    """A write function standing in for the store: records each call."""

    def __init__(self, *, fail: int = 0) -> None:
        self.calls: list[dict[str, Any]] = []
        self.failures_left = fail

    def __call__(self, ids: Sequence[str], fields: Sequence[dict[str, Any]]) -> None:
        if self.failures_left:
            self.failures_left -= 1
            raise ConnectionError("store unavailable")
        self.calls.append(dict(zip(ids, fields)))


def recorder(write: Recorded, **timing: float) -> UsageRecorder:
    return UsageRecorder(
        write, lambda item, moment, uses: {"access_count": item.access_count + uses}, **timing
    )


def note(usage: UsageRecorder, *ids: str) -> None:
    usage.record([MemoryItem(id=i, content=i) for i in ids], datetime.now(timezone.utc))


def test_a_steady_stream_of_recalls_defers_the_write_until_it_pauses() -> None:
    write = Recorded()
    usage = recorder(write, idle=0.5, max_delay=60.0)
    try:
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            with usage.recalling():
                note(usage, "a", "b")
            time.sleep(0.01)
        assert write.calls == []  # busy: nothing written yet
        deadline = time.monotonic() + 10
        while not write.calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(write.calls) == 1
        assert set(write.calls[0]) == {"a", "b"} and write.calls[0]["a"]["access_count"] > 1
    finally:
        usage.close()


def test_no_write_lands_while_a_recall_runs_longer_than_idle() -> None:
    write = Recorded()
    usage = recorder(write, idle=0.05, max_delay=60.0)
    try:
        note(usage, "a")
        with usage.recalling():  # a slow cold recall: many times ``idle``
            time.sleep(0.5)
            assert write.calls == []
        deadline = time.monotonic() + 10
        while not write.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        assert write.calls == [{"a": {"access_count": 1}}]
    finally:
        usage.close()


def test_a_write_deferred_too_long_happens_mid_stream() -> None:
    write = Recorded()
    usage = recorder(write, idle=60.0, max_delay=0.2)
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            note(usage, "a")
            time.sleep(0.01)

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while not write.calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert write.calls, "max_delay forces a write although recall never went idle"
    finally:
        stop.set()
        worker.join()
        usage.close()


def test_uses_whose_write_failed_are_written_by_the_next_flush() -> None:
    write = Recorded(fail=1)
    usage = recorder(write, idle=60.0, max_delay=60.0)
    note(usage, "a")
    with pytest.raises(ConnectionError):
        usage.flush()
    note(usage, "a")
    assert usage.flush() == 1
    assert write.calls == [{"a": {"access_count": 2}}]  # both uses, none lost
    usage.close()


def stored(memory_id: str, access_count: int = 0) -> list[MemoryItem]:
    return [MemoryItem(id=memory_id, content=memory_id, access_count=access_count)]


def test_reads_count_noted_uses_in_without_writing_them() -> None:
    write = Recorded()
    usage = recorder(write, idle=60.0, max_delay=60.0)
    note(usage, "a")
    note(usage, "a")
    for _ in range(5):
        [read] = usage.read_fresh(lambda: stored("a", access_count=3))
        assert read.access_count == 5
    assert write.calls == []  # reads wrote nothing
    usage.close()
    assert write.calls == [{"a": {"access_count": 2}}]  # close did, once


def test_a_read_during_a_usage_write_counts_its_uses_once() -> None:
    started, release = threading.Event(), threading.Event()
    calls: list[dict[str, Any]] = []

    def slow_write(ids: Sequence[str], fields: Sequence[dict[str, Any]]) -> None:
        started.set()
        release.wait(10)
        calls.append(dict(zip(ids, fields)))

    usage = UsageRecorder(
        slow_write,  # a store write that lasts until the test lets it end
        lambda item, moment, uses: {"access_count": item.access_count + uses},
        idle=60.0,
        max_delay=60.0,
    )
    note(usage, "a")
    flushing = threading.Thread(target=usage.flush)
    flushing.start()
    try:
        assert started.wait(10)
        note(usage, "a")  # noted while the first use is being written
        # Whether the record was read before the write landed (0) or after it (1): 2 uses.
        assert usage.read_fresh(lambda: stored("a", 0))[0].access_count == 2
        assert usage.read_fresh(lambda: stored("a", 1))[0].access_count == 2
    finally:
        release.set()
        flushing.join()
    assert calls == [{"a": {"access_count": 1}}]
    assert usage.read_fresh(lambda: stored("a", 1))[0].access_count == 2
    usage.close()


def test_a_store_deleted_under_the_usage_writer_is_logged_once_and_the_writer_stops(
    tmp_path: Any, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 31: a store directory deleted while the process held it made the writer log a
    full traceback every few seconds, for ever."""
    import logging
    import shutil

    caplog.set_level(logging.WARNING, logger="memento_core._usage")
    path = tmp_path / "doomed"
    before = set(threading.enumerate())
    mem = Memento.open(path, embedder=embedder)
    memory_id = mem.remember("A memory about lanterns", scope=ANN)
    mem.recall("lanterns", scope=ANN)  # its partition loaded, the record cached
    mem.stats()  # and the use noted by that recall written
    shutil.rmtree(path)
    assert [r.item.id for r in mem.recall("lanterns", scope=ANN)] == [memory_id]  # notes a use

    # This store's writer (other tests' stores may have their own running).
    (writer,) = [t for t in set(threading.enumerate()) - before if t.name == "memento-usage"]
    writer.join(timeout=60)
    assert not writer.is_alive(), "the usage writer kept running"
    messages = [r.getMessage() for r in caplog.records if r.name == "memento_core._usage"]
    assert messages == ["the store is gone: its noted memory uses are dropped"]
