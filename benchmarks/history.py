"""Memory history: what the change log costs recall, storage and writes.

Two embedded stores hold the same ``--memories`` memories with the same final text: in one each
memory was only remembered; in the other it was remembered as a draft and updated ``--updates``
times (10 by default) into that text, so its history holds that many logged changes. The same
queries are recalled on both in alternation (so machine load hits both alike), and on the
second with ``known_at`` (the moment halfway through the updates), which reads the candidates'
history. It also reports the storage added per logged change (the store directory's growth
over the store without history, and the log records' own metadata), and storage-only write
throughput: ``remember_many`` of fresh memories, and single ``remember`` calls. Every store
uses ``HashEmbedder`` (no model), so the figures are Memento's and Chroma's own.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/history.py [--memories N] [--quick]

Writes ``benchmarks/results/history.json`` and ``.md``.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _common import arguments, latency_summary, load_average, machine, write_report

from memento_core import Memento, MemoryDraft, Scope
from memento_core.testing import HashEmbedder

SEED = 20_261_128
WORDS = [
    "harbour", "lantern", "copper", "violet", "meadow", "signal", "orchard", "glacier", "pepper",
    "tunnel", "velvet", "quarry", "saddle", "timber", "falcon", "marble", "cobalt", "canyon",
    "ribbon", "walnut", "thistle", "beacon", "ember", "willow",
]  # fmt: skip
USERS = 10


def text(rng: random.Random, n: int) -> str:
    return f"note {n}: " + " ".join(rng.choice(WORDS) for _ in range(12))


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def build(path: Path, texts: list[str], updates: int) -> tuple[Memento, datetime | None]:
    """A store of ``texts``; with ``updates``, each reached through that many updates.
    Returns the store and, with updates, the moment halfway through them."""
    mem = Memento.open(path, embedder=HashEmbedder(), track_usage=False)
    scopes = [Scope(user_id=f"user{n % USERS}") for n in range(len(texts))]
    if not updates:
        mem.remember_many([MemoryDraft(t, scope=s) for t, s in zip(texts, scopes)])
        return mem, None
    drafts = [MemoryDraft(f"draft {n}", scope=s) for n, s in enumerate(scopes)]
    ids = mem.remember_many(drafts)
    halfway = None
    for round_ in range(1, updates + 1):
        if round_ == updates // 2 + 1:
            halfway = datetime.now(timezone.utc)
        for n, memory_id in enumerate(ids):
            final = round_ == updates
            content = texts[n] if final else f"{texts[n]} (revision {round_})"
            mem.update(memory_id, content=content, scope=scopes[n])
    return mem, halfway


def recall_latency(
    plain: Memento, logged: Memento, halfway: datetime | None, queries: list[str]
) -> dict[str, Any]:
    timings: dict[str, list[float]] = {"no history": [], "10 updates each": [], "known_at": []}
    for n, query in enumerate(queries):
        scope = Scope(user_id=f"user{n % USERS}")
        for name, mem, when in (
            ("no history", plain, None),
            ("10 updates each", logged, None),
            ("known_at", logged, halfway),
        ):
            started = time.perf_counter()
            mem.recall(query, scope=scope, limit=10, known_at=when)
            timings[name].append(1000 * (time.perf_counter() - started))
    return {name: latency_summary(values) for name, values in timings.items()}


def log_record_bytes(path: Path) -> tuple[int, int]:
    """The history collection's records and the bytes of their metadata, read with chromadb
    directly (past Memento's API)."""
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    try:
        records = client.get_collection("memento_history").get(include=["metadatas"])
    except Exception:  # no change logged: no collection
        return 0, 0
    size = sum(len(str(k)) + len(str(v)) for m in records["metadatas"] for k, v in m.items())
    return len(records["ids"]), size


def write_throughput(root: Path, count: int, singles: int) -> dict[str, Any]:
    rng = random.Random(SEED + 1)
    with Memento.open(root / "writes", embedder=HashEmbedder()) as mem:
        drafts = [
            MemoryDraft(text(rng, n), scope=Scope(user_id=f"user{n % USERS}")) for n in range(count)
        ]
        started = time.perf_counter()
        mem.remember_many(drafts)
        bulk = count / (time.perf_counter() - started)
        single = []
        for n in range(singles):
            started = time.perf_counter()
            mem.remember(text(rng, count + n), scope=Scope(user_id="single"))
            single.append(1000 * (time.perf_counter() - started))
    return {"remember_many_items_per_s": round(bulk), "remember_ms": latency_summary(single)}


def render(report: dict[str, Any]) -> str:
    recall = report["recall_ms"]
    storage = report["storage"]
    writes = report["writes"]
    lines = [
        "# Memory history: cost to recall, storage and writes",
        "",
        f"`{report['command']}` — {report['memories']} memories, {report['updates']} updates "
        f"each in the logged store, {report['queries']} queries; HashEmbedder (no model); load "
        f"average {report['load_average']} before, {report['load_average_after']} after.",
        "",
        "Recall latency, same run, queries in alternation:",
        "",
        "| store | p50 ms | p95 ms |",
        "|---|---:|---:|",
        *(f"| {name} | {f['p50']} | {f['p95']} |" for name, f in recall.items()),
        "",
        f"Storage per logged change: the store directory grew {storage['directory_per_event']} "
        f"bytes per change over the store without history (the memory's own rewrite included); "
        f"the log record's metadata is {storage['record_metadata_per_event']} bytes "
        f"({storage['records']} records).",
        "",
        f"Storage-only writes: remember_many {writes['remember_many_items_per_s']} items/s; "
        f"remember p50 {writes['remember_ms']['p50']} ms, p95 {writes['remember_ms']['p95']} ms. "
        "Creating a memory writes no history record.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__)
    parser.add_argument("--memories", type=int, default=2_000)
    parser.add_argument("--updates", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="200 memories, 50 queries")
    args = parser.parse_args(argv)
    memories, queries = (200, 50) if args.quick else (args.memories, args.queries)
    rng = random.Random(SEED)
    texts = [text(rng, n) for n in range(memories)]
    asked = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(queries)]
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/history.py", *(argv or sys.argv[1:])]),
        "machine": machine(),
        "load_average": load_average(),
        "memories": memories,
        "updates": args.updates,
        "queries": queries,
    }
    with tempfile.TemporaryDirectory(prefix="memento-history-") as tmp:
        root = Path(tmp)
        plain, _ = build(root / "plain", texts, 0)
        logged, halfway = build(root / "logged", texts, args.updates)
        with plain, logged:
            for mem in (plain, logged):  # lazy loads and the first index load, not timed
                mem.recall("warm up", scope=Scope(user_id="user0"))
            report["recall_ms"] = recall_latency(plain, logged, halfway, asked)
        events = memories * args.updates
        records, metadata = log_record_bytes(root / "logged")
        grown = directory_bytes(root / "logged") - directory_bytes(root / "plain")
        report["storage"] = {
            "events": events,
            "records": records,
            "directory_per_event": round(grown / events),
            "record_metadata_per_event": round(metadata / max(records, 1)),
        }
        report["writes"] = write_throughput(root, memories, 100 if not args.quick else 30)
    report["load_average_after"] = load_average()
    write_report(args.out, "history", report, render(report))
    print(render(report))


if __name__ == "__main__":
    main()
