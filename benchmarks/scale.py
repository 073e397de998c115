"""Scale benchmark: a store of 10k, 100k and 1,000,000 memories over 10,000 users, embedded and
on a Chroma server, served by a process that holds only what its users may see.

The corpus. LoCoMo's 5,882 turns (``../shared/bench/README.md``; read, never copied) in variants:
variant 0 is the turn as the LoCoMo protocol writes it, ``"[<session date>] <speaker>: <text>"``;
variant v > 0 moves the date v × 37 days and renames both speakers, so every text is distinct.
Each (conversation, session, variant) belongs to one of 10,000 users, in 1,000 projects; each
session is private (85%), team (10%) or public (5%). ``--shape teams`` is issue 32's held-out
shape instead: 1,000 users in 50 projects, 70% / 20% / 10% (~400 team memories a project at
100k); its rows are marked and measured against no target.
Vectors: all-MiniLM-L6-v2 for the originals (ONNX, identical to sentence-transformers), the
original + seeded noise for the variants, calibrated so a variant's cosine to its original is
what MiniLM gives a real variant. Queries are the LoCoMo questions, each asked by a user holding
a session of its conversation. Vectors are cached outside the repository
(``$XDG_CACHE_HOME/memento-bench``); so are the built stores (``--stores``), since building
1,000,000 memories takes most of an hour here.

Per mode and size:

- **write**: the store is built with ``remember_many`` and the vectors given (storage and
  indexing; no embedding), in items/s. Write throughput *with* embedding is LoCoMo's ratio.
- **serve** — a fresh process (so its memory is only what serving takes): ``Memento.open``;
  the process's first recall (it loads the public partition); 200 recalls of users it has not
  seen (**cold user**: their own and their project's partitions are read); recalls until
  1,000 users are active, then **RSS** and the index status; then 500 **warm** recalls over
  those 1,000 users. Recall is timed with the query vector known (query embedding excluded).
  Before it, the store's files are read once, so they are in the OS page cache as on a server
  that has run a while (the store is 5 GB at 1M and this machine has 24 GB). With
  ``--cold-disk`` the serve is run a second time after dropping the page cache (root only)
  and restarting the server: a machine just booted, every first read from disk.

A size whose build would not fit ``--time-box`` is skipped and said so; growth is extrapolated
from the sizes measured.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/scale.py \\
        [--sizes 10000,100000,1000000] [--modes embedded,server] [--time-box MIN] [--out DIR]
        [--cold-disk] [--update] [--shape users|teams]
    .venv/bin/python benchmarks/scale.py --render   # the last run's reports, targets recomputed

Writes ``benchmarks/results/scale.json``, ``scale.md`` and ``scale.png``; the load average is
recorded at each step. With ``--update``, the rows this run did not measure are kept from the
last report, each marked with the date of the run that measured it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["ANONYMIZED_TELEMETRY"] = "False"

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

# benchmarks/ is not a package: the LoCoMo loader is in locomo.py, shared helpers in _common.py.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    RESULTS,
    chroma_server,
    latency_summary,
    load_average,
    machine,
    peak_rss_mb,
    rss_mb,
    write_report,
)
from _scale_corpus import (
    SEED,
    SHAPES,
    Corpus,
    LookupEmbedder,
    Query,
    Spec,
    Vectors,
    base_vectors,
    build_corpus,
    cache_dir,
    load_bases,
    memory_vectors,
)
from _scale_report import AGREEMENT_QUERIES, LIMIT, plot, render_markdown, targets
from locomo import DEFAULT_DATA

from memento_core import Memento, MemoryDraft, OnnxEmbedder, Scope

HEAVY_USER_SHARE = 10
"""In the heavy shape, one memory in this many is the heavy user's (100,000 at 1M)."""
HEAVY_TEAM_SHARE = 50
"""... and one in this many is a team memory of the heavy project (20,000 at 1M)."""
HEAVY_PROJECT = "project-heavy"
HEAVY_USER = Scope(user_id="user-heavy", project_id=HEAVY_PROJECT)
HEAVY_MEMBER = Scope(user_id="user-heavy-member", project_id=HEAVY_PROJECT)
STORE_RECIPE = "scale-v3"
"""Part of a built store's name: change it when the corpus or the stored format changes."""
COLD_USERS = 200
ACTIVE_USERS = 1_000
WARM_RECALLS = 500
WRITE_CHUNK = 10_000
MIRROR_CHUNKS = 3
"""Partitions past the load limit are mirrored after each of the first chunks written."""
DEFAULT_RATE = 800.0
"""Items/s assumed for a build before one was measured (last session's 100k rate)."""


