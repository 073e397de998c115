"""Sleep-consolidation benchmark: its cost on 5,000 episodes, and what it does to LoCoMo recall.

Part 1, cost. A deterministic synthetic diary — templated sentences about a few dozen topics,
people, places and times, seeded, so every run sees the same text — is remembered as 5,000
episodic memories of one user in an embedded store, then ``sleep`` consolidates it. Reported:
sleep wall time, episodes considered and consolidated, facts written, ``derived_from`` links,
merges and contradictions, and the process's peak RSS during the sleep (Linux: the peak is reset
through ``/proc/self/clear_refs`` just before; elsewhere the whole run's peak is shown).

Part 2, LoCoMo before/after. Each conversation's turns are remembered as episodic memories of one
user (the ``benchmarks/locomo.py`` protocol: text ``"[<date>] <speaker>: <text>"``, created_at the
session date); recall@k is measured over every question of categories 1–4 with evidence; then
``sleep`` runs and recall@k is measured again, over facts and episodes together. Scoring rule
after sleep: a recalled episode stands for its own turn; a recalled fact stands for every turn it
is ``derived_from`` — so it counts for a question only through the evidence turns among its
sources; a fact whose sources hold none of the evidence counts for nothing. A stricter second
score counts a fact only for the evidence turns it actually quotes. Stores are opened with
``track_usage=False`` so the first round of recalls cannot change the second's scores.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/consolidation.py [--items N]
        [--conversations N] [--out DIR]

LoCoMo is read from ``--data`` (default ``../shared/bench/locomo10.json``, or ``$LOCOMO_PATH``),
never copied. Times are wall clock on whatever else the machine is doing; the load is recorded.
"""

from __future__ import annotations

import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from _common import arguments, locomo_missing, machine_line, progress_bar, write_report
from locomo import (
    CATEGORIES,
    Conversation,
    Question,
    load_conversations,
    machine,
)
from rich.console import Console
from rich.progress import Progress

from memento_core import LinkType, Memento, MemoryDraft, MemoryType, Scope
from memento_core.embedding import SentenceTransformerEmbedder

KS = (5, 10)
USER = Scope(user_id="bench")
BATCH_SIZE = 64
SEED = 20_240_501

PEOPLE = ("Ann", "Ben", "Chloe", "Dev", "Esme", "Farid", "Greta", "Hiro")
TOPICS: dict[str, tuple[str, ...]] = {
    "garden": (
        "planted tomatoes in the raised bed", "pruned the apple tree", "repaired the garden fence",
        "spread compost on the vegetable patch", "picked the first strawberries",
    ),
    "running": (
        "ran ten kilometres along the river", "signed up for the autumn half marathon",
        "bought new trail running shoes", "did interval training at the track",
        "stretched after a long run in the park",
    ),
    "cooking": (
        "baked sourdough bread", "made a big pot of lentil soup", "tried a new ramen recipe",
        "roasted vegetables for the week", "cooked paella for friends",
    ),
    "travel": (
        "booked a flight to Lisbon", "packed a suitcase for the Lisbon trip",
        "reserved a hotel in the Alfama district", "printed the boarding passes for Lisbon",
        "exchanged money for the Portugal holiday",
    ),
    "music": (
        "practised the cello scales", "played a cello duet with a neighbour",
        "tuned the cello before the rehearsal", "learned a Bach cello suite",
        "went to a string quartet concert",
    ),
    "work": (
        "finished the quarterly budget report", "presented the roadmap to the product team",
        "fixed a bug in the billing service", "reviewed pull requests for the billing service",
        "planned the next sprint with the team",
    ),
    "health": (
        "had a dentist appointment", "picked up a prescription at the pharmacy",
        "had a flu vaccination at the clinic", "booked an eye test at the optician",
        "started taking vitamin D in winter",
    ),
    "pets": (
        "took the beagle to the vet", "walked the beagle by the lake",
        "bought a new lead for the beagle", "brushed the beagle's coat",
        "enrolled the beagle in puppy training",
    ),
    "books": (
        "finished reading a mystery novel", "joined a book club at the library",
        "borrowed three history books from the library", "reviewed a science fiction novel",
        "started reading a biography of Ada Lovelace",
    ),
    "home": (
        "painted the kitchen walls", "fixed the leaking bathroom tap", "assembled a new bookshelf",
        "cleaned the gutters", "replaced the hallway light bulb",
    ),
}  # fmt: skip
WHEN = (
    "on Monday morning", "on Tuesday evening", "at the weekend", "after work", "before breakfast",
    "late on Friday", "during the lunch break", "on Sunday afternoon",
)  # fmt: skip


