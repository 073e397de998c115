"""LoCoMo retrieval through LlamaIndex: MementoMemoryBlock against a VectorStoreIndex retriever.

Both are driven only through LlamaIndex's APIs, as an application would use them, one memory
per dialogue turn, and both embed with the same all-MiniLM-L6-v2 instance (core's default
``OnnxEmbedder``, wrapped as a LlamaIndex ``BaseEmbedding`` for the index; no download):

- Memento: ``MementoMemoryBlock.aput`` with the turns as ``Memory`` would flush them (chunks of
  about ``--flush-tokens`` tokens, ``Memory``'s default ``token_flush_size``, counted with
  Memento's WordPiece counter; user messages, each carrying its session date as
  ``created_at``), then
  ``MementoMemoryBlock.aget`` with the question as the newest user message; the block's text
  lists the memories best first and is mapped back to the turns.
- LlamaIndex: ``VectorStoreIndex.insert_nodes`` with the same chunks (one ``TextNode`` per turn),
  then ``index.as_retriever(similarity_top_k=10).aretrieve(question)``. (``VectorMemoryBlock``
  needs a vector store that keeps text, which llama-index-core alone does not ship; the index is
  the same embeddings and cosine ranking.)

The protocol and scoring are ``benchmarks/locomo.py``'s (its loader and scorer are imported):
recall@k over the evidence turns of every question of categories 1–4, k = 1, 5, 10. It also
measures write latency per flushed chunk, writes per second, and query latency (query embedding
included).

Beside LlamaIndex's index it holds the block against core in the same run (``_parity``):
R@5/R@10 of core's ``memory_injection`` (what the block's ``aget`` is: its text goes into the
prompt, so each memory in it counts as a use, where ``recall`` counts an access), one message
per ``aput`` (the first ``--single`` turns of each conversation, on a fresh store) against
core's ``remember``, flushed chunks against core's
``remember_many``, and query p50 against core's.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/llamaindex_memory.py [--conversations N]
        [--flush-tokens N] [--single N]

The data is read from ``--data`` (default ``../shared/bench/locomo10.json`` next to the
repository, or ``$LOCOMO_PATH``), never copied.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["ANONYMIZED_TELEMETRY"] = "False"

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.memory.memory import DEFAULT_FLUSH_SIZE
from llama_index.core.schema import TextNode
from rich.console import Console

# benchmarks/ is not a package; the LoCoMo loader and scorer live next door in locomo.py.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arguments, locomo_missing, progress_bar, report_footer, write_report
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

from memento_core import Embedder, Memento, OnnxEmbedder, WordPieceCounter
from memento_core._injection import HEADER
from memento_llamaindex import MementoMemoryBlock

K = max(KS)
USER = "locomo"
MEMENTO = "MementoMemoryBlock (memento-llamaindex)"
INDEX = "VectorStoreIndex retriever (llama-index-core)"


class MiniLMEmbedding(BaseEmbedding):
    """Core's MiniLM embedder as a LlamaIndex embedding model (the same weights, no download)."""

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder, **kwargs: Any) -> None:
        super().__init__(model_name=embedder.name, embed_batch_size=64, **kwargs)
        self._embedder = embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self._embedder.embed_documents(texts)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


@dataclass
class Measures:
    scores: Scores = field(default_factory=Scores)
    flush_ms: list[float] = field(default_factory=list)
    written: int = 0
    query_ms: list[float] = field(default_factory=list)
    single_ms: list[float] = field(default_factory=list)
    """One turn written at a time (a flush of one message, or one node inserted)."""

    def summary(self) -> dict[str, Any]:
        seconds = sum(self.flush_ms) / 1000
        return {
            "retrieval": self.scores.summary(),
            "single": single_summary(self.single_ms),
            "batched_per_s": round(self.written / seconds, 1) if seconds else 0.0,
            "flush_ms": {
                "p50": percentile(self.flush_ms, 50),
                "p95": percentile(self.flush_ms, 95),
            },
            "writes_per_s": round(self.written / seconds, 1) if seconds else 0.0,
            "query_ms": {
                "p50": percentile(self.query_ms, 50),
                "p95": percentile(self.query_ms, 95),
            },
        }


