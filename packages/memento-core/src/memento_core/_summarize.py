"""Summaries of conversations: the ``Summarizer`` protocol and an offline extractive default.

``ExtractiveSummarizer`` picks the most central sentences and prints them in their original
order, each with its speaker. A sentence's centrality is the sum of its cosine similarities
(TF-IDF over stemmed keywords) to every other sentence — LexRank's degree centrality, which for
unit vectors is one dot product with the sum of all of them, so it stays linear in the text.
A sentence too close to one already chosen is skipped, so the summary does not repeat itself.
An LLM summarizer is any object with the same ``summarize`` method.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memento_core._candidate_index import tokenize
from memento_core._messages import Message, Role
from memento_core.errors import InvalidInput

__all__ = ["ExtractiveSummarizer", "Summarizer", "message_text"]

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
MAX_SENTENCE_CHARS = 300


@runtime_checkable
class Summarizer(Protocol):
    """Turns a conversation (messages, oldest first) or plain texts into one summary text."""

    def summarize(self, items: Sequence[Message | str]) -> str:
        """A non-empty, readable summary of ``items``; raise ``InvalidInput`` if they hold no
        text at all."""
        ...


def message_text(message: Message) -> str:
    """What a message says, as text: its content, or the tools it calls when it has none."""
    if message.content.strip():
        return message.content
    if message.tool_calls:
        return "calls " + ", ".join(call.name for call in message.tool_calls)
    return ""


class ExtractiveSummarizer:
    """Offline extractive summaries: up to ``max_sentences`` central sentences, ``max_chars``."""

    def __init__(
        self, *, max_sentences: int = 6, max_chars: int = 1_500, redundancy: float = 0.6
    ) -> None:
        if max_sentences < 1 or max_chars < 40:
            raise InvalidInput("max_sentences must be ≥ 1 and max_chars ≥ 40")
        self.max_sentences = max_sentences
        self.max_chars = max_chars
        self.redundancy = redundancy

    def summarize(self, items: Sequence[Message | str]) -> str:
        sentences = _sentences(items)
        if not sentences:
            raise InvalidInput("there is no text to summarize")
        vectors = _unit_vectors([tokenize(text) for _, text in sentences])
        total: dict[str, float] = {}
        for vector in vectors:
            for term, weight in vector.items():
                total[term] = total.get(term, 0.0) + weight
        scores = [_dot(v, total) - (1.0 if v else 0.0) for v in vectors]
        order = sorted(range(len(sentences)), key=lambda n: (-scores[n], n))
        chosen: list[int] = []
        length = 0
        for n in order:
            if len(chosen) == self.max_sentences:
                break
            if any(_dot(vectors[n], vectors[c]) > self.redundancy for c in chosen):
                continue
            line = _line(sentences[n])
            if chosen and length + len(line) + 1 > self.max_chars:
                continue
            chosen.append(n)
            length += len(line) + 1
        return "\n".join(_line(sentences[n]) for n in sorted(chosen))[: self.max_chars]


def _sentences(items: Sequence[Message | str]) -> list[tuple[str, str]]:
    """(speaker, sentence) pairs; system messages are instructions, not events, and are left out."""
    found: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, Message):
            if item.role is Role.SYSTEM:
                continue
            speaker, text = item.name or item.role.value, message_text(item)
        elif isinstance(item, str):
            speaker, text = "", item
        else:
            raise InvalidInput(f"can only summarize messages and text, got {type(item).__name__}")
        for sentence in _SENTENCE_END.split(text):
            sentence = sentence.strip()
            if sentence:
                if len(sentence) > MAX_SENTENCE_CHARS:
                    sentence = sentence[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"
                found.append((speaker, sentence))
    return found


def _unit_vectors(documents: list[list[str]]) -> list[dict[str, float]]:
    frequency: Counter[str] = Counter()
    for terms in documents:
        frequency.update(set(terms))
    count = len(documents)
    vectors: list[dict[str, float]] = []
    for terms in documents:
        weights = {
            term: (1.0 + math.log(tf)) * (1.0 + math.log(count / frequency[term]))
            for term, tf in Counter(terms).items()
        }
        norm = math.sqrt(sum(w * w for w in weights.values()))
        vectors.append({t: w / norm for t, w in weights.items()} if norm else {})
    return vectors


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(weight * b.get(term, 0.0) for term, weight in a.items())


def _line(sentence: tuple[str, str]) -> str:
    speaker, text = sentence
    return f"{speaker}: {text}" if speaker else text
