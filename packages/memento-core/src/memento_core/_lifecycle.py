"""Forgetting, erasure and spaced review: what leaves memory, and what comes back for review.

Soft forgetting hides a memory (``restore`` brings it back); erasure removes it with its vector,
every link that touches it, its feedback, facts derived only from it and every reference to it
(timeline links close over the gap).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memento_core import _history as history
from memento_core._model import (
    LinkType,
    MemoryItem,
    Scope,
    as_utc,
    check_scope_value,
    utcnow,
)
from memento_core._ownership import cascades, owned, owner_of
from memento_core._ranking import recency, usage
from memento_core._storage import to_micros
from memento_core._usage import used_fields
from memento_core._visibility import live_clause, visibility_clause
from memento_core.errors import InvalidInput

if TYPE_CHECKING:
    from memento_core._engine import Engine

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
    """Records erased beside memories, by eraser (``on_erase_user``'s names, the chat
    messages') and by adapter side collection (``lg_checkpoints``, …)."""


def _where(*clauses: dict[str, Any]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$and": list(clauses)}


def _check_limit(limit: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput(f"limit must be a whole number ≥ 1, got {limit!r}")


ACTIONS: dict[history.ChangeKind, tuple[str, dict[str, Any]]] = {
    history.ChangeKind.PINNED: ("pin", {"pinned": True}),
    history.ChangeKind.UNPINNED: ("unpin", {"pinned": False}),
    history.ChangeKind.RESTORED: ("restore", {"deleted_at": None}),
    history.ChangeKind.FORGOTTEN: ("forget", {"deleted_at": "now"}),
}
"""The flat changes ``change`` makes: the action named to ``NotOwner``, the new values."""


def change(
    engine: Engine, memory_id: str, kind: history.ChangeKind, caller: Scope | None
) -> MemoryItem:
    """Pin, unpin, forget (soft) or restore one memory the caller owns, logging the change
    in the same write (nothing is logged when it changes nothing); returns it as stored."""
    engine.check_writable()
    action, values = ACTIONS[kind]
    now = utcnow()
    with engine.store.lock:
        item = owned(engine, memory_id, caller, action)
        engine.hotwords_changed()
        after = {k: now if v == "now" else v for k, v in values.items()}
        before = {k: getattr(item, k) for k in after}
        stored = {k: to_micros(v) if k == "deleted_at" else v for k, v in after.items()}
        if before == after:
            engine.store.set_fields([memory_id], stored)
        else:
            entry = history.Entry(
                memory_id,
                kind,
                {k: history.as_json(v) for k, v in before.items()},
                {k: history.as_json(v) for k, v in after.items()},
            )
            history.set_fields(engine, [(entry, stored)], history.actor_of(caller), now)
    return engine.get(memory_id, include_deleted=True)


def forget(
    engine: Engine, memory_id: str, *, hard: bool = False, caller: Scope | None = None
) -> None:
    """Hide a memory (soft) or erase it (hard, with what ``erase`` takes along): only one
    the caller owns."""
    if not isinstance(hard, bool):
        raise InvalidInput(f"hard must be true or false, got {hard!r}")
    if not hard:
        change(engine, memory_id, history.ChangeKind.FORGOTTEN, caller)
        return
    engine.check_writable()
    owned(engine, memory_id, caller, "forget")
    engine.hotwords_changed()
    erase(engine, [memory_id])


def forget_candidates(
    engine: Engine,
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
    weights = engine.weights
    ranked = [
        ForgetCandidate(
            item,
            weights.recency * recency(item, moment, weights)
            + weights.importance * item.importance
            + weights.usage * usage(item, weights),
        )
        for item in engine.store.find_items(where)
    ]
    ranked.sort(key=lambda c: (c.standing, c.item.created_at, c.item.id))
    return ranked[:limit]


def purge(
    engine: Engine, *, grace: timedelta = DEFAULT_GRACE, now: datetime | None = None
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
    engine.check_writable()
    ids = engine.store.find_item_ids(stale)
    erase_records(engine, ids)
    return PurgeReport(tuple(ids))


def erase(engine: Engine, memory_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """Hard-delete memories with their vectors, links and feedback, and every memory derived
    only from erased ones of its own owner (transitively: a fact of facts goes once all its
    sources are gone). A derived memory of another user never goes: links are not ownership.

    Returns ``(derived, unlinked)``: the derived memories erased too, and those kept because
    they have other sources or another owner (only their links to the erased go).
    """
    store = engine.store
    erased = set(memory_ids)
    owners = {item.id: owner_of(item) for item in store.items_by_id(sorted(erased))}
    derived: list[str] = []
    kept: set[str] = set()
    frontier = sorted(erased)
    while frontier:
        sources = {
            link.source_id for link in store.links_of_type(LinkType.DERIVED_FROM, targets=frontier)
        }
        frontier = []
        candidates = {item.id: item for item in store.items_by_id(sorted(sources - erased))}
        for derived_id in sorted(sources - erased):
            links = store.links_of_type(LinkType.DERIVED_FROM, sources=[derived_id])
            candidate = candidates.get(derived_id)
            if (
                candidate is not None
                and {link.target_id for link in links} <= erased
                and all(cascades(link, candidate, owners.get(link.target_id)) for link in links)
            ):
                owners[derived_id] = owner_of(candidate)
                erased.add(derived_id)
                derived.append(derived_id)
                frontier.append(derived_id)
                kept.discard(derived_id)
            else:
                kept.add(derived_id)
    erase_records(engine, [*memory_ids, *derived])
    return derived, sorted(kept)


def erase_records(engine: Engine, memory_ids: Sequence[str]) -> None:
    """Hard-delete memories with every link that touches them and their feedback events."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids:
        return
    engine.hotwords_changed()
    engine.usage.discard(ids)
    store = engine.store
    with store.lock:
        store.delete_links_touching(ids)
        store.delete_events_of(ids)
        history.erase(engine, ids)
        before = _close_timeline_gaps(engine, ids)
        _clear_superseded(engine, ids)
        engine.noted(store.delete_items(ids))
        # Again once they are gone: a memory another process stored meanwhile may follow
        # one of them; a writer reads its predecessor after storing (``_writing``), so one
        # of the two sees the other.
        _close_timeline_gaps(engine, ids, before)
        engine.unindexed(ids)


def _close_timeline_gaps(
    engine: Engine, erased: Sequence[str], before: dict[str, str] | None = None
) -> dict[str, str]:
    """Memories that followed an erased one follow its predecessor instead: no erased id
    stays behind in ``follows`` (erasure leaves no trace), and the timeline stays whole.
    Returns each erased memory's predecessor (``before``: as read before they were erased)."""
    gone = set(erased)
    if before is None:
        before = {item.id: item.follows or "" for item in engine.store.items_by_id(list(gone))}
    ids, updates = [], []
    for item in engine.store.items_following(list(gone)):
        if item.id in gone:
            continue
        predecessor = item.follows or ""
        for _ in range(len(gone)):  # the chain only points back in time; bounded anyway
            if predecessor not in gone:
                break
            predecessor = before.get(predecessor, "")
        ids.append(item.id)
        updates.append({"follows": "" if predecessor in gone else predecessor})
    engine.store.set_fields(ids, updates)
    return before


def _clear_superseded(engine: Engine, erased: Sequence[str]) -> None:
    """A memory superseded by an erased one is superseded no more: no erased id stays behind."""
    gone = set(erased)
    stale = [i.id for i in engine.store.items_superseded_by(list(gone)) if i.id not in gone]
    engine.store.set_fields(stale, {"superseded_by": ""})


def erase_user(
    engine: Engine,
    user_id: str,
    *,
    extra_erasers: Sequence[Callable[[Engine, str], int]] = (),
) -> ErasureReport:
    """Right to erasure: remove every memory of ``user_id`` with its vectors, links and feedback,
    and consolidated memories derived only from them. Memories derived partly from others stay,
    minus the links to the erased. An unknown user is a no-op with an empty report.
    """
    checked = check_scope_value(user_id, "user_id")
    if checked is None:
        raise InvalidInput("user_id is required")
    engine.check_writable()
    owned = engine.store.find_item_ids({"user_id": checked})
    engine.forget_user_partition(checked, owned)
    derived, unlinked = erase(engine, owned)
    engine.store.forget_link_maker(checked)
    extra = {eraser.__name__: eraser(engine, checked) for eraser in extra_erasers}
    # Adapters' side records of the user, found through the store: erasure reaches them even
    # where the adapter was never built (another process, the CLI).
    for name, count in engine.store.erase_side_records_of(checked).items():
        extra[name] = extra.get(name, 0) + count
    history.forget_actor(engine, checked)
    return ErasureReport(
        user_id=checked,
        memories=tuple(owned),
        derived=tuple(derived),
        unlinked=tuple(unlinked),
        messages=sum(extra.values()),
        extra=extra,
    )


def review_due(
    engine: Engine, scope: Scope, *, now: datetime | None = None, limit: int = 50
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
    due = sorted(engine.store.find_items(where), key=lambda i: (i.review_due_at or moment, i.id))
    return due[:limit]


def review(
    engine: Engine,
    memory_id: str,
    grade: int,
    *,
    now: datetime | None = None,
    caller: Scope | None = None,
) -> MemoryItem:
    """Record a review (grade 0..5) of a memory the caller owns and reschedule the card; it
    counts as a use."""
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 5:
        raise InvalidInput(f"grade must be a whole number from 0 to 5, got {grade!r}")
    moment = as_utc(now, "now") if now else utcnow()
    engine.check_writable()
    policy = engine.review_policy
    with engine.store.lock:
        item = owned(engine, memory_id, caller, "review", include_deleted=False)
        step = policy.next_step(item.review_step, grade) if item.review_due_at else 0
        due = policy.due_after(step, moment)
        fields = {**used_fields(item, moment), "review_step": step, "review_due_at": to_micros(due)}
        entry = history.Entry(
            memory_id,
            history.ChangeKind.REVIEWED,
            history.fields_of(item, ("review_step", "review_due_at")),
            {"review_step": step, "review_due_at": due.isoformat(), "grade": grade},
        )
        history.set_fields(engine, [(entry, fields)], history.actor_of(caller), moment)
    return engine.get(memory_id)


def schedule_reviews(engine: Engine, *, now: datetime | None = None) -> int:
    """Give a card to every live memory at or above the review threshold that has none
    (say, one whose importance the policy now covers). Returns how many got one."""
    moment = as_utc(now, "now") if now else utcnow()
    policy = engine.review_policy
    where = _where(
        *live_clause(moment),
        {"review_due_at": 0},
        {"importance": {"$gte": policy.threshold}},
    )
    ids = engine.store.find_item_ids(where)
    due = policy.first_due(1.0, moment)
    if ids and due:
        engine.check_writable()
        engine.store.set_fields(ids, {"review_due_at": to_micros(due)})
    return len(ids)
