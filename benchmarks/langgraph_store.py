"""LoCoMo retrieval through LangGraph's store API: MementoStore against InMemoryStore(index=...).

Both stores get the same items the same way — ``batch([PutOp(...)])``, one item per dialogue turn
``{"text": "[<session date>] <speaker>: <text>"}`` under ``("locomo", <conversation>)``, index
field ``text`` — and the same questions through ``search(namespace, query=..., limit=10)``, with
the same all-MiniLM-L6-v2 model (one instance). Recall@k follows ``../shared/bench/README.md``
(categories 1–4 with evidence). One deviation from that protocol: a store item has no caller-set
creation time, so every item is dated when it is written, in both stores.

A second part measures throughput: ``--ops`` mixed operations (default 6,000: 40% ``put`` of a
dialogue turn, 30% ``get`` of a key that may or may not exist yet, 30% ``search`` with a question)
from ``--threads`` threads (default 10) sharing one store, against each store in turn on an empty
store; ops per second over the whole run and each call's latency (p50/p95) per kind. Target for
MementoStore: at least InMemoryStore's ops/s with the same embedder, in the same run.

MementoStore runs twice: on a Memento as opened by default (``track_usage=True``: every search
notes an access of each result, written in the background) and on one opened with
``track_usage=False``. Latency is
each ``search`` call, query embedding included, timed on the same questions; the stores' calls
alternate question by question so machine load falls on all alike.

``--embedder`` picks the model both stores embed with (one instance): all-MiniLM-L6-v2 on ONNX
Runtime, fp32 (the default, and Memento's own default: the sentence-transformers vectors), its
int8 export, or sentence-transformers on torch. ``--embed-threads`` sets the model's intra-op
threads (default 1): InMemoryStore embeds queries in a fresh worker thread and Memento in the
calling one, and on a busy machine a two-thread team in the calling thread spin-waits for a
core (a 13 ms embedding took 500 ms), which would measure the machine, not the stores. A run
with another embedder than the default writes ``langgraph_store_<embedder>.json`` / ``.md``.

A third part holds MementoStore against core in the same run (``_parity``): R@5/R@10 of
core's ``recall`` on the same turns (dated by session, which a store item cannot be), one
``put`` at a time (the first ``--single`` turns, on a fresh store; ``InMemoryStore`` too)
against core's ``remember``, batched puts against core's ``remember_many``, search p50 against
core's ``recall``.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/langgraph_store.py [--conversations N] [--quick]
        [--embedder onnx|onnx-int8|torch] [--ops N] [--threads N] [--skip-recall] [--single N]

``--quick`` runs one conversation and 600 ops (a smoke test, not a result to quote).

Writes ``benchmarks/results/langgraph_store.json`` and ``.md``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _common import arguments, locomo_missing, progress_bar, report_footer
from _parity import (
    CORE,
    SINGLE_WRITES,
    CoreReference,
    one_at_a_time,
    parity_markdown,
    single_summary,
)
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
from locomo import (  # this directory's LoCoMo loader and scoring (run as a script)
    BATCH_SIZE,
    CATEGORIES,
    KS,
    Conversation,
    Scores,
    load_conversations,
    machine,
    percentile,
)
from rich.console import Console

from memento_core import Embedder, Memento, OnnxEmbedder
from memento_core.embedding import CachingEmbedder, SentenceTransformerEmbedder, text_hash
from memento_langgraph import MementoStore

LIMIT = 10
WRITE_BATCH = 256
MEMENTO = "MementoStore (Memento hybrid ranking)"
MEMENTO_NO_USAGE = "MementoStore, track_usage=False"
IN_MEMORY = "InMemoryStore(index=…) (cosine)"
THROUGHPUT_RATIO = 1.0
"""MementoStore's ops/s at least this many times InMemoryStore's, same run, same embedder."""
KEY_SPACE = 2_000
"""Keys a throughput run puts to and gets from: re-puts replace, some gets miss."""
EMBEDDERS = ("onnx", "onnx-int8", "torch")
"""all-MiniLM-L6-v2 three ways (``--embedder``); ``onnx`` (fp32) is Memento's default."""


def make_embedder(choice: str, threads: int) -> Embedder:
    """The model both stores embed with, on ``threads`` intra-op threads."""
    if choice == "torch":
        import torch

        torch.set_num_threads(threads)
        return SentenceTransformerEmbedder(batch_size=BATCH_SIZE)
    model = "all-MiniLM-L6-v2-int8" if choice == "onnx-int8" else "all-MiniLM-L6-v2"
    return OnnxEmbedder(model, batch_size=BATCH_SIZE, threads=threads)


class MiniLMEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over the very model instance Memento uses."""

    def __init__(self, model: Embedder) -> None:
        self.model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.model.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.model.embed_query(text)]


def put_all(store: BaseStore, namespace: tuple[str, ...], conversation: Conversation) -> float:
    """Write every turn through ``batch``; returns the seconds it took."""
    ops = [PutOp(namespace, t.dia_id, {"text": t.text}) for t in conversation.turns]
    started = time.perf_counter()
    for start in range(0, len(ops), WRITE_BATCH):
        store.batch(ops[start : start + WRITE_BATCH])
    return time.perf_counter() - started


def put_singly(
    store: BaseStore, namespace: tuple[str, ...], conversation: Conversation, count: int
) -> list[float]:
    """Milliseconds of each ``put`` of the first ``count`` turns, one after the other."""
    turns = conversation.turns[:count]
    store.put(("warm-up",), "warm-up", {"text": "warm-up: open the collections"})
    return one_at_a_time(
        lambda n: store.put(namespace, turns[n].dia_id, {"text": turns[n].text}), len(turns)
    )


def run_conversation(
    conversation: Conversation,
    model: Embedder,
    scores: dict[str, Scores],
    latency: dict[str, list[float]],
    writes: dict[str, list[float]],
    single: dict[str, list[float]],
    single_count: int,
    advance: Callable[[int], None],
) -> None:
    namespace = ("locomo", conversation.sample_id)
    with tempfile.TemporaryDirectory(prefix="lg-store-") as tmp:
        # One put at a time, as an agent writes one memory per turn, each store fresh (and
        # Memento's embedding cache empty: every put embeds its text).
        with Memento.open(Path(tmp) / "single", embedder=model) as fresh:
            single[MEMENTO] += put_singly(
                MementoStore(fresh, index={"fields": ["text"]}),
                namespace,
                conversation,
                single_count,
            )
        single[IN_MEMORY] += put_singly(
            InMemoryStore(
                index={"dims": 384, "embed": MiniLMEmbeddings(model), "fields": ["text"]}
            ),
            namespace,
            conversation,
            single_count,
        )
        memento = Memento.open(Path(tmp) / "default", embedder=model)
        stores: dict[str, BaseStore] = {
            MEMENTO: MementoStore(memento, index={"fields": ["text"]}),
            IN_MEMORY: InMemoryStore(
                index={"dims": 384, "embed": MiniLMEmbeddings(model), "fields": ["text"]}
            ),
        }
        for name, store in stores.items():
            writes[name].append(put_all(store, namespace, conversation) / len(conversation.turns))
        # The same memories without usage counting. Its cache is primed with the first store's
        # vectors, so its writes embed nothing again (they are not timed); queries it embeds anew.
        cache = CachingEmbedder(model)
        for turn in conversation.turns:
            vector = memento.embedder.cached(text_hash(turn.text))
            if vector is not None:
                cache.prime(text_hash(turn.text), vector)
        plain = Memento.open(Path(tmp) / "plain", embedder=cache, track_usage=False)
        stores[MEMENTO_NO_USAGE] = MementoStore(plain, index={"fields": ["text"]})
        put_all(stores[MEMENTO_NO_USAGE], namespace, conversation)
        advance(len(conversation.turns))

        for question in conversation.questions:
            for name, store in stores.items():
                started = time.perf_counter()
                hits = store.search(namespace, query=question.text, limit=LIMIT)
                latency[name].append(1000 * (time.perf_counter() - started))
                scores[name].add(question, [h.key for h in hits])
            advance(1)
        memento.close()  # before the directory goes, so the last usage counts land in it


def mixed_ops(
    store: BaseStore, texts: Sequence[str], questions: Sequence[str], ops: int, threads: int
) -> dict[str, Any]:
    """``ops`` mixed calls from ``threads`` threads at once; throughput and latency per kind."""
    latency: dict[str, list[float]] = {"put": [], "get": [], "search": []}
    lock = threading.Lock()
    start = threading.Barrier(threads + 1)

    failed: dict[str, int] = {kind: 0 for kind in latency}
    messages: set[str] = set()

    def worker(seed: int, count: int) -> None:
        rng = random.Random(seed)
        mine: dict[str, list[float]] = {kind: [] for kind in latency}
        errors: dict[str, int] = {kind: 0 for kind in latency}
        start.wait()
        for _ in range(count):
            roll = rng.random()
            namespace = ("bench", f"user-{rng.randrange(10)}")
            key = f"k{rng.randrange(KEY_SPACE)}"
            kind = "put" if roll < 0.4 else "get" if roll < 0.7 else "search"
            began = time.perf_counter()
            try:
                if kind == "put":
                    store.put(namespace, key, {"text": rng.choice(texts)})
                elif kind == "get":
                    store.get(namespace, key)
                else:
                    store.search(("bench",), query=rng.choice(questions), limit=LIMIT)
            except Exception as err:  # counted, not timed: the op did not complete
                errors[kind] += 1
                with lock:
                    messages.add(f"{type(err).__name__}: {err}"[:120])
                continue
            mine[kind].append(1000 * (time.perf_counter() - began))
        with lock:
            for kind, values in mine.items():
                latency[kind].extend(values)
                failed[kind] += errors[kind]

    shares = [ops // threads + (1 if n < ops % threads else 0) for n in range(threads)]
    pool = [threading.Thread(target=worker, args=(n, shares[n])) for n in range(threads)]
    for thread in pool:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - began
    every = [v for values in latency.values() for v in values]
    return {
        "ops": ops,
        "threads": threads,
        "seconds": round(wall, 1),
        "ops_per_second": round(len(every) / wall, 1),  # completed ops only
        "failed": sum(failed.values()),
        "errors": sorted(messages),
        "p50_ms": percentile(every, 50),
        "p95_ms": percentile(every, 95),
        "by_kind": {
            kind: {"n": len(v), "p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)}
            for kind, v in latency.items()
        },
    }


def run_throughput(
    conversations: Sequence[Conversation],
    model: Embedder,
    ops: int,
    threads: int,
) -> dict[str, Any]:
    texts = [t.text for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lg-store-ops-") as tmp:
        memento = Memento.open(Path(tmp) / "ops", embedder=model)
        stores: dict[str, BaseStore] = {
            MEMENTO: MementoStore(memento, index={"fields": ["text"]}),
            IN_MEMORY: InMemoryStore(
                index={"dims": 384, "embed": MiniLMEmbeddings(model), "fields": ["text"]}
            ),
        }
        for name, store in stores.items():
            results[name] = mixed_ops(store, texts, questions, ops, threads)
        memento.close()
    return results


def verdict(
    summaries: dict[str, Any], timing: dict[str, dict[str, float]], name: str
) -> dict[str, Any]:
    """``name`` against InMemoryStore: recall differences and latency ratios."""
    ours, theirs = summaries[name]["overall"], summaries[IN_MEMORY]["overall"]
    p50_ratio = round(timing[name]["p50"] / timing[IN_MEMORY]["p50"], 2)
    p95_ratio = round(timing[name]["p95"] / timing[IN_MEMORY]["p95"], 2)
    return {
        "r5_difference": round(ours["R@5"] - theirs["R@5"], 1),
        "r10_difference": round(ours["R@10"] - theirs["R@10"], 1),
        "leads_on_recall": all(ours[f"R@{k}"] > theirs[f"R@{k}"] for k in KS),
        "p50_ratio": p50_ratio,
        "p95_ratio": p95_ratio,
        "latency_within_2x": p50_ratio <= 2 and p95_ratio <= 2,
    }


def describe(embedder: dict[str, Any]) -> str:
    """How a report names the embedder it ran: ``onnx, 1 intra-op thread``."""
    threads = embedder["threads"]
    return f"{embedder['choice']}, {threads} intra-op thread{'s' if threads != 1 else ''}"


def render_markdown(report: dict[str, Any]) -> str:
    categories = list(CATEGORIES.values())
    head = ["store", "R@1", "R@5", "R@10", *(f"{c} R@5 / R@10" for c in categories)]
    lines = [
        "# LangGraph store benchmark: LoCoMo retrieval through `BaseStore.search`",
        "",
        f"Questions scored: **{report['questions_scored']:,}** (categories 1–4 with evidence, "
        f"{report['conversations']} conversations, {report['turns']:,} turns). Protocol: "
        "`../shared/bench/README.md`, except that items are dated when written (a store item "
        "has no caller-set creation time). Same all-MiniLM-L6-v2 instance for both stores "
        f"({describe(report['embedder'])}); index field `text`; "
        "`search(namespace, query=question, limit=10)`.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, summary in report["stores"].items():
        overall = summary["overall"]
        cells = [name, *(f"{overall[f'R@{k}']:.1f}" for k in KS)]
        for category in categories:
            per = summary["by_category"].get(category)
            cells.append(f"{per['R@5']:.1f} / {per['R@10']:.1f}" if per else "—")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Search latency (same questions, calls alternating, query embedding included)",
        "",
        "| store | p50 ms | p95 ms | searches | write ms per item (batched puts) |",
        "|---|---|---|---|---|",
    ]
    for name, timing in report["latency_ms"].items():
        lines.append(
            f"| {name} | {timing['p50']} | {timing['p95']} | {timing['searches']} | "
            f"{report['write_ms_per_item'].get(name, 'not timed (vectors reused)')} |"
        )
    lines.append("")
    for name, v in report["verdicts"].items():
        lines.append(
            f"- {name} against InMemoryStore: R@5 {v['r5_difference']:+.1f} points, "
            f"R@10 {v['r10_difference']:+.1f} points; latency p50 ×{v['p50_ratio']}, "
            f"p95 ×{v['p95_ratio']}. Leads on recall: **{v['leads_on_recall']}**; "
            f"latency within 2×: **{v['latency_within_2x']}**."
        )
    if report.get(CORE) and report.get("single_writes"):
        ms = report["write_ms_per_item"][MEMENTO]
        ours = {
            "retrieval": report["stores"][MEMENTO],
            "single": report["single_writes"][MEMENTO],
            "batched_per_s": round(1000 / ms, 1) if ms else 0.0,
            "query_ms": report["latency_ms"][MEMENTO],
        }
        theirs = report["single_writes"][IN_MEMORY]
        lines += [
            "",
            *parity_markdown(MEMENTO, ours, report[CORE]),
            f"{IN_MEMORY} in the same run: search p50 {report['latency_ms'][IN_MEMORY]['p50']} "
            f"ms, one put at a time p50 {theirs['p50_ms']} ms ({theirs['per_s']}/s). Batched: "
            f"`batch` of {WRITE_BATCH} puts. One at a time: the first {theirs['n']} turns, "
            "`put` by `put`, on a fresh store; core writes the same turns with `remember`.",
        ]
    if report.get("throughput"):
        first = next(iter(report["throughput"].values()))
        lines += [
            "",
            f"## Throughput: {first['ops']:,} mixed ops from {first['threads']} threads",
            "",
            "40% `put` (a dialogue turn), 30% `get`, 30% `search(query=…, limit=10)`, one shared "
            "store, empty at the start; latency is each call's, in ms; ops/s counts completed "
            "ops (an op that raised is counted under *failed*, not timed)."
            + (
                f" Measured by `{report['throughput_run']['command']}` at "
                f"{report['throughput_run']['started']} with "
                f"{describe(report['throughput_run']['embedder'])} (load average "
                f"{report['throughput_run']['load_average_at_start']}); the recall figures above "
                "come from the full run."
                if "throughput_run" in report
                else ""
            ),
            "",
            "| store | ops/s | seconds | p50 | p95 | put p50 / p95 | get p50 / p95 "
            "| search p50 / p95 | failed |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, run in report["throughput"].items():
            kinds = [
                f"{run['by_kind'][k]['p50_ms']} / {run['by_kind'][k]['p95_ms']}"
                for k in ("put", "get", "search")
            ]
            lines.append(
                f"| {name} | {run['ops_per_second']} | {run['seconds']} | {run['p50_ms']} | "
                f"{run['p95_ms']} | " + " | ".join(kinds) + f" | {run.get('failed', '—')} |"
            )
        for name, run in report["throughput"].items():
            for message in run.get("errors", []):
                lines.append(f"\n- {name} raised `{message}`")
        ours = report["throughput"][MEMENTO]["ops_per_second"]
        theirs = report["throughput"][IN_MEMORY]["ops_per_second"]
        ratio = ours / theirs
        met = "met" if ratio >= THROUGHPUT_RATIO else "not met"
        lines += [
            "",
            f"MementoStore: {ours} ops/s, {ratio:.2f} × InMemoryStore's {theirs} (target "
            f"≥ {THROUGHPUT_RATIO:.1f} ×): **{met}**.",
        ]
    lines += [
        "",
        *report_footer(report, load_at_start=True),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--conversations", type=int, default=None, help="run only the first N")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="onnx")
    parser.add_argument(
        "--embed-threads", type=int, default=1, help="the model's intra-op threads (docstring)"
    )
    parser.add_argument("--ops", type=int, default=6_000, help="mixed ops in the throughput run")
    parser.add_argument("--threads", type=int, default=10, help="threads in the throughput run")
    parser.add_argument(
        "--skip-recall",
        action="store_true",
        help="the throughput part only (an existing report keeps its recall figures)",
    )
    parser.add_argument(
        "--single", type=int, default=SINGLE_WRITES, help="turns put one at a time, per store"
    )
    parser.add_argument("--quick", action="store_true", help="1 conversation, 600 ops")
    args = parser.parse_args(argv)
    if args.quick:
        args.conversations, args.ops = 1, 600
    console = Console(stderr=True)
    if locomo_missing(args.data):
        return 2

    conversations = load_conversations(args.data)[: args.conversations]
    model = make_embedder(args.embedder, args.embed_threads)
    model.embed_documents(["warm-up: load the model before anything is timed"])
    scores = {name: Scores() for name in (MEMENTO, MEMENTO_NO_USAGE, IN_MEMORY)}
    latency: dict[str, list[float]] = {MEMENTO: [], MEMENTO_NO_USAGE: [], IN_MEMORY: []}
    writes: dict[str, list[float]] = {MEMENTO: [], IN_MEMORY: []}
    single: dict[str, list[float]] = {MEMENTO: [], IN_MEMORY: []}
    core = CoreReference()
    load = os.getloadavg()
    wall = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    work = sum(len(c.turns) + len(c.questions) for c in conversations)
    with progress_bar(console) as progress:
        task = progress.add_task("turns + questions", total=0 if args.skip_recall else work)
        for conversation in [] if args.skip_recall else conversations:
            progress.update(task, description=conversation.sample_id)
            run_conversation(
                conversation,
                model,
                scores,
                latency,
                writes,
                single,
                args.single,
                lambda n: progress.advance(task, n),
            )
            core.run(conversation, model, user="locomo", single=args.single)

    console.print(f"throughput: {args.ops} mixed ops from {args.threads} threads per store")
    throughput = run_throughput(conversations, model, args.ops, args.threads)
    summaries = {name: s.summary() for name, s in scores.items()}
    timing = {
        name: {
            "p50": percentile(values, 50),
            "p95": percentile(values, 95),
            "searches": len(values),
        }
        for name, values in latency.items()
    }
    verdicts = {
        name: verdict(summaries, timing, name)
        for name in (MEMENTO, MEMENTO_NO_USAGE)
        if not args.skip_recall
    }
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/langgraph_store.py", *(argv or sys.argv[1:])]),
        "started": started,
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions_scored": scores[MEMENTO].count,
        "stores": summaries,
        "latency_ms": timing,
        "write_ms_per_item": {
            name: round(1000 * sum(v) / len(v), 1) for name, v in writes.items() if v
        },
        "verdicts": verdicts,
        "single_writes": {name: single_summary(v) for name, v in single.items() if v},
        CORE: core.summary() if core.batched else None,
        "throughput": throughput,
        "embedder": {
            "choice": args.embedder,
            "name": model.name,
            "threads": args.embed_threads,
        },
        "load_average_at_start": [round(x, 2) for x in load],
        "machine": machine(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "langgraph_store" + (
        "" if args.embedder == "onnx" else f"_{args.embedder.replace('-', '_')}"
    )
    previous = args.out / f"{stem}.json"
    if args.skip_recall and previous.is_file():
        # Throughput only: keep the recall figures of the last full run, say where each is from.
        kept = json.loads(previous.read_text(encoding="utf-8"))
        kept["throughput"] = throughput
        # Reports from before --embedder ran torch on --torch-threads.
        kept.setdefault("embedder", {"choice": "torch", "threads": kept.get("torch_threads", 1)})
        kept["throughput_run"] = {
            key: report[key]
            for key in ("command", "started", "wall_seconds", "load_average_at_start", "embedder")
        }
        report = kept
    previous.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    markdown = render_markdown(report)
    (args.out / f"{stem}.md").write_text(markdown, encoding="utf-8")
    console.print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
