"""Forgetting, erasure and spaced review: what leaves memory, and what comes back for review."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memento_core._drafts import used_fields
from memento_core._filters import live_clause, visibility_clause
from memento_core._model import (
    LinkType,
    MemoryItem,
    Scope,
    as_utc,
    check_scope_value,
    utcnow,
)
from memento_core._ranking import recency, usage
from memento_core._storage import PAGE, item_from_record, to_micros
from memento_core.errors import InvalidInput

if TYPE_CHECKING:
    from memento_core._memento import Memento

DEFAULT_GRACE = timedelta(days=30)
DEFAULT_UNUSED = timedelta(days=30)


@dataclass(frozen=True)
class ForgetCandidate:
    item: MemoryItem
    standing: float
    """Recency, importance and usage weighted as in recall; the lowest go first."""


@dataclass(frozen=True)
class PurgeReport:
    erased: tuple[str, ...]


@dataclass(frozen=True)
class ErasureReport:
    user_id: str
    memories: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()
    """Consolidated memories erased because every source they came from was erased."""
    unlinked: tuple[str, ...] = ()
    """Consolidated memories kept (they have other sources) minus their links to the erased."""
    messages: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def _where(*clauses: dict[str, Any]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$and": list(clauses)}


def _check_limit(limit: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput(f"limit must be a whole number ≥ 1, got {limit!r}")


def _items(mem: Memento, where: dict[str, Any]) -> list[MemoryItem]:
    store = mem._store
    records = store.iter_records(store.items, where=where, include=["metadatas", "documents"])
    return [item_from_record(i, d or "", m) for i, m, d, _ in records]


def forget_candidates(
    mem: Memento,
    scope: Scope,
    *,
    limit: int = 20,
    unused_for: timedelta = DEFAULT_UNUSED,
    now: datetime | None = None,
) -> list[ForgetCandidate]:
    """The soft-delete queue: live, unpinned memories the scope may see, unused for
    ``unused_for``, lowest standing first. Nothing is changed; pass them to ``forget``."""
    _check_limit(limit)
    if not isinstance(unused_for, timedelta) or unused_for < timedelta(0):
        raise InvalidInput(f"unused_for must be a timedelta ≥ 0, got {unused_for!r}")
    moment = as_utc(now, "now") if now else utcnow()
    cutoff = to_micros(moment - unused_for)
    where = _where(
        visibility_clause(scope),
        *live_clause(moment),
        {"pinned": False},
        {"created_at": {"$lt": cutoff}},
        {"last_accessed_at": {"$lt": cutoff}},
    )
    weights = mem.weights
    ranked = [
        ForgetCandidate(
            item,
            weights.recency * recency(item, moment, weights)
            + weights.importance * item.importance
            + weights.usage * usage(item, weights),
        )
        for item in _items(mem, where)
    ]
    ranked.sort(key=lambda c: (c.standing, c.item.created_at, c.item.id))
    return ranked[:limit]


def purge(
    mem: Memento, *, grace: timedelta = DEFAULT_GRACE, now: datetime | None = None
) -> PurgeReport:
    """Erase memories soft-deleted, or expired (and not pinned), longer than ``grace`` ago."""
    if not isinstance(grace, timedelta) or grace < timedelta(0):
        raise InvalidInput(f"grace must be a timedelta ≥ 0, got {grace!r}")
    moment = as_utc(now, "now") if now else utcnow()
    cutoff = to_micros(moment - grace)
    stale = {
        "$or": [
            {"$and": [{"deleted_at": {"$gt": 0}}, {"deleted_at": {"$lt": cutoff}}]},
            {"$and": [{"pinned": False}, {"expires_at": {"$lt": cutoff}}]},
        ]
    }
    ids = [i for i, _, _, _ in mem._store.iter_records(mem._store.items, where=stale, include=[])]
    mem._erase(ids)
    return PurgeReport(tuple(ids))


def erase(mem: Memento, memory_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """Hard-delete memories with their vectors, links and feedback, and every memory derived
    only from erased ones (transitively: a fact of facts goes once all its sources are gone).

    Returns ``(derived, unlinked)``: the derived memories erased too, and those kept because
    they have other sources (only their links to the erased go).
    """
    store = mem._store
    erased = set(memory_ids)
    derived: list[str] = []
    kept: set[str] = set()
    frontier = sorted(erased)
    while frontier:
        derived_ids: set[str] = set()
        for start in range(0, len(frontier), PAGE):
            linked = store.links.get(
                where={
                    "$and": [
                        {"type": LinkType.DERIVED_FROM.value},
                        {"target_id": {"$in": frontier[start : start + PAGE]}},
                    ]
                },
                include=["metadatas"],
            )
            derived_ids.update(meta["source_id"] for meta in linked["metadatas"])
        frontier = []
        for derived_id in sorted(derived_ids - erased):
            links = store.links.get(
                where={"$and": [{"type": LinkType.DERIVED_FROM.value}, {"source_id": derived_id}]},
                include=["metadatas"],
            )
            if {m["target_id"] for m in links["metadatas"]} <= erased:
                erased.add(derived_id)
                derived.append(derived_id)
                frontier.append(derived_id)
                kept.discard(derived_id)
            else:
                kept.add(derived_id)
    mem._erase([*memory_ids, *derived])
    return derived, sorted(kept)


def erase_user(
    mem: Memento,
    user_id: str,
    *,
    extra_erasers: tuple[Callable[[Memento, str], int], ...] = (),
) -> ErasureReport:
    """Right to erasure: remove every memory of ``user_id`` with its vectors, links and feedback,
    and consolidated memories derived only from them. Memories derived partly from others stay,
    minus the links to the erased. An unknown user is a no-op with an empty report.
    """
    checked = check_scope_value(user_id, "user_id")
    if checked is None:
        raise InvalidInput("user_id is required")
    store = mem._store
    owned = [
        i for i, _, _, _ in store.iter_records(store.items, where={"user_id": checked}, include=[])
    ]
    derived, unlinked = erase(mem, owned)
    extra = {eraser.__name__: eraser(mem, checked) for eraser in extra_erasers}
    return ErasureReport(
        user_id=checked,
        memories=tuple(owned),
        derived=tuple(derived),
        unlinked=tuple(unlinked),
        messages=sum(extra.values()),
        extra=extra,
    )


def review_due(
    mem: Memento, scope: Scope, *, now: datetime | None = None, limit: int = 50
) -> list[MemoryItem]:
    """Memories whose review card is due, most overdue first."""
    _check_limit(limit)
    moment = as_utc(now, "now") if now else utcnow()
    where = _where(
        visibility_clause(scope),
        *live_clause(moment),
        {"review_due_at": {"$gt": 0}},
        {"review_due_at": {"$lte": to_micros(moment)}},
    )
    due = sorted(_items(mem, where), key=lambda i: (i.review_due_at or moment, i.id))
    return due[:limit]


def review(mem: Memento, memory_id: str, grade: int, *, now: datetime | None = None) -> MemoryItem:
    """Record a review (grade 0..5) and reschedule the card; it counts as a use."""
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 5:
        raise InvalidInput(f"grade must be a whole number from 0 to 5, got {grade!r}")
    moment = as_utc(now, "now") if now else utcnow()
    policy = mem.review_policy
    with mem._store.lock:
        item = mem.get(memory_id)
        step = policy.next_step(item.review_step, grade) if item.review_due_at else 0
        due = policy.due_after(step, moment)
        fields = {**used_fields(item, moment), "review_step": step, "review_due_at": to_micros(due)}
        mem._store.items.update(ids=[memory_id], metadatas=[fields])
    return mem.get(memory_id)


def schedule_reviews(mem: Memento, *, now: datetime | None = None) -> int:
    """Give a card to every live memory at or above the review threshold that has none
    (say, one whose importance the policy now covers). Returns how many got one."""
    moment = as_utc(now, "now") if now else utcnow()
    policy = mem.review_policy
    where = _where(
        *live_clause(moment),
        {"review_due_at": 0},
        {"importance": {"$gte": policy.threshold}},
    )
    ids = [i for i, _, _, _ in mem._store.iter_records(mem._store.items, where=where, include=[])]
    due = policy.first_due(1.0, moment)
    if ids and due:
        mem._store.items.update(ids=ids, metadatas=[{"review_due_at": to_micros(due)}] * len(ids))
    return len(ids)
