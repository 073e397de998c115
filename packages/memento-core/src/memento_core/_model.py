"""The data model: memory items, scopes, links and feedback events, validated on construction."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from memento_core.errors import InvalidContent, InvalidInput, InvalidScope

MAX_CONTENT_CHARS = 32_000
"""Longest content accepted, in characters; longer text should be split before remembering."""

MAX_SCOPE_CHARS = 256
MAX_TAG_CHARS = 128
MAX_TAGS = 64
_CONTROL_OR_SURROGATE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Unicode categories Cc and Cs, spelled out: scope values are checked on every read."""


class MemoryType(str, enum.Enum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class Privacy(str, enum.Enum):
    PRIVATE = "private"
    """Visible only to its own user."""
    TEAM = "team"
    """Visible to everyone in the same project."""
    PUBLIC = "public"
    """Visible to everyone in the store."""


class LinkType(str, enum.Enum):
    CAUSE_OF = "cause_of"
    DERIVED_FROM = "derived_from"
    DUPLICATES = "duplicates"
    CONTRADICTS = "contradicts"


class FeedbackKind(str, enum.Enum):
    USED = "used"
    EDITED = "edited"
    NEGLECTED = "neglected"
    HELPFUL = "helpful"
    NOT_HELPFUL = "not_helpful"


def parse_enum(kind: type[enum.Enum], value: object, what: str) -> Any:
    """Turn a string (or an enum member) into ``kind``, naming the allowed values on failure."""
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise InvalidInput(f"unknown {what} {value!r}; expected one of {allowed}") from None


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


MAX_YEAR = 9000
"""Later times are refused: schedules add years to them, and a datetime ends at 9999."""


def as_utc(value: datetime, what: str = "timestamp") -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to it."""
    if not isinstance(value, datetime):
        raise InvalidInput(f"{what} must be a datetime, got {type(value).__name__}: {value!r}")
    try:
        utc = (
            value.replace(tzinfo=timezone.utc)
            if value.tzinfo is None
            else value.astimezone(timezone.utc)
        )
    except OverflowError:
        utc = None
    if utc is None or not 1 < utc.year <= MAX_YEAR:
        raise InvalidInput(f"{what} must be between the years 2 and {MAX_YEAR}, got {value!r}")
    return utc


def check_validity(
    valid_from: datetime | None, valid_to: datetime | None
) -> tuple[datetime | None, datetime | None]:
    """``valid_from`` / ``valid_to`` as UTC, refusing an end at or before the start."""
    start = as_utc(valid_from, "valid_from") if valid_from is not None else None
    end = as_utc(valid_to, "valid_to") if valid_to is not None else None
    if start is not None and end is not None and end <= start:
        raise InvalidInput(
            f"valid_to ({end.isoformat()}) must be after valid_from ({start.isoformat()})"
        )
    return start, end


def check_text(value: object, what: str, *, max_chars: int = MAX_CONTENT_CHARS) -> str:
    """Validate free text: a non-blank ``str`` of valid Unicode within ``max_chars``."""
    if not isinstance(value, str):
        raise InvalidContent(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidContent(f"{what} is empty or only whitespace")
    if len(value) > max_chars:
        raise InvalidContent(f"{what} is {len(value)} characters; the maximum is {max_chars}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InvalidContent(
            f"{what} holds a lone surrogate at position {err.start}; it is not valid Unicode"
        ) from err
    return value


def check_scope_value(value: object, what: str) -> str | None:
    """A scope or filter value must be a plain string: a dict could smuggle an operator."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidScope(f"{what} must be a string, got {type(value).__name__}: {value!r}")
    if not value or not value.strip():
        raise InvalidScope(f"{what} is empty; leave it out instead")
    if len(value) > MAX_SCOPE_CHARS:
        raise InvalidScope(f"{what} is longer than {MAX_SCOPE_CHARS} characters")
    if _CONTROL_OR_SURROGATE.search(value):
        raise InvalidScope(f"{what} holds a control character or lone surrogate: {value!r}")
    return value


ADAPTER_PREFIX = "adapter:"
"""Scope values that start with it are reserved for adapters' own memories (a LangGraph
store's items are team memories of the project ``adapter:langgraph``): the front ends that
take a scope from outside the application — the CLI, the MCP server, the gateway — refuse them
(``check_claimable``), so naming a project reaches no adapter's records."""


def adapter_scope_value(name: str) -> str:
    """``name`` reserved for an adapter: ``"adapter:" + name``, checked as a scope value."""
    value = ADAPTER_PREFIX + check_text(name, "an adapter's scope name", max_chars=MAX_SCOPE_CHARS)
    check_scope_value(value, "an adapter's scope value")
    return value


def check_claimable(scope: Scope) -> Scope:
    """``scope`` if a caller from outside the application may claim it: ``InvalidScope`` when
    its user or project is reserved for adapters (``ADAPTER_PREFIX``)."""
    for name in ("user_id", "project_id"):
        value = getattr(scope, name)
        if value is not None and value.startswith(ADAPTER_PREFIX):
            raise InvalidScope(
                f"{name} {value!r} is reserved for adapters' own records "
                f"(values starting with {ADAPTER_PREFIX!r} cannot be claimed)"
            )
    return scope


def check_tags(tags: Iterable[object] | None) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        raise InvalidInput("tags must be a list of strings, not one string")
    if isinstance(tags, (bytes, Mapping)) or not isinstance(tags, Iterable):
        # A dict would pass its keys off as tags: {"$ne": 1} must not become the tag "$ne".
        raise InvalidInput(f"tags must be a list of strings, got {type(tags).__name__}")
    result: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInput(f"every tag must be a non-empty string, got {tag!r}")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"tag {tag[:20]!r}… is longer than {MAX_TAG_CHARS} characters")
        check_text(tag, "a tag", max_chars=MAX_TAG_CHARS)
        if tag not in result:
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise InvalidInput(f"{len(result)} tags given; at most {MAX_TAGS} are allowed")
    return tuple(result)


