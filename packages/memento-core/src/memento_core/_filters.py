"""Recall filters and the Chroma ``where`` clauses built from them.

Every value that reaches a ``where`` clause is checked to be a plain string, number or enum
first, so nothing a caller passes can become a query operator. Visibility is part of every
clause: a caller never gets another user's private memory, whatever the other filters say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memento_core._model import (
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
    as_utc,
    check_scope_value,
    check_tags,
    parse_enum,
)
from memento_core._storage import to_micros
from memento_core._visibility import is_live, live_clause, visibility_clause
from memento_core.errors import InvalidFilter, InvalidInput

FILTER_FIELDS = (
    "types",
    "tags",
    "since",
    "until",
    "privacy",
    "agent_id",
    "session_id",
    "project_id",
    "include_deleted",
)


@dataclass(frozen=True)
class RecallFilter:
    """Narrows recall. Every field is optional; tags must all be present (AND)."""

    types: tuple[MemoryType, ...] = ()
    tags: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    privacy: tuple[Privacy, ...] = ()
    agent_id: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    include_deleted: bool = False

    def __post_init__(self) -> None:
        """Check and normalise every field, so a filter built directly is as safe as one from
        ``build``: nothing but plain strings, numbers and enums reaches a ``where`` clause."""
        try:
            values = {
                "types": tuple(
                    parse_enum(MemoryType, t, "memory type") for t in _listed(self.types, "types")
                ),
                "tags": check_tags(self.tags),
                "since": _time(self.since, "since"),
                "until": _time(self.until, "until"),
                "privacy": tuple(
                    parse_enum(Privacy, p, "privacy") for p in _listed(self.privacy, "privacy")
                ),
                "agent_id": check_scope_value(self.agent_id, "agent_id filter"),
                "session_id": check_scope_value(self.session_id, "session_id filter"),
                "project_id": check_scope_value(self.project_id, "project_id filter"),
                "include_deleted": _flag(self.include_deleted, "include_deleted"),
            }
        except InvalidFilter:
            raise
        except InvalidInput as err:
            raise InvalidFilter(str(err)) from err
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def admits(self, item: MemoryItem, now: datetime) -> bool:
        """This filter (and liveness) decided on a memory already read — the same rules as
        ``where_clause``, for reads by id, where Chroma is slow with unselective conditions
        (``deleted_at == 0``, a tag every item has): it evaluates them over the whole
        collection before it looks at the ids. Visibility is never decided here."""
        scope = item.scope
        return (
            (self.include_deleted or is_live(item, now))
            and (not self.types or item.type in self.types)
            and (not self.privacy or item.privacy in self.privacy)
            and all(tag in item.tags for tag in self.tags)
            and (self.since is None or item.created_at >= self.since)
            and (self.until is None or item.created_at <= self.until)
            and (self.agent_id is None or scope.agent_id == self.agent_id)
            and (self.session_id is None or scope.session_id == self.session_id)
            and (self.project_id is None or scope.project_id == self.project_id)
        )

    @classmethod
    def build(cls, values: Mapping[str, Any] | None = None, **kwargs: Any) -> RecallFilter:
        """Validate loose filter values (from kwargs, a CLI, an MCP call) into a filter."""
        if values is not None and not isinstance(values, Mapping):
            raise InvalidFilter(f"a filter is a mapping of field to value, got {values!r}")
        merged = {**(values or {}), **{k: v for k, v in kwargs.items() if v is not None}}
        unknown = sorted(map(repr, set(merged) - set(FILTER_FIELDS)))
        if unknown:
            raise InvalidFilter(
                f"unknown filter field(s) {', '.join(unknown)}; known: {', '.join(FILTER_FIELDS)}"
            )
        # None means "not given" for every field; every other value is checked.
        return cls(**{k: v for k, v in merged.items() if v is not None})


def _time(value: object, key: str) -> datetime | None:
    # None is "not given"; anything else, falsy or not, must be a datetime (``{"since": 0}``
    # dropped silently would return more than was asked for).
    return None if value is None else as_utc(value, key)  # type: ignore[arg-type]


def _flag(value: object, key: str) -> bool:
    if value is None:  # like every other field: None means "not given"
        return False
    if not isinstance(value, bool):
        raise InvalidFilter(f"{key} must be true or false, got {value!r}")
    return value


def _listed(value: object, key: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, MemoryType, Privacy)):
        return [value]
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise InvalidFilter(f"{key} must be a value or a list of values, got {value!r}")
    return list(value)


def where_clause(viewer: Scope, recall_filter: RecallFilter, now: datetime) -> dict[str, Any]:
    """The Chroma ``where`` for what ``viewer`` may see and ``recall_filter`` keeps (the same
    rules as ``RecallFilter.admits``, plus visibility)."""
    clauses: list[dict[str, Any]] = [visibility_clause(viewer)]
    if not recall_filter.include_deleted:
        clauses.extend(live_clause(now))
    f = recall_filter
    if f.types:
        clauses.append({"type": {"$in": [t.value for t in f.types]}})
    if f.privacy:
        clauses.append({"privacy": {"$in": [p.value for p in f.privacy]}})
    clauses.extend({"tags": {"$contains": tag}} for tag in f.tags)
    if f.since:
        clauses.append({"created_at": {"$gte": to_micros(f.since)}})
    if f.until:
        clauses.append({"created_at": {"$lte": to_micros(f.until)}})
    for name in ("agent_id", "session_id", "project_id"):
        value = getattr(f, name)
        if value is not None:
            clauses.append({name: value})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
