"""Summaries of conversations: the ``Summarizer`` protocol and an offline extractive default.

``ExtractiveSummarizer`` picks the sentences that carry the most information and prints them in
their original order, each with its speaker. A sentence's worth is the rarity (inverse sentence
frequency, over stemmed keywords) of the terms it adds that no chosen sentence holds yet, with a
bonus for names and numbers and dates, per square root of its length; a little centrality (the
sentence's TF-IDF similarity to the whole text) breaks near-ties towards the topic. Rarity rather
than centrality alone: a chat's most central sentences are its pleasantries ("Great choices",
"Thanks!"), its facts ("I'm vegetarian") are said once. Filler (``is_filler``) never makes a
line of its own. An LLM summarizer is any object with the same ``summarize`` method.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memento_core._candidate_index import tokenize
from memento_core._messages import Message, Role
from memento_core.errors import InvalidInput

__all__ = ["ExtractiveSummarizer", "Summarizer", "is_filler", "message_text"]

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
MAX_SENTENCE_CHARS = 300
_FILLER_PHRASES = sorted(
    {
        "ok",
        "okay",
        "k",
        "kk",
        "alright",
        "all right",
        "sure thing",
        "got it",
        "noted",
        "thanks",
        "thank you",
        "thanks a lot",
        "thank you so much",
        "thanks so much",
        "many thanks",
        "thx",
        "ty",
        "cheers",
        "you're welcome",
        "youre welcome",
        "no problem",
        "np",
        "hi",
        "hello",
        "hey",
        "hi there",
        "hello there",
        "hey there",
        "good morning",
        "good afternoon",
        "good evening",
        "bye",
        "goodbye",
        "bye bye",
        "see you",
        "good night",
        "great",
        "cool",
        "nice",
        "awesome",
        "perfect",
        "wonderful",
        "excellent",
        "sounds good",
        "lol",
        "haha",
        "that's all",
        "thats all",
        "that is all",
        "have a great day",
        "have a nice day",
        "have a great trip",
        "have a good one",
    },
    key=len,
    reverse=True,
)
_NOT_WORD = re.compile(r"[^\w' ]+")
_WORD = re.compile(r"\w+")
# A sentence's worth: rarity of new terms, plus this much per name or number it holds.
_NAME_OR_NUMBER_BONUS = 1.0
_CENTRALITY_WEIGHT = 1.0
_USER_WEIGHT = 1.5
_SELF_WEIGHT = 1.3
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|we|we're|our|us)\b", re.IGNORECASE)
_QUESTION_WEIGHT = 0.7


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
    """Offline extractive summaries: the ``max_sentences`` most informative sentences."""

    def __init__(
        self, *, max_sentences: int = 6, max_chars: int = 1_500, redundancy: float = 0.6
    ) -> None:
        if max_sentences < 1 or max_chars < 40:
            raise InvalidInput("max_sentences must be ≥ 1 and max_chars ≥ 40")
        self.max_sentences = max_sentences
        self.max_chars = max_chars
        self.redundancy = redundancy

    def summarize(self, items: Sequence[Message | str]) -> str:
        every = _sentences(items)
        if not every:
            raise InvalidInput("there is no text to summarize")
        terms = [tokenize(text) for _, text in every]
        # Filler and term-less sentences make no line, unless there is nothing else.
        keep = [n for n, (_, text) in enumerate(every) if terms[n] and not is_filler(text)]
        if not keep:
            return _line(every[0])[: self.max_chars]
        sentences = [every[n] for n in keep]
        terms = [terms[n] for n in keep]
        rarity = _rarity(terms)
        vectors = _unit_vectors(terms)
        total: dict[str, float] = {}
        for vector in vectors:
            for term, weight in vector.items():
                total[term] = total.get(term, 0.0) + weight
        central = [max(0.0, _dot(v, total) - 1.0) for v in vectors]
        top = max(central) or 1.0
        bonus = [_NAME_OR_NUMBER_BONUS * _names_and_numbers(text) for _, text in sentences]
        stance = [_stance(speaker, text) for speaker, text in sentences]
        covered: set[str] = set()
        chosen: list[int] = []
        length = 0
        candidates = set(range(len(sentences)))
        while candidates and len(chosen) < self.max_sentences:

            def worth(n: int) -> float:
                # Summed in a fixed order: a set's order changes with the process's hash seed,
                # and float sums with it, so ties would break differently in another process.
                fresh = sorted(set(terms[n]) - covered)
                gain = (sum(rarity[t] for t in fresh) + bonus[n]) * stance[n]
                spread = math.sqrt(max(4, len(terms[n])))
                return gain / spread + _CENTRALITY_WEIGHT * central[n] / top

            best = max(sorted(candidates), key=worth)
            candidates.discard(best)
            if not set(terms[best]) - covered:
                continue  # says nothing new
            if any(_dot(vectors[best], vectors[c]) > self.redundancy for c in chosen):
                continue
            line = _line(sentences[best])
            if chosen and length + len(line) + 1 > self.max_chars:
                continue
            chosen.append(best)
            covered.update(terms[best])
            length += len(line) + 1
        return "\n".join(_line(sentences[n]) for n in sorted(chosen))[: self.max_chars]


def is_filler(text: str) -> bool:
    """Whether ``text`` is only pleasantries: greetings, thanks, acknowledgements ("ok great",
    "Thanks!", "Hi there 👋"). A bare yes or no answers something, so it is not filler."""
    plain = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    rest = " ".join(_NOT_WORD.sub(" ", plain).split())
    if not rest:
        return bool(text.strip())  # only emoji or punctuation
    while rest:
        for phrase in _FILLER_PHRASES:
            if rest == phrase or rest.startswith(phrase + " "):
                rest = rest[len(phrase) :].strip()
                break
        else:
            return False
    return True


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


def _rarity(documents: list[list[str]]) -> dict[str, float]:
    """Each term's inverse sentence frequency: a term said once weighs most."""
    frequency: Counter[str] = Counter()
    for terms in documents:
        frequency.update(dict.fromkeys(terms, 1))  # in text order: sums stay the same everywhere
    count = len(documents) + 1
    return {term: math.log(count / df) + 0.1 for term, df in frequency.items()}


def _stance(speaker: str, text: str) -> float:
    """What the user says weighs more than the assistant's replies, and most when it is about
    themselves ("my mother", "I'm vegetarian"): the user's facts and wishes are what a memory
    is for. A question states less than an answer."""
    weight = 1.0
    if speaker == Role.USER.value:
        weight = _USER_WEIGHT
        if _FIRST_PERSON.search(text):
            weight *= _SELF_WEIGHT
    return weight * (_QUESTION_WEIGHT if text.rstrip().endswith(("?", "？")) else 1.0)


def _names_and_numbers(text: str) -> int:
    """Capitalised words past a sentence's first, and words with digits: names, dates, sums."""
    words = _WORD.findall(text)
    found = sum(1 for w in words if any(c.isdigit() for c in w))
    found += sum(1 for w in words[1:] if w[:1].isupper() and w != "I")
    return found


def _unit_vectors(documents: list[list[str]]) -> list[dict[str, float]]:
    frequency: Counter[str] = Counter()
    for terms in documents:
        frequency.update(dict.fromkeys(terms, 1))  # in text order: sums stay the same everywhere
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
