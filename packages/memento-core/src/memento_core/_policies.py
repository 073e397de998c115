"""Retention and review policies: how long memories live, and when important ones come back."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from memento_core._model import MemoryType, parse_enum
from memento_core.errors import InvalidInput

FOREVER: Literal["forever"] = "forever"
"""Pass as ``retention`` to keep a memory regardless of its type's or tags' retention."""

Retention = timedelta | Literal["forever"] | None

DEFAULT_RETENTION: Mapping[MemoryType, timedelta | None] = {
    MemoryType.WORKING: timedelta(hours=48),
    MemoryType.EPISODIC: timedelta(days=90),
    MemoryType.SEMANTIC: None,
    MemoryType.PROCEDURAL: None,
}


MAX_RETENTION = timedelta(days=365_250)
"""A thousand years: longer retentions are refused (keep with ``FOREVER``), so an expiry date
can always be computed."""


def check_duration(value: object, what: str) -> timedelta | None:
    """A retention is a positive ``timedelta``, or None for 'keep'."""
    if value is None or value == FOREVER:
        return None
    if not isinstance(value, timedelta):
        raise InvalidInput(f"{what} must be a timedelta (or None to keep), got {value!r}")
    if value <= timedelta(0):
        raise InvalidInput(f"{what} must be positive, got {value}")
    if value > MAX_RETENTION:
        raise InvalidInput(f"{what} of {value.days} days is too long; to keep, use FOREVER")
    return value


@dataclass(frozen=True)
class RetentionPolicy:
    """How long memories live without use. A memory's clock restarts each time it is used.

    A tag rule wins over the type rule; when several of a memory's tags have rules, the longest
    wins (None, "keep", beats any duration). Pinned memories never expire.
    """

    by_type: Mapping[MemoryType, timedelta | None] = field(
        default_factory=lambda: dict(DEFAULT_RETENTION)
    )
    by_tag: Mapping[str, timedelta | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.by_type, Mapping):
            raise InvalidInput("by_type must map memory types to durations")
        by_type = {
            parse_enum(MemoryType, k, "memory type"): check_duration(v, f"retention of {k}")
            for k, v in self.by_type.items()
        }
        object.__setattr__(self, "by_type", {**DEFAULT_RETENTION, **by_type})
        if not isinstance(self.by_tag, Mapping):
            raise InvalidInput("by_tag must map tags to durations")
        object.__setattr__(
            self,
            "by_tag",
            {str(k): check_duration(v, f"retention of tag {k!r}") for k, v in self.by_tag.items()},
        )

    def retention_for(self, memory_type: MemoryType, tags: Iterable[str]) -> timedelta | None:
        rules = [self.by_tag[t] for t in tags if t in self.by_tag]
        if not rules:
            return self.by_type.get(memory_type)
        if any(rule is None for rule in rules):
            return None
        return max(rule for rule in rules if rule is not None)


@dataclass(frozen=True)
class ReviewPolicy:
    """Spaced review (Leitner boxes): memories at or above ``threshold`` importance get a card.

    A good answer (grade ≥ ``pass_grade`` on 0..5) moves the card to the next interval; a bad
    one sends it back to the first.
    """

    threshold: float = 0.7
    intervals_days: Sequence[float] = (1, 3, 7, 14, 30, 60, 120)
    pass_grade: int = 3

    def __post_init__(self) -> None:
        if not _number(self.threshold) or not 0.0 <= self.threshold <= 1.0:
            raise InvalidInput(f"review threshold must be from 0 to 1, got {self.threshold!r}")
        intervals = self.intervals_days
        if (
            isinstance(intervals, (str, bytes))
            or not isinstance(intervals, Sequence)
            or not intervals
            or not all(_number(d) and 0 < d < MAX_RETENTION.days for d in intervals)
        ):
            raise InvalidInput(
                f"review intervals must be positive numbers of days, got {intervals!r}"
            )
        grade = self.pass_grade
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 5:
            raise InvalidInput(f"pass_grade must be a whole number from 0 to 5, got {grade!r}")

    def first_due(self, importance: float, now: datetime) -> datetime | None:
        if importance < self.threshold:
            return None
        return now + timedelta(days=self.intervals_days[0])

    def next_step(self, step: int, grade: int) -> int:
        if grade >= self.pass_grade:
            return min(step + 1, len(self.intervals_days) - 1)
        return 0

    def due_after(self, step: int, now: datetime) -> datetime:
        return now + timedelta(days=self.intervals_days[step])


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
