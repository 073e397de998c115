"""The keyword side of hybrid recall: a tokenizer for Latin and CJK text, and a BM25 index.

Local Chroma has no sparse search, so Memento keeps this index in memory. It is derived data,
loaded from the store in partitions as viewers need them (``_partitions``) and kept in step as
memories come and go.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from memento_core._model import Privacy
from memento_core._vector_rows import VectorRows
from memento_core._visibility import PRIVACY_CODES, Visibility, visible_mask

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memento_core._storage._postings import StoredPostings


@dataclass(frozen=True)
class Elsewhere:
    """BM25 statistics over memories a viewer may see that the index does not hold (the
    partitions searched in the store): how many, each term's document frequency there, and
    their summed length."""

    memories: int
    frequency: Mapping[str, int]
    total_length: float


PER_MEMORY_BYTES = 200
"""Index memory a memory costs besides its vector and postings: its id string, the id → row
entry, the row arrays (measured: about 190 bytes for a 40-character id)."""
COMPACT_MIN_DEAD = 4_096
BASELINE_SKIPS = 10
"""The nearest memories left out of the query's baseline (see ``nearest_and_baseline``)."""
BASELINE_MIN_MEMORIES = 20
"""Memories beyond those needed to estimate it."""

_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff]+"
)

# Function words carry no topic; dropping them keeps BM25 on the words that do.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "don",
        "ll",
        "m",
        "re",
        "ve",
        "d",
        "o",
        "y",
    ]
)


_STEMMERS = threading.local()


def _stemmer() -> Any:
    """This thread's stemmer. A snowball stemmer keeps the word it works on in itself: threads
    sharing one garble each other's stems (or raise ``IndexError``)."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if not word.isascii() or word.isdigit():
        return word
    return str(_stemmer().stemWord(word))


def tokenize(text: str) -> list[str]:
    """Words for BM25: stemmed Latin words without stopwords; CJK runs as character bigrams.

    Korean, Chinese and Japanese don't separate words with spaces (and Korean glues particles
    to nouns), so a CJK run becomes its overlapping two-character pieces: "도손의" gives
    "도손", "손의", and a query for "도손" finds it.
    """
    tokens: list[str] = []
    if text.isascii():  # most text: no normalising to do and no CJK runs to find
        for run in _WORD.findall(text.lower()):
            _latin_tokens(run, tokens)
        return tokens
    for run in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        position = 0
        for cjk in _CJK.finditer(run):
            _latin_tokens(run[position : cjk.start()], tokens)
            _cjk_tokens(cjk.group(), tokens)
            position = cjk.end()
        _latin_tokens(run[position:], tokens)
    return tokens


def _latin_tokens(word: str, out: list[str]) -> None:
    if word and word not in STOPWORDS:
        out.append(_stem(word))


def _cjk_tokens(run: str, out: list[str]) -> None:
    if len(run) == 1:
        out.append(run)
    else:
        out.extend(run[i : i + 2] for i in range(len(run) - 1))


def matched_terms(query: str, text: str) -> list[str]:
    """The query's words (as the query wrote them) whose keywords occur in ``text``."""
    present = set(tokenize(text))
    matched: list[str] = []
    for word in re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", query)):
        if word not in matched and any(t in present for t in tokenize(word)):
            matched.append(word)
    return matched


