"""Embedder benchmark: all-MiniLM-L6-v2 on ONNX Runtime (fp32, int8) against sentence-transformers,
and the multilingual embedders (multilingual-e5-small 4-bit, USE-multilingual v3).

On the LoCoMo dialogue turns and questions (``../shared/bench/locomo10.json``, or ``--data`` /
``$LOCOMO_PATH``; never copied into the repository), for each embedder:

- query latency: ``embed_query`` of each question, one at a time (p50, p95);
- batched encode: ``embed_documents`` of all turns in batches of 64 (texts per second, and the
  ratio to sentence-transformers on the same texts), and of the turns handed over 52 at a time
  (``CHUNK``: what LlamaIndex's ``Memory`` flushes on average with its default flush size);
- agreement with sentence-transformers: cosine of each turn's vector with the torch vector
  (mean, min, and the share of turns at ≥ 0.9999);
- dense retrieval: recall@5 / @10 of plain cosine search over each conversation's turns, scored
  as in ``locomo.py`` (the full Memento recall per embedder is ``locomo.py --embedder``);
- cold start: a fresh process's import + model load + first query.

Every embedder runs single-threaded (``OMP_NUM_THREADS=1``, which ONNX Runtime's embedder honours
too), as every benchmark here does, so the comparison is the model code, not the thread pools.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/embedders.py [--quick] [--only NAME,...]

``--quick`` uses the first conversation and 100 queries; ``--only`` measures the named rows and
keeps the others of the last report (each row records its own load average). It needs the
``[torch]`` extra and ``memento-multilingual`` (the dev venv has both). Wall-clock on whatever
else the machine is doing; the load average is recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    arguments,
    latency_summary,
    load_average,
    load_result,
    locomo_missing,
    machine,
    machine_line,
    offline_single_thread,
    write_report,
)

offline_single_thread()

from locomo import Conversation, load_conversations  # noqa: E402

from memento_core import Embedder, OnnxEmbedder, SentenceTransformerEmbedder  # noqa: E402
from memento_core import plugins as memento_plugins  # noqa: E402

BATCH_SIZE = 64
CHUNK = 52
"""Turns per ``embed_documents`` call in the chunked encode."""
KS = (5, 10)
EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "sentence-transformers (torch)": lambda: SentenceTransformerEmbedder(batch_size=BATCH_SIZE),
    "ONNX fp32 (default)": lambda: OnnxEmbedder(batch_size=BATCH_SIZE),
    "ONNX int8": lambda: OnnxEmbedder("all-MiniLM-L6-v2-int8", batch_size=BATCH_SIZE),
    "multilingual-e5-small q4 (`multilingual`)": lambda: memento_plugins.embedder(
        "multilingual-e5"
    ),
    "USE-multilingual v3 (`multilingual-use`)": lambda: memento_plugins.embedder(
        "multilingual-use"
    ),
}
REFERENCE = "sentence-transformers (torch)"
MINILM = {REFERENCE, "ONNX fp32 (default)", "ONNX int8"}
"""The rows whose vectors are compared with the torch reference (the same model)."""
COLD = {
    REFERENCE: "from memento_core import SentenceTransformerEmbedder as E; e = E()",
    "ONNX fp32 (default)": "from memento_core import OnnxEmbedder as E; e = E()",
    "ONNX int8": "from memento_core import OnnxEmbedder as E; e = E('all-MiniLM-L6-v2-int8')",
    "multilingual-e5-small q4 (`multilingual`)": (
        "from memento_core import plugins; e = plugins.embedder('multilingual-e5')"
    ),
    "USE-multilingual v3 (`multilingual-use`)": (
        "from memento_core import plugins; e = plugins.embedder('multilingual-use')"
    ),
}
COLD_PROBE = """
import json, time
started = time.perf_counter()
{make}
made = time.perf_counter()
e.embed_query("How does Alice take her coffee?")
print(json.dumps({{"import_s": made - started, "first_query_s": time.perf_counter() - made}}))
"""


def dense_recall(
    conversations: Sequence[Conversation], turn_vectors: Sequence[np.ndarray], embedder: Embedder
) -> dict[str, float]:
    """Recall@k of plain cosine search, each question against its conversation's turns."""
    totals = dict.fromkeys(KS, 0.0)
    count = 0
    for conversation, vectors in zip(conversations, turn_vectors):
        ids = [t.dia_id for t in conversation.turns]
        # Questions as queries: e5 embeds them with its "query: " prefix (the others alike).
        query_vectors = np.stack([embedder.embed_query(q.text) for q in conversation.questions])
        order = np.argsort(-(query_vectors @ vectors.T), axis=1, kind="stable")
        for question, ranked in zip(conversation.questions, order):
            for k in KS:
                found = {ids[i] for i in ranked[:k]} & question.evidence
                totals[k] += len(found) / len(question.evidence)
            count += 1
    return {f"R@{k}": round(100 * totals[k] / max(count, 1), 2) for k in KS}


def cold_start(name: str, runs: int) -> dict[str, float]:
    """A fresh process: import, make the embedder, embed the first query (medians)."""
    rows = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", COLD_PROBE.format(make=COLD[name])],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        rows.append({"wall_s": wall, **json.loads(done.stdout.strip().splitlines()[-1])})
    return {k: round(float(np.median([r[k] for r in rows])), 3) for k in rows[0]}


