"""How a LangGraph namespace and key map onto one Memento memory.

One item ``(namespace, key)`` is one memory:

- **id**: ``"lgs-"`` + a hash of the store's project, the namespace and the key, so a put
  replaces the memory in place (Memento keeps its ``created_at`` and sets ``updated_at``).
- **scope**: ``user_id`` is the namespace label at ``user_label``. The default, ``"auto"``,
  follows both usual conventions: the first label — LangGraph's ``(user_id, "memories")`` —
  unless the first label is ``"memories"`` and a second follows — LangMem's
  ``("memories", user_id)`` —, then the second. An int picks a position; ``None`` means no
  user. A one-label namespace ``(user_id,)`` is that user's too. A label that LangGraph allows
  but a Memento scope value does not (a control character such as a trailing newline, only
  whitespace, more than 256 characters), or one starting with core's reserved ``"adapter:"``
  or with ``"lg-user-"`` itself, is stored as ``"lg-user-"`` + a hash of the label, so every
  valid LangGraph namespace can be written and no two labels share a user. ``project_id`` is
  the store's **home**: its ``project_id`` (default ``"langgraph"``) reserved for adapters,
  ``"adapter:langgraph"``; privacy is ``team``. A namespace without a user is the store's
  own: its user is the home too.
- **who sees an item**: the store, which reads as its home project (``viewer()``), sees every
  item; a recall for a user sees that user's items and nobody else's; ``erase_user`` erases
  them. Nobody else does. Why a reserved project rather than private items: the store must
  rank and list every user's items at once (``search(("memories",), query=...)`` spans users),
  and core ranks only what a viewer may see — a project is the one way a viewer sees many
  users' memories. Before, that project was the plain ``"langgraph"``, so any viewer naming it
  (``recall(scope=Scope(project_id="langgraph"))``, ``memento-mcp-server --project
  langgraph``, the CLI's ``--project langgraph``, a gateway space of that name) saw every
  user's items. Core's front ends refuse scope values starting with ``"adapter:"``
  (``memento_core.check_claimable``), so the home can be named only by the application
  itself, through core's API.
- **moving old items**: ids hash the store's ``project_id``, not its home, so items stored
  the old way (team memories of the plain project) are rewritten into the home under their
  ids, once per store and project, when a writable store opens (``_migration``).
- **tags**: one per namespace prefix, the root included (``lg:ns:``, ``lg:ns:memories``,
  ``lg:ns:memories.alice``: labels cannot hold ``.``, so the join is unambiguous; a prefix too
  long for a tag is hashed, ``lg:ns#…``), plus ``lg:indexed`` when the item was embedded.
  Searching a namespace prefix is then a tag filter that core pushes into the Chroma query.
- **origin_trace**: ``{"langgraph_store": {"namespace": [...], "key": ...}}``, which is how an
  item is read back (hashed tags cannot be reversed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from langgraph.store.base import InvalidNamespaceError, MatchCondition

from memento_core import (
    ADAPTER_PREFIX,
    InvalidScope,
    MemoryItem,
    Scope,
    adapter_scope_value,
)

__all__ = ["INDEXED_TAG", "NamespaceMapping", "matches_condition", "user_id_for"]

INDEXED_TAG = "lg:indexed"
"""Carried by items whose fields were embedded; unindexed items never take part in ranking."""
TRACE_KEY = "langgraph_store"
MAX_TAG_CHARS = 128
MAX_DEPTH = 62
"""Deepest namespace: Memento allows 64 tags, one per prefix plus the root and ``lg:indexed``."""


@dataclass(frozen=True)
class NamespaceMapping:
    """Namespace ↔ scope and tags, for one store (see the module docstring)."""

    project_id: str = "langgraph"
    user_label: int | Literal["auto"] | None = "auto"

    def __post_init__(self) -> None:
        adapter_scope_value(self.project_id)  # a bad project id fails here, not at a put

    @cached_property
    def home(self) -> str:
        """The project the items live in: ``project_id`` reserved for this adapter
        (``"adapter:langgraph"``), which no front end lets a caller claim."""
        return adapter_scope_value(self.project_id)

    def memory_id(self, namespace: Sequence[str], key: str) -> str:
        # NUL cannot occur in a label and the key comes last, so joining is unambiguous while
        # no label holds the separator; one that does is hashed as JSON behind a prefix no
        # joined form starts with (a project id holds no control character).
        if any("\x1e" in label for label in namespace):
            raw = "\x1f" + json.dumps([self.project_id, list(namespace), key])
        else:
            raw = "\x00".join([self.project_id, *namespace]) + "\x1e" + key
        return "lgs-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:40]

    def user_position(self, namespace: Sequence[str]) -> int | None:
        if self.user_label != "auto":
            return self.user_label
        return 1 if len(namespace) > 1 and namespace[0] == "memories" else 0

    def scope(self, namespace: Sequence[str]) -> Scope:
        """The namespace's user (the store itself when it names none) in the store's home."""
        user = self.home
        position = self.user_position(namespace)
        if position is not None and len(namespace) > position:
            user = user_id_for(namespace[position])
        return Scope(user_id=user, project_id=self.home)

    def viewer(self) -> Scope:
        """The scope the store reads as: every team item of its home project."""
        return Scope(project_id=self.home)

    def tags(self, namespace: Sequence[str], *, indexed: bool) -> list[str]:
        if len(namespace) > MAX_DEPTH:
            raise InvalidNamespaceError(
                f"namespace {tuple(namespace)} has {len(namespace)} labels; "
                f"MementoStore keeps at most {MAX_DEPTH}"
            )
        tags = [prefix_tag(namespace[:depth]) for depth in range(len(namespace) + 1)]
        return [*tags, INDEXED_TAG] if indexed else tags

    def trace(self, namespace: Sequence[str], key: str) -> dict[str, Any]:
        return {TRACE_KEY: {"namespace": list(namespace), "key": key}}

    def address(self, item: MemoryItem) -> tuple[tuple[str, ...], str] | None:
        """The ``(namespace, key)`` of one of this store's items; None for any other memory."""
        if item.scope.project_id != self.home:
            return None
        return self.traced_address(item)

    def traced_address(self, item: MemoryItem) -> tuple[tuple[str, ...], str] | None:
        """The ``(namespace, key)`` the memory's origin trace names, if its id is the id of that
        address — whatever project it lives in (items stored before the store had its home)."""
        if not isinstance(item.origin_trace, Mapping):
            return None
        trace = item.origin_trace.get(TRACE_KEY)
        if not isinstance(trace, Mapping):
            return None
        namespace, key = tuple(trace.get("namespace") or ()), trace.get("key")
        if not namespace or not isinstance(key, str):
            return None
        if self.memory_id(namespace, key) != item.id:
            return None
        return namespace, key


HASHED_USER = "lg-user-"
"""The prefix of a user id made from a hashed label; no label maps to such an id as itself."""


def user_id_for(label: str) -> str:
    """The Memento user id of a namespace's user label: the label itself when Memento accepts
    it as a scope value a caller may claim, else ``"lg-user-"`` + a hash of it (one label, one
    id)."""
    try:
        Scope(user_id=label)
        if label.startswith(ADAPTER_PREFIX):
            raise InvalidScope(label)  # reserved: it could name the store's own home
        if label.startswith(HASHED_USER):
            # Hashed too: a label spelling another label's hash would otherwise be its user.
            raise InvalidScope(label)
    except InvalidScope:
        digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return HASHED_USER + digest
    return label


def prefix_tag(prefix: Sequence[str]) -> str:
    joined = ".".join(prefix)
    tag = "lg:ns:" + joined
    if len(tag) <= MAX_TAG_CHARS:
        return tag
    return "lg:ns#" + hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A prefix or suffix pattern, where ``"*"`` stands for any one label."""
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    if condition.match_type == "prefix":
        part = namespace[: len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path) :]
    else:
        raise ValueError(f"unknown namespace match type {condition.match_type!r}")
    return all(want in ("*", label) for want, label in zip(path, part))
