"""Inspector benchmark: how fast the inspector's pages answer over a large store.

A store of ``--size`` memories (default 100,000) is written with a hashing embedder (random unit
vectors keyed by the text: the embedding model is not what this measures; dense relevance is
then noise and keyword relevance decides), owned by 500 users of 50 projects (85 % private,
10 % team, 5 % public), spread over a year, with tags and some hotwords. The inspector's app
is then driven in process through Starlette's test client — the server's work (core's reads,
rendering), no network — as the store's owner and as one user. Each page is asked once cold
(its first request in the process) and then ``--requests`` times; the target is p95 ≤ 300 ms
at 100,000 memories. The census the overview and the browse list are built from is timed on
its own first (it runs in a background thread in the app).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/inspector.py [--size N] [--requests R] \
        [--store DIR]

``--store`` keeps the written store in DIR and reuses it on the next run of the same size.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _common import (
    arguments,
    latency_summary,
    load_average,
    machine,
    offline_single_thread,
    report_footer,
    write_report,
)
from starlette.testclient import TestClient

from memento_core import Memento, MemoryDraft, Scope
from memento_inspector import create_app

TARGET_P95_MS = 300.0
TARGET_SIZE = 100_000
USERS = 500
PROJECTS = 50
TOKEN = "benchmark-token"
WORDS = [
    "coffee",
    "tea",
    "lisbon",
    "berlin",
    "deploy",
    "database",
    "party",
    "peanut",
    "allergy",
    "cat",
    "dog",
    "holiday",
    "meeting",
    "budget",
    "invoice",
    "garden",
    "piano",
    "guitar",
    "football",
    "marathon",
    "doctor",
    "dentist",
    "train",
    "flight",
    "hotel",
    "birthday",
    "anniversary",
    "recipe",
    "pasta",
    "curry",
    "sushi",
    "bicycle",
    "laptop",
    "phone",
    "password",
    "backup",
]
TAGS = ("pref", "work", "health", "travel", "family", "tech")


class HashEmbedder:
    """Random unit vectors keyed by the text's hash: cheap and deterministic."""

    name = "hash-384"
    dimension = 384

    def _one(self, text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, 384), "float32")

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._one(text)


def drafts(size: int) -> list[MemoryDraft]:
    rng = random.Random(20261128)
    start = datetime.now(timezone.utc) - timedelta(days=365)
    out = []
    for n in range(size):
        user = n % USERS
        words = rng.sample(WORDS, 6)
        privacy = rng.choices(("private", "team", "public"), (85, 10, 5))[0]
        out.append(
            MemoryDraft(
                f"Memory {n}: user{user} mentioned {' '.join(words)}.",
                scope=Scope(user_id=f"user{user}", project_id=f"project{user % PROJECTS}"),
                privacy=privacy,
                importance=round(rng.random(), 2),
                tags=[f"{rng.choice(TAGS)}:{words[0]}"],
                hotwords=[f"Zed{n}"] if n % 100 == 0 else [],
                created_at=start + timedelta(seconds=rng.randrange(365 * 86_400)),
            )
        )
    return out


def open_store(size: int, keep: Path | None) -> tuple[Memento, Path, float | None]:
    directory = keep or Path(tempfile.mkdtemp(prefix="memento-inspector-bench-"))
    marker = directory / f"written-{size}"
    if keep is not None and not marker.exists() and directory.exists():
        shutil.rmtree(directory)
    written_s = None
    mem = Memento.open(directory, embedder=HashEmbedder(), track_usage=False)
    if not marker.exists():
        started = time.perf_counter()
        mem.remember_many(drafts(size), batch_size=1000)
        written_s = time.perf_counter() - started
        marker.touch()
    return mem, directory, written_s


def timed(client: TestClient, path: str, requests: int) -> dict[str, Any]:
    """A page asked for once cold, then ``requests`` times. ``POST /hotwords?reply=…`` posts
    the reply as the tester's form does (with the page's CSRF token)."""
    method, _, target = path.partition(" ") if path.startswith("POST ") else ("GET", "", path)

    def ask() -> Any:
        if method != "POST":
            return client.get(target)
        where, _, reply = target.partition("?reply=")
        csrf = client.app.state.inspector.csrf  # type: ignore[attr-defined]
        return client.post(where, data={"reply": reply, "csrf": csrf})

    started = time.perf_counter()
    first = ask()
    cold_ms = (time.perf_counter() - started) * 1000
    if first.status_code != 200:
        raise SystemExit(f"{path}: HTTP {first.status_code}: {first.text[:300]}")
    laps = []
    for _ in range(requests):
        started = time.perf_counter()
        ask().raise_for_status()
        laps.append((time.perf_counter() - started) * 1000)
    return {"path": path, "cold_ms": round(cold_ms, 1), "ms": latency_summary(laps)}


