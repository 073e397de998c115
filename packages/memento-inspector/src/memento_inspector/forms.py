"""Query strings and form fields read into core's arguments, every value checked: a bad value
is an ``InvalidInput`` naming the field, before anything is read or changed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from memento_core import (
    MAX_CONTENT_CHARS,
    InvalidFilter,
    InvalidInput,
    MemoryType,
    Privacy,
    RankingWeights,
    check_scope_value,
    parse_enum,
)

PAGE_SIZE = 50
MAX_TAG_CHARS = 128
"""Core's limit on a tag."""
MAX_QUERY_CHARS = 2_000
"""Longest search query taken: a query is embedded and tokenised whole."""
MAX_REPLY_CHARS = 20_000
"""Longest reply the hotword tester takes."""
MAX_PAGE_NUMBER = 100_000
SEARCH_LIMITS = (5, 10, 20, 50)
WEIGHT_NAMES = ("relevance", "recency", "importance", "usage", "context", "expansion")
STATES = ("live", "forgotten", "expired", "all")
ORDERS = ("newest", "oldest", "importance")
YES_NO = {"": None, "yes": True, "no": False}


@dataclass(frozen=True)
class BrowseQuery:
    """The browse page's filters, as given (for the form) and as core's arguments."""

    user: str | None
    type: str | None
    privacy: str | None
    tags: tuple[str, ...]
    pinned: bool | None
    state: str
    since: datetime | None
    until: datetime | None
    order: str
    page: int

    def link(self, **changes: Any) -> str:
        """This query as a query string, with ``changes`` (for the pager)."""
        from urllib.parse import urlencode

        values = {
            "user": self.user or "",
            "type": self.type or "",
            "privacy": self.privacy or "",
            "tags": ",".join(self.tags),
            "pinned": {None: "", True: "yes", False: "no"}[self.pinned],
            "state": self.state,
            "since": f"{self.since:%Y-%m-%d}" if self.since else "",
            "until": f"{self.until:%Y-%m-%d}" if self.until else "",
            "order": self.order,
            "page": self.page,
            **changes,
        }
        return urlencode({k: v for k, v in values.items() if v not in ("", None)})


def _choice(value: str, allowed: tuple[str, ...] | Mapping[str, Any], what: str) -> str:
    if value not in allowed:
        raise InvalidFilter(f"unknown {what} {value!r}; expected one of {', '.join(allowed)}")
    return value


def _day(value: str, what: str, *, end: bool = False) -> datetime | None:
    if not value:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        raise InvalidFilter(f"{what} must be a date as YYYY-MM-DD, got {value!r}") from None
    return day + timedelta(days=1, microseconds=-1) if end else day


def whole_number(value: str, what: str, *, low: int, high: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise InvalidInput(f"{what} must be a whole number, got {value!r}") from None
    if not low <= number <= high:
        raise InvalidInput(f"{what} must be from {low} to {high}, got {number}")
    return number


def tag_list(value: str) -> tuple[str, ...]:
    tags = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
    for tag in tags:
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidFilter(f"tag {tag[:20]!r}… is longer than {MAX_TAG_CHARS} characters")
    return tags


def browse_query(params: Mapping[str, str]) -> BrowseQuery:
    kind = params.get("type", "")
    privacy = params.get("privacy", "")
    if kind:
        parse_enum(MemoryType, kind, "memory type")
    if privacy:
        parse_enum(Privacy, privacy, "privacy")
    since = _day(params.get("since", ""), "since")
    until = _day(params.get("until", ""), "until", end=True)
    if since and until and since > until:
        raise InvalidFilter("since is after until")
    return BrowseQuery(
        user=check_scope_value(params.get("user") or None, "user filter"),
        type=kind or None,
        privacy=privacy or None,
        tags=tag_list(params.get("tags", "")),
        pinned=YES_NO[_choice(params.get("pinned", ""), YES_NO, "pinned value")],
        state=_choice(params.get("state", "live"), STATES, "state"),
        since=since,
        until=until,
        order=_choice(params.get("order", "newest"), ORDERS, "order"),
        page=whole_number(params.get("page", "1"), "page", low=1, high=MAX_PAGE_NUMBER),
    )


def weights_from(params: Mapping[str, str], base: RankingWeights) -> RankingWeights:
    """The store's weights with those the page set (``w_relevance=0.7``...)."""
    changes: dict[str, float] = {}
    for name in WEIGHT_NAMES:
        raw = params.get(f"w_{name}", "")
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            raise InvalidInput(f"weight {name} must be a number, got {raw!r}") from None
        if not math.isfinite(value) or not 0 <= value <= 10:
            raise InvalidInput(f"weight {name} must be from 0 to 10, got {raw!r}")
        changes[name] = value
    return base.replace(**changes)


def query_text(value: str, what: str = "query", *, limit: int = MAX_QUERY_CHARS) -> str:
    if len(value) > limit:
        raise InvalidInput(f"the {what} is {len(value)} characters; the most taken is {limit}")
    return value


def importance(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"importance must be a number from 0 to 1, got {value!r}") from None
    if not 0 <= number <= 1:
        raise InvalidInput(f"importance must be from 0 to 1, got {value!r}")
    return number


def content(value: str) -> str:
    if not value.strip():
        raise InvalidInput("content is empty")
    if len(value) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"content is {len(value)} characters; the maximum is {MAX_CONTENT_CHARS}"
        )
    return value
