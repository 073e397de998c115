"""Usage counting off the recall path: recalls queue their uses; a background thread writes them.

Writing the counts back to Chroma costs as much as the recall itself, so a recall only notes
which memories it returned. The notes are written every ``interval`` seconds, and at once
before anything reads a memory back (``get``, ``items``, exports), so a caller never sees a stale
count. Usage is a soft ranking signal: uses noted in the last interval before a crash are lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from memento_core.model import MemoryItem

log = logging.getLogger(__name__)


class UsageRecorder:
    def __init__(
        self,
        write: Callable[[Sequence[str], Sequence[dict[str, Any]]], None],
        fields: Callable[[MemoryItem, datetime, int], dict[str, Any]],
        *,
        interval: float = 0.5,
    ) -> None:
        self._write = write
        self._fields = fields
        self._interval = interval
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[MemoryItem, int, datetime]] = {}
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def record(self, items: Iterable[MemoryItem], moment: datetime) -> None:
        with self._lock:
            for item in items:
                first, uses, _ = self._pending.get(item.id, (item, 0, moment))
                # Counts build on the first snapshot: later ones may predate the write too.
                self._pending[item.id] = (first, uses + 1, moment)
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(target=self._run, name="memento-usage", daemon=True)
                self._thread.start()

    def discard(self, memory_ids: Iterable[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._pending.pop(memory_id, None)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            if pending:
                ids = list(pending)
                fields = [
                    self._fields(item, moment, uses) for item, uses, moment in pending.values()
                ]
                self._write(ids, fields)

    def _run(self) -> None:
        while not self._stopped:
            self._wake.wait(self._interval)
            try:
                self.flush()
            except Exception:  # a background writer must not die; the next flush retries
                log.warning("could not write memory usage counts", exc_info=True)

    def close(self) -> None:
        self._stopped = True
        self._wake.set()
        self.flush()
