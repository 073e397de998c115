"""The scale benchmark's corpus and vectors: LoCoMo turns in renamed, redated variants owned by
many users, MiniLM vectors for the originals and calibrated noise for the variants, and the
lookup embedder that serves them (see ``scale.py``)."""

from __future__ import annotations

import hashlib
import math
import os
import random
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
from locomo import load_conversations
from rich.console import Console

from memento_core import Embedder, Scope

Vectors = npt.NDArray[np.float32]

SEED = 20261122
DIMENSION = 384
MODEL = "all-MiniLM-L6-v2"
RECIPE = "scale-v2"
"""Part of the vector cache key: change it when the vector recipe changes."""
DAYS_PER_VARIANT = 37
CALIBRATION_SAMPLE = 256
CALIBRATION_VARIANTS = 17
"""Real variant texts embedded to calibrate the noise: this many turns, variants 1..17."""
PRIVACY_MIX = (("private", 0.85), ("team", 0.10), ("public", 0.05))
TEAMS_MIX = (("private", 0.70), ("team", 0.20), ("public", 0.10))
SHAPES = {
    "users": (10_000, 1_000, PRIVACY_MIX),
    "teams": (1_000, 50, TEAMS_MIX),
    "heavy": (10_000, 1_000, PRIVACY_MIX),
}
"""Who owns the memories: many users in small projects (the default); issue 32's held-out
shape, few users in big teams (at 100k, ~400 team memories a project); or the default with
two heavy viewers (``scale.with_heavy_viewers``)."""
NAMES = (  # noqa: SIM905 - names read better as text than as 48 list lines
    "Aiden Beatriz Chen Dalia Emeka Farah Goran Hana Ivan Jade Kofi Lena Mateo Nadia Omar Priya "
    "Quinn Rosa Sami Tariq Uma Viktor Wen Ximena Yusuf Zara Anton Bela Carmen Dev Elif Finn Greta "
    "Hugo Ines Jonas Kira Luca Maya Nils Olga Pavel Rhea Soren Tessa Ugo Vera Wim"
).split()
TURN = re.compile(r"\[(?P<date>[^\]]+)\] (?P<speaker>[^:]+): (?P<body>.*)", re.DOTALL)

# ----------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Base:
    """One LoCoMo turn, split into the parts a variant changes."""

    conversation: int
    session: int
    created_at: datetime
    speaker: str
    body: str
    text: str


@dataclass(frozen=True)
class Spec:
    """One memory of the corpus."""

    base: int
    variant: int
    text: str
    user: str
    project: str
    privacy: str
    session_id: str
    created_at: datetime


@dataclass(frozen=True)
class Query:
    text: str
    viewer: Scope


@dataclass
class Corpus:
    bases: list[Base]
    memories: list[Spec]
    queries: list[Query]
    question_texts: list[str]
    variants: int


def load_bases(data: Path) -> tuple[list[Base], list[tuple[int, str]]]:
    """The LoCoMo turns and the questions (conversation index, text) of categories 1–4."""
    bases: list[Base] = []
    questions: list[tuple[int, str]] = []
    for c, conversation in enumerate(load_conversations(data)):
        for turn in conversation.turns:
            match = TURN.fullmatch(turn.text)
            if match is None:
                raise ValueError(f"unexpected turn text: {turn.text[:80]!r}")
            session = int(turn.dia_id[1:].split(":")[0])
            bases.append(
                Base(
                    c,
                    session,
                    turn.created_at,
                    match["speaker"],
                    match["body"],
                    turn.text,
                )
            )
        questions += [(c, q.text) for q in conversation.questions]
    return bases, questions


def locomo_date(moment: datetime) -> str:
    """LoCoMo's session date format: ``1:56 pm on 8 May, 2023``."""
    hour = moment.hour % 12 or 12
    meridiem = "am" if moment.hour < 12 else "pm"
    return f"{hour}:{moment.minute:02d} {meridiem} on {moment.day} {moment:%B}, {moment.year}"


def variant_text(base: Base, variant: int, speakers: Sequence[str]) -> tuple[str, datetime]:
    if variant == 0:
        return base.text, base.created_at
    moment = base.created_at + timedelta(days=DAYS_PER_VARIANT * variant)
    renamed = {
        speaker: NAMES[(7 * base.conversation + 5 * variant + n) % len(NAMES)]
        for n, speaker in enumerate(speakers)
    }
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, renamed)) + r")\b")
    body = pattern.sub(lambda m: renamed[m.group(1)], base.body)
    speaker = renamed.get(base.speaker, base.speaker)
    return f"[{locomo_date(moment)}] {speaker}: {body}", moment


def conversation_speakers(bases: Sequence[Base]) -> dict[int, list[str]]:
    speakers: dict[int, list[str]] = defaultdict(list)
    for base in bases:
        if base.speaker not in speakers[base.conversation]:
            speakers[base.conversation].append(base.speaker)
    return speakers