def synthetic_episodes(count: int, seed: int = SEED) -> Iterator[MemoryDraft]:
    """``count`` diary entries, one a draft, an hour apart, the same text for the same seed."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    topics = sorted(TOPICS)
    for n in range(count):
        topic = rng.choice(topics)
        text = f"{rng.choice(PEOPLE)} {rng.choice(TOPICS[topic])} {rng.choice(WHEN)}."
        yield MemoryDraft(
            # The entry number keeps repeated sentences distinct memories, as in a real diary.
            content=f"Diary entry {n}: {text}",
            scope=USER,
            tags=[topic],
            created_at=start + timedelta(hours=n),
        )


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter for this process (Linux); False where unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")
    except OSError:
        return False
    return True


def _peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_synthetic(
    embedder: SentenceTransformerEmbedder, count: int, progress: Progress
) -> dict[str, Any]:
    drafts = list(synthetic_episodes(count))
    with tempfile.TemporaryDirectory(prefix="sleep-bench-") as tmp:
        mem = Memento.open(Path(tmp) / "store", embedder=embedder, track_usage=False)
        task = progress.add_task("remember synthetic episodes", total=len(drafts))
        started = time.perf_counter()
        mem.remember_many(drafts, on_progress=lambda n: progress.advance(task, n))
        remember_seconds = time.perf_counter() - started

        sleep_task = progress.add_task("sleep (clusters)", total=None)
        rss_before = _rss_mb()
        peak_is_sleep_only = _reset_peak_rss()
        started = time.perf_counter()
        report = mem.sleep(
            USER, on_progress=lambda d, t: progress.update(sleep_task, completed=d, total=t)
        )
        sleep_seconds = time.perf_counter() - started
        peak = _peak_rss_mb()

        started = time.perf_counter()
        again = mem.sleep(USER)
        second_seconds = time.perf_counter() - started
        stats = mem.stats()
    return {
        "episodes": count,
        "remember_seconds": round(remember_seconds, 1),
        "sleep_seconds": round(sleep_seconds, 1),
        "episodes_per_second": round(count / sleep_seconds, 1),
        "considered": report.considered,
        "clusters": report.clusters,
        "facts_written": len(report.written),
        "episodes_consolidated": len(report.consolidated),
        "derived_from_links": report.derived_links,
        "duplicates_merged": len(report.merged),
        "contradictions": len(report.contradictions),
        "mean_sources_per_fact": round(report.derived_links / len(report.written), 1)
        if report.written
        else 0.0,
        "rss_before_sleep_mb": round(rss_before, 1),
        "peak_rss_mb": round(peak, 1),
        "peak_rss_is_sleep_only": peak_is_sleep_only,
        "second_sleep": {
            "seconds": round(second_seconds, 1),
            "facts_written": len(again.written),
            "considered": again.considered,
        },
        "live_semantic_memories_after": stats.by_type.get(MemoryType.SEMANTIC.value, 0),
    }


# ----------------------------------------------------------------------------- LoCoMo


@dataclass
class Recalls:
    """Recall@k of every scored question, grouped by category."""

    by_category: dict[int, list[tuple[float, ...]]] = field(default_factory=dict)

    def add(self, question: Question, ranked_turns: Sequence[set[str]]) -> None:
        hits = []
        for k in KS:
            covered = set().union(*ranked_turns[:k]) if ranked_turns[:k] else set()
            hits.append(len(question.evidence & covered) / len(question.evidence))
        self.by_category.setdefault(question.category, []).append(tuple(hits))

    def summary(self) -> dict[str, Any]:
        def means(rows: list[tuple[float, ...]]) -> dict[str, float]:
            return {
                f"R@{k}": round(100 * statistics.fmean(column), 1) if rows else 0.0
                for k, column in zip(KS, zip(*rows) if rows else [() for _ in KS])
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


@dataclass
class LocomoRun:
    before: Recalls = field(default_factory=Recalls)
    after: Recalls = field(default_factory=Recalls)
    after_quoted: Recalls = field(default_factory=Recalls)
    turns: int = 0
    facts: int = 0
    consolidated: int = 0
    merged: int = 0
    contradictions: int = 0
    sleep_seconds: float = 0.0
    fact_in_top5: int = 0
    recalls_after: int = 0
    sources_per_fact: list[int] = field(default_factory=list)


def run_locomo_conversation(
    conversation: Conversation, embedder: SentenceTransformerEmbedder, run: LocomoRun
) -> None:
    scope = Scope(user_id="locomo")
    drafts = [
        MemoryDraft(content=t.text, scope=scope, created_at=t.created_at)
        for t in conversation.turns
    ]
    with tempfile.TemporaryDirectory(prefix="locomo-sleep-") as tmp:
        mem = Memento.open(Path(tmp) / "store", embedder=embedder, track_usage=False)
        ids = mem.remember_many(drafts)
        turns_of: dict[str, set[str]] = {}
        for memory_id, turn in zip(ids, conversation.turns):
            turns_of.setdefault(memory_id, set()).add(turn.dia_id)
        run.turns += len(drafts)

        for question in conversation.questions:
            results = mem.recall(question.text, scope=scope, limit=max(KS))
            run.before.add(question, [turns_of[r.item.id] for r in results])

        started = time.perf_counter()
        report = mem.sleep(scope)
        run.sleep_seconds += time.perf_counter() - started
        run.facts += len(report.written)
        run.consolidated += len(report.consolidated)
        run.merged += len(report.merged)
        run.contradictions += len(report.contradictions)
        # A fact stands for the turns it was derived from (after merges, its inherited ones
        # too); under the stricter rule, only for those of them whose words it quotes.
        text_of = {t.dia_id: t.text for t in conversation.turns}
        quoted_of = dict(turns_of)
        for fact_id in report.written:
            sources = [
                link.target_id
                for link in mem.links(fact_id)
                if link.type is LinkType.DERIVED_FROM and link.source_id == fact_id
            ]
            turns_of[fact_id] = set().union(*(turns_of[s] for s in sources))
            fact = mem.get(fact_id, include_deleted=True)  # a merged duplicate is hidden
            lines = [line.rstrip("…") for line in fact.content.splitlines()]
            quoted_of[fact_id] = {
                dia for dia in turns_of[fact_id] if any(line in text_of[dia] for line in lines)
            }
            run.sources_per_fact.append(len(sources))

        for question in conversation.questions:
            results = mem.recall(question.text, scope=scope, limit=max(KS))
            run.after.add(question, [turns_of[r.item.id] for r in results])
            run.after_quoted.add(question, [quoted_of[r.item.id] for r in results])
            run.recalls_after += 1
            run.fact_in_top5 += any(r.item.type is MemoryType.SEMANTIC for r in results[:5])


def run_locomo(
    conversations: Sequence[Conversation],
    embedder: SentenceTransformerEmbedder,
    progress: Progress,
) -> dict[str, Any]:
    run = LocomoRun()
    task = progress.add_task("LoCoMo conversations", total=len(conversations))
    for conversation in conversations:
        progress.update(task, description=f"LoCoMo {conversation.sample_id}")
        run_locomo_conversation(conversation, embedder, run)
        progress.advance(task)
    before, after, quoted = run.before.summary(), run.after.summary(), run.after_quoted.summary()
    return {
        "conversations": len(conversations),
        "turns": run.turns,
        "questions": before["questions"],
        "before_sleep": before,
        "after_sleep": after,
        "after_sleep_quoted_only": quoted,
        "r5_delta": round(after["overall"]["R@5"] - before["overall"]["R@5"], 1),
        "r5_not_below": after["overall"]["R@5"] >= before["overall"]["R@5"],
        "facts_written": run.facts,
        "turns_consolidated": run.consolidated,
        "mean_sources_per_fact": round(statistics.fmean(run.sources_per_fact), 1)
        if run.sources_per_fact
        else 0.0,
        "duplicates_merged": run.merged,
        "contradictions": run.contradictions,
        "questions_with_a_fact_in_top5": run.fact_in_top5,
        "sleep_seconds": round(run.sleep_seconds, 1),
    }


# ----------------------------------------------------------------------------- report


def render_markdown(report: dict[str, Any]) -> str:
    synthetic = report["synthetic"]
    lines = [
        "# Sleep consolidation benchmark",
        "",
        f"`{report['command']}` — {report['started']}, {report['wall_seconds']:.0f} s in all.",
        "",
        f"## Sleep over {synthetic['episodes']:,} episodic memories",
        "",
        "A seeded synthetic diary (templated sentences over "
        f"{len(TOPICS)} topics, {len(PEOPLE)} people, {len(WHEN)} times of day), one user, "
        "an embedded store, the real all-MiniLM-L6-v2, the built-in extractive summariser.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| remember_many (embedding + write) | {synthetic['remember_seconds']} s |",
        f"| **sleep wall time** | **{synthetic['sleep_seconds']} s** "
        f"({synthetic['episodes_per_second']} episodes/s) |",
        f"| episodes considered | {synthetic['considered']:,} |",
        f"| clusters = **facts written** | **{synthetic['facts_written']:,}** |",
        f"| episodes consolidated | {synthetic['episodes_consolidated']:,} |",
        f"| derived_from links | {synthetic['derived_from_links']:,} "
        f"(mean {synthetic['mean_sources_per_fact']} sources a fact) |",
        f"| duplicates merged / contradictions linked | {synthetic['duplicates_merged']} / "
        f"{synthetic['contradictions']} |",
        f"| RSS before sleep | {synthetic['rss_before_sleep_mb']} MB |",
        f"| **peak RSS {'during sleep' if synthetic['peak_rss_is_sleep_only'] else '(run)'}** "
        f"| **{synthetic['peak_rss_mb']} MB** |",
        f"| second sleep on the same data | {synthetic['second_sleep']['seconds']} s, "
        f"{synthetic['second_sleep']['facts_written']} facts written |",
        "",
    ]
    locomo = report.get("locomo")
    if locomo:
        head = ["", "R@5", "R@10", *(f"{c} R@5" for c in CATEGORIES.values())]
        lines += [
            "## LoCoMo recall before and after sleep",
            "",
            f"{locomo['conversations']} conversations, {locomo['turns']:,} turns, "
            f"{locomo['questions']:,} questions (categories 1–4 with evidence). Each "
            "conversation's turns are one user's episodic memories (the `benchmarks/locomo.py` "
            "protocol); recall@k is measured, `sleep` runs, recall@k is measured again over "
            "semantic and episodic memories together, in stores that do not track usage.",
            "",
            "**Scoring rule after sleep:** a recalled episode stands for its own turn; a recalled "
            "fact stands for the turns it is `derived_from`, so it counts for a question only "
            "through the evidence turns among its sources. A fact whose sources hold none of the "
            "evidence counts for nothing (it only takes a slot). The stricter row counts a fact "
            "only for the evidence turns among its sources whose sentences it quotes (the "
            "extractive summary keeps at most six sentences of a cluster).",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        rows = (
            ("before sleep", "before_sleep"),
            ("**after sleep**", "after_sleep"),
            (
                "after sleep, stricter: a fact counts only for turns it quotes",
                "after_sleep_quoted_only",
            ),
        )
        for label, key in rows:
            summary = locomo[key]
            cells = [label, *(f"{summary['overall'][f'R@{k}']:.1f}" for k in KS)]
            cells += [
                f"{summary['by_category'][c]['R@5']:.1f}" if c in summary["by_category"] else "—"
                for c in CATEGORIES.values()
            ]
            lines.append("| " + " | ".join(cells) + " |")
        verdict = "holds" if locomo["r5_not_below"] else "**fails**"
        lines += [
            "",
            f"R@5 change: **{locomo['r5_delta']:+.1f}** points — the requirement "
            f"(after ≥ before) {verdict}.",
            "",
            f"Sleep wrote {locomo['facts_written']:,} facts from "
            f"{locomo['turns_consolidated']:,} of the {locomo['turns']:,} turns (mean "
            f"{locomo['mean_sources_per_fact']} sources a fact; turns that joined no cluster "
            f"stay unconsolidated), merged {locomo['duplicates_merged']} near-duplicates, linked "
            f"{locomo['contradictions']} contradictions, in {locomo['sleep_seconds']} s. "
            f"A fact was among the top 5 for {locomo['questions_with_a_fact_in_top5']:,} "
            "questions.",
            "",
        ]
    lines += [
        "## Machine",
        "",
        machine_line(report["machine"]),
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--items", type=int, default=5_000, help="synthetic episodes to sleep")
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo: first N only")
    parser.add_argument("--skip-locomo", action="store_true", help="only the synthetic part")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    if args.items < 1:
        parser.error("--items must be at least 1")
    if not args.skip_locomo and locomo_missing(args.data):
        return 2

    embedder = SentenceTransformerEmbedder(batch_size=BATCH_SIZE)
    embedder.embed_documents(["warm-up: load the model before anything is timed"])
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    wall = time.perf_counter()
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/consolidation.py", *(argv or sys.argv[1:])]),
        "started": started,
    }
    with progress_bar(console) as progress:
        report["synthetic"] = run_synthetic(embedder, args.items, progress)
        if not args.skip_locomo:
            conversations = load_conversations(args.data)[: args.conversations]
            report["locomo"] = run_locomo(conversations, embedder, progress)
    report["wall_seconds"] = round(time.perf_counter() - wall, 1)
    report["machine"] = machine()

    markdown = render_markdown(report)
    write_report(args.out, "consolidation", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