# ----------------------------------------------------------------------------- building


def stores_dir() -> Path:
    return cache_dir() / "stores"


def store_name(mode: str, size: int, users: int, projects: int, shape: str = "users") -> str:
    suffix = "" if shape == "users" else f"-{shape}"
    return f"{STORE_RECIPE}-{mode}-{size}-u{users}-p{projects}{suffix}"


def row_key(mode: str, shape: str, load_limit: int | None = None, bulk: bool = False) -> str:
    """A report row's mode: the mode, the shape when it is not the default, the load limit
    when there is one, and whether the store was written in bulk."""
    key = mode if shape == "users" else f"{mode}, {shape} shape"
    key = key if load_limit is None else f"{key}, load limit {load_limit}"
    return f"{key}, written in bulk" if bulk else key


def drafts_for(specs: Sequence[Spec]) -> list[MemoryDraft]:
    return [
        MemoryDraft(
            content=s.text,
            scope=Scope(user_id=s.user, project_id=s.project, session_id=s.session_id),
            privacy=s.privacy,
            created_at=s.created_at,
        )
        for s in specs
    ]


def with_heavy_viewers(corpus: Corpus) -> Corpus:
    """The corpus with a heavy user (one memory in ``HEAVY_USER_SHARE``, private) and a heavy
    project (one in ``HEAVY_TEAM_SHARE``, team memories of its members), and queries of both
    heavy viewers among the first cold users."""
    memories = []
    for n, spec in enumerate(corpus.memories):
        if n % HEAVY_USER_SHARE == 0:
            spec = dataclasses.replace(
                spec, user="user-heavy", project=HEAVY_PROJECT, privacy="private"
            )
        elif n % HEAVY_TEAM_SHARE == 1:
            member = f"user-heavy-{n % 20:02d}"
            spec = dataclasses.replace(spec, user=member, project=HEAVY_PROJECT, privacy="team")
        memories.append(spec)
    heavy = [
        Query(query.text, viewer)
        for viewer in (HEAVY_USER, HEAVY_MEMBER)
        for query in corpus.queries[:5]
    ]
    queries = [corpus.queries[0], heavy[0], heavy[5], *heavy, *corpus.queries[1:]]
    return dataclasses.replace(corpus, memories=memories, queries=queries)


def build(
    memento: Memento,
    corpus: Corpus,
    size: int,
    progress: Progress,
    label: str,
    load_limit: int | None,
    *,
    bulk: bool = False,
) -> dict[str, Any]:
    """Write the corpus's first ``size`` memories, vectors given; items/s. The partitions
    past the load limit after each of the first chunks are mirrored then (not timed), so the
    rest is written as a store with mirrors is; ``bulk``: nothing but ``remember_many``
    (the writer mirrors what crosses the limit itself, timed with the writes)."""
    task = progress.add_task(f"{label}: write", total=size)
    load_start = load_average()
    seconds = mirror_seconds = 0.0
    for start in range(0, size, WRITE_CHUNK):
        drafts = drafts_for(corpus.memories[start : min(size, start + WRITE_CHUNK)])
        started = time.perf_counter()
        memento.remember_many(drafts, on_progress=lambda n: progress.advance(task, n))
        seconds += time.perf_counter() - started
        if not bulk and load_limit is not None and start < MIRROR_CHUNKS * WRITE_CHUNK:
            started = time.perf_counter()
            memento.mirror_large_partitions(limit=load_limit)
            mirror_seconds += time.perf_counter() - started
    progress.remove_task(task)
    return {
        "items": size,
        "seconds": round(seconds, 1),
        "items_per_s": round(size / seconds, 1),
        "mirrored_between_chunks_s": round(mirror_seconds, 1),
        "load_average_start": load_start,
        "load_average_end": load_average(),
    }


