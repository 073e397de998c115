"""LoCoMo retrieval benchmark: Memento's recall against plain BM25, dense and fused baselines.

The protocol is the one in ``../shared/bench/README.md`` (retrieval only, no LLM): one memory per
dialogue turn, text ``"[<session date>] <speaker>: <text>"`` (plus the image caption), one store
and one user scope per conversation, created_at = the session date; for every question of
categories 1–4 with evidence, recall@k = the share of its evidence turns among the top k.

In the same run, over the same texts and the same MiniLM vectors, it scores three baselines
(rank_bm25 on plain word tokens, dense cosine, their 50/50 min–max fusion), measures write
throughput against raw batched ``encode`` and recall latency, and reruns recall on stores
opened with ``track_usage=False`` to show whether usage counting moves the numbers.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/locomo.py [--conversations N] [--out DIR] \
        [--embedder onnx|onnx-int8|torch]

``--embedder`` picks all-MiniLM-L6-v2 on ONNX Runtime (fp32, the default), its int8 export, or
on sentence-transformers (the ``[torch]`` extra); the results go to ``locomo.json`` for the
default and ``locomo_<embedder>.json`` otherwise, so the three can be compared side by side.

The data is never copied into the repository: it is read from ``--data`` (default
``../shared/bench/locomo10.json`` next to the repository, or ``$LOCOMO_PATH``).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _common import (
    LOCOMO_DATA,
    arguments,
    locomo_missing,
    progress_bar,
    report_footer,
    write_report,
)
from rich.console import Console

from memento_core import (
    Embedder,
    Memento,
    MemoryDraft,
    OnnxEmbedder,
    Recalled,
    Scope,
    SentenceTransformerEmbedder,
    plugins,
)

DEFAULT_DATA = LOCOMO_DATA  # scale.py reads it from here
KS = (1, 5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SESSION_KEY = re.compile(r"session_(\d+)")
# Evidence ids are "D<session>:<turn>"; a few are written "D:11:26" or "D30:05".
EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
PLAIN_WORD = re.compile(r"\w+")
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
USER = "locomo"
BATCH_SIZE = 64
"""Texts per ``encode`` call, for ``remember_many`` and for the raw-encode baseline alike."""

EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "onnx": lambda: OnnxEmbedder(batch_size=BATCH_SIZE),
    "onnx-int8": lambda: OnnxEmbedder("all-MiniLM-L6-v2-int8", batch_size=BATCH_SIZE),
    "torch": lambda: SentenceTransformerEmbedder(batch_size=BATCH_SIZE),
}
"""All-MiniLM-L6-v2 three ways: ``--embedder`` picks one."""

MEMENTO = "Memento recall (default)"
MEMENTO_NO_USAGE = "Memento recall, track_usage=False"
BM25_BASELINE = "BM25 (rank_bm25, plain word tokens)"
DENSE_BASELINE = "dense MiniLM cosine"
FUSION_BASELINE = "50/50 fusion of the two (min–max)"
RETRIEVERS = (MEMENTO, MEMENTO_NO_USAGE, BM25_BASELINE, DENSE_BASELINE, FUSION_BASELINE)

Vector = npt.NDArray[np.float32]
ScoreArray = npt.NDArray[np.floating[Any]]


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str
    created_at: datetime


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    dropped_evidence: tuple[str, ...]
    """Evidence ids that name no turn of the conversation (malformed or out of range)."""


def parse_session_date(value: str) -> datetime:
    return datetime.strptime(value, DATE_FORMAT).replace(tzinfo=timezone.utc)


def turn_text(date: str, turn: dict[str, Any]) -> str:
    text = f"[{date}] {turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def parse_evidence(raw: Iterable[str]) -> list[str]:
    """Canonical ids from evidence strings that may hold several ids or be malformed."""
    return [f"D{int(s)}:{int(t)}" for entry in raw for s, t in EVIDENCE_ID.findall(entry)]


def load_conversations(path: Path) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        dialogue = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in dialogue if (m := SESSION_KEY.fullmatch(key))
        )
        turns = []
        for _, key in sessions:
            date = dialogue[f"{key}_date_time"]
            created_at = parse_session_date(date)
            for turn in dialogue[key]:
                turns.append(Turn(turn["dia_id"], turn_text(date, turn), created_at))
        known = {t.dia_id for t in turns}
        questions, dropped = [], []
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            evidence = parse_evidence(qa.get("evidence") or [])
            dropped += [e for e in qa.get("evidence") or [] if not EVIDENCE_ID.search(e)]
            dropped += [e for e in evidence if e not in known]
            valid = frozenset(e for e in evidence if e in known)
            if valid:
                questions.append(Question(qa["question"], qa["category"], valid))
        conversations.append(
            Conversation(sample["sample_id"], tuple(turns), tuple(questions), tuple(dropped))
        )
    return conversations


# ----------------------------------------------------------------------------- scoring


@dataclass
class Scores:
    """Recall@k of every scored question, grouped by category."""

    by_category: dict[int, list[tuple[float, ...]]] = field(default_factory=dict)

    def add(self, question: Question, ranked: Sequence[str]) -> None:
        hits = tuple(
            len(question.evidence.intersection(ranked[:k])) / len(question.evidence) for k in KS
        )
        self.by_category.setdefault(question.category, []).append(hits)

    @property
    def count(self) -> int:
        return sum(len(rows) for rows in self.by_category.values())

    def summary(self) -> dict[str, Any]:
        def means(rows: list[tuple[float, ...]]) -> dict[str, float]:
            columns = zip(*rows) if rows else [() for _ in KS]
            return {
                f"R@{k}": round(100 * statistics.fmean(col), 1) if col else 0.0
                for k, col in zip(KS, columns)
            }

        every = [row for rows in self.by_category.values() for row in rows]
        return {
            "questions": len(every),
            "overall": means(every),
            "by_category": {
                CATEGORIES[c]: {"questions": len(rows), **means(rows)}
                for c, rows in sorted(self.by_category.items())
            },
        }


def top_ids(scores: ScoreArray, ids: Sequence[str], k: int) -> list[str]:
    order = np.argsort(-scores, kind="stable")[:k]
    return [ids[i] for i in order]


def plain_tokens(text: str) -> list[str]:
    """Lower-cased word tokens, no stemming or stopwords: the README's BM25 reference."""
    return PLAIN_WORD.findall(text.lower())


