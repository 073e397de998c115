"""Sharing one store: how late another process sees a write, and what staying fresh costs.

A writer process remembers a memory with a unique word about every 0.3 s; a reader process
recalls that word in a loop until the memory is among the hits. The delay from the write's
return (the writer's clock) to the first recall that finds it (the reader's clock; one machine)
is the freshness figure; the documented bound is ``FRESHNESS`` (0.25 s) plus the commit. It is
measured on an embedded store (the reader opened read-only; one writing process per embedded
store) and on a ``chroma run`` server. It also times, in one process, a recall on a store nobody
else writes against one whose change feed has one new entry, and reports the recall cost of the
feed read. Both processes use ``HashEmbedder`` (no model), so the figures are Memento's own.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/sharing.py [--writes N] [--quick]

Writes ``benchmarks/results/sharing.json`` and ``.md``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from _common import (
    arguments,
    chroma_server,
    latency_summary,
    load_average,
    machine,
    write_report,
)

from memento_core import Memento, Scope
from memento_core.testing import HashEmbedder

READER = textwrap.dedent(
    """
    import json, sys, time
    from memento_core import Memento, Scope
    from memento_core.testing import HashEmbedder

    location, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "server":
        mem = Memento.open(url=location, embedder=HashEmbedder(), track_usage=False)
    else:
        mem = Memento.open(location, embedder=HashEmbedder(), read_only=True)
    viewer = Scope(user_id="writer")
    mem.recall("warm-up", scope=viewer)  # lazy imports and the first feed read, not timed
    print("ready", flush=True)
    for n in range(count):
        word = f"marker{n:05d}x"
        while True:
            hits = mem.recall(word, scope=viewer, limit=3)
            if any(word in h.item.content for h in hits):
                print(json.dumps({"n": n, "seen": time.time()}), flush=True)
                break
            time.sleep(0.002)
    """
)


def freshness(mode: str, location: str, writes: int) -> dict[str, Any]:
    if mode == "server":
        writer = Memento.open(url=location, embedder=HashEmbedder(), track_usage=False)
    else:
        writer = Memento.open(location, embedder=HashEmbedder(), track_usage=False)
    with writer:
        writer.remember("warm-up note", scope=Scope(user_id="writer"))
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, location, mode, str(writes)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "ready"
        delays = []
        for n in range(writes):
            time.sleep(0.3)
            writer.remember(f"note with marker{n:05d}x in it", scope=Scope(user_id="writer"))
            written = time.time()
            seen = json.loads(reader.stdout.readline())["seen"]
            delays.append(1000 * (seen - written))
        reader.wait(timeout=60)
    return {**latency_summary(delays), "each": [round(d, 1) for d in delays]}


def feed_cost(location: str, recalls: int) -> dict[str, Any]:
    """Recall on a quiet store, against recall right after the feed read is due (each timed
    recall is the first after 0.3 s, so it reads the feed)."""
    with Memento.open(location, embedder=HashEmbedder(), track_usage=False) as mem:
        scope = Scope(user_id="writer")
        mem.remember_many([])
        for n in range(200):
            mem.remember(f"background note {n} about marker{n:05d}x", scope=scope)
        quiet, polling = [], []
        mem.recall("background note", scope=scope)
        for n in range(recalls):
            started = time.perf_counter()
            mem.recall(f"marker{n % 200:05d}x", scope=scope)
            quiet.append(1000 * (time.perf_counter() - started))
            time.sleep(0.3)
            started = time.perf_counter()
            mem.recall(f"marker{n % 200:05d}x", scope=scope)
            polling.append(1000 * (time.perf_counter() - started))
    return {
        "recall_ms": latency_summary(quiet),
        "recall_with_feed_read_ms": latency_summary(polling),
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        "# Sharing one store: freshness across processes",
        "",
        f"`{report['command']}` — load average {report['load_average']} before, "
        f"{report['load_average_after']} after.",
        "",
        "Delay from a write's return in one process to the first recall in another that finds "
        f"it ({report['writes']} writes each; documented bound 250 ms plus the commit):",
        "",
        "| store | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|",
    ]
    for mode, figures in report["freshness_ms"].items():
        lines.append(f"| {mode} | {figures['p50']} | {figures['p95']} | {figures['max']} |")
    cost = report["feed_cost"]
    lines += [
        "",
        "Recall on an embedded store of 200 memories (HashEmbedder), p50 / p95 ms: "
        f"{cost['recall_ms']['p50']} / {cost['recall_ms']['p95']} when the change feed was read "
        f"less than 0.25 s ago; {cost['recall_with_feed_read_ms']['p50']} / "
        f"{cost['recall_with_feed_read_ms']['p95']} when the recall reads it first.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="5 writes, 5 recalls")
    args = parser.parse_args(argv)
    writes = 5 if args.quick else args.writes
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/sharing.py", *(argv or sys.argv[1:])]),
        "machine": machine(),
        "load_average": load_average(),
        "writes": writes,
        "freshness_ms": {},
    }
    with tempfile.TemporaryDirectory(prefix="memento-sharing-") as tmp:
        report["freshness_ms"]["embedded (reader read-only)"] = freshness(
            "embedded", str(Path(tmp) / "embedded"), writes
        )
        with chroma_server(Path(tmp) / "chroma") as url:
            report["freshness_ms"]["server"] = freshness("server", url, writes)
        report["feed_cost"] = feed_cost(str(Path(tmp) / "cost"), writes)
    report["load_average_after"] = load_average()
    write_report(args.out, "sharing", report, render(report))
    print(render(report))


if __name__ == "__main__":
    main()