def mirror_partitions(
    memento: Memento, root: Path, progress: Progress, label: str, load_limit: int | None
) -> None:
    """Copy the partitions past the load limit into their own collections (the first process
    loading one would; the serving process opens read-only); the time is kept beside the
    store."""
    task = progress.add_task(f"{label}: mirror large partitions", total=None)
    load_start = load_average()
    started = time.perf_counter()
    if load_limit is None:
        progress.remove_task(task)
        return
    copied: list[int] = []

    def on_progress(memories: int) -> None:
        copied.append(memories)
        progress.advance(task, memories)

    partitions = memento.mirror_large_partitions(on_progress, limit=load_limit)
    progress.remove_task(task)
    if partitions:
        report = {
            "partitions": partitions,
            "memories": sum(copied),
            "seconds": round(time.perf_counter() - started, 1),
            "load_average_start": load_start,
            "load_average_end": load_average(),
        }
        (root / "mirrors.json").write_text(json.dumps(report))


def list_partitions(memento: Memento, root: Path, progress: Progress, label: str) -> None:
    """A store built by a Memento older than the partition directory gains it here, once
    (``Memento.build_partition_directory``); the time it took is kept beside the store."""
    task = progress.add_task(f"{label}: partition directory", total=None)
    load_start = load_average()
    started = time.perf_counter()
    partitions = memento.build_partition_directory(lambda n: progress.advance(task, n))
    progress.remove_task(task)
    if partitions:
        report = {
            "partitions": partitions,
            "seconds": round(time.perf_counter() - started, 1),
            "load_average_start": load_start,
            "load_average_end": load_average(),
        }
        (root / "directory.json").write_text(json.dumps(report))


def warm_page_cache(root: Path) -> None:
    """Read every file of a store once, so serving reads it from memory, as a server that has
    run a while does."""
    for file in sorted(f for f in root.rglob("*") if f.is_file()):
        with file.open("rb") as data:
            while data.read(1 << 24):
                pass


def drop_page_cache() -> None:
    """Empty the OS page cache (needs root), so serving reads the store from disk."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
    except OSError as error:
        raise SystemExit(f"--cold-disk needs root to drop the page cache: {error}") from None


# ----------------------------------------------------------------------------- serving


def serve(spec_path: Path) -> dict[str, Any]:
    """The serving process (run as ``scale.py --serve SPEC``): open, first recall, cold users,
    1,000 active users' RSS, warm recalls. Prints its report as JSON."""
    spec = json.loads(spec_path.read_text())
    vectors = np.load(spec["vectors"])
    lookup = LookupEmbedder(spec["texts"], vectors)
    queries = [
        Query(q["text"], Scope(user_id=q["user"], project_id=q["project"])) for q in spec["queries"]
    ]
    rss_before = rss_mb()

    def open_store() -> tuple[Memento, float]:
        started = time.perf_counter()
        limit = spec.get("load_limit")
        if spec["url"]:
            opened = Memento.open(url=spec["url"], embedder=lookup, partition_load_limit=limit)
        else:
            opened = Memento.open(
                spec["path"], embedder=lookup, read_only=True, partition_load_limit=limit
            )
        return opened, time.perf_counter() - started

    # The first open in a process also imports Chroma's client modules (a fixed cost, the same
    # at any size); the second, after closing, is what opening the store costs.
    memento, first_open_s = open_store()
    memento.close()
    memento, open_s = open_store()
    opened = memento.index_status()
    if spec.get("first_only"):  # a later process beside a server that has served already
        with memento:
            started = time.perf_counter()
            memento.recall(queries[0].text, scope=queries[0].viewer, limit=LIMIT)
            first_ms = 1000 * (time.perf_counter() - started)
        return {
            "open_s": round(open_s, 3),
            "first_recall_ms": round(first_ms, 1),
            "load_average_end": load_average(),
        }

    def timed(query: Query) -> float:
        started = time.perf_counter()
        memento.recall(query.text, scope=query.viewer, limit=LIMIT)
        return 1000 * (time.perf_counter() - started)

    with memento:
        users = list(dict.fromkeys(q.viewer for q in queries))
        by_user: dict[Scope, list[Query]] = defaultdict(list)
        for query in queries:
            by_user[query.viewer].append(query)
        first = timed(by_user[users[0]][0])
        after_first = memento.index_status()
        cold = [timed(by_user[user][0]) for user in users[1 : 1 + COLD_USERS]]
        heavy = {
            viewer.user_id: round(ms, 1)
            for viewer, ms in zip(users[1 : 1 + COLD_USERS], cold)
            if viewer in (HEAVY_USER, HEAVY_MEMBER)
        }
        for user in users[1 + COLD_USERS : ACTIVE_USERS]:
            timed(by_user[user][0])
        active = min(len(users), ACTIVE_USERS)
        status = memento.index_status()
        rss_active = rss_mb()
        rng = random.Random(SEED)
        warm_queries = [
            rng.choice(by_user[rng.choice(users[:active])]) for _ in range(WARM_RECALLS)
        ]
        warm = [timed(query) for query in warm_queries]
        agreement = agreement_with_exact(memento, warm_queries[:AGREEMENT_QUERIES])
    return {
        "open_s": round(open_s, 3),
        "first_open_in_process_s": round(first_open_s, 3),
        "opened_index_memories": opened.memories,
        "first_recall_ms": round(first, 1),
        "public_partition_memories": after_first.memories,
        "searched_in_store": after_first.searched_in_store,
        "heavy_viewers_first_recall_ms": heavy,
        "agreement_at_10": agreement,
        "cold_user_ms": latency_summary(cold),
        "warm_ms": latency_summary(warm),
        "active_users": active,
        "index": {
            "partitions": status.partitions,
            "memories": status.memories,
            "mb": round(status.bytes / 2**20, 1),
            "budget_mb": round(status.budget_bytes / 2**20),
            "evictions": status.evictions,
        },
        "rss_mb_before_open": rss_before,
        "rss_mb_active": rss_active,
        "peak_rss_mb": peak_rss_mb(),
        "load_average_end": load_average(),
    }