def min_max(scores: ScoreArray) -> ScoreArray:
    spread = scores.max() - scores.min()
    return (scores - scores.min()) / spread if spread > 0 else np.zeros_like(scores)


class Baselines:
    """The README's reference retrievers over one conversation's texts and vectors."""

    def __init__(self, turns: Sequence[Turn], vectors: Vector) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = [t.dia_id for t in turns]
        self.vectors = vectors
        self.bm25 = BM25Okapi([plain_tokens(t.text) for t in turns])

    def rank(self, query: str, query_vector: Vector, k: int) -> dict[str, list[str]]:
        keyword: ScoreArray = np.asarray(
            self.bm25.get_scores(plain_tokens(query)), dtype=np.float64
        )
        dense: ScoreArray = self.vectors @ query_vector
        fused = 0.5 * min_max(dense) + 0.5 * min_max(keyword)
        return {
            BM25_BASELINE: top_ids(keyword, self.ids, k),
            DENSE_BASELINE: top_ids(dense, self.ids, k),
            FUSION_BASELINE: top_ids(fused, self.ids, k),
        }


# ----------------------------------------------------------------------------- the run


@dataclass
class Timings:
    writes: list[tuple[int, float, float]] = field(default_factory=list)
    """Per conversation: texts, raw encode seconds, ``remember_many`` seconds."""
    recall_ms: list[float] = field(default_factory=list)
    query_embedding_ms: list[float] = field(default_factory=list)

    def summary(self, batch_size: int) -> dict[str, Any]:
        items = sum(n for n, _, _ in self.writes)
        remember_rate = items / sum(r for _, _, r in self.writes)
        encode_rate = items / sum(e for _, e, _ in self.writes)
        return {
            "throughput": {
                "batch_size": batch_size,
                "remember_many_items_per_s": round(remember_rate, 1),
                "raw_encode_items_per_s": round(encode_rate, 1),
                "ratio": round(remember_rate / encode_rate, 3),
                "ratio_median_per_conversation": round(
                    statistics.median(e / r for _, e, r in self.writes), 3
                ),
            },
            "latency_ms": {
                "recall_p50": percentile(self.recall_ms, 50),
                "recall_p95": percentile(self.recall_ms, 95),
                "query_embedding_p50": percentile(self.query_embedding_ms, 50),
                "query_embedding_p95": percentile(self.query_embedding_ms, 95),
                "recalls": len(self.recall_ms),
            },
        }


def percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 1) if values else 0.0


def run_conversation(
    conversation: Conversation,
    embedder: Embedder,
    scores: dict[str, Scores],
    timings: Timings,
    advance: Callable[[int], None],
) -> None:
    texts = [t.text for t in conversation.turns]
    scope = Scope(user_id=USER)
    drafts = [
        MemoryDraft(content=t.text, scope=scope, created_at=t.created_at)
        for t in conversation.turns
    ]
    # The stores close (writing their pending usage counts) before their directory goes.
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp, contextlib.ExitStack() as stores:
        memento = stores.enter_context(Memento.open(Path(tmp) / "usage", embedder=embedder))

        def encode() -> tuple[list[Any], float]:
            """Raw batched encode of the same texts, same model and batch size: the ceiling."""
            started = time.perf_counter()
            vectors = embedder.embed_documents(texts)
            return vectors, time.perf_counter() - started

        def remember() -> tuple[list[str], float]:
            started = time.perf_counter()
            ids = memento.remember_many(drafts, on_progress=advance)
            return ids, time.perf_counter() - started

        # Which goes first alternates, so a drift in the machine's speed favours neither.
        if len(timings.writes) % 2:
            (ids, remember_s), (vectors, encode_s) = remember(), encode()
        else:
            (vectors, encode_s), (ids, remember_s) = encode(), remember()
        timings.writes.append((len(texts), encode_s, remember_s))

        # The same memories without usage counting; it shares the first store's vector cache,
        # so it costs no embedding and stays out of the timings.
        plain = stores.enter_context(
            Memento.open(Path(tmp) / "no-usage", embedder=memento.embedder, track_usage=False)
        )
        plain.remember_many(drafts)

        turns_of: dict[str, list[str]] = {}
        for memory_id, turn in zip(ids, conversation.turns):
            turns_of.setdefault(memory_id, []).append(turn.dia_id)

        def as_turns(results: Iterable[Recalled]) -> list[str]:
            return [dia for r in results for dia in turns_of[r.item.id]]

        baselines = Baselines(conversation.turns, vectors)
        for question in conversation.questions:
            started = time.perf_counter()
            recalled = memento.recall(question.text, scope=scope, limit=10)
            timings.recall_ms.append(1000 * (time.perf_counter() - started))
            scores[MEMENTO].add(question, as_turns(recalled))
            without_usage = plain.recall(question.text, scope=scope, limit=10)
            scores[MEMENTO_NO_USAGE].add(question, as_turns(without_usage))

            started = time.perf_counter()
            query_vector = embedder.embed_query(question.text)
            timings.query_embedding_ms.append(1000 * (time.perf_counter() - started))
            for name, ranked in baselines.rank(question.text, query_vector, 10).items():
                scores[name].add(question, ranked)
            advance(1)


def machine() -> dict[str, Any]:
    import chromadb
    import sentence_transformers
    import torch

    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "sentence_transformers": sentence_transformers.__version__,
        "chromadb": chromadb.__version__,
        "platform": platform.platform(),
        "load_average_1m_at_end": round(os.getloadavg()[0], 1),
    }