def flushes(turns: Sequence[Any], tokens: int) -> list[Sequence[Any]]:
    """The turns in the chunks ``Memory`` flushes: oldest first, each chunk closed once it
    holds ``tokens`` tokens (``Memory._manage_queue`` stops adding at its flush size)."""
    counter = WordPieceCounter()
    parts: list[Sequence[Any]] = []
    start, held = 0, 0
    for n, turn in enumerate(turns):
        held += counter.count(turn.text)
        if held >= tokens:
            parts.append(turns[start : n + 1])
            start, held = n + 1, 0
    if start < len(turns):
        parts.append(turns[start:])
    return parts


def block_contents(text: str) -> list[str]:
    """The memories listed in the block's text, best first (``- [type, date] content``)."""
    lines = text.splitlines()
    if not lines or lines[0] != HEADER:
        return []
    return [line.split("] ", 1)[1] for line in lines[1:] if line.startswith("- [")]


async def run_memento(
    conversation: Conversation, store: Memento, measures: Measures, flush: int, advance: Any
) -> None:
    block = MementoMemoryBlock(store=store, user_id=USER, recall_limit=K, token_budget=10**6)
    turns_of: dict[str, list[str]] = {}
    for part in flushes(conversation.turns, flush):
        messages = [
            ChatMessage(
                role=MessageRole.USER,
                content=turn.text,
                additional_kwargs={"created_at": turn.created_at},
            )
            for turn in part
        ]
        for turn in part:
            turns_of.setdefault(" ".join(turn.text.split()), []).append(turn.dia_id)
        started = time.perf_counter()
        await block.aput(messages, from_short_term_memory=True, session_id=conversation.sample_id)
        measures.flush_ms.append(1000 * (time.perf_counter() - started))
        measures.written += len(part)
        advance(len(part))
    for question in conversation.questions:
        started = time.perf_counter()
        text = await block.aget([ChatMessage(role=MessageRole.USER, content=question.text)])
        measures.query_ms.append(1000 * (time.perf_counter() - started))
        ranked = [dia for content in block_contents(text) for dia in turns_of.get(content, [])]
        measures.scores.add(question, ranked)
        advance(1)


def user_message(turn: Any) -> ChatMessage:
    return ChatMessage(
        role=MessageRole.USER, content=turn.text, additional_kwargs={"created_at": turn.created_at}
    )


async def memento_singly(
    conversation: Conversation, embedder: Embedder, measures: Measures, count: int
) -> None:
    """The first ``count`` turns flushed one message at a time into a fresh store."""
    with (
        tempfile.TemporaryDirectory(prefix="llamaindex-single-") as tmp,
        Memento.open(Path(tmp) / "memento", embedder=embedder) as store,
    ):
        block = MementoMemoryBlock(store=store, user_id=USER)
        await block.aput([ChatMessage(role=MessageRole.USER, content="warm-up")])
        for turn in conversation.turns[:count]:
            started = time.perf_counter()
            await block.aput([user_message(turn)], session_id=conversation.sample_id)
            measures.single_ms.append(1000 * (time.perf_counter() - started))


async def index_singly(
    conversation: Conversation, embedding: MiniLMEmbedding, measures: Measures, count: int
) -> None:
    index = VectorStoreIndex(nodes=[], embed_model=embedding)
    for turn in conversation.turns[:count]:
        started = time.perf_counter()
        index.insert_nodes([TextNode(id_=turn.dia_id, text=turn.text)])
        measures.single_ms.append(1000 * (time.perf_counter() - started))


async def run_index(
    conversation: Conversation, embedding: MiniLMEmbedding, measures: Measures, flush: int,
    advance: Any,
) -> None:  # fmt: skip
    index = VectorStoreIndex(nodes=[], embed_model=embedding)
    for part in flushes(conversation.turns, flush):
        nodes = [TextNode(id_=turn.dia_id, text=turn.text) for turn in part]
        started = time.perf_counter()
        index.insert_nodes(nodes)
        measures.flush_ms.append(1000 * (time.perf_counter() - started))
        measures.written += len(part)
        advance(len(part))
    retriever = index.as_retriever(similarity_top_k=K)
    for question in conversation.questions:
        started = time.perf_counter()
        found = await retriever.aretrieve(question.text)
        measures.query_ms.append(1000 * (time.perf_counter() - started))
        measures.scores.add(question, [n.node.node_id for n in found])
        advance(1)


