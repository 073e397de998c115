"""The maintenance worker: purge, review scheduling, archiving idle chats and sleep, on an interval.

Safe in its own process against a Chroma server while agents write: every step is idempotent
(purge erases by age, review scheduling only fills empty cards, chat archives have content-derived
ids and move the session's archive mark, sleep marks what it consolidated and gives facts
content-derived ids), so a step interrupted or repeated does no harm.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memento_core._chat import archive_idle_sessions
from memento_core._consolidation import SleepReport, sleep
from memento_core._lifecycle import DEFAULT_GRACE, PurgeReport, purge, schedule_reviews
from memento_core._model import MemoryType, Scope, as_utc, utcnow
from memento_core._visibility import live_clause
from memento_core.errors import InvalidInput

if TYPE_CHECKING:
    from memento_core._engine import Engine


@dataclass
class MaintenanceReport:
    started_at: datetime
    purged: PurgeReport
    review_cards: int
    sleeps: dict[str, SleepReport] = field(default_factory=dict)
    chats_archived: list[str] = field(default_factory=list)
    """Summary ids of the chat sessions archived because they sat idle past their ttl."""


def users_to_consolidate(engine: Engine, now: datetime) -> list[str]:
    where = {
        "$and": [{"type": MemoryType.EPISODIC.value}, {"consolidated_at": 0}, *live_clause(now)]
    }
    return sorted({fields["user_id"] for fields in engine.store.item_fields(where)})


def run_maintenance(
    engine: Engine, *, grace: timedelta = DEFAULT_GRACE, now: datetime | None = None
) -> MaintenanceReport:
    """One pass: purge what is past its grace period, give due review cards, archive the chat
    sessions left idle past their window's ttl (before sleep, which consolidates them), sleep
    every user."""
    moment = as_utc(now, "now") if now else utcnow()
    report = MaintenanceReport(
        started_at=moment,
        purged=purge(engine, grace=grace, now=moment),
        review_cards=schedule_reviews(engine, now=moment),
        chats_archived=archive_idle_sessions(engine, now=moment),
    )
    for user_id in users_to_consolidate(engine, moment):
        report.sleeps[user_id] = sleep(engine, Scope(user_id=user_id or None))
    return report


def run_worker(
    engine: Engine,
    *,
    interval: float = 300.0,
    stop: threading.Event | None = None,
    passes: int | None = None,
    on_report: Callable[[MaintenanceReport], None] | None = None,
) -> int:
    """Run ``run_maintenance`` every ``interval`` seconds until ``stop`` is set or ``passes``
    passes are done. Returns the number of passes."""
    if (
        isinstance(interval, bool)
        or not isinstance(interval, (int, float))
        or not math.isfinite(interval)
        or interval <= 0
    ):
        raise InvalidInput(f"interval must be a positive number of seconds, got {interval!r}")
    if passes is not None and (
        isinstance(passes, bool) or not isinstance(passes, int) or passes < 0
    ):
        raise InvalidInput(f"passes must be a whole number ≥ 0, got {passes!r}")
    stop = stop or threading.Event()
    done = 0
    while not stop.is_set() and (passes is None or done < passes):
        started = time.monotonic()
        report = run_maintenance(engine)
        done += 1
        if on_report:
            on_report(report)
        if passes is not None and done >= passes:
            break
        stop.wait(max(0.0, interval - (time.monotonic() - started)))
    return done
