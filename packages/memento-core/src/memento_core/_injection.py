"""Memory injection: the memories relevant to a query, packed into a token budget.

``memory_injection`` recalls the best memories for a query and writes them, best first, as the
text of one system message; each memory injected counts as a use (ranking's usage signal).
Memories go in whole while they fit; the first that does not is compressed — its sentences that
share the most words with the query, in their original order, cut at a word boundary if one
sentence is still too long — and packing stops there. The budget is measured on the whole
system message (text plus ``MESSAGE_OVERHEAD``) with the same token counter the chat window
uses, and it is checked on the final text, so it is never exceeded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memento_core._candidate_index import tokenize
from memento_core._filters import RecallFilter
from memento_core._messages import Message
from memento_core._model import MemoryItem, MemoryType, Scope, utcnow
from memento_core._retrieval import recall
from memento_core._tokens import MESSAGE_OVERHEAD, TokenCounter, count_message, default_counter
from memento_core.errors import InvalidInput

if TYPE_CHECKING:
    from memento_core._engine import Engine

__all__ = ["HEADER", "InjectedMemory", "Injection", "memory_injection"]

HEADER = "Relevant memories (most relevant first):"
ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


@dataclass(frozen=True)
class InjectedMemory:
    """One memory as injected; ``content`` is what the text holds (shortened if ``compressed``)."""

    id: str
    type: MemoryType
    content: str
    score: float
    created_at: datetime
    compressed: bool


@dataclass(frozen=True)
class Injection:
    """The injected text (empty when nothing fits or nothing was found) and what it holds."""

    text: str
    items: tuple[InjectedMemory, ...]
    tokens: int
    """Tokens of ``message()``: the text plus the per-message overhead (0 when empty)."""
    budget: int

    def message(self) -> Message | None:
        """The text as a system message, or ``None`` when there is nothing to inject."""
        return Message.system(self.text) if self.text else None


def memory_injection(
    engine: Engine,
    query: str,
    *,
    token_budget: int = 1200,
    scope: Scope | None = None,
    counter: TokenCounter | None = None,
    limit: int = 10,
    filter: RecallFilter | Mapping[str, Any] | None = None,
) -> Injection:
    """The top ``limit`` memories for ``query`` that ``scope`` may see, within ``token_budget``."""
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise InvalidInput(f"token_budget must be a whole number ≥ 1, got {token_budget!r}")
    chosen = counter or default_counter()
    # The default (WordPiece) count of lines joined by newlines is the sum of theirs: it
    # splits at whitespace first. So each line is counted once, not the whole text again at
    # every step (a tenth of an injection's time at 10 memories); other counters count the text.
    line_tokens: dict[str, int] = {}

    def size(lines: list[str]) -> int:
        if counter is not None:
            return count_message(Message.system("\n".join(lines)), chosen)
        for line in lines:
            if line not in line_tokens:
                line_tokens[line] = chosen.count(line)
        return MESSAGE_OVERHEAD + sum(line_tokens[line] for line in lines)

    recalled = recall(
        engine,
        query,
        scope=scope,
        limit=limit,
        filter=filter,
        weights=None,
        min_relevance=0.0,
        now=None,
    )
    moment = utcnow()
    lines = [HEADER]
    items: list[InjectedMemory] = []
    for found in recalled if size(lines) <= token_budget else []:
        item = found.item

        def fits(text: str, item: MemoryItem = item) -> bool:
            return size([*lines, _line(item, text)]) <= token_budget

        content = " ".join(item.content.split())
        compressed = not fits(content)
        if compressed:
            content = _compress(content, query, fits)
        if not content:
            break
        lines.append(_line(item, content))
        items.append(
            InjectedMemory(item.id, item.type, content, found.score, item.created_at, compressed)
        )
        if compressed:
            break
    while items and size(lines) > token_budget:  # a counter that is not additive over lines
        lines.pop()
        items.pop()
    if not items:
        return Injection("", (), 0, token_budget)
    if engine.track_usage:  # what goes into a prompt is used; what was only recalled is not
        injected = {i.id for i in items}
        engine.usage.record([r.item for r in recalled if r.item.id in injected], moment)
    text = "\n".join(lines)
    return Injection(text, tuple(items), count_message(Message.system(text), chosen), token_budget)


def _line(item: MemoryItem, content: str) -> str:
    return f"- [{item.type.value}, {item.created_at:%Y-%m-%d}] {content}"


def _compress(content: str, query: str, fits: Callable[[str], bool]) -> str:
    """The query's most relevant sentences of ``content`` that fit, or a cut sentence, or ''."""
    sentences = [s.strip() for s in _SENTENCE_END.split(content) if s.strip()]
    wanted = set(tokenize(query))
    overlap = [len(wanted & set(tokenize(sentence))) for sentence in sentences]
    order = sorted(range(len(sentences)), key=lambda n: (-overlap[n], n))
    kept: list[int] = []
    for n in order:
        if kept and overlap[n] == 0 and overlap[order[0]] > 0:
            break  # sentences that share no word with the query only pad
        trial = sorted([*kept, n])
        if fits(_join(sentences, trial)):
            kept = trial
        elif not kept:
            break  # the best sentence alone is too long: cut it below
    if kept:
        return _join(sentences, kept)
    words = sentences[order[0]].split() if sentences else []
    low, high = 0, len(words)
    while low < high:  # the most words of the best sentence that fit, with an ellipsis
        middle = (low + high + 1) // 2
        if fits(" ".join(words[:middle]) + ELLIPSIS):
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]) + ELLIPSIS if low else ""


def _join(sentences: list[str], chosen: list[int]) -> str:
    parts: list[str] = []
    for position, n in enumerate(chosen):
        if position and chosen[position - 1] != n - 1:
            parts.append(ELLIPSIS)
        parts.append(sentences[n])
    if chosen and chosen[-1] != len(sentences) - 1:
        parts.append(ELLIPSIS)
    return " ".join(parts)
