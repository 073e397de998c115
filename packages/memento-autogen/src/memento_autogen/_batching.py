"""Adds in flight at once are written together: one ``remember_many`` for all of them.

An agent's tool loop may add several memories at once (``asyncio.gather`` over ``add``). Each
write costs a few Chroma calls whatever its size, so drafts handed in while a write runs wait
for it and then go together in the next one. The first add of a quiet memory starts at once:
nothing waits for company. Each caller returns when its own draft is stored, and sees its own
error only: a failed group is written again draft by draft.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field

from memento_core import Memento, MemoryDraft

__all__ = ["AddBatcher"]


@dataclass
class _Queue:
    """The drafts waiting on one event loop, and the task writing them."""

    waiting: list[tuple[MemoryDraft, asyncio.Future[None]]] = field(default_factory=list)
    writer: asyncio.Task[None] | None = None


class AddBatcher:
    """Groups the drafts of concurrent ``add`` calls into one write per round."""

    def __init__(self) -> None:
        # One queue per event loop: a memory may be used from several (``asyncio.run`` per call).
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def add(self, store: Memento, draft: MemoryDraft) -> None:
        """Store ``draft`` with whatever other drafts are handed in meanwhile."""
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, _Queue())
        stored: asyncio.Future[None] = loop.create_future()
        queue.waiting.append((draft, stored))
        if queue.writer is None or queue.writer.done():
            queue.writer = loop.create_task(self._write(store, queue))
        await stored

    @staticmethod
    async def _write(store: Memento, queue: _Queue) -> None:
        while queue.waiting:
            taken, queue.waiting = queue.waiting, []
            try:
                await store.aremember_many([draft for draft, _ in taken])
            except Exception as error:
                if len(taken) == 1:
                    _settle(taken[0][1], error)
                    continue
                for draft, stored in taken:  # each caller hears of its own error only
                    try:
                        await store.aremember_many([draft])
                    except Exception as own:
                        _settle(stored, own)
                    else:
                        _settle(stored, None)
            except BaseException as fatal:  # cancelled: every waiting caller hears of it
                for _, stored in [*taken, *queue.waiting]:
                    _settle(stored, fatal)
                queue.waiting = []
                raise
            else:
                for _, stored in taken:
                    _settle(stored, None)


def _settle(stored: asyncio.Future[None], error: BaseException | None) -> None:
    if stored.done():  # its caller stopped waiting (cancelled); the write went ahead
        return
    if error is None:
        stored.set_result(None)
    elif isinstance(error, asyncio.CancelledError):
        stored.cancel()
    else:
        stored.set_exception(error)
