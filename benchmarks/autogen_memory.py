"""LoCoMo retrieval through AutoGen's Memory protocol: MementoMemory against ChromaDBVectorMemory.

Both memories are driven only through ``add`` and ``query``, the calls an AutoGen application
makes, one memory per dialogue turn, and both embed with the same all-MiniLM-L6-v2 weights
(Memento with its default ONNX build, upstream with sentence-transformers on the copy bundled
with memento-core). The protocol and the scoring are ``benchmarks/locomo.py``'s (its
loader and scorer are imported): recall@k over the evidence turns of every question of
categories 1–4, k = 1, 5, 10. Beside recall it measures, per call, the latency of ``add`` and of
``query`` (query embedding included), how late the event loop ran other tasks while each memory
worked, and three behaviours FRAMEWORKS.md lists as upstream flaws: how far the reported score is
from the true cosine similarity of the top result, which MIME type comes back for text, and
whether ``add`` changes the caller's metadata dict.

Beside upstream it holds the adapter against core in the same run (``_parity``): R@5/R@10 of
core's ``recall``, one write at a time (the first ``--single`` turns of each conversation, each
``add`` / ``remember`` awaited before the next, on a fresh store), adds awaited at once
(``asyncio.gather``) against core's ``remember_many``, and query p50 against core's.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/autogen_memory.py [--conversations N]
        [--single N] [--out DIR]

The data is read from ``--data`` (default ``../shared/bench/locomo10.json`` next to the
repository, or ``$LOCOMO_PATH``), never copied.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["ANONYMIZED_TELEMETRY"] = "False"

from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from rich.console import Console

# benchmarks/ is not a package; the LoCoMo loader and scorer live next door in locomo.py.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arguments, locomo_missing, report_footer, write_report
from _parity import CORE, SINGLE_WRITES, CoreReference, parity_markdown, single_summary
from locomo import (
    CATEGORIES,
    KS,
    Conversation,
    Scores,
    load_conversations,
    machine,
    percentile,
)

from memento_autogen import MementoMemory, MementoMemoryConfig
from memento_core import Embedder, Memento, OnnxEmbedder
from memento_core.embedding import bundled_model_path

K = max(KS)
USER = "locomo"
MEMENTO = "MementoMemory (memento-autogen)"
CHROMA = "ChromaDBVectorMemory (autogen-ext)"


@dataclass
class Measures:
    """Everything measured for one memory implementation across the run."""

    scores: Scores = field(default_factory=Scores)
    add_ms: list[float] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)
    loop_late_ms: list[float] = field(default_factory=list)
    single_ms: list[float] = field(default_factory=list)
    """The first turns added one at a time into a fresh store, as core writes them (empty:
    ``add_ms`` stands for them)."""
    batched: list[tuple[int, float]] = field(default_factory=list)
    """Per conversation: turns and the seconds of adding them all at once (``gather``)."""
    score_error: list[float] = field(default_factory=list)
    """|reported score − true cosine| of each question's top result."""
    text_mime_returned: str = ""
    caller_metadata_changed: bool = False
    space: str = ""

    def summary(self) -> dict[str, Any]:
        adds = sum(self.add_ms) / 1000
        batched = sum(t for _, t in self.batched)
        return {
            "retrieval": self.scores.summary(),
            "single": single_summary(self.single_ms or self.add_ms),
            "batched_per_s": round(sum(n for n, _ in self.batched) / batched, 1)
            if batched
            else 0.0,
            "add_ms": {"p50": percentile(self.add_ms, 50), "p95": percentile(self.add_ms, 95)},
            "adds_per_s": round(len(self.add_ms) / adds, 1) if adds else 0.0,
            "query_ms": {
                "p50": percentile(self.query_ms, 50),
                "p95": percentile(self.query_ms, 95),
            },
            "event_loop_lateness_ms": {
                "p50": percentile(self.loop_late_ms, 50),
                "p99": percentile(self.loop_late_ms, 99),
                "max": percentile(self.loop_late_ms, 100),
            },
            "score_vs_true_cosine_mean_abs_error": round(statistics.fmean(self.score_error), 4)
            if self.score_error
            else None,
            "text_mime_type_returned": self.text_mime_returned,
            "caller_metadata_changed_by_add": self.caller_metadata_changed,
            "distance_space": self.space,
        }