def render_markdown(report: dict[str, Any]) -> str:
    systems = report["systems"]
    lines = [
        "# LoCoMo through LlamaIndex memories",
        "",
        f"{report['questions_scored']:,} questions (categories 1–4 with evidence) over "
        f"{report['conversations']} conversations, {report['turns']:,} turns, written in chunks "
        f"of about {report['flush_tokens']:,} tokens as `Memory` flushes them by default ("
        f"{report['turns'] / report['flushes']:.0f} turns a chunk on average), one query per "
        "question, "
        "all-MiniLM-L6-v2 for both (Memento's default ONNX build). Protocol: "
        "`../shared/bench/README.md`; scoring: `benchmarks/locomo.py`.",
        "",
        "| memory | R@1 | R@5 | R@10 | write per chunk p50 / p95 | writes/s | query p50 / p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in systems.items():
        overall = s["retrieval"]["overall"]
        lines.append(
            f"| {name} | {overall['R@1']:.1f} | {overall['R@5']:.1f} | {overall['R@10']:.1f} "
            f"| {s['flush_ms']['p50']} / {s['flush_ms']['p95']} ms | {s['writes_per_s']} "
            f"| {s['query_ms']['p50']} / {s['query_ms']['p95']} ms |"
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
        "Memento: `MementoMemoryBlock.aput` (an embedded store per conversation, default "
        "settings, usage tracking on) and `aget`, whose text is mapped back to turns; query "
        "latency includes building that text. LlamaIndex: an in-memory `VectorStoreIndex` "
        "(cosine over the same vectors) and its retriever's `aretrieve`.",
        "",
        *parity_markdown(MEMENTO, systems[MEMENTO], report[CORE]),
        f"{INDEX} in the same run: query p50 {systems[INDEX]['query_ms']['p50']} ms, one node "
        f"inserted at a time p50 {systems[INDEX]['single']['p50_ms']} ms "
        f"({systems[INDEX]['single']['per_s']}/s). Batched: chunks of about "
        f"{report['flush_tokens']:,} tokens (`aput`, as `Memory` flushes). One at a time: the "
        f"first {report['single']} turns, "
        "one message per `aput`, on a fresh store; core writes the same turns with `remember`.",
        "",
        *report_footer(report),
    ]
    return "\n".join(lines)


async def run(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    conversations = load_conversations(args.data)[: args.conversations]
    embedder = OnnxEmbedder()  # Memento's default
    embedder.embed_documents(["warm-up: load the model before anything is timed"])
    embedding = MiniLMEmbedding(embedder)
    measures = {MEMENTO: Measures(), INDEX: Measures()}
    core = CoreReference(injection=True)
    wall = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    work = 2 * sum(len(c.turns) + len(c.questions) for c in conversations)
    with progress_bar(console) as progress:
        task = progress.add_task("LoCoMo", total=work)

        def advance(n: int) -> None:
            progress.advance(task, n)

        for conversation in conversations:
            progress.update(task, description=f"{conversation.sample_id} Memento")
            with (
                tempfile.TemporaryDirectory(prefix="llamaindex-locomo-") as tmp,
                Memento.open(Path(tmp) / "memento", embedder=embedder) as store,
            ):
                await run_memento(
                    conversation, store, measures[MEMENTO], args.flush_tokens, advance
                )
            progress.update(task, description=f"{conversation.sample_id} VectorStoreIndex")
            await run_index(conversation, embedding, measures[INDEX], args.flush_tokens, advance)
            progress.update(task, description=f"{conversation.sample_id} one at a time, core")
            await memento_singly(conversation, embedder, measures[MEMENTO], args.single)
            await index_singly(conversation, embedding, measures[INDEX], args.single)
            await asyncio.to_thread(core.run, conversation, embedder, user=USER, single=args.single)
    return {
        "command": " ".join(["benchmarks/llamaindex_memory.py", *sys.argv[1:]]),
        "started": started,
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions_scored": measures[MEMENTO].scores.count,
        "flush_tokens": args.flush_tokens,
        "flushes": sum(len(flushes(c.turns, args.flush_tokens)) for c in conversations),
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
        "--flush-tokens",
        type=int,
        default=DEFAULT_FLUSH_SIZE,
        help="tokens per flushed chunk (Memory's token_flush_size)",
    )
    parser.add_argument(
        "--single", type=int, default=SINGLE_WRITES, help="turns written one at a time"
    )
    args = parser.parse_args()
    console = Console(stderr=True)
    if locomo_missing(args.data):
        return 2
    report = asyncio.run(run(args, console))
    markdown = render_markdown(report)
    write_report(args.out, "llamaindex_memory", report, markdown)
    console.print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
