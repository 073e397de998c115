"""Adds awaited at once reach the store together, as one ``remember_many``; each caller still
returns once its own content is stored and hears of its own error only."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from _autogen_support import ALICE, text

from memento_autogen import MementoMemory, MementoMemoryConfig
from memento_core import Memento, MemoryItem, ReadOnlyStore, Scope, plugins
from memento_core.plugins import hookimpl

if TYPE_CHECKING:
    from conftest import StoreFactory

FACTS = [f"Alice's fact number {n}: she keeps {n} cacti on the sill" for n in range(6)]


class WriteNoting:
    """Notes the size of every write of Alice's memories; ``hold`` makes the first one wait."""

    def __init__(self, hold: bool = False) -> None:
        self.writes: list[int] = []
        self.first_started = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()

    @hookimpl
    def memento_on_remember(self, memento: Memento, items: list[MemoryItem]) -> None:
        if any(item.scope.user_id == "alice" for item in items):
            self.writes.append(len(items))
            if not self.first_started.is_set():
                self.first_started.set()
                assert self.release.wait(timeout=60)


@pytest.fixture
def noting() -> Iterator[WriteNoting]:
    observer = WriteNoting(hold=True)
    plugins.manager().register(observer, name="write-noting")
    try:
        yield observer
    finally:
        observer.release.set()
        plugins.manager().unregister(name="write-noting")


def contents(mem: Memento) -> set[str]:
    return {m.content for m in mem.items(scope=Scope(user_id="alice"), include_deleted=False)}


async def test_adds_awaited_together_are_one_write(
    memory: MementoMemory, mem: Memento, noting: WriteNoting
) -> None:
    noting.release.set()
    await asyncio.gather(*(memory.add(text(fact)) for fact in FACTS))
    assert noting.writes == [len(FACTS)]
    assert contents(mem) == set(FACTS)


async def test_adds_arriving_during_a_write_go_together_in_the_next(
    memory: MementoMemory, mem: Memento, noting: WriteNoting
) -> None:
    first = asyncio.ensure_future(memory.add(text("Alice's first fact: she rows on Sundays")))
    assert await asyncio.to_thread(noting.first_started.wait, 60)
    others = asyncio.ensure_future(asyncio.gather(*(memory.add(text(f)) for f in FACTS)))
    for _ in range(len(FACTS) + 2):  # let every add hand in its draft (no time passes)
        await asyncio.sleep(0)
    assert not others.done()
    noting.release.set()
    await asyncio.gather(first, others)
    assert noting.writes == [1, len(FACTS)]
    assert contents(mem) == {"Alice's first fact: she rows on Sundays", *FACTS}


async def test_each_caller_hears_of_the_failure_and_nothing_is_stored(
    store_factory: StoreFactory, mem: Memento
) -> None:
    del mem  # the store exists; open it again read-only
    with store_factory.open(read_only=True) as reader:
        memory = MementoMemory(MementoMemoryConfig(**ALICE), store=reader)
        outcomes = await asyncio.gather(
            *(memory.add(text(fact)) for fact in FACTS[:3]), return_exceptions=True
        )
        assert [type(o) for o in outcomes] == [ReadOnlyStore] * 3
        assert contents(reader) == set()
