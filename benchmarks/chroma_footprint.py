"""Chroma's footprint in the process that reads a collection: what embedded Chroma (1.5) holds
in memory once a collection has been read, per record, with and without real vectors; and what
a client of a ``chroma run`` server holds for the same read.

Why it matters: an embedded Memento process is also the database. Its first read of the memory
collection makes Chroma load that collection's whole vector index (HNSW) and id maps into the
process, whatever the read asks for — an id-only ``get`` of one record is enough. That memory
grows with every memory in the store, not with what the process serves, and no Memento budget
governs it; the scale benchmark's embedded RSS includes it.

Per size, two collections are built in a fresh embedded store, one record per memory with a
short document and two metadata fields:

- **vectors**: 384-dimensional unit vectors (all-MiniLM-L6-v2's size), as memories are stored;
- **placeholder**: a constant one-dimensional vector, as Memento's side collections hold — the
  floor for a collection whose vectors were kept elsewhere;
- **in metadata**: the placeholder, with each vector kept as a metadata string instead (float16,
  base64) — one way to keep vectors out of the index; Chroma indexes every metadata string, so
  it costs disk.

Then a fresh process opens the store, reads one record by id (ids only) and reports its RSS
before and after, and the time of that first read; the store's size on disk is reported too.
For the vectors collection at the largest size, the same read is made through a ``chroma run``
server over the same directory.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/chroma_footprint.py [--sizes 10000,100000]

Writes ``benchmarks/results/chroma_footprint.json`` and ``.md``; the load average is recorded.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    arguments,
    chroma_server,
    load_average,
    machine,
    offline_single_thread,
    report_footer,
    write_report,
)

DIMENSION = 384
BATCH = 5_000
COLLECTION = "footprint"
KINDS = ("vectors", "placeholder", "in metadata")
ONE_MILLION = 1_000_000
READ_ONE = textwrap.dedent(
    """
    import json, sys, time
    import chromadb

    def rss_mb():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024

    where = sys.argv[1]
    settings = chromadb.Settings(anonymized_telemetry=False)
    if where.startswith("http"):
        host, port = where.removeprefix("http://").split(":")
        client = chromadb.HttpClient(host=host, port=int(port), settings=settings)
    else:
        client = chromadb.PersistentClient(path=where, settings=settings)
    collection = client.get_collection(sys.argv[2])
    before = rss_mb()
    started = time.perf_counter()
    collection.get(ids=["m0"], include=[])
    first = time.perf_counter() - started
    started = time.perf_counter()
    collection.get(ids=["m1"], include=[])
    second = time.perf_counter() - started
    print(json.dumps({"rss_before_mb": before, "rss_after_mb": rss_mb(),
                      "first_read_s": first, "second_read_ms": second * 1000}))
    """
)


def build(path: Path, kind: str, size: int) -> float:
    """A store at ``path`` with one collection of ``size`` records; records/s."""
    import chromadb

    client = chromadb.PersistentClient(
        path=str(path), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(COLLECTION, configuration={"hnsw": {"space": "cosine"}})
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for start in range(0, size, BATCH):
        count = min(BATCH, size - start)
        vectors = rng.standard_normal((count, DIMENSION)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        metadatas: list[dict[str, Any]] = [
            {"user_id": f"u{n % 10_000}", "privacy": "private"} for n in range(start, start + count)
        ]
        if kind == "in metadata":
            for metadata, vector in zip(metadatas, vectors.astype(np.float16)):
                metadata["vector"] = base64.b64encode(vector.tobytes()).decode()
        collection.add(
            ids=[f"m{n}" for n in range(start, start + count)],
            embeddings=vectors if kind == "vectors" else [[1.0]] * count,
            documents=[f"memory {n}" for n in range(start, start + count)],
            metadatas=metadatas,  # type: ignore[arg-type]
        )
    # Reading once applies Chroma's log to the index, so the store on disk is complete.
    collection.get(ids=["m0"], include=[])
    return size / (time.perf_counter() - started)


def read_one(where: str) -> dict[str, float]:
    """RSS and timing of a fresh process's first read of the collection at ``where``."""
    done = subprocess.run(
        [sys.executable, "-c", READ_ONE, where, COLLECTION],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["held_mb"] = round(figures["rss_after_mb"] - figures["rss_before_mb"], 1)
    return {k: round(v, 3) for k, v in figures.items()}


def measure(sizes: list[int], root: Path) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        for kind in KINDS:
            path = root / f"{kind}-{size}"
            print(f"{kind} @ {size:,}: building", file=sys.stderr, flush=True)
            rate = build(path, kind, size)
            row: dict[str, Any] = {"kind": kind, "records": size}
            row["build_records_per_s"] = round(rate)
            row["embedded"] = read_one(str(path))
            row["bytes_per_record"] = round(row["embedded"]["held_mb"] * 2**20 / size)
            on_disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            row["disk_bytes_per_record"] = round(on_disk / size)
            if kind == "vectors" and size == sizes[-1]:
                server: dict[str, float] = {}
                with chroma_server(path, stats=server) as url:
                    row["server_client"] = read_one(url)
                row["server_peak_rss_mb"] = server.get("peak_rss_mb")
            rows.append(row)
            shutil.rmtree(path, ignore_errors=True)
    return rows


def one_million_mb(rows: list[dict[str, Any]], kind: str) -> float:
    """What an embedded reader would hold at 1M records: a line through the two largest sizes
    (one size: proportional), so fixed costs are not scaled up."""
    measured = sorted((r["records"], r["embedded"]["held_mb"]) for r in rows if r["kind"] == kind)
    (n1, held1), (n2, held2) = [(0, 0.0), *measured][-2:]
    return float(round(held2 + (held2 - held1) / (n2 - n1) * (ONE_MILLION - n2)))


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Chroma's footprint in the process that reads a collection",
        "",
        "A fresh process opens the store and reads one record by id (ids only). *Held* is its "
        "RSS after that read minus before it: what Chroma loaded for the collection. "
        "*vectors*: 384-dimensional unit vectors, as Memento stores memories; *placeholder*: a "
        "constant one-dimensional vector (what a collection costs with its vectors kept "
        "elsewhere); *in metadata*: the placeholder, with each vector as a float16 base64 "
        "metadata string.",
        "",
        "| collection | records | held by an embedded reader | per record | first read | "
        "next read | on disk per record | build |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report["rows"]:
        embedded = row["embedded"]
        lines.append(
            f"| {row['kind']} | {row['records']:,} | {embedded['held_mb']:.0f} MB | "
            f"{row['bytes_per_record']:,} B | {embedded['first_read_s']:.2f} s | "
            f"{embedded['second_read_ms']:.1f} ms | {row['disk_bytes_per_record']:,} B | "
            f"{row['build_records_per_s']:,} records/s |"
        )
    for row in report["rows"]:
        if "server_client" in row:
            client = row["server_client"]
            lines += [
                "",
                f"Through a `chroma run` server, the same read of the {row['records']:,}-record "
                f"vectors collection adds {client['held_mb']:.0f} MB to the client (first read "
                f"{client['first_read_s']:.2f} s); the server's peak RSS was "
                f"{row['server_peak_rss_mb']:.0f} MB.",
            ]
    lines += ["", "## At 1,000,000 memories (a line through the two largest sizes)", ""]
    for kind, megabytes in report["at_one_million_mb"].items():
        lines.append(f"- {kind}: about {megabytes:,.0f} MB held by an embedded reader")
    lines += [
        "",
        "An embedded process serving a 1M store holds this before Memento holds anything. "
        "Keeping the vectors out of Chroma's index leaves the placeholder figure in memory, and "
        "the vectors then cost SQLite space instead (*in metadata*: Chroma indexes every "
        "metadata string).",
        "",
        f"Load average {report['load_average_start']} at the start, "
        f"{report['load_average_end']} at the end.",
        "",
        *report_footer(report),
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = arguments(__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    offline_single_thread()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    load_start = load_average()
    wall = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memento-footprint-") as tmp:
        rows = measure(sizes, Path(tmp))
    at_one_million = {kind: one_million_mb(rows, kind) for kind in KINDS}
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/chroma_footprint.py", *sys.argv[1:]]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "rows": rows,
        "at_one_million_mb": at_one_million,
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "machine": machine(),
    }
    markdown = render_markdown(report)
    write_report(args.out, "chroma_footprint", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