class LoopWatch:
    """How late a 1 ms heartbeat task wakes up: how long the event loop was kept busy."""

    def __init__(self) -> None:
        self.late_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _beat(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.late_ms.append(max(0.0, (time.perf_counter() - before - 0.001) * 1000))

    def __enter__(self) -> LoopWatch:
        self._task = asyncio.get_running_loop().create_task(self._beat())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


async def timed(call: Awaitable[Any], into: list[float]) -> Any:
    started = time.perf_counter()
    result = await call
    into.append(1000 * (time.perf_counter() - started))
    # Let the heartbeat run: a memory that never yields would otherwise hide its stalls.
    await asyncio.sleep(0)
    return result


async def run_memory(
    memory: Memory,
    conversation: Conversation,
    measures: Measures,
    vectors: dict[str, Any],
    embedder: Embedder,
    reported_cosine: Callable[[dict[str, Any]], float],
) -> None:
    """Add every turn, then ask every question, through ``add`` and ``query`` only."""
    turns_of: dict[str, list[str]] = {}
    with LoopWatch() as watch:
        for turn in conversation.turns:
            turns_of.setdefault(turn.text, []).append(turn.dia_id)
            metadata = {"created_at": turn.created_at.isoformat(), "memory_type": "episodic"}
            content = MemoryContent(
                content=turn.text, mime_type=MemoryMimeType.TEXT, metadata=metadata
            )
            await timed(memory.add(content), measures.add_ms)
            measures.caller_metadata_changed |= content.metadata != metadata
        for question in conversation.questions:
            found = await timed(memory.query(question.text), measures.query_ms)
            results = found.results[:K]
            ranked = [dia for r in results for dia in turns_of.get(str(r.content), [])]
            measures.scores.add(question, ranked)
            if results:
                top = results[0]
                true_cosine = float(embedder.embed_query(question.text) @ vectors[str(top.content)])
                measures.score_error.append(abs(reported_cosine(top.metadata or {}) - true_cosine))
                mime = top.mime_type
                measures.text_mime_returned = (
                    mime.value if isinstance(mime, MemoryMimeType) else mime
                )
    measures.loop_late_ms += watch.late_ms


def contents(conversation: Conversation) -> list[MemoryContent]:
    """One ``MemoryContent`` per turn: its text, an episodic memory dated by its session."""
    return [
        MemoryContent(
            content=turn.text,
            mime_type=MemoryMimeType.TEXT,
            metadata={"created_at": turn.created_at.isoformat(), "memory_type": "episodic"},
        )
        for turn in conversation.turns
    ]


async def add_batched(memory: Memory, conversation: Conversation, measures: Measures) -> None:
    """Every turn added at once in groups of 256 (``asyncio.gather``, as a tool loop would)."""
    items = contents(conversation)
    started = time.perf_counter()
    for start in range(0, len(items), 256):
        await asyncio.gather(*(memory.add(c) for c in items[start : start + 256]))
    measures.batched.append((len(items), time.perf_counter() - started))


async def add_singly(
    memory: Memory, conversation: Conversation, measures: Measures, count: int
) -> None:
    """The first ``count`` turns added one at a time, each ``add`` awaited before the next."""
    await memory.add(MemoryContent(content="warm-up", mime_type=MemoryMimeType.TEXT))
    for content in contents(conversation)[:count]:
        started = time.perf_counter()
        await memory.add(content)
        measures.single_ms.append(1000 * (time.perf_counter() - started))


async def run_conversation(
    conversation: Conversation,
    embedder: Embedder,
    measures: dict[str, Measures],
    directory: Path,
    single: int,
) -> None:
    from autogen_ext.memory.chromadb import (
        ChromaDBVectorMemory,
        PersistentChromaDBVectorMemoryConfig,
        SentenceTransformerEmbeddingFunctionConfig,
    )

    texts = list(dict.fromkeys(t.text for t in conversation.turns))
    vectors = dict(zip(texts, embedder.embed_documents(texts)))

    with Memento.open(directory / "memento", embedder=embedder) as store:
        config = MementoMemoryConfig(user_id=USER, k=K)
        memento = MementoMemory(config, store=store)
        await run_memory(
            memento,
            conversation,
            measures[MEMENTO],
            vectors,
            embedder,
            lambda metadata: float(metadata["similarity"]),
        )
        await memento.close()
    measures[MEMENTO].space = "cosine"
    with Memento.open(directory / "memento-batched", embedder=embedder) as store:
        batched = MementoMemory(MementoMemoryConfig(user_id=USER, k=K), store=store)
        await add_batched(batched, conversation, measures[MEMENTO])
    with Memento.open(directory / "memento-single", embedder=embedder) as store:
        singly = MementoMemory(MementoMemoryConfig(user_id=USER, k=K), store=store)
        await add_singly(singly, conversation, measures[MEMENTO], single)

    chroma = ChromaDBVectorMemory(
        config=PersistentChromaDBVectorMemoryConfig(
            collection_name="locomo",
            persistence_path=str(directory / "chroma"),
            k=K,
            embedding_function_config=SentenceTransformerEmbeddingFunctionConfig(
                model_name=str(bundled_model_path())
            ),
        )
    )
    await run_memory(
        chroma,
        conversation,
        measures[CHROMA],
        vectors,
        embedder,
        lambda metadata: float(metadata["score"]),
    )
    measures[CHROMA].space = chroma_space(chroma)
    await chroma.clear()
    await add_batched(chroma, conversation, measures[CHROMA])
    await chroma.close()


def chroma_space(memory: Any) -> str:
    """The distance space the upstream memory's collection really uses."""
    memory._ensure_initialized()  # the public API has no way to ask
    configuration = memory._collection.configuration or {}
    hnsw = configuration.get("hnsw") or {}
    return str(hnsw.get("space", "l2"))


def render_markdown(report: dict[str, Any]) -> str:
    systems = report["systems"]
    lines = [
        "# LoCoMo through AutoGen memories",
        "",
        f"{report['questions_scored']:,} questions (categories 1–4 with evidence) over "
        f"{report['conversations']} conversations, {report['turns']:,} turns, one `add` per turn "
        "and one `query` per question, all-MiniLM-L6-v2 for both (Memento's default ONNX "
        "build; upstream's sentence-transformers). Protocol: "
        "`../shared/bench/README.md`; scoring: `benchmarks/locomo.py`.",
        "",
        "| memory | R@1 | R@5 | R@10 | add p50 / p95 | adds/s, one at a time | query p50 / p95 "
        "| event loop late p50 / p99 / max |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in systems.items():
        overall, late = s["retrieval"]["overall"], s["event_loop_lateness_ms"]
        lines.append(
            f"| {name} | {overall['R@1']:.1f} | {overall['R@5']:.1f} | {overall['R@10']:.1f} "
            f"| {s['add_ms']['p50']} / {s['add_ms']['p95']} ms | {s['adds_per_s']} "
            f"| {s['query_ms']['p50']} / {s['query_ms']['p95']} ms "
            f"| {late['p50']} / {late['p99']} / {late['max']} ms |"
        )
    head = ["memory", *(f"{c} R@5 / R@10" for c in CATEGORIES.values())]
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in systems.items():
        per = s["retrieval"]["by_category"]
        cells = [
            f"{per[c]['R@5']:.1f} / {per[c]['R@10']:.1f}" if c in per else "—"
            for c in CATEGORIES.values()
        ]
        lines.append("| " + " | ".join([name, *cells]) + " |")
    lines += [
        "",
        "## The upstream flaws, measured",
        "",
        "| memory | distance space | mean abs(reported score − true cosine), top result "
        "| MIME type returned for text/plain | caller's metadata changed by add |",
        "|---|---|---|---|---|",
    ]
    for name, s in systems.items():
        lines.append(
            f"| {name} | {s['distance_space']} | {s['score_vs_true_cosine_mean_abs_error']} "
            f"| `{s['text_mime_type_returned']}` | {s['caller_metadata_changed_by_add']} |"
        )
    lines += [
        "",
        "Memento's reported value is `metadata['similarity']` (its `score` is the ranking score);"
        " upstream's is `metadata['score']`. Event loop lateness: how late a 1 ms heartbeat task "
        "woke up while the memory worked, that is how long other tasks of the application had "
        "to wait; upstream calls Chroma and the model on the event loop, MementoMemory in a "
        "worker thread.",
        "",
        *parity_markdown(MEMENTO, systems[MEMENTO], report[CORE]),
        f"{CHROMA} in the same run: query p50 {systems[CHROMA]['query_ms']['p50']} ms, "
        f"one add at a time p50 {systems[CHROMA]['single']['p50_ms']} ms "
        f"({systems[CHROMA]['single']['per_s']}/s), adds at once "
        f"{systems[CHROMA]['batched_per_s']}/s. Core writes the first {report['single']} turns "
        "of each conversation one at a time (`remember`), and the adapter the same turns (`add`), "
        "each into a fresh store; the adapter also adds every turn at once (`asyncio.gather`) "
        "into another. Upstream's one-at-a-time figures are from its main run (every turn).",
        "",
        *report_footer(report),
    ]
    return "\n".join(lines)


async def run(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    conversations = load_conversations(args.data)[: args.conversations]
    embedder = OnnxEmbedder()  # Memento's default
    embedder.embed_documents(["warm-up: load the model before anything is timed"])
    measures = {MEMENTO: Measures(), CHROMA: Measures()}
    core = CoreReference()
    wall = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for n, conversation in enumerate(conversations, 1):
        with tempfile.TemporaryDirectory(prefix="autogen-locomo-") as tmp:
            await run_conversation(conversation, embedder, measures, Path(tmp), args.single)
        await asyncio.to_thread(core.run, conversation, embedder, user=USER, single=args.single)
        console.print(
            f"{conversation.sample_id} ({n}/{len(conversations)}): "
            + ", ".join(
                f"{name.split(' ')[0]} R@10 {m.scores.summary()['overall']['R@10']:.1f}"
                for name, m in measures.items()
            )
        )
    return {
        "command": " ".join(["benchmarks/autogen_memory.py", *sys.argv[1:]]),
        "started": started,
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions_scored": measures[MEMENTO].scores.count,
        "k": K,
        "single": args.single,
        "systems": {name: m.summary() for name, m in measures.items()},
        CORE: core.summary(),
        "machine": machine(),
    }


def main() -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--conversations", type=int, default=None, help="run only the first N")
    parser.add_argument(
        "--single", type=int, default=SINGLE_WRITES, help="turns core writes one at a time"
    )
    args = parser.parse_args()
    console = Console(stderr=True)
    if locomo_missing(args.data):
        return 2
    report = asyncio.run(run(args, console))
    markdown = render_markdown(report)
    write_report(args.out, "autogen_memory", report, markdown)
    console.print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
