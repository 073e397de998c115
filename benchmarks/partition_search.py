"""Where a large partition can be searched without copying it into the process: Chroma's
filtered vector query against a partition kept in a collection of its own, and Chroma's
document search as a keyword side (issue 32's groundwork).

On the stores ``scale.py`` built (``--stores``; 100,000 memories, embedded and on a ``chroma
run`` server), for the LoCoMo questions (vectors from ``scale.py``'s cache), it times:

- **filtered**: ``query`` on the memory collection with the partition's ``where`` (one equality,
  as ``_partitions.partition_where``): the public partition, a user's, a project's;
- **own collection**: the public partition copied into a collection of its own (ids, vectors,
  documents) and queried with no ``where``; and the whole memory collection queried with no
  ``where``, standing for a viewer whose own partition holds all 100,000;
- **keyword**: ``get`` with ``where_document={"$contains": word}`` (Chroma's full-text side; it
  matches a substring and does not rank), filtered to the public partition, and in the public
  partition's own collection.

Each vector search is also compared with exact search over the same memories: recall@10
agreement (the share of the exact top 10 that the search returns in its top 10).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/partition_search.py [--size 100000]

Writes ``benchmarks/results/partition_search.json`` and ``.md``; the load average is recorded.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    arguments,
    chroma_server,
    latency_summary,
    load_average,
    machine,
    report_footer,
    write_report,
)
from _scale_corpus import cache_dir
from rich.console import Console

QUERIES = 60
K = 10
DEPTH = 30
"""How many a recall asks each side for (``Engine.candidates``' default)."""
PAGE = 5_000


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix @ query
    top = np.argpartition(-scores, k)[:k] if len(scores) > k else np.arange(len(scores))
    return [int(i) for i in top[np.argsort(-scores[top])]]


def all_records(collection: Any) -> tuple[list[str], np.ndarray, list[str], list[dict[str, Any]]]:
    """Every record's id, unit vector, document and metadata, in pages."""
    ids: list[str] = []
    vectors: list[Any] = []
    documents: list[str] = []
    metadatas: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = collection.get(
            include=["embeddings", "documents", "metadatas"], limit=PAGE, offset=offset
        )
        ids += page["ids"]
        vectors += list(page["embeddings"])
        documents += page["documents"]
        metadatas += page["metadatas"]
        if len(page["ids"]) < PAGE:
            break
        offset += PAGE
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return ids, matrix, documents, metadatas


def timed(call: Callable[[], Any], queries: int) -> dict[str, float]:
    call()  # the first call loads the collection's index: not what a warm process pays
    times = []
    for _ in range(queries):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return latency_summary(times)


def agreement(
    collection: Any, where: dict[str, Any] | None, ids: list[str], matrix: np.ndarray,
    questions: np.ndarray,
) -> float:  # fmt: skip
    """Mean share of the exact top ``K`` that Chroma's top ``K`` holds."""
    shares = []
    for question in questions:
        exact = {ids[i] for i in exact_top(matrix, question, K)}
        found = collection.query(
            query_embeddings=[question.tolist()], n_results=K, where=where, include=[]
        )["ids"][0]
        shares.append(len(exact & set(found)) / len(exact))
    return round(float(np.mean(shares)), 4)


def measure(client: Any, console: Console) -> dict[str, Any]:
    items = client.get_collection("memento_items", embedding_function=None)
    cached = glob.glob(str(cache_dir() / "scale-*.npz"))
    questions = np.load(cached[0])["questions"][:QUERIES].astype(np.float32)
    questions /= np.linalg.norm(questions, axis=1, keepdims=True)
    rng = random.Random(7)
    turns = itertools.cycle(questions)

    def question() -> list[float]:
        vector: list[float] = next(turns).tolist()
        return vector

    console.print("reading every record (exact search)")
    public_where = {"privacy": "public"}
    all_ids, all_matrix, documents, metadatas = all_records(items)
    public = [n for n, meta in enumerate(metadatas) if meta["privacy"] == "public"]
    public_ids = [all_ids[n] for n in public]
    public_matrix = all_matrix[public]
    public_docs = [documents[n] for n in public]
    users = [m["user_id"] for m in metadatas[:2_000]]
    projects = [m["project_id"] for m in metadatas[:2_000] if m["project_id"]]
    words = sorted({w for d in public_docs[:500] for w in d.split() if w.isalpha() and w.istitle()})
    report: dict[str, Any] = {"memories": len(all_ids), "public": len(public_ids)}

    def vector_query(
        where: Callable[[], dict[str, Any] | None], on: Any = items
    ) -> Callable[[], Any]:
        return lambda: on.query(
            query_embeddings=[question()], n_results=DEPTH, where=where(), include=["distances"]
        )

    console.print("filtered vector queries")
    report["filtered_public_ms"] = timed(vector_query(lambda: public_where), QUERIES)
    report["filtered_user_ms"] = timed(
        vector_query(lambda: {"user_id": rng.choice(users)}), QUERIES
    )
    report["filtered_project_ms"] = timed(
        vector_query(lambda: {"project_id": rng.choice(projects)}), QUERIES
    )
    report["filtered_public_agreement"] = agreement(
        items, public_where, public_ids, public_matrix, questions
    )
    report["unfiltered_all_ms"] = timed(vector_query(lambda: None), QUERIES)
    report["unfiltered_all_agreement"] = agreement(items, None, all_ids, all_matrix, questions)

    console.print("the public partition in a collection of its own")
    with own_collection(client, public_ids, public_matrix, public_docs) as own:
        report["own_public_ms"] = timed(vector_query(lambda: None, own), QUERIES)
        report["own_public_agreement"] = agreement(own, None, public_ids, public_matrix, questions)
        report["own_public_contains_ms"] = timed(
            lambda: own.get(where_document={"$contains": rng.choice(words)}, include=["documents"]),
            QUERIES,
        )
    report["filtered_public_contains_ms"] = timed(
        lambda: items.get(
            where=public_where,
            where_document={"$contains": rng.choice(words)},
            include=["documents"],
        ),
        QUERIES,
    )
    return report


@contextmanager
def own_collection(
    client: Any, ids: list[str], matrix: np.ndarray, documents: list[str]
) -> Iterator[Any]:
    name = "bench_partition_public"
    with contextlib.suppress(Exception):  # not there: chromadb raises its NotFoundError
        client.delete_collection(name)
    own = client.create_collection(
        name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    try:
        for start in range(0, len(ids), PAGE):
            own.add(
                ids=ids[start : start + PAGE],
                embeddings=matrix[start : start + PAGE].tolist(),
                documents=documents[start : start + PAGE],
            )
        yield own
    finally:
        client.delete_collection(name)


def render(report: dict[str, Any]) -> str:
    lines = [
        "# Searching a partition where it lives (groundwork for issue 32)",
        "",
        f"On the scale benchmark's stores of {report['size']:,} memories; {QUERIES} LoCoMo "
        f"questions, {DEPTH} asked of each search (a recall's depth); warm: each search's first "
        "call, which loads the collection's index, is not counted. *Agreement*: the share of "
        f"the exact top {K} that Chroma's top {K} holds.",
        "",
        "| mode | search | memories searched | p50 / p95 ms | agreement@10 |",
        "|---|---|---:|---:|---:|",
    ]
    rows = [
        ("filtered: the public partition", "public", "filtered_public"),
        ("filtered: one user's partition", None, "filtered_user"),
        ("filtered: one project's partition", None, "filtered_project"),
        ("own collection: the public partition", "public", "own_public"),
        (
            "no filter: the whole collection, as one heavy viewer's partition",
            "memories",
            "unfiltered_all",
        ),
        ("keyword `$contains`, filtered to public", "public", "filtered_public_contains"),
        ("keyword `$contains`, public's own collection", "public", "own_public_contains"),
    ]
    for mode, figures in report["modes"].items():
        for label, count, key in rows:
            ms = figures[f"{key}_ms"]
            share = figures.get(f"{key}_agreement")
            searched = f"{figures[count]:,}" if count else "~10"
            lines.append(
                f"| {mode} | {label} | {searched} | {ms['p50']} / {ms['p95']} | "
                f"{'' if share is None else share} |"
            )
    lines += [
        "",
        f"Load average at start {report['load_average_start']}, at end "
        f"{report['load_average_end']}.",
        "",
        *report_footer(report),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--stores", type=Path, default=cache_dir() / "stores")
    parser.add_argument("--modes", default="embedded,server")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    import chromadb

    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/partition_search.py", *(argv or sys.argv[1:])]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "size": args.size,
        "load_average_start": load_average(),
        "modes": {},
    }
    settings = chromadb.Settings(anonymized_telemetry=False)
    for mode in args.modes.split(","):
        root = args.stores / f"scale-v3-{mode}-{args.size}-u10000-p1000"
        if not (root / "built").exists():
            console.print(f"[red]{root} is not built: run scale.py --build-only first[/red]")
            return 2
        console.print(f"[bold]{mode}[/bold] {root}")
        if mode == "embedded":
            client = chromadb.PersistentClient(path=str(root / "store"), settings=settings)
            report["modes"][mode] = measure(client, console)
        else:
            with chroma_server(root / "chroma") as url:
                port = int(url.rsplit(":", 1)[1])
                client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings)
                report["modes"][mode] = measure(client, console)
    report["load_average_end"] = load_average()
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    report["machine"] = machine()
    markdown = render(report)
    write_report(args.out, "partition_search", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
