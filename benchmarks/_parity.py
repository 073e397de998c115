"""Core beside an adapter, in the same run and configuration: what an adapter's figures are
held against (issue 35's bounds). Not a benchmark itself.

``CoreReference.run`` does to one LoCoMo conversation what ``locomo.py`` does (one memory per
turn in the user's scope, the session date as ``created_at``, ``recall(limit=10)`` per
question; or, for an adapter whose reads put memories into a prompt, ``memory_injection`` with
the same limit and no token cut, which counts each memory injected as a use where ``recall``
counts an access), and also writes the first ``single`` turns one at a time with ``remember`` into a
second store, as an agent writes one memory per turn. ``one_at_a_time`` times any single-write
call the same way, for the adapters.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locomo import Conversation, Scores, percentile

from memento_core import Embedder, Memento, MemoryDraft, Scope

CORE = "core Memento (recall / remember_many)"
SINGLE_WRITES = 100
"""Turns per conversation written one at a time (``--single``)."""


def one_at_a_time(write: Callable[[int], object], count: int) -> list[float]:
    """Milliseconds of ``write(n)`` for n in range(count), one after the other."""
    took = []
    for n in range(count):
        started = time.perf_counter()
        write(n)
        took.append(1000 * (time.perf_counter() - started))
    return took


def single_summary(took_ms: Sequence[float]) -> dict[str, float]:
    """p50 / p95 of one-at-a-time writes and the rate they make."""
    total = sum(took_ms) / 1000
    return {
        "p50_ms": percentile(took_ms, 50),
        "p95_ms": percentile(took_ms, 95),
        "per_s": round(len(took_ms) / total, 1) if total else 0.0,
        "n": len(took_ms),
    }


@dataclass
class CoreReference:
    """Core's figures over the same conversations as the adapter's; ``injection``: query with
    ``memory_injection`` (an adapter that injects, like LlamaIndex's memory block), not
    ``recall``."""

    injection: bool = False
    scores: Scores = field(default_factory=Scores)
    batched: list[tuple[int, float]] = field(default_factory=list)
    """Per conversation: turns and ``remember_many`` seconds."""
    single_ms: list[float] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)

    def run(
        self, conversation: Conversation, embedder: Embedder, *, user: str, single: int
    ) -> None:
        scope = Scope(user_id=user)
        drafts = [
            MemoryDraft(content=t.text, scope=scope, created_at=t.created_at)
            for t in conversation.turns
        ]
        with tempfile.TemporaryDirectory(prefix="parity-") as tmp:
            with Memento.open(Path(tmp) / "batched", embedder=embedder) as mem:
                started = time.perf_counter()
                ids = mem.remember_many(drafts)
                self.batched.append((len(drafts), time.perf_counter() - started))
                turns_of: dict[str, list[str]] = {}
                for memory_id, turn in zip(ids, conversation.turns):
                    turns_of.setdefault(memory_id, []).append(turn.dia_id)
                for question in conversation.questions:
                    started = time.perf_counter()
                    found = self._query(mem, question.text, scope)
                    self.query_ms.append(1000 * (time.perf_counter() - started))
                    self.scores.add(question, [d for i in found for d in turns_of[i]])
            # A store of its own and a fresh embedding cache: every write embeds its text.
            with Memento.open(Path(tmp) / "single", embedder=embedder) as mem:
                mem.remember("warm-up: open the collections", scope=Scope(user_id="warm-up"))
                self.single_ms += one_at_a_time(
                    lambda n: mem.remember(
                        drafts[n].content, scope=scope, created_at=drafts[n].created_at
                    ),
                    min(single, len(drafts)),
                )

    def _query(self, mem: Memento, text: str, scope: Scope) -> list[str]:
        """The ids of the memories found for ``text``, best first."""
        if self.injection:
            injected = mem.memory_injection(text, scope=scope, limit=10, token_budget=10**6)
            return [item.id for item in injected.items]
        return [r.item.id for r in mem.recall(text, scope=scope, limit=10)]

    def summary(self) -> dict[str, Any]:
        items = sum(n for n, _ in self.batched)
        seconds = sum(s for _, s in self.batched)
        return {
            "query": "memory_injection" if self.injection else "recall",
            "retrieval": self.scores.summary(),
            "remember_many_per_s": round(items / seconds, 1) if seconds else 0.0,
            "single": single_summary(self.single_ms),
            "query_ms": {
                "p50": percentile(self.query_ms, 50),
                "p95": percentile(self.query_ms, 95),
            },
        }


def parity_markdown(adapter: str, ours: dict[str, Any], core: dict[str, Any]) -> list[str]:
    """The adapter against core, one row per bound of issue 35."""
    a, c = ours["retrieval"]["overall"], core["retrieval"]["overall"]
    batched = (
        ours["batched_per_s"] / core["remember_many_per_s"] if core["remember_many_per_s"] else 0
    )
    query = core.get("query", "recall")
    return [
        f"## {adapter} against core, same run",
        "",
        f"Core queries with `{query}` (limit 10) and writes with `remember_many`.",
        "",
        "| measure | adapter | core | bound |",
        "|---|---:|---:|---|",
        f"| R@5 | {a['R@5']:.1f} | {c['R@5']:.1f} | within 0.5 ({a['R@5'] - c['R@5']:+.1f}) |",
        f"| R@10 | {a['R@10']:.1f} | {c['R@10']:.1f} | within 0.5 ({a['R@10'] - c['R@10']:+.1f}) |",
        f"| one write at a time, p50 | {ours['single']['p50_ms']} ms "
        f"| {core['single']['p50_ms']} ms | ≤ 20 ms |",
        f"| one write at a time, rate | {ours['single']['per_s']}/s "
        f"| {core['single']['per_s']}/s | — |",
        f"| batched writes | {ours['batched_per_s']}/s | {core['remember_many_per_s']}/s "
        f"| ≥ 0.8 × core ({batched:.2f}) |",
        f"| query p50 | {ours['query_ms']['p50']} ms | {core['query_ms']['p50']} ms "
        "| ≤ core + 5 ms + the framework's own overhead |",
        "",
    ]