class CandidateIndex:
    """The in-memory candidate index: BM25 (Okapi) postings and unit vectors over memory ids,
    with visibility pre-filtering.

    The store read that follows is what enforces visibility; the filter here only keeps other
    users' memories from crowding a user's own out of the candidates. Vectors are searched
    exactly (one matrix product): Chroma's filtered vector query costs ~0.5 s at 100k memories,
    because it evaluates the ``where`` over the whole collection.

    BM25's statistics (document count, mean length, document frequencies) are taken over the
    memories the viewer may see, so a score does not depend on which other users' memories
    happen to be loaded (see ``_partitions``).
    """

    # k1 0.9 and b 0.4 are the usual settings for passage-length text (Anserini's defaults);
    # b 0.75 comes from long documents and over-penalises longer, more informative memories.
    def __init__(self, *, k1: float = 0.9, b: float = 0.4) -> None:
        self.k1 = k1
        self.b = b
        self._lock = threading.RLock()
        self._index_of: dict[str, int] = {}
        self._ids: list[str] = []
        self._lengths = array("f")
        self._alive = bytearray()
        self._owner = array("i")
        self._project = array("i")
        self._privacy = array("b")
        self._codes: dict[str, int] = {"": 0}
        self._postings: dict[str, tuple[array[int], array[float]]] = {}
        self._posting_entries = 0
        self._live_count = 0
        self._rows = VectorRows()  # unit vectors by position

    def nbytes(self, *, live: bool = False) -> int:
        """About how much memory the index holds: vectors, postings and per-memory entries
        (ids, positions, visibility), rows removed but not yet compacted included — or, with
        ``live``, what it would hold once compacted (postings pro rata)."""
        with self._lock:
            rows = self._live_count if live else len(self._ids)
            width = 4 * self._rows.width
            postings = 8 * self._posting_entries
            if live and self._ids:
                postings = postings * self._live_count // len(self._ids)
            return rows * (width + PER_MEMORY_BYTES) + postings

    def _code(self, value: str) -> int:
        code = self._codes.get(value)
        if code is None:
            code = self._codes[value] = len(self._codes)
        return code

    def add(self, memory_id: str, text: str, visibility: Visibility, vector: Any) -> None:
        """Index a memory (a memory indexed already is replaced)."""
        self.add_many([(memory_id, text, visibility, vector)])

    def add_many(self, entries: Sequence[tuple[str, str, Visibility, Any]]) -> None:
        """Index these memories (id, text, visibility, vector); one indexed already is
        replaced. Vectors are normalised together: one at a time cost a cold load at 1M
        about as much as its tokenising."""
        import numpy as np

        entries = list({entry[0]: entry for entry in entries}.values())  # the last of an id wins
        if not entries:
            return
        tokenized = [tokenize(text) for _, text, _, _ in entries]
        raw = np.asarray([vector for *_, vector in entries], dtype=np.float32)
        raw = raw.reshape(len(entries), -1)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        units = (raw / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)
        with self._lock:
            for memory_id, *_ in entries:
                self.remove(memory_id)
            position = len(self._ids)
            self._rows.reserve(position + len(entries), units.shape[1])
            self._rows.put(position, units)
            for (memory_id, _, visibility, _), tokens in zip(entries, tokenized):
                self._index_of[memory_id] = position
                self._ids.append(memory_id)
                self._lengths.append(float(len(tokens)))
                self._alive.append(1)
                self._owner.append(self._code(visibility.user_id))
                self._project.append(self._code(visibility.project_id))
                self._privacy.append(PRIVACY_CODES[visibility.privacy])
                counts = _term_counts(tokens)
                for token, count in counts.items():
                    postings = self._postings.get(token)
                    if postings is None:
                        postings = self._postings[token] = (array("i"), array("f"))
                    postings[0].append(position)
                    postings[1].append(float(count))
                self._posting_entries += len(counts)
                self._live_count += 1
                position += 1

    def remove(self, memory_id: str) -> None:
        """Take a memory out (its row stays, dead, until ``compact``)."""
        with self._lock:
            position = self._index_of.pop(memory_id, None)
            if position is not None:
                self._alive[position] = 0
                self._live_count -= 1

    def compact(self, *, force: bool = False) -> None:
        """Drop the rows of removed memories when they are most of the index (or any, with
        ``force``): eviction would otherwise free nothing."""
        import numpy as np

        with self._lock:
            dead = len(self._ids) - self._live_count
            if not dead or (not force and dead < max(self._live_count, COMPACT_MIN_DEAD)):
                return
            keep = np.flatnonzero(np.frombuffer(bytes(self._alive), dtype=np.uint8))
            remap = np.full(len(self._ids), -1, dtype=np.int32)
            remap[keep] = np.arange(keep.size, dtype=np.int32)
            if self._rows.width:
                kept = self._rows.take(keep)
                self._rows = VectorRows()
                self._rows.reserve(keep.size, kept.shape[1])
                self._rows.put(0, kept)
            self._ids = [self._ids[n] for n in keep.tolist()]
            self._index_of = {memory_id: n for n, memory_id in enumerate(self._ids)}
            self._lengths = _kept(self._lengths, keep, np.float32)
            self._owner = _kept(self._owner, keep, np.int32)
            self._project = _kept(self._project, keep, np.int32)
            self._privacy = _kept(self._privacy, keep, np.int8)
            self._alive = bytearray(b"\x01" * keep.size)
            entries = 0
            for token in list(self._postings):
                docs, tf = self._postings[token]
                moved = remap[np.frombuffer(docs, dtype=np.int32)]
                held = moved >= 0
                if not held.any():
                    del self._postings[token]
                    continue
                self._postings[token] = (
                    _as_array("i", moved[held]),
                    _as_array("f", np.frombuffer(tf, dtype=np.float32)[held]),
                )
                entries += int(held.sum())
            self._posting_entries = entries

    def nearest(
        self,
        query_vector: Any,
        *,
        limit: int,
        viewer_user: str | None = None,
        viewer_project: str | None = None,
    ) -> list[tuple[str, float]]:
        """The ``limit`` (id, cosine similarity) pairs closest to the query among memories the
        viewer may see, best first."""
        return self.nearest_and_baseline(
            query_vector, limit=limit, viewer_user=viewer_user, viewer_project=viewer_project
        )[0]

    def nearest_and_baseline(
        self,
        query_vector: Any,
        *,
        limit: int,
        viewer_user: str | None = None,
        viewer_project: str | None = None,
    ) -> tuple[list[tuple[str, float]], float | None]:
        """``nearest``, and the query's baseline: its mean cosine over the memories the viewer
        may see here but the ``BASELINE_SKIPS`` nearest — what an unrelated memory scores in
        this embedding space (see ``RankingWeights.baseline``), from the product ``nearest``
        computes anyway; None when fewer than ``BASELINE_MIN_MEMORIES`` are left: too few to
        tell. Leaving the nearest out keeps the relevant few from raising it in a small store;
        a mean of cosines, it moves with any affine map of an embedder's cosines (a narrower
        band), so the dense half measured from it does not."""
        import numpy as np

        query = np.asarray(query_vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(query))
        with self._lock:
            size = len(self._ids)
            if not size or not self._live_count or limit <= 0:
                return [], None
            unit = query / (norm or 1.0)
            visible = np.flatnonzero(self._visible_mask(viewer_user, viewer_project))
            similarity = self._rows.similarity(visible, unit)
            best = np.arange(visible.size)
            if visible.size > limit:
                best = np.argpartition(-similarity, limit - 1)[:limit]
            best = best[np.argsort(-similarity[best], kind="stable")]
            nearest = best[:BASELINE_SKIPS]
            rest = visible.size - nearest.size
            baseline = None
            if rest >= BASELINE_MIN_MEMORIES:
                total = float(similarity.sum(dtype=np.float64))
                baseline = (total - float(similarity[nearest].sum(dtype=np.float64))) / rest
            return [(self._ids[visible[i]], float(similarity[i])) for i in best], baseline

    def vector(self, memory_id: str) -> Any:
        """The memory's unit vector; None when it is not in the index."""
        with self._lock:
            position = self._index_of.get(memory_id)
            return None if position is None else self._rows.row(position)

    def _visible_mask(self, viewer_user: str | None, viewer_project: str | None) -> Any:
        import numpy as np

        alive = np.frombuffer(bytes(self._alive), dtype=np.uint8).astype(bool)
        visible = visible_mask(
            np.frombuffer(self._privacy, dtype=np.int8),
            np.frombuffer(self._owner, dtype=np.int32),
            np.frombuffer(self._project, dtype=np.int32),
            viewer_owner=self._codes.get(viewer_user or ""),
            viewer_project=self._codes.get(viewer_project) if viewer_project else None,
        )
        return alive & visible

    def held_in(
        self,
        viewer_user: str | None,
        viewer_project: str | None,
        *,
        public: bool,
        user: bool,
        team: bool,
    ) -> dict[str, tuple[float, tuple[str, ...]]]:
        """The memories held here that ``viewer`` may see and that the viewer's partitions
        searched in the store list too (``public``, its ``user`` partition, its ``team``
        one): id → (length, which of those list it). Recall counts each of them once, here
        (``_postings.gather`` leaves them out of the store's side), whichever other
        partitions this process holds."""
        import numpy as np

        with self._lock:
            if not self._ids or not (public or user or team):
                return {}
            visible = self._visible_mask(viewer_user, viewer_project)
            privacy = np.frombuffer(self._privacy, dtype=np.int8)
            is_public = privacy == PRIVACY_CODES[Privacy.PUBLIC.value]
            lists: dict[str, Any] = {}
            if public:
                lists["public"] = is_public
            if user:
                lists["user"] = ~is_public & (
                    np.frombuffer(self._owner, dtype=np.int32)
                    == self._codes.get(viewer_user or "", -1)
                )
            if team and viewer_project:
                lists["team"] = (privacy == PRIVACY_CODES[Privacy.TEAM.value]) & (
                    np.frombuffer(self._project, dtype=np.int32)
                    == self._codes.get(viewer_project, -1)
                )
            listed = np.zeros(len(self._ids), dtype=bool)
            for mask in lists.values():
                listed |= mask
            rows = np.flatnonzero(visible & listed)
            lengths = np.frombuffer(self._lengths, dtype=np.float32)
            return {
                self._ids[r]: (
                    float(lengths[r]),
                    tuple(name for name, mask in lists.items() if mask[r]),
                )
                for r in rows.tolist()
            }

    def search(
        self,
        query: str,
        *,
        limit: int,
        viewer_user: str | None = None,
        viewer_project: str | None = None,
        stored: StoredPostings | None = None,
    ) -> list[tuple[str, float]]:
        """The ``limit`` best (id, BM25 score) pairs among memories the viewer may see: those
        held here, and with ``stored``, those of the partitions searched in the store (their
        postings for the query's terms; none of them held here), with the statistics taken
        over both."""
        import numpy as np

        terms = list(dict.fromkeys(tokenize(query)))
        if stored is not None:
            return self._search_with(terms, limit, viewer_user, viewer_project, stored)
        with self._lock:
            if not terms or not self._live_count:
                return []
            scores = self._scores(terms, self._visible_mask(viewer_user, viewer_project))
            if scores is None:
                return []
            hits = np.flatnonzero(scores > 0)
            if hits.size > limit:
                hits = hits[np.argpartition(-scores[hits], limit - 1)[:limit]]
            hits = hits[np.argsort(-scores[hits], kind="stable")]
            return [(self._ids[i], float(scores[i])) for i in hits]

    def _search_with(
        self,
        terms: list[str],
        limit: int,
        viewer_user: str | None,
        viewer_project: str | None,
        stored: StoredPostings,
    ) -> list[tuple[str, float]]:
        import numpy as np

        if not terms:
            return []
        with self._lock:
            visible = self._visible_mask(viewer_user, viewer_project) if self._ids else None
            here = self._statistics(terms, visible)
            count = here[0] + stored.memories
            if not count:
                return []
            average = (here[1] + stored.total_length) / count or 1.0
            frequency = {t: here[2][t] + len(stored.postings.get(t, ((),))[0]) for t in terms}
            hits: list[tuple[str, float]] = []
            if visible is not None and here[0]:
                scores = self._scores(terms, visible, statistics=(count, average, frequency))
                if scores is not None:
                    best = np.flatnonzero(scores > 0)
                    if best.size > limit:
                        best = best[np.argpartition(-scores[best], limit - 1)[:limit]]
                    hits = [(self._ids[i], float(scores[i])) for i in best]
        codes: list[Any] = []
        gains: list[Any] = []
        for term in terms:
            found = stored.postings.get(term)
            if found is None or not frequency[term]:
                continue
            _, numbers, tf, lengths = found
            df = frequency[term]
            idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
            norm = tf + self.k1 * (1.0 - self.b + self.b * lengths / average)
            codes.append(numbers)
            gains.append(idf * tf * (self.k1 + 1.0) / norm)
        if codes:
            summed = np.bincount(np.concatenate(codes), weights=np.concatenate(gains))
            best = np.flatnonzero(summed > 0)
            if best.size > limit:
                best = best[np.argpartition(-summed[best], limit - 1)[:limit]]
            hits += [(stored.ids[int(c)], float(summed[c])) for c in best]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]

    def _statistics(self, terms: Sequence[str], visible: Any) -> tuple[int, float, dict[str, int]]:
        """How many memories the viewer may see here, their summed length, and each term's
        document frequency among them."""
        import numpy as np

        if visible is None:
            return 0, 0.0, dict.fromkeys(terms, 0)
        count = int(visible.sum())
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        total = float(lengths[visible].sum()) if count else 0.0
        frequency = {}
        for term in terms:
            postings = self._postings.get(term)
            frequency[term] = (
                int(visible[np.frombuffer(postings[0], dtype=np.int32)].sum())
                if postings is not None
                else 0
            )
        return count, total, frequency

    def scores_for(
        self,
        query: str,
        memory_ids: Iterable[str],
        *,
        viewer_user: str | None = None,
        viewer_project: str | None = None,
    ) -> dict[str, float]:
        """BM25 scores of particular memories the viewer may see (those with no keyword match
        are left out)."""
        terms = list(dict.fromkeys(tokenize(query)))
        with self._lock:
            if not terms or not self._live_count:
                return {}
            scores = self._scores(terms, self._visible_mask(viewer_user, viewer_project))
            if scores is None:
                return {}
            positions = {i: self._index_of[i] for i in memory_ids if i in self._index_of}
            return {i: float(scores[p]) for i, p in positions.items() if scores[p] > 0}

    def query_mass(
        self,
        query: str,
        *,
        elsewhere: Elsewhere | None = None,
        viewer_user: str | None = None,
        viewer_project: str | None = None,
    ) -> float:
        """The BM25 score a memory of average length holding each of the query's terms once
        would get: the sum of the terms' idf over the memories the viewer may see (here, and
        ``elsewhere``). A memory's score divided by it says how much of what the query asks it
        matches, weighted by how informative each matched term is — a lone common ending or
        word matches little of a query, however well it beats the other candidates."""
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms:
            return 0.0
        with self._lock:
            visible = self._visible_mask(viewer_user, viewer_project) if self._ids else None
            count, _, frequency = self._statistics(terms, visible)
        if elsewhere is not None:
            count += elsewhere.memories
            frequency = {t: df + elsewhere.frequency.get(t, 0) for t, df in frequency.items()}
        return sum(
            math.log(1.0 + (count - frequency[t] + 0.5) / (frequency[t] + 0.5)) for t in terms
        )

    def rare_terms(
        self,
        terms: Iterable[str],
        *,
        elsewhere: Elsewhere | None = None,
        viewer_user: str | None = None,
        viewer_project: str | None = None,
    ) -> dict[str, float]:
        """Those of ``terms`` (tokens) rare among the memories the viewer may see, with their
        idf: at least half the idf of a term only one memory holds (at 600 memories, one held
        by fewer than about 30) — names, places, things rather than everyday words."""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return {}
        with self._lock:
            visible = self._visible_mask(viewer_user, viewer_project) if self._ids else None
            count, _, frequency = self._statistics(wanted, visible)
        if elsewhere is not None:
            count += elsewhere.memories
            frequency = {t: df + elsewhere.frequency.get(t, 0) for t, df in frequency.items()}
        if count < 2:
            return {}
        ceiling = math.log(1.0 + (count - 0.5) / 1.5)
        rare = {}
        for term in wanted:
            df = frequency[term]
            idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
            if df and idf >= ceiling / 2:
                rare[term] = idf
        return rare

    def scores_of_texts(
        self,
        query: str,
        texts: Mapping[str, str],
        *,
        elsewhere: Elsewhere | None = None,
        viewer_user: str | None = None,
        viewer_project: str | None = None,
    ) -> dict[str, float]:
        """BM25 scores of these memories (id → text), with the statistics taken over the
        memories the viewer may see here and those it may see ``elsewhere`` (partitions searched
        in the store), or, without those, over those of these texts the index does not hold: an
        estimate of the statistics over all the viewer may see. Those with no keyword match
        are left out."""
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms or not texts:
            return {}
        counted = {i: _term_counts(tokenize(text)) for i, text in texts.items()}
        lengths = {i: float(sum(c.values())) for i, c in counted.items()}
        with self._lock:
            extra = [i for i in counted if i not in self._index_of]
            visible = self._visible_mask(viewer_user, viewer_project) if self._ids else None
            count, total, df_here = self._statistics(terms, visible)
        if elsewhere is not None:
            total += elsewhere.total_length
            count += elsewhere.memories
        else:
            total += sum(lengths[i] for i in extra)
            count += len(extra)
        average = total / count if count else 1.0
        average = average or 1.0
        scores: dict[str, float] = {}
        for term in terms:
            if elsewhere is None:
                df = df_here[term] + sum(1 for i in extra if term in counted[i])
            else:
                df = df_here[term] + elsewhere.frequency.get(term, 0)
            if not df:
                continue
            idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
            for memory_id, counts in counted.items():
                tf = counts.get(term, 0)
                if tf:
                    norm = tf + self.k1 * (1.0 - self.b + self.b * lengths[memory_id] / average)
                    gained = idf * tf * (self.k1 + 1.0) / norm
                    scores[memory_id] = scores.get(memory_id, 0.0) + gained
        return scores

    def _scores(
        self,
        terms: list[str],
        visible: Any,
        *,
        statistics: tuple[int, float, Mapping[str, int]] | None = None,
    ) -> npt.NDArray[np.float64] | None:
        """BM25 scores of the visible memories (zero elsewhere), with the statistics taken
        over the visible memories alone, or the given ones (count, mean length, document
        frequencies)."""
        import numpy as np

        count = int(visible.sum())
        if not count:
            return None
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        average = float(lengths[visible].sum()) / count or 1.0
        if statistics is not None:
            count, average, _ = statistics
        scores = np.zeros(len(self._ids), dtype=np.float64)
        found = False
        for term in terms:
            postings = self._postings.get(term)
            if postings is None:
                continue
            docs = np.frombuffer(postings[0], dtype=np.int32)
            seen = visible[docs]
            df = int(seen.sum())
            if not df:
                continue
            if statistics is not None:
                df = statistics[2][term]
            docs = docs[seen]
            tf = np.frombuffer(postings[1], dtype=np.float32)[seen]
            idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
            norm = tf + self.k1 * (1.0 - self.b + self.b * lengths[docs] / average)
            scores[docs] += idf * tf * (self.k1 + 1.0) / norm
            found = True
        return scores if found else None


def _term_counts(tokens: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return counts


def _kept(values: array[Any], keep: Any, dtype: Any) -> array[Any]:
    import numpy as np

    return _as_array(values.typecode, np.frombuffer(values, dtype=dtype)[keep])


def _as_array(typecode: str, values: Any) -> array[Any]:
    out = array(typecode)
    out.frombytes(values.tobytes())
    return out