def pages(mem: Memento, size: int) -> dict[str, str]:
    some = next(one.id for one in mem.census().listing if one.user_id == "user7")
    last = max(1, min(size // 50, 2000))
    return {
        "overview": "/",
        "browse, first page": "/memories",
        "browse, filtered": "/memories?type=episodic&privacy=private&tags=pref:coffee",
        f"browse, page {last // 2}": f"/memories?page={last // 2}",
        "search": "/search?q=coffee+in+lisbon",
        "search, weights set": "/search?q=coffee+in+lisbon&w_relevance=0.3&w_importance=0.6",
        "memory": f"/memory/{some}",
        "hotword tester": "POST /hotwords?reply=We met Zed100 and Zed200 yesterday.",
    }


def run(size: int, requests: int, keep: Path | None) -> dict[str, Any]:
    mem, directory, written_s = open_store(size, keep)
    try:
        paths = pages(mem, size)
        hosts = {"testserver"}
        owner = TestClient(create_app(mem, token=TOKEN, allowed_hosts=hosts))
        owner.headers["x-memento-token"] = TOKEN
        user = TestClient(
            create_app(mem, user="user7", project="project7", token=TOKEN, allowed_hosts=hosts)
        )
        user.headers["x-memento-token"] = TOKEN
        results: dict[str, Any] = {}
        census_s: dict[str, float] = {}
        for viewer, client in (("owner", owner), ("user7", user)):
            # The count pages wait for (at most FIRST_COUNT_WAIT s, then a "counting" page):
            # timed on its own, then pages are timed with it done.
            started = time.perf_counter()
            client.app.state.inspector.recount()  # type: ignore[attr-defined]
            census_s[viewer] = round(time.perf_counter() - started, 2)
            results[viewer] = {name: timed(client, path, requests) for name, path in paths.items()}
        return {"written_s": written_s, "census_s": census_s, "pages": results}
    finally:
        mem.close()
        if keep is None:
            shutil.rmtree(directory, ignore_errors=True)


def markdown(report: dict[str, Any]) -> str:
    verdict = {True: "met", False: "missed", None: "not judged below 100,000 memories"}[
        report["met"]
    ]
    lines = [
        "# Inspector: page latency",
        "",
        f"{report['size']:,} memories, {USERS} users; each page once cold, then "
        f"{report['requests']} times (in process, Starlette's test client). "
        f"Target: p95 ≤ {TARGET_P95_MS:.0f} ms at 100,000 memories. Worst p95: "
        f"**{report['worst_p95_ms']} ms** ({verdict}).",
        "",
        "| viewer | page | cold ms | p50 ms | p95 ms |",
        "|---|---|---:|---:|---:|",
    ]
    for viewer, pages_ in report["pages"].items():
        for name, row in pages_.items():
            ms = row["ms"]
            lines.append(f"| {viewer} | {name} | {row['cold_ms']} | {ms['p50']} | {ms['p95']} |")
    lines += [
        "",
        "The census (every visible memory's fields, read once for the counts and the browse "
        "list, then again in the background when stale or after a change): "
        + ", ".join(f"{viewer} {s} s" for viewer, s in report["census_s"].items())
        + ". Pages asked for before the first census is done answer with a page that says "
        "so and reloads itself; the figures above are with it done.",
        "",
        *report_footer(report, load_at_start=True),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    offline_single_thread()
    parser = arguments(__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args(argv)
    started_at = datetime.now(timezone.utc)
    load = load_average()
    began = time.perf_counter()
    measured = run(args.size, args.requests, args.store)
    worst = max(row["ms"]["p95"] for rows in measured["pages"].values() for row in rows.values())
    report = {
        "size": args.size,
        "requests": args.requests,
        "target_p95_ms": TARGET_P95_MS,
        "worst_p95_ms": worst,
        "met": worst <= TARGET_P95_MS if args.size >= TARGET_SIZE else None,
        **measured,
        "machine": machine(),
        "load_average_at_start": load,
        "command": " ".join(["benchmarks/inspector.py", *(argv or sys.argv[1:])]),
        "started": started_at.isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - began,
    }
    write_report(args.out, "inspector", report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