def finite_number(value: object) -> float | None:
    """``value`` as a float if it is a finite real number (not a bool), else None. An int too
    large for a float counts as not finite instead of raising ``OverflowError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def check_importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"importance must be a number from 0 to 1, got {value!r}")
    if not 0.0 <= value <= 1.0:  # NaN fails the comparison; a huge int compares exactly
        raise InvalidInput(f"importance must be from 0 to 1, got {value!r}")
    # Kept exactly (the stored record's JSON carries it, see ``item_metadata``).
    return float(value)


def check_json(value: object, what: str) -> Any:
    """Payloads must survive a JSON round trip unchanged (so exports are lossless)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as err:
        raise InvalidInput(f"{what} must be JSON-serialisable: {err}") from err
    return json.loads(text)


@dataclass(frozen=True)
class Scope:
    """Who a memory belongs to, and who is asking.

    ``user_id`` and ``project_id`` decide visibility (see ``Privacy``); ``agent_id`` and
    ``session_id`` record where a memory came from.
    """

    user_id: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        for name in ("user_id", "agent_id", "project_id", "session_id"):
            check_scope_value(getattr(self, name), name)

    def with_session(self, session_id: str | None) -> Scope:
        return dataclasses.replace(self, session_id=session_id)

    def as_dict(self) -> dict[str, str | None]:
        return dataclasses.asdict(self)


def normalise_content(content: str) -> str:
    return unicodedata.normalize("NFC", content).strip()


def content_key(content: str, scope: Scope) -> str:
    """The deduplication key: identical content in the same scope gives the same id."""
    parts = [scope.user_id, scope.agent_id, scope.project_id, scope.session_id]
    raw = "\x1f".join(p or "" for p in parts) + "\x1e" + normalise_content(content)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class MemoryItem:
    """One memory. Build new ones through ``Memento.remember``; this class is what you get back."""

    id: str
    content: str
    type: MemoryType = MemoryType.EPISODIC
    title: str | None = None
    data: Mapping[str, Any] | None = None
    source: str = "chat"
    scope: Scope = field(default_factory=Scope)
    privacy: Privacy = Privacy.PRIVATE
    importance: float = 0.5
    pinned: bool = False
    tags: tuple[str, ...] = ()
    hotwords: tuple[str, ...] = ()
    created_at: datetime = field(default_factory=utcnow)
    last_accessed_at: datetime | None = None
    expires_at: datetime | None = None
    access_count: int = 0
    feedback: Mapping[str, int] = field(default_factory=dict)
    origin_trace: Any = None
    deleted_at: datetime | None = None
    updated_at: datetime | None = None
    """When a caller last replaced the memory under its id (see ``MemoryDraft.id``)."""
    retention: timedelta | None = None
    """How long the memory lives without use; each use pushes ``expires_at`` out again."""
    review_due_at: datetime | None = None
    review_step: int = 0
    consolidated_at: datetime | None = None
    superseded_by: str | None = None
    """The newer memory that contradicts this one, if any (set by consolidation)."""
    follows: str | None = None
    """The memory stored just before this one in the same scope and about the same time: its
    neighbour in the timeline of an episode (see ``ranking``, temporal contiguity)."""
    valid_from: datetime | None = None
    """When what it says became true (valid time), as distinct from ``created_at``, when it
    was stored; None: from when it was stored (see ``valid_since``)."""
    valid_to: datetime | None = None
    """When what it says stopped being true; None: still true. Sleep sets it on an older
    fact a newer one supersedes; ``update(..., supersede=True)`` on the replaced one."""

    @property
    def valid_since(self) -> datetime:
        """When the memory's validity began: ``valid_from``; without it, when it was stored
        (``created_at``), or always when it was stored after its validity ended."""
        if self.valid_from is not None:
            return self.valid_from
        if self.valid_to is not None and self.valid_to <= self.created_at:
            return datetime.min.replace(tzinfo=timezone.utc)
        return self.created_at

    def valid_at(self, moment: datetime) -> bool:
        """Whether what it says held at ``moment`` (valid time)."""
        return self.valid_since <= moment and (self.valid_to is None or moment < self.valid_to)

    @property
    def user_id(self) -> str | None:
        return self.scope.user_id

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None


@dataclass(frozen=True)
class Link:
    source_id: str
    type: LinkType
    target_id: str
    created_at: datetime = field(default_factory=utcnow)
    note: str | None = None
    made_by: str | None = None
    """The user who made the link (None: the application itself, or a consolidation)."""


@dataclass(frozen=True)
class FeedbackEvent:
    memory_id: str
    kind: FeedbackKind
    score: float = 1.0
    at: datetime = field(default_factory=utcnow)
    note: str | None = None
    by: str | None = None
    """The user who gave it (None: the application itself)."""


def sequence_of(value: object, what: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInput(f"{what} must be a list, got {type(value).__name__}")
    return value
