"""What mirrors cost a write: the same memories written to two embedded stores side by side,
one whose large partitions are mirrored (``partition_load_limit`` 100, mirrors made between
chunks, untimed, and their postings folded then, timed apart) and one with none (no load
limit).

The memories are scale.py's heavy shape (LoCoMo turns in variants; a user holding a tenth of
them, a project a fiftieth, 5 % public; vectors given, so no embedding is timed): with mirrors,
the public, the heavy user's and the heavy project's memories (about 17 %) are also written to
their mirror. Batched: ``remember_many`` in chunks of 2,000, the two stores in turn. One at a
time: ``remember`` of a public memory, the two stores in turn. Speeds are compared as ratios
taken in this one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/mirror_writes.py [--size 20000]

Writes ``benchmarks/results/mirror_writes.json`` and ``.md``; the load average is recorded.

With ``--folds 2000,10000,50000``: what a fold of the postings costs as the partition grows.
For each size, a public partition of that many memories (written by ``remember_many``, which
mirrors it once past the limit), then a tail of ``--tail`` more, folded (timed: a fold writes
only the terms the tail touched); then another tail, folded with every term rewritten (timed:
what a fold cost before, and what every ``CHAIN_AT_MOST``-th fold still does). Writes
``mirror_folds.json`` and ``.md``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    arguments,
    latency_summary,
    load_average,
    locomo_missing,
    machine,
    machine_line,
    offline_single_thread,
    write_report,
)

offline_single_thread()

from _scale_corpus import (  # noqa: E402
    SHAPES,
    LookupEmbedder,
    base_vectors,
    build_corpus,
    load_bases,
    memory_vectors,
)
from rich.console import Console  # noqa: E402
from scale import drafts_for, with_heavy_viewers  # noqa: E402

from memento_core import Memento, MemoryDraft, OnnxEmbedder, Scope  # noqa: E402

CHUNK = 2_000
SINGLES = 200
MIRRORED_LIMIT = 100


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--folds", help="partition sizes to time a fold at, e.g. 2000,10000")
    parser.add_argument("--tail", type=int, default=1_000)
    parser.add_argument("--url", help="a Chroma server for --folds (embedded by default)")
    args = parser.parse_args(argv)
    if locomo_missing(args.data):
        return 2
    if args.folds:
        sizes = [int(n) for n in args.folds.split(",")]
        return fold_costs(args, sizes, argv)
    console = Console(stderr=True)
    users, projects, mix = SHAPES["heavy"]
    bases, questions = load_bases(args.data)
    corpus = with_heavy_viewers(
        build_corpus(
            bases, questions, size=args.size + SINGLES, users=users, projects=projects,
            privacy_mix=mix,
        )
    )  # fmt: skip
    base, _, cosine, _ = base_vectors(corpus, args.data, OnnxEmbedder(), console)
    matrix, _ = memory_vectors(corpus, base, cosine)
    lookup = LookupEmbedder([m.text for m in corpus.memories], matrix)
    drafts = drafts_for(corpus.memories[: args.size])
    singles = [
        MemoryDraft(content=m.text, scope=Scope(user_id=m.user), privacy="public")
        for m in corpus.memories[args.size :]
    ]
    load_start = load_average()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    wall = time.perf_counter()
    seconds = {"mirrored": 0.0, "none": 0.0}
    single_ms: dict[str, list[float]] = {"mirrored": [], "none": []}
    fold_s = 0.0
    with tempfile.TemporaryDirectory(dir=Path.home() / ".cache") as root:
        stores = {
            "mirrored": Memento.open(
                Path(root) / "mirrored", embedder=lookup, partition_load_limit=MIRRORED_LIMIT
            ),
            "none": Memento.open(Path(root) / "none", embedder=lookup, partition_load_limit=None),
        }
        try:
            for start in range(0, len(drafts), CHUNK):
                for name, store in stores.items():
                    began = time.perf_counter()
                    store.remember_many(drafts[start : start + CHUNK])
                    seconds[name] += time.perf_counter() - began
                began = time.perf_counter()
                stores["mirrored"].mirror_large_partitions()  # each partition once past 100
                if start:  # the mirrors were made by the first: their tails folded since
                    fold_s += time.perf_counter() - began
                console.print(f"{start + CHUNK:,} of {len(drafts):,} written to each")
            for draft in singles:
                for name, store in stores.items():
                    began = time.perf_counter()
                    store.remember(draft.content, scope=draft.scope, privacy="public")
                    single_ms[name].append(1000 * (time.perf_counter() - began))
            mirrored = stores["mirrored"].index_status().searched_in_store
        finally:
            for store in stores.values():
                store.close()
    rate = {name: round(len(drafts) / s, 1) for name, s in seconds.items()}
    single = {name: latency_summary(ms) for name, ms in single_ms.items()}
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/mirror_writes.py", *(argv or sys.argv[1:])]),
        "started": started_at,
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "memories": len(drafts),
        "mirrors": mirrored,
        "batched_items_per_s": rate,
        "batched_ratio": round(rate["mirrored"] / rate["none"], 3),
        "single_public_write_ms": single,
        "single_ratio": round(single["mirrored"]["p50"] / single["none"]["p50"], 3),
        "fold_seconds": round(fold_s, 2),
        "folded_memories": len(drafts) - CHUNK,
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "machine": machine(),
    }
    write_report(args.out, "mirror_writes", report, render(report))
    print(render(report))
    return 0


def fold_costs(args: Any, sizes: list[int], argv: list[str] | None) -> int:
    """Time a fold of a tail of ``args.tail`` memories into a public partition of each size:
    the incremental fold, then one rewriting every term."""
    from memento_core._storage import _postings

    console = Console(stderr=True)
    folding = {"seconds": 0.0}
    fold = _postings.PartitionPostings.fold

    def timed_fold(self: Any, digest: str) -> bool:  # the fold alone, not the pass around it
        began = time.perf_counter()
        try:
            return fold(self, digest)
        finally:
            folding["seconds"] += time.perf_counter() - began

    _postings.PartitionPostings.fold = timed_fold  # type: ignore[method-assign]
    users, projects, mix = SHAPES["heavy"]
    bases, questions = load_bases(args.data)
    total = max(sizes) + 2 * args.tail
    corpus = build_corpus(
        bases, questions, size=total, users=users, projects=projects, privacy_mix=mix
    )
    base, _, cosine, _ = base_vectors(corpus, args.data, OnnxEmbedder(), console)
    matrix, _ = memory_vectors(corpus, base, cosine)
    lookup = LookupEmbedder([m.text for m in corpus.memories], matrix)
    public = [
        MemoryDraft(content=m.text, scope=Scope(user_id=m.user), privacy="public")
        for m in corpus.memories
    ]
    load_start = load_average()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    wall = time.perf_counter()
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(dir=Path.home() / ".cache") as root:
            place: dict[str, Any] = (
                {"url": args.url, "collection_prefix": f"folds{size}{int(time.time())}"}
                if args.url
                else {"path": Path(root) / "store"}
            )
            with Memento.open(**place, embedder=lookup, partition_load_limit=MIRRORED_LIMIT) as mem:
                for start in range(0, size, CHUNK):
                    mem.remember_many(public[start : min(size, start + CHUNK)])
                mem.mirror_large_partitions()  # every tail folded: the partition is its base
                timings = {}
                for name, at_most in (("incremental", _postings.CHAIN_AT_MOST), ("whole", 1)):
                    _postings.CHAIN_AT_MOST = at_most
                    offset = size + (0 if name == "incremental" else args.tail)
                    mem.remember_many(public[offset : offset + args.tail])
                    folding["seconds"] = 0.0
                    began = time.perf_counter()
                    mem.mirror_large_partitions()  # folds the tail
                    timings[name] = round(folding["seconds"], 3)
                    timings[f"{name}_pass"] = round(time.perf_counter() - began, 3)
                _postings.CHAIN_AT_MOST = 8
            rows.append({"partition": size, "tail": args.tail, "fold_seconds": timings,
                         "load_average": load_average()})  # fmt: skip
            console.print(f"{size:,}: {timings}")
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/mirror_writes.py", *(argv or sys.argv[1:])]),
        "started": started_at,
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "mode": "server" if args.url else "embedded",
        "rows": rows,
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "machine": machine(),
    }
    lines = [
        "# What a fold of a mirror's postings costs",
        "",
        f"A public partition of each size ({report['mode']}; scale.py's texts, vectors given), "
        f"mirrored by the batch write that made it cross the limit; then a tail of "
        f"{args.tail:,} memories folded: incrementally (the terms the tail touched), and, "
        "after another tail, with every term rewritten (what each fold did before; every "
        "8th fold still does).",
        "",
        "| partition | tail | incremental fold (s) | whole rewrite (s) | "
        "`mirror_large_partitions` around each (s) | load average |",
        "|---:|---:|---:|---:|---:|---:|",
        *[
            f"| {r['partition']:,} | {r['tail']:,} | {r['fold_seconds']['incremental']} | "
            f"{r['fold_seconds']['whole']} | {r['fold_seconds']['incremental_pass']} / "
            f"{r['fold_seconds']['whole_pass']} | {r['load_average']} |"
            for r in rows
        ],
        "",
        f"Load average {load_start} at start, {report['load_average_end']} at end "
        "(a busy machine: other work ran beside it).",
        "",
        "## Machine",
        "",
        machine_line(report["machine"]),
        "",
        f"Run: `{report['command']}`, {started_at}, {report['wall_seconds']:.0f} s.",
        "",
    ]
    write_report(args.out, "mirror_folds", report, "\n".join(lines))
    print("\n".join(lines))
    return 0


def render(report: dict[str, Any]) -> str:
    rate, single = report["batched_items_per_s"], report["single_public_write_ms"]
    return "\n".join(
        [
            "# What mirrors cost a write",
            "",
            f"{report['memories']:,} memories (scale.py's heavy shape, vectors given) written to "
            f"two embedded stores in turn: one with {report['mirrors']} large partitions "
            "mirrored, one with none.",
            "",
            "| | with mirrors | without | ratio |",
            "|---|---:|---:|---:|",
            f"| `remember_many`, chunks of {CHUNK:,} (items/s) | {rate['mirrored']:,} | "
            f"{rate['none']:,} | {report['batched_ratio']} |",
            f"| `remember` of a public memory, p50 (ms) | {single['mirrored']['p50']} | "
            f"{single['none']['p50']} | {report['single_ratio']} |",
            f"| `remember` of a public memory, p95 (ms) | {single['mirrored']['p95']} | "
            f"{single['none']['p95']} | |",
            "",
            "Folding the mirrors' postings (`_storage/_postings.py`: a base rewritten with "
            "what was written since; a process that writes does it in the background) after "
            f"each chunk but the first: {report['fold_seconds']} s in all, for the "
            f"{report['folded_memories']:,} memories written meanwhile (about 17 % of them "
            "mirrored).",
            "",
            f"Load average {report['load_average_start']} at start, "
            f"{report['load_average_end']} at end.",
            "",
            "## Machine",
            "",
            machine_line(report["machine"]),
            "",
            f"Run: `{report['command']}`, {report['started']}, {report['wall_seconds']:.0f} s.",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