def build_corpus(
    bases: list[Base],
    questions: list[tuple[int, str]],
    *,
    size: int,
    users: int,
    projects: int,
    privacy_mix: tuple[tuple[str, float], ...] = PRIVACY_MIX,
) -> Corpus:
    rng = random.Random(SEED)
    variants = math.ceil(size / len(bases)) + 1  # one spare: a few texts repeat within a session
    speakers = conversation_speakers(bases)
    sessions: dict[tuple[int, int], list[int]] = defaultdict(list)
    for n, base in enumerate(bases):
        sessions[(base.conversation, base.session)].append(n)

    def owner(turn: int, variant: int) -> str:
        # Each memory has its own owner, so even 10,000 memories spread over thousands of users.
        digest = hashlib.blake2b(f"{turn}:{variant}".encode(), digest_size=8)
        return f"user-{int.from_bytes(digest.digest(), 'big') % users:05d}"

    def project(user: str) -> str:
        return f"project-{int(user.split('-')[1]) % projects:04d}"

    blocks = [(c, s, v) for (c, s) in sessions for v in range(variants)]
    rng.shuffle(blocks)
    privacy_names = [p for p, _ in privacy_mix]
    privacy_weights = [w for _, w in privacy_mix]
    seen: set[str] = set()
    memories: list[Spec] = []
    holders: dict[int, list[str]] = defaultdict(list)
    for conversation, session, variant in blocks:
        privacy = rng.choices(privacy_names, privacy_weights)[0]
        session_id = f"c{conversation}-v{variant}-s{session}"
        for n in sessions[(conversation, session)]:
            text, created_at = variant_text(bases[n], variant, speakers[conversation])
            if text in seen:
                continue
            seen.add(text)
            user = owner(n, variant)
            holders[conversation].append(user)
            memories.append(
                Spec(n, variant, text, user, project(user), privacy, session_id, created_at)
            )
        if len(memories) >= size:
            break
    memories = memories[:size]
    if len(memories) < size:
        raise ValueError(f"only {len(memories)} distinct memories for {size}")

    queries = []
    for conversation, text in questions:
        if holders[conversation]:
            user = rng.choice(holders[conversation])
            queries.append(Query(text, Scope(user_id=user, project_id=project(user))))
    rng.shuffle(queries)
    return Corpus(bases, memories, queries, [t for _, t in questions], variants)


# ----------------------------------------------------------------------------- vectors


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "memento-bench"


def base_vectors(
    corpus: Corpus, data: Path, embedder: Embedder, console: Console
) -> tuple[Vectors, Vectors, float, Path]:
    """MiniLM vectors of the base turns and of the questions, and the mean cosine between a
    real variant's vector and its original's, computed once and cached outside the repo."""
    key = hashlib.sha256(data.read_bytes() + f"{RECIPE}:{MODEL}".encode()).hexdigest()[:16]
    path = cache_dir() / f"scale-{key}.npz"
    if path.is_file():
        cached = np.load(path)
        return cached["bases"], cached["questions"], float(cached["variant_cosine"]), path
    console.print(f"embedding {len(corpus.bases):,} turns and the questions once; cache: {path}")
    bases = embedder.embed_documents([b.text for b in corpus.bases])
    questions = embedder.embed_documents(corpus.question_texts)
    # Calibrate the noise on real variant texts: how far MiniLM moves a renamed, redated turn.
    # The sample is drawn the same way whatever the corpus size, so the cache fits every size.
    rng = random.Random(SEED + 1)
    speakers = conversation_speakers(corpus.bases)
    sample = [
        (n, rng.randint(1, CALIBRATION_VARIANTS))
        for n in rng.sample(range(len(corpus.bases)), CALIBRATION_SAMPLE)
    ]
    texts = [
        variant_text(corpus.bases[n], v, speakers[corpus.bases[n].conversation])[0]
        for n, v in sample
    ]
    real = embedder.embed_documents(texts)
    cosine = float(np.mean(np.sum(real * bases[[n for n, _ in sample]], axis=1)))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, bases=bases, questions=questions, variant_cosine=cosine)
    return bases, questions, cosine, path


def memory_vectors(corpus: Corpus, bases: Vectors, cosine: float) -> tuple[Vectors, float]:
    """One row per memory: the base vector (variant 0) or base + scaled noise, renormalised."""
    # |n|² ≈ d·σ² for Gaussian noise, and cos(b, b + n) ≈ 1 / sqrt(1 + d·σ²) for a unit b.
    sigma = math.sqrt(max(1.0 / cosine**2 - 1.0, 0.0) / DIMENSION)
    rng = np.random.default_rng(SEED)
    rows = np.array([m.base for m in corpus.memories])
    noisy = np.array([m.variant > 0 for m in corpus.memories])
    vectors = bases[rows].astype(np.float32)
    noise = rng.standard_normal(vectors.shape).astype(np.float32) * np.float32(sigma)
    vectors = np.where(noisy[:, None], vectors + noise, vectors)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32), sigma


class LookupEmbedder:
    """Serves precomputed vectors by text: recall is timed without embedding the query."""

    def __init__(self, texts: Sequence[str], vectors: Vectors) -> None:
        self._row = {t: n for n, t in enumerate(texts)}
        self._vectors = vectors

    @property
    def name(self) -> str:
        return MODEL

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return self._vectors[[self._row[t] for t in texts]]

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._vectors[self._row[text]]
        return vector