def render_markdown(report: dict[str, Any]) -> str:
    results = report["retrievers"]
    categories = list(CATEGORIES.values())
    head = ["retriever", "R@1", "R@5", "R@10", *(f"{c} R@5 / R@10" for c in categories)]
    lines = [
        "# LoCoMo retrieval benchmark",
        "",
        f"Questions scored: **{report['questions_scored']:,}** "
        f"(categories 1–4 with evidence, {report['conversations']} conversations, "
        f"{report['turns']:,} turns). Protocol: `../shared/bench/README.md`. Embedder: "
        f"`{report['embedder']['name']}` ({report['embedder']['choice']}).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, summary in results.items():
        overall = summary["overall"]
        cells = [name, *(f"{overall[f'R@{k}']:.1f}" for k in KS)]
        for category in categories:
            per = summary["by_category"].get(category)
            cells.append(f"{per['R@5']:.1f} / {per['R@10']:.1f}" if per else "—")
        lines.append("| " + " | ".join(cells) + " |")
    counts = next(iter(results.values()))["by_category"]
    lines += [
        "",
        "Questions per category: "
        + ", ".join(f"{c} {v['questions']}" for c, v in counts.items())
        + ".",
        "",
        "## Speed",
        "",
    ]
    speed = report["throughput"]
    latency = report["latency_ms"]
    host = report["machine"]
    busiest = max(host["load_average_1m_at_start"], host["load_average_1m_at_end"])
    if busiest > host["nproc"]:
        lines += [
            f"Other work shared the CPUs (1-minute load average up to {busiest} on "
            f"{host['nproc']} cores): absolute speeds are low; the throughput ratio compares "
            "two measurements taken side by side under the same load.",
            "",
        ]
    lines += [
        "| measure | value |",
        "|---|---|",
        f"| `remember_many` | {speed['remember_many_items_per_s']} items/s |",
        f"| raw batched `encode`, batch {speed['batch_size']} | "
        f"{speed['raw_encode_items_per_s']} items/s |",
        f"| write throughput ÷ encode limit, all conversations | {speed['ratio']:.2f} |",
        "| the same, median of the conversations (each timed side by side, order alternating) | "
        f"{speed['ratio_median_per_conversation']:.2f} |",
        f"| recall p50 / p95, incl. query embedding | "
        f"{latency['recall_p50']} / {latency['recall_p95']} ms |",
        f"| query embedding alone p50 / p95 | "
        f"{latency['query_embedding_p50']} / {latency['query_embedding_p95']} ms |",
        f"| recall p50 excluding embedding (difference of p50s) | "
        f"{latency['recall_p50'] - latency['query_embedding_p50']:.1f} ms |",
        "",
        *report_footer(report),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--conversations", type=int, default=None, help="run only the first N")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="onnx")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    if locomo_missing(args.data):
        return 2

    conversations = load_conversations(args.data)[: args.conversations]
    embedder = EMBEDDERS[args.embedder]()
    embedder.embed_documents(["warm-up: load the model before anything is timed"])
    plugins.manager()  # loading the installed adapters' plugins is a one-time cost, not a write

    scores = {name: Scores() for name in RETRIEVERS}
    timings = Timings()
    wall = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load_at_start = round(os.getloadavg()[0], 1)
    work = sum(len(c.turns) + len(c.questions) for c in conversations)
    with progress_bar(console) as progress:
        task = progress.add_task("turns + questions", total=work)
        for conversation in conversations:
            progress.update(task, description=conversation.sample_id)
            run_conversation(
                conversation,
                embedder,
                scores,
                timings,
                lambda n: progress.advance(task, n),
            )

    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/locomo.py", *(argv or sys.argv[1:])]),
        "started": started,
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "embedder": {"choice": args.embedder, "name": embedder.name},
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions_scored": scores[MEMENTO].count,
        "dropped_evidence_ids": [i for c in conversations for i in c.dropped_evidence],
        "retrievers": {name: s.summary() for name, s in scores.items()},
        **timings.summary(batch_size=BATCH_SIZE),
        "machine": {**machine(), "load_average_1m_at_start": load_at_start},
    }
    name = "locomo" if args.embedder == "onnx" else f"locomo_{args.embedder.replace('-', '_')}"
    markdown = render_markdown(report)
    write_report(args.out, name, report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