def agreement_with_exact(memento: Memento, queries: Sequence[Query]) -> float | None:
    """Recall@10 agreement of these recalls with exact search: the share of each exact top 10
    (every partition the viewer needs loaded, ``preload``) that the recall as served returned.
    None when nothing was searched in the store (serving was exact)."""
    if not memento.index_status().searched_in_store:
        return None
    served = [
        [h.item.id for h in memento.recall(q.text, scope=q.viewer, limit=LIMIT)] for q in queries
    ]
    for viewer in dict.fromkeys(q.viewer for q in queries):
        memento.preload(viewer)
    shares = []
    for query, got in zip(queries, served):
        exact = [h.item.id for h in memento.recall(query.text, scope=query.viewer, limit=LIMIT)]
        if exact:
            shares.append(len(set(got) & set(exact)) / len(exact))
    return round(sum(shares) / len(shares), 4) if shares else None


def serve_in_child(
    work: Path,
    corpus: Corpus,
    question_vectors: Vectors,
    *,
    path: Path | None,
    url: str | None,
    load_limit: int | None,
    first_only: bool = False,
) -> dict[str, Any]:
    spec = work / "serve.json"
    np.save(work / "questions.npy", question_vectors)
    spec.write_text(
        json.dumps(
            {
                "path": str(path) if path else None,
                "url": url,
                "load_limit": load_limit,
                "first_only": first_only,
                "texts": corpus.question_texts,
                "vectors": str(work / "questions.npy"),
                "queries": [
                    {"text": q.text, "user": q.viewer.user_id, "project": q.viewer.project_id}
                    for q in corpus.queries
                ],
            }
        )
    )
    load_start = load_average()
    done = subprocess.run(
        [sys.executable, __file__, "--serve", str(spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the serving process failed:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    report["load_average_start"] = load_start
    return report


# ----------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("LOCOMO_PATH", DEFAULT_DATA))
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--modes", default="embedded,server")
    parser.add_argument(
        "--shape",
        choices=sorted(SHAPES),
        default="users",
        help="users: 10,000 users in 1,000 projects, 5%% public; teams: 1,000 in 50, 10%% "
        "public; heavy: users, with a user holding a tenth and a project a fiftieth",
    )
    parser.add_argument(
        "--load-limit",
        type=int,
        help="open the stores with this partition_load_limit (none by default: all loaded)",
    )
    parser.add_argument("--stores", type=Path, default=stores_dir(), help="built stores, kept")
    parser.add_argument(
        "--bulk",
        action="store_true",
        help="build as a bulk import: remember_many only, opened with the load limit, no "
        "recall and no mirror_large_partitions (the writer mirrors what crosses the limit)",
    )
    parser.add_argument(
        "--build-only", action="store_true", help="build the stores; measure nothing"
    )
    parser.add_argument("--time-box", type=float, default=150.0, help="minutes for the whole run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--update",
        action="store_true",
        help="keep the last report's rows this run does not measure (marked with their date)",
    )
    parser.add_argument(
        "--cold-disk",
        action="store_true",
        help="serve again after dropping the OS page cache (root only): first reads from disk",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: recompute the targets of the last run (scale.json) and redraw",
    )
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        print(json.dumps(serve(args.serve)))
        return 0
    if args.render:
        return render_again(args.out)
    console = Console(stderr=True)
    if not args.data.is_file():
        console.print(f"[red]LoCoMo data not found at {args.data}; pass --data[/red]")
        return 2
    sizes = sorted(int(s) for s in args.sizes.split(","))
    modes = [m.strip() for m in args.modes.split(",")]
    deadline = time.monotonic() + 60 * args.time_box
    wall = time.perf_counter()
    load_start = load_average()

    users, projects, mix = SHAPES[args.shape]
    bases, questions = load_bases(args.data)
    corpus = build_corpus(
        bases, questions, size=sizes[-1], users=users, projects=projects, privacy_mix=mix
    )
    if args.shape == "heavy":
        corpus = with_heavy_viewers(corpus)
    base, question_vectors, cosine, cache = base_vectors(corpus, args.data, OnnxEmbedder(), console)
    matrix, sigma = memory_vectors(corpus, base, cosine)
    texts = [m.text for m in corpus.memories]
    lookup = LookupEmbedder(texts, matrix)
    console.print(
        f"{len(corpus.memories):,} memories, {len(corpus.queries)} queries; RSS {rss_mb()} MB"
    )

    results: dict[str, dict[str, Any]] = {
        row_key(mode, args.shape, args.load_limit, args.bulk): {} for mode in modes
    }
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    args.stores.mkdir(parents=True, exist_ok=True)
    rate = DEFAULT_RATE
    with Progress(*columns, console=console) as progress:
        for mode in modes:
            for size in sizes:
                step: dict[str, Any] = {
                    "shape": {"users": users, "projects": projects, "privacy_mix": dict(mix)}
                }
                if args.load_limit is not None:
                    step["load_limit"] = args.load_limit
                results[row_key(mode, args.shape, args.load_limit, args.bulk)][str(size)] = step
                writing = {"partition_load_limit": args.load_limit} if args.bulk else {}
                root = args.stores / (
                    store_name(mode, size, users, projects, args.shape)
                    + ("-bulk" if args.bulk else "")
                )
                built = (root / "built").exists()
                if not built:
                    needed = size / rate / 60
                    left = (deadline - time.monotonic()) / 60
                    if needed > left:
                        step["skipped"] = (
                            f"skipped: building would take ~{needed:.0f} min at "
                            f"{rate:.0f} items/s; {left:.0f} min were left"
                        )
                        console.print(f"{mode} @ {size:,}: {step['skipped']}")
                        continue
                    root.mkdir(parents=True, exist_ok=True)
                label = f"{mode} @ {size:,}"
                served = functools.partial(
                    serve_in_child, root, corpus, question_vectors, load_limit=args.load_limit
                )
                if mode == "embedded":
                    with Memento.open(root / "store", embedder=lookup, **writing) as memento:
                        if not built:
                            step["write"] = build(
                                memento, corpus, size, progress, label, args.load_limit,
                                bulk=args.bulk,
                            )  # fmt: skip
                            (root / "built").touch()
                        list_partitions(memento, root, progress, label)
                        if not args.bulk:
                            mirror_partitions(memento, root, progress, label, args.load_limit)
                    if not args.build_only:
                        warm_page_cache(root)
                        step["serve"] = served(path=root / "store", url=None)
                        if args.cold_disk:
                            drop_page_cache()
                            step["serve_cold_disk"] = served(path=root / "store", url=None)
                else:
                    server: dict[str, float] = {}
                    with chroma_server(root / "chroma", stats=server) as url:
                        with Memento.open(url=url, embedder=lookup, **writing) as memento:
                            if not built:
                                step["write"] = build(
                                    memento, corpus, size, progress, label, args.load_limit,
                                    bulk=args.bulk,
                                )  # fmt: skip
                                (root / "built").touch()
                            list_partitions(memento, root, progress, label)
                            if not args.bulk:
                                mirror_partitions(memento, root, progress, label, args.load_limit)
                        if not args.build_only:
                            warm_page_cache(root / "chroma")
                            step["serve"] = served(path=None, url=url)
                            # A second process beside the same server: its first recall finds
                            # the server's indexes loaded (as beside a server that has run).
                            step["serve_again"] = served(path=None, url=url, first_only=True)
                    step["chroma_server_peak_rss_mb"] = server.get("peak_rss_mb")
                    if args.cold_disk and not args.build_only:
                        drop_page_cache()
                        with chroma_server(root / "chroma") as url:
                            step["serve_cold_disk"] = served(path=None, url=url)
                if "write" in step:
                    rate = step["write"]["items_per_s"]
                    (root / "write.json").write_text(json.dumps(step["write"]))
                elif (root / "write.json").exists():
                    step["write"] = json.loads((root / "write.json").read_text())
                    step["write"]["built_earlier"] = True
                    rate = step["write"]["items_per_s"]
                if (root / "mirrors.json").exists():
                    step["mirrors"] = json.loads((root / "mirrors.json").read_text())
                if (root / "directory.json").exists():
                    step["directory_backfill"] = json.loads((root / "directory.json").read_text())
                if "serve" in step:
                    serve_report = step["serve"]
                    console.print(
                        f"{label}: open {serve_report['open_s']} s, cold p95 "
                        f"{serve_report['cold_user_ms']['p95']} ms, warm p95 "
                        f"{serve_report['warm_ms']['p95']} ms, "
                        f"RSS {serve_report['rss_mb_active']} MB"
                    )
    if args.build_only:
        return 0
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/scale.py", *(argv if argv is not None else sys.argv[1:])]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "sizes": sizes,
        "corpus": {
            "memories": len(corpus.memories),
            "users": users,
            "projects": projects,
            "privacy_mix": dict(mix),
            "variant_cosine": round(cosine, 4),
            "noise_sigma": round(sigma, 5),
            "vector_cache": str(cache),
        },
        "modes": kept_rows(args.out, results) if args.update else results,
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "machine": machine(),
    }
    report["targets"] = targets(report["modes"], 1_000_000)
    markdown = render_markdown(report)
    write_report(args.out, "scale", report, markdown)
    plot(report, args.out / "scale.png")
    print(markdown)
    return 0


def kept_rows(out: Path, measured: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """This run's rows over the last report's: a row not measured now (or skipped now) is
    kept, marked with the date of the run that measured it."""
    path = out / "scale.json"
    if not path.is_file():
        return measured
    last: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    merged: dict[str, dict[str, Any]] = {}
    for mode in dict.fromkeys([*last["modes"], *measured]):
        earlier, now = last["modes"].get(mode, {}), measured.get(mode, {})
        rows: dict[str, Any] = {}
        for size in sorted({*earlier, *now}, key=int):
            step = now.get(size)
            if size in earlier and (
                step is None or ("serve" not in step and "serve" in earlier[size])
            ):
                step = {"measured_on": last["started"][:10], **earlier[size]}
            rows[size] = step
        merged[mode] = rows
    return merged


def render_again(out: Path) -> int:
    """Recompute the targets of the run in ``out/scale.json`` and write its reports again."""
    path = out / "scale.json"
    if not path.is_file():
        print(f"no scale.json in {out}: run the benchmark first", file=sys.stderr)
        return 2
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    report["targets"] = targets(report["modes"], 1_000_000)
    markdown = render_markdown(report)
    write_report(out, "scale", report, markdown)
    plot(report, out / "scale.png")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
