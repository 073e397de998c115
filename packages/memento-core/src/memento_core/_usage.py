"""Usage counting off the recall path: reads and uses are noted; a background thread writes them
while recall is idle.

Two kinds of note: a *use* (the memory was injected into a prompt, reviewed) adds to
``access_count``, which ranking rewards; an *access* (recall returned it) only moves
``last_accessed_at`` and the retention clock. Recall alone must not raise a memory's rank, or
whatever came back once would keep coming back (a rich-get-richer loop that cost LoCoMo 2.5
points of R@5).

Writing the counts back to Chroma costs more than the recall itself (an embedded Chroma update
takes ~7 ms plus ~0.25 ms a memory, and holds the GIL all along, so a recall running meanwhile
waits). So a recall only notes which memories it returned, and the notes are written once no
recall has run for ``idle`` seconds — between a user's turns, never in the middle of a burst of
recalls nor while one runs (a cold recall on a 1M server store can outlast ``idle``, and a
write landing meanwhile made it wait seconds on the store). A steady stream of recalls defers
the write at most ``max_delay`` seconds or ``max_pending`` memories. ``get`` and recall fold
the noted uses into what they read (``with_pending``, ``read_fresh``) instead of writing them
first — under load a write per ``get`` would cost more than the read; bulk reads (``items``,
exports) and ``close`` write them at once, so no caller sees a stale count. Usage is a soft
ranking signal: uses noted since the last write are lost if the process dies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from memento_core._model import MemoryItem
from memento_core._storage import to_micros

log = logging.getLogger(__name__)
MAX_BACKOFF = 60.0
"""Seconds the usage writer waits at most between two tries on a store that fails."""

_Noted = dict[str, tuple[MemoryItem, int, datetime]]
"""id -> (the stored item when first noted, uses since, last use)."""


def used_fields(item: MemoryItem, moment: datetime, *, uses: int = 1) -> dict[str, Any]:
    """The metadata a use changes: the count, the last access, and a fresh retention clock."""
    fields: dict[str, Any] = {
        "access_count": item.access_count + uses,
        "last_accessed_at": to_micros(moment),
    }
    if item.retention is not None:
        fields["expires_at"] = to_micros(moment + item.retention)
    return fields


class UsageRecorder:
    def __init__(
        self,
        write: Callable[[Sequence[str], Sequence[dict[str, Any]]], None],
        fields: Callable[[MemoryItem, datetime, int], dict[str, Any]],
        *,
        idle: float = 0.2,
        max_delay: float = 30.0,
        max_pending: int = 20_000,
        gone: Callable[[], bool] = lambda: False,
    ) -> None:
        self._write = write
        self._gone = gone
        self._fields = fields
        self._idle = idle
        self._max_delay = max_delay
        self._max_pending = max_pending
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: _Noted = {}
        self._writing: _Noted = {}  # taken by the write under way; stored once it returns
        self._writes_ended = 0  # a reader that saw this change may have read around a write
        self._oldest = 0.0  # monotonic time of the oldest unwritten use
        self._last_activity = 0.0
        self._recalls_running = 0
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def recalling(self) -> Iterator[None]:
        """A recall runs: hold the write back until no recall has run for ``idle`` seconds."""
        with self._lock:
            self._recalls_running += 1
        try:
            yield
        finally:
            with self._lock:
                self._recalls_running -= 1
                self._last_activity = time.monotonic()

    def record(self, items: Iterable[MemoryItem], moment: datetime, *, uses: int = 1) -> None:
        """Note ``uses`` uses (0: an access) of each item, as stored or as recall returned it
        (with the noted uses folded in: a noted item's first snapshot is kept, never this one)."""
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                self._oldest = now
            self._last_activity = now
            for item in items:
                first, noted, _ = self._pending.get(item.id, (item, 0, moment))
                # Counts build on the first snapshot: later ones may predate the write too.
                self._pending[item.id] = (first, noted + uses, moment)
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(target=self._run, name="memento-usage", daemon=True)
                self._thread.start()

    def with_pending(self, item: MemoryItem) -> MemoryItem:
        """``item`` as stored, with the uses noted but not yet written counted in."""
        with self._lock:  # both at one moment: a flush moves notes from one to the other
            writing, noted = self._writing.get(item.id), self._pending.get(item.id)
        if writing is not None:
            # A write under way sets absolute values: right whether ``item`` was read before
            # it landed or after.
            first, uses, moment = writing
            item = _used(item, first.access_count + uses, moment)
        if noted is not None:
            _, uses, moment = noted
            item = _used(item, item.access_count + uses, moment)
        return item

    def read_fresh(self, read: Callable[[], list[MemoryItem]]) -> list[MemoryItem]:
        """``read()`` (stored memories) with the noted uses folded in, without writing them.
        Read again if a usage write ended meanwhile: it may have landed after the read."""
        while True:
            ended = self._writes_ended
            found = [self.with_pending(item) for item in read()]
            if self._writes_ended == ended:
                return found

    def discard(self, memory_ids: Iterable[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._pending.pop(memory_id, None)

    def flush(self) -> int:
        """Write every noted use now; returns how many memories were written."""
        # One write at a time, so a flush that returns has seen every earlier note written;
        # notes keep coming (under ``_lock`` alone) while a write runs.
        with self._write_lock:
            with self._lock:
                pending, self._pending = self._pending, {}
                self._writing = pending
            if not pending:
                return 0
            ids = list(pending)
            fields = [self._fields(item, moment, uses) for item, uses, moment in pending.values()]
            written = False
            try:
                self._write(ids, fields)
                written = True
            finally:
                with self._lock:
                    self._writing = {}
                    self._writes_ended += 1
                    if not written:
                        self._put_back(pending)
            return len(pending)

    def _put_back(self, unwritten: _Noted) -> None:
        """Put back uses whose write failed, so the next flush tries them again (``_lock``
        held)."""
        if not self._pending:
            self._oldest = time.monotonic()
        for memory_id, (first, uses, moment) in unwritten.items():
            newer = self._pending.get(memory_id)
            if newer is not None:
                uses, moment = uses + newer[1], newer[2]
            self._pending[memory_id] = (first, uses, moment)

    def _due(self) -> bool:
        if not self._pending:
            return False
        now = time.monotonic()
        idle = self._recalls_running == 0 and now - self._last_activity >= self._idle
        return (
            idle or now - self._oldest >= self._max_delay or len(self._pending) >= self._max_pending
        )

    def _run(self) -> None:
        failures = 0
        while not self._stopped:
            self._wake.wait(min(self._idle, self._max_delay) / 2)
            if not self._due():
                continue
            try:
                self.flush()
            except Exception:  # a background writer must not die; the next flush retries
                failures += 1
                if self._gone():
                    log.warning("the store is gone: its noted memory uses are dropped")
                    with self._lock:
                        self._pending.clear()
                    return
                if failures == 1:  # once per streak, not every few seconds for ever
                    log.warning(
                        "could not write memory usage counts; retrying, less and less often",
                        exc_info=True,
                    )
                # A store that is down is not hammered: 1, 2, 4 … up to MAX_BACKOFF seconds.
                self._wake.wait(min(2.0 ** (failures - 1), MAX_BACKOFF))
            else:
                if failures:
                    log.warning("memory usage counts are written again")
                failures = 0

    def close(self) -> None:
        self._stopped = True
        self._wake.set()
        self.flush()


def _used(item: MemoryItem, access_count: int, moment: datetime) -> MemoryItem:
    """``item`` as ``used_fields`` leaves it."""
    expires_at = item.expires_at if item.retention is None else moment + item.retention
    return dataclasses.replace(
        item, access_count=access_count, last_accessed_at=moment, expires_at=expires_at
    )