def measure(
    name: str,
    conversations: Sequence[Conversation],
    queries: Sequence[str],
    reference: list[np.ndarray] | None,
    cold_runs: int,
) -> tuple[dict[str, Any], list[np.ndarray]]:
    embedder = EMBEDDERS[name]()
    embedder.embed_documents(["warm-up: load the model before anything is timed"])
    load_before = load_average()
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        latencies.append((time.perf_counter() - started) * 1000)
    texts = [[t.text for t in c.turns] for c in conversations]
    started = time.perf_counter()
    vectors = [embedder.embed_documents(batch) for batch in texts]
    encode_s = time.perf_counter() - started
    started = time.perf_counter()
    for turns_of_one in texts:
        for start in range(0, len(turns_of_one), CHUNK):
            embedder.embed_documents(turns_of_one[start : start + CHUNK])
    chunked_s = time.perf_counter() - started
    turns = sum(len(t) for t in texts)
    result: dict[str, Any] = {
        "name": embedder.name,
        "query_ms": latency_summary(latencies, 2),
        "encode": {
            "turns": turns,
            "seconds": round(encode_s, 2),
            "texts_per_s": round(turns / encode_s, 1),
            "chunked_texts_per_s": round(turns / chunked_s, 1),
        },
        "dense": dense_recall(conversations, vectors, embedder),
        "cold": cold_start(name, cold_runs),
        "load_average": [load_before, load_average()],
    }
    if reference is not None and name in MINILM:
        cosine = np.concatenate([np.sum(a * b, axis=1) for a, b in zip(vectors, reference)])
        result["agreement"] = {
            "mean": round(float(cosine.mean()), 6),
            "min": round(float(cosine.min()), 6),
            "share_at_least_0.9999": round(float(np.mean(cosine >= 0.9999)), 4),
        }
    return result, vectors


def render_markdown(report: dict[str, Any]) -> str:
    results = report["embedders"]
    base = results[REFERENCE]["encode"]["texts_per_s"] if REFERENCE in results else None
    lines = [
        "# Embedders: all-MiniLM-L6-v2 on ONNX Runtime against sentence-transformers, and the "
        "multilingual ones",
        "",
        f"`{report['command']}` — {report['finished_at']}, load average "
        f"{report['load_average'][0]} → {report['load_average'][1]}. "
        f"{report['turns']:,} LoCoMo turns ({report['conversations']} conversations), "
        f"{report['queries']} queries; one thread each; batches of {BATCH_SIZE}.",
        "",
        f"| embedder | name recorded | query p50 / p95 ms | encode texts/s | × torch | "
        f"texts/s, {CHUNK} at a time | "
        "cosine to torch mean / min | dense R@5 / R@10 | cold: import+load / first query s | "
        "load average (1 min) before → after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in results.items():
        agreement = r.get("agreement")
        agree = f"{agreement['mean']:.6f} / {agreement['min']:.6f}" if agreement else "—"
        ratio = f"{r['encode']['texts_per_s'] / base:.2f}" if base else "—"
        loads = r.get("load_average")
        load = f"{loads[0][0]} → {loads[1][0]}" if loads else "see above"
        if r.get("measured_at"):
            load += f" ({r['measured_at'][:10]})"
        lines.append(
            f"| {label} | `{r['name']}` | {r['query_ms']['p50']} / {r['query_ms']['p95']} | "
            f"{r['encode']['texts_per_s']} | {ratio} | "
            f"{r['encode'].get('chunked_texts_per_s', '—')} | {agree} | "
            f"{r['dense']['R@5']} / {r['dense']['R@10']} | "
            f"{r['cold']['import_s']} / {r['cold']['first_query_s']} | {load} |"
        )
    lines += [
        "",
        "Dense R@k is plain cosine search over a conversation's turns (the `dense MiniLM cosine` "
        "baseline of `locomo.py`); Memento's own recall per embedder is "
        "`benchmarks/locomo.py --embedder onnx|onnx-int8|torch` and, for the multilingual ones, "
        "`benchmarks/multilingual.py --locomo`. Rows measured by a later `--only` run keep "
        "their own load average (last column).",
        "",
        machine_line(report["machine"]),
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--quick", action="store_true", help="one conversation, 100 queries")
    parser.add_argument("--only", default="", help="comma-separated row names to measure")
    args = parser.parse_args(argv)
    only = [n for n in args.only.split(",") if n]
    unknown = [n for n in only if n not in EMBEDDERS]
    if unknown:
        parser.error(f"unknown rows {unknown}; known: {list(EMBEDDERS)}")
    if locomo_missing(args.data):
        return 2
    conversations = load_conversations(args.data)[: 1 if args.quick else None]
    queries = [q.text for c in conversations for q in c.questions][: 100 if args.quick else None]
    load_before = load_average()
    results: dict[str, Any] = {}
    earlier = load_result(args.out, "embedders") if only else None
    if earlier:
        for name, row in earlier["embedders"].items():
            # A row kept from an earlier run keeps that run's load average and time.
            row.setdefault("load_average", earlier["load_average"])
            row.setdefault("measured_at", earlier["finished_at"])
            results[name] = row
    reference: list[np.ndarray] | None = None
    for name in only or EMBEDDERS:
        results[name], vectors = measure(
            name, conversations, queries, reference, cold_runs=1 if args.quick else 5
        )
        if name == REFERENCE:
            reference = vectors
        print(name, json.dumps(results[name]), flush=True)
    report = {
        "benchmark": "embedders",
        "command": "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/embedders.py"
        + (" --quick" if args.quick else "")
        + (f" --only {args.only!r}" if only else ""),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_average": [load_before, load_average()],
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "queries": len(queries),
        "embedders": {name: results[name] for name in EMBEDDERS if name in results},
        "machine": machine(),
    }
    write_report(args.out, "embedders", report, render_markdown(report))
    print(render_markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
