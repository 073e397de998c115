"""The benchmark summary: every script's results in one report, with the targets met or missed.

It reads the JSON each benchmark script writes to ``benchmarks/results`` and renders
``summary.md`` and ``summary.json``, linking ``scale.png`` (drawn by ``scale.py``). It measures
one thing itself: the time of ``import memento_core`` in a fresh interpreter (median of
``--import-runs``).

    .venv/bin/python benchmarks/summary.py --from-results      # render from existing results
    .venv/bin/python benchmarks/summary.py --run locomo scale  # run scripts first, then render

``--run`` (what ``make bench`` uses) runs each named script (``benchmarks/<name>.py``) in turn,
one child process each, and records its wall time, exit status and peak RSS (``wait4``) in
``summary.runs.json``; a failing script does not stop the others, but the exit status is 1.
Targets (``_targets.py``): recall p95 ≤ 50 ms at 100k memories embedded (query embedding
excluded, stated separately); write throughput ≥ 0.85 × raw ``encode``; ``import memento_core``
≤ 0.5 s; the best recall@5 of all systems measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, load_result, write_report
from _targets import (
    Row,
    best_r5,
    engine_targets,
    gateway_targets,
    history_targets,
    inspector_targets,
    install_targets,
    targets,
)

BENCHMARKS = Path(__file__).resolve().parent
RUNS_FILE = "summary.runs.json"
SCALE_PLOT = "scale.png"
"""Drawn by ``scale.py``; the summary links it."""
IMPORT_CODE = (
    "import time; started = time.perf_counter(); import memento_core; "
    "print(time.perf_counter() - started)"
)


def overall(summary: dict[str, Any]) -> tuple[float | None, float, float]:
    scores = summary["overall"]
    return scores.get("R@1"), scores["R@5"], scores["R@10"]


def locomo_rows(results: Path) -> list[Row]:
    rows: list[Row] = []
    if (data := load_result(results, "locomo")) is not None:
        retrievers = data["retrievers"]
        speed, latency = data["throughput"], data["latency_ms"]
        labels = {
            "Memento recall (default)": ("Memento", "core `recall`", True),
            "Memento recall, track_usage=False": ("Memento, track_usage=False", "core", True),
            "BM25 (rank_bm25, plain word tokens)": ("plain BM25 (rank_bm25)", "baseline", False),
            "dense MiniLM cosine": ("plain dense (MiniLM cosine)", "baseline", False),
            "50/50 fusion of the two (min–max)": ("BM25 + dense 50/50 fusion", "baseline", False),
        }
        for name, summary in retrievers.items():
            label, via, memento = labels.get(name, (name, "locomo.py", "Memento" in name))
            row = Row(label, via, "locomo", memento, *overall(summary))
            if name == "Memento recall (default)":
                row.writes_per_s = speed["remember_many_items_per_s"]
                row.write_ratio = speed["ratio"]
                row.query_p50_ms = latency["recall_p50"]
                row.query_p95_ms = latency["recall_p95"]
            rows.append(row)
    if (data := load_result(results, "langgraph_store")) is not None:
        for name, summary in data["stores"].items():
            memento = name.startswith("MementoStore")
            latency = data.get("latency_ms", {}).get(name, {})
            write_ms = data.get("write_ms_per_item", {}).get(name)
            rows.append(
                Row(
                    name,
                    "LangGraph adapter" if memento else "LangGraph",
                    "langgraph_store",
                    memento,
                    *overall(summary),
                    writes_per_s=round(1000 / write_ms, 1) if write_ms else None,
                    query_p50_ms=latency.get("p50"),
                    query_p95_ms=latency.get("p95"),
                )
            )
    for source, via_memento, via_peer, writes_key in (
        ("llamaindex_memory", "LlamaIndex adapter", "LlamaIndex", "writes_per_s"),
        ("autogen_memory", "AutoGen adapter", "AutoGen", "adds_per_s"),
    ):
        if (data := load_result(results, source)) is None:
            continue
        for name, system in data["systems"].items():
            memento = name.startswith("Memento")
            query = system.get("query_ms", {})
            rows.append(
                Row(
                    name,
                    via_memento if memento else via_peer,
                    source,
                    memento,
                    *overall(system["retrieval"]),
                    writes_per_s=system.get(writes_key),
                    query_p50_ms=query.get("p50"),
                    query_p95_ms=query.get("p95"),
                )
            )
    if (data := load_result(results, "chat_to_memory")) is not None:
        for name, summary in data["retrievers"].items():
            chat = name.startswith("chat")
            rows.append(
                Row(
                    "Memento, chat path (archives)" if chat else "Memento, turn level (same run)",
                    "core `chat` + `close`" if chat else "core `remember_many`",
                    "chat_to_memory",
                    True,
                    *overall(summary),
                    writes_per_s=data["paths"][name]["messages_per_s"],
                    note="a memory counts for the evidence turns whose text it contains",
                )
            )
    if (data := load_result(results, "consolidation")) is not None and "locomo" in data:
        for key, label in (
            ("before_sleep", "Memento, before sleep"),
            ("after_sleep", "Memento, after sleep (consolidated facts)"),
        ):
            if key in data["locomo"]:
                rows.append(
                    Row(
                        label,
                        "core, track_usage=False",
                        "consolidation",
                        True,
                        *overall(data["locomo"][key]),
                        note="a fact counts for the evidence turns it derives from",
                    )
                )
    return rows


PARITY_SOURCES = (
    ("langgraph_store", "LangGraph `MementoStore`"),
    ("llamaindex_memory", "LlamaIndex `MementoMemoryBlock`"),
    ("autogen_memory", "AutoGen `MementoMemory`"),
)
CORE_KEY = "core Memento (recall / remember_many)"
"""Where ``_parity.CoreReference`` puts core's figures in an adapter script's report."""


def parity_rows(results: Path) -> list[dict[str, Any]]:
    """Each adapter against core in the same run (issue 35's bounds), where measured."""
    rows = []
    for source, adapter in PARITY_SOURCES:
        data = load_result(results, source)
        if data is None or not data.get(CORE_KEY):
            continue
        core = data[CORE_KEY]
        if source == "langgraph_store":
            name = next(n for n in data["stores"] if n.startswith("MementoStore"))
            ms = data["write_ms_per_item"][name]
            ours = {
                "retrieval": data["stores"][name],
                "single": data["single_writes"][name],
                "batched_per_s": round(1000 / ms, 1),
                "query_ms": data["latency_ms"][name],
            }
        else:
            ours = next(v for n, v in data["systems"].items() if n.startswith("Memento"))
        a, c = ours["retrieval"]["overall"], core["retrieval"]["overall"]
        rows.append(
            {
                "adapter": adapter,
                "source": source,
                "r5": (a["R@5"], c["R@5"]),
                "r10": (a["R@10"], c["R@10"]),
                "single_p50_ms": (ours["single"]["p50_ms"], core["single"]["p50_ms"]),
                "batched_ratio": round(ours["batched_per_s"] / core["remember_many_per_s"], 2),
                "query_p50_ms": (ours["query_ms"]["p50"], core["query_ms"]["p50"]),
            }
        )
    return rows


def measure_import(runs: int) -> dict[str, Any]:
    """``import memento_core`` in fresh interpreters: the import alone, and the whole process."""
    imports: list[float] = []
    processes: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", IMPORT_CODE], capture_output=True, text=True, check=True
        )
        processes.append(time.perf_counter() - started)
        imports.append(float(done.stdout.strip()))
    return {
        "runs": runs,
        "import_median_s": round(statistics.median(imports), 3),
        "import_samples_s": [round(x, 3) for x in imports],
        "process_median_s": round(statistics.median(processes), 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def run_scripts(names: Sequence[str], results: Path) -> tuple[dict[str, Any], list[str]]:
    """Run ``benchmarks/<name>.py`` one after another; wall time, status and peak RSS of each."""
    path = results / RUNS_FILE
    runs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    failed = []
    for name in names:
        script = BENCHMARKS / f"{name}.py"
        print(f"\n=== benchmarks/{name}.py", flush=True)
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, str(script)], env=os.environ.copy())
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = code = os.waitstatus_to_exitcode(status)
        runs[name] = {
            "exit_code": code,
            "wall_seconds": round(time.perf_counter() - started, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        if code != 0:
            failed.append(name)
            print(f"benchmarks/{name}.py failed with exit code {code}", flush=True)
        results.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(runs, indent=2) + "\n", encoding="utf-8")
    return runs, failed


def verdict(met: bool | None) -> str:
    return "—" if met is None else ("**met**" if met else "**missed**")


def cell(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def scale_curve(scale: dict[str, Any] | None) -> dict[str, Any]:
    """Per mode and size: what a serving process measured (``scale.py``)."""
    if scale is None:
        return {}
    return {
        mode: {
            size: {
                "open_s": step["serve"]["open_s"],
                "first_recall_ms": step["serve"]["first_recall_ms"],
                "agreement_at_10": step["serve"].get("agreement_at_10"),
                "heavy_viewers_ms": step["serve"].get("heavy_viewers_first_recall_ms") or {},
                "cold_p95_ms": step["serve"]["cold_user_ms"]["p95"],
                "cold_disk_p95_ms": (step.get("serve_cold_disk") or {})
                .get("cold_user_ms", {})
                .get("p95"),
                "warm_p50_ms": step["serve"]["warm_ms"]["p50"],
                "warm_p95_ms": step["serve"]["warm_ms"]["p95"],
                "rss_mb": step["serve"]["rss_mb_active"],
                "write_items_per_s": (step.get("write") or {}).get("items_per_s"),
                "measured_on": step.get("measured_on"),  # kept from an earlier run
                "load_limit": step.get("load_limit"),
            }
            for size, step in steps.items()
            if step.get("serve")
        }
        for mode, steps in scale["modes"].items()
    }


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Benchmark summary",
        "",
        f"Rendered {report['rendered']} by `{report['command']}` from the JSON in "
        "`benchmarks/results/` (each script's own report has the details). "
        "`make bench` reruns every script, then this.",
        "",
        "## Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
    ]
    for target in report["targets"]:
        lines.append(f"| {target['target']} | {target['value']} | {verdict(target['met'])} |")
    best = report["best_r5"]
    lines += [
        "",
        "## LoCoMo retrieval, through core, every adapter and the peers",
        "",
        "1,536 questions (categories 1–4 with evidence), same MiniLM model everywhere; protocol "
        "in `../shared/bench/README.md`. Write throughput ÷ raw `encode` is shown where the "
        "script measured both side by side; other write rates and all latencies come from "
        "different runs on a shared machine (see Sources) and include query embedding.",
        "",
        "| system | via | R@1 | R@5 | R@10 | writes/s | ÷ raw encode | query p50 / p95 ms | "
        "script |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in report["locomo"]:
        r5 = f"{row['r5']:.1f}"
        system = row["system"]
        if best and row["r5"] == best["r5"]:
            r5, system = f"**{r5}** ★", f"**{system}**"
        latency = (
            f"{cell(row['query_p50_ms'])} / {cell(row['query_p95_ms'])}"
            if row["query_p50_ms"] is not None
            else "—"
        )
        ratio = cell(row["write_ratio"], 2)
        lines.append(
            f"| {system} | {row['via']} | {cell(row['r1'])} | {r5} | {row['r10']:.1f} | "
            f"{cell(row['writes_per_s'])} | {ratio} | {latency} | {row['source']}.py |"
        )
    lines += [
        "",
        "★ best R@5. `track_usage=False` rows: stores opened without usage counting (the "
        "default counts a use of every result, which feeds ranking). Consolidation rows: "
        "`consolidation.py`, R@1 not reported. The MCP adapter has no LoCoMo script (its "
        "`recall` tool is core `recall`).",
        "",
    ]
    if report.get("parity"):
        lines += [
            "## Adapters against core, same run (adapter / core)",
            "",
            "Bounds: R@5 and R@10 within 0.5; one write at a time p50 ≤ 20 ms; batched writes "
            "≥ 0.8 × core's `remember_many`; query p50 ≤ core's + 5 ms + the framework's own "
            "overhead (each script's report gives the framework's own memory beside).",
            "",
            "| adapter | R@5 | R@10 | one write p50 ms | batched ÷ core | query p50 ms | script |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for row in report["parity"]:
            pair = {k: f"{row[k][0]} / {row[k][1]}" for k in ("r5", "r10", "single_p50_ms")}
            lines.append(
                f"| {row['adapter']} | {pair['r5']} | {pair['r10']} | {pair['single_p50_ms']} "
                f"| {row['batched_ratio']} | {row['query_p50_ms'][0]} / {row['query_p50_ms'][1]} "
                f"| {row['source']}.py |"
            )
        lines.append("")
    scale = report.get("scale")
    if scale:
        lines += [
            "## One process serving a large store (`scale.py`)",
            "",
            f"{scale['users']:,} users in {scale['projects']:,} projects; a fresh serving "
            "process per size and mode; recall with the query vector known (query embedding "
            "excluded); the store's files in the OS page cache, as on a server that has run a "
            "while, and (*disk cold*) after dropping it. Details and the extrapolations in "
            "`scale.md`.",
            "",
            "| mode | memories | open s | first recall ms | cold user p95 ms | heavy viewers' "
            "first recall ms | cold user p95, disk cold (ms) | warm p50 / p95 ms | "
            "agreement@10 | RSS, 1,000 active users (MB) | write items/s (vectors given) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for mode, sizes in scale["curve"].items():
            for size, fig in sizes.items():
                earlier = f" (run of {fig['measured_on']})" if fig.get("measured_on") else ""
                heavy = " / ".join(str(ms) for ms in fig.get("heavy_viewers_ms", {}).values())
                agreement = fig.get("agreement_at_10")
                lines.append(
                    f"| {mode}{earlier} | {int(size):,} | {fig['open_s']} | "
                    f"{fig.get('first_recall_ms', '')} | {fig['cold_p95_ms']} | {heavy or '—'} | "
                    f"{cell(fig.get('cold_disk_p95_ms'))} | "
                    f"{fig['warm_p50_ms']} / {fig['warm_p95_ms']} | "
                    f"{'exact' if agreement is None else agreement} | {fig['rss_mb']} | "
                    f"{cell(fig['write_items_per_s'])} |"
                )
        held = scale.get("embedded_chroma_mb_at_1m")
        if held:
            lines += [
                "",
                "An embedded process is also the database: on its first read of the memory "
                "collection, embedded Chroma loads that collection's whole vector index into "
                f"the process, about {held['vectors']:,.0f} MB at 1,000,000 memories "
                f"({held['placeholder']:,.0f} MB even with the vectors kept elsewhere), so the "
                "embedded 1M row cannot meet the 1 GB RSS target; a Chroma server keeps it out "
                "of the serving process (`chroma_footprint.md`).",
            ]
        lines += ["", f"![serving a large store]({SCALE_PLOT})", ""]
    searched = report.get("partition_search")
    if searched:
        lines += [
            "### A large partition searched where it lives (`partition_search.py`)",
            "",
            f"{searched['size']:,} memories, {searched['public']:,} of them public; warm "
            "p50 ms, agreement@10 with exact search in brackets. Chroma evaluates a `where` "
            "over the whole collection, so a filtered query costs as much for ten memories as "
            "for thousands; a partition in a collection of its own is searched in a few ms.",
            "",
            "| mode | public, filtered | one user, filtered | public, own collection | "
            "whole collection, no filter | `$contains` on public's own collection |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for mode, f in searched["modes"].items():
            lines.append(
                f"| {mode} | {f['filtered_public_ms']['p50']} ({f['filtered_public_agreement']}) | "
                f"{f['filtered_user_ms']['p50']} | "
                f"{f['own_public_ms']['p50']} ({f['own_public_agreement']}) | "
                f"{f['unfiltered_all_ms']['p50']} ({f['unfiltered_all_agreement']}) | "
                f"{f['own_public_contains_ms']['p50']} |"
            )
        lines.append("")
    mirrored = report.get("mirror_writes")
    if mirrored:
        rate, single = mirrored["batched_items_per_s"], mirrored["single_public_write_ms"]
        lines += [
            "### What mirrors cost a write (`mirror_writes.py`)",
            "",
            f"{mirrored['memories']:,} memories written to two embedded stores in turn, one with "
            f"its {mirrored['mirrors']} large partitions mirrored (load "
            f"{mirrored['load_average_start'][0]}): `remember_many` {rate['mirrored']:,} against "
            f"{rate['none']:,} items/s (×{mirrored['batched_ratio']}); one public `remember` "
            f"p50 {single['mirrored']['p50']} against {single['none']['p50']} ms "
            f"(×{mirrored['single_ratio']}).",
            "",
        ]
    folds = report.get("mirror_folds")
    if folds:
        lines += [
            "### What a fold of a mirror's postings costs (`mirror_writes.py --folds`)",
            "",
            f"A tail folded into a public partition of each size ({folds['mode']}): "
            "incrementally (the terms the tail touched), and with every term rewritten "
            "(as every fold did before; every 8th fold still does). Busy machine: load "
            "beside each row.",
            "",
            "| partition | tail | incremental (s) | whole rewrite (s) | load average |",
            "|---:|---:|---:|---:|---:|",
            *[
                f"| {r['partition']:,} | {r['tail']:,} | {r['fold_seconds']['incremental']} | "
                f"{r['fold_seconds']['whole']} | {r['load_average'][0]} |"
                for r in folds["rows"]
            ],
            "",
        ]
    hot = report.get("hotwords")
    if hot:
        lines += [
            "## Hotword streaming (`hotwords.py`)",
            "",
            f"{hot['memories']:,} memories × variants ({hot['variants']:,}), "
            f"{hot['text_mb']} MB stream in chunks of 1–16 characters: `Conversation.feed` "
            f"{hot['stream_mb_s_cpu']} MB/s (CPU time, median round) against the raw "
            f"automaton's {hot['raw_mb_s_cpu']} MB/s; fastest rounds **"
            f"{hot['stream_vs_raw_fastest']:.0%}**, median of the rounds' ratios "
            f"{hot['stream_vs_raw']:.0%}; per-chunk latency "
            f"p50 {hot['latency_us']['p50']} µs, p99 {hot['latency_us']['p99']} µs.",
            "",
        ]
    gateway = report.get("gateway")
    if gateway:
        lines += [
            "## sendmsg gateway (`gateway.py`)",
            "",
            f"Added latency per stream frame over the model's own chunk rate (one chunk every "
            f"{gateway['model_interval_ms']} ms, hotwords interleaved): p50 "
            f"{gateway['added_ms']['p50']} ms, p99 **{gateway['added_ms']['p99']} ms** (without "
            f"hotword memories p99 {gateway['added_ms_without_hotwords']['p99']} ms). "
            f"{gateway['rooms']} rooms at once: {gateway['stream_frames_per_s']:,} stream "
            f"frames/s in the stream phase, {gateway['frames_per_s_whole_turns']:,} frames/s "
            "over whole turns (clients in the same process).",
            "",
        ]
    server = report.get("langgraph_server")
    if server:
        lines += [
            "## LangGraph server (`langgraph_server.py`)",
            "",
            f"LoCoMo through `langgraph dev` ({server['conversations']} of "
            f"{server['conversations_available']} conversations, {server['questions']:,} "
            "questions), load average at start and end "
            f"{compact(server['load'])} (a shared 2-core machine):",
            "",
            "| store | R@5 | search p50 / p95 ms | put_item items/s |",
            "|---|---|---|---|",
        ]
        for name, r5 in server["r5"].items():
            timing = server["search_ms"].get(name)
            speed = f"{timing['p50']} / {timing['p95']}" if timing else "— (in process)"
            lines.append(f"| {name} | {r5:.1f} | {speed} | {server['puts_per_s'].get(name, '—')} |")
        lines.append("")
    imports = report["import"]
    rss = report["peak_rss_mb"]
    lines += [
        "## Import time and memory",
        "",
        f"- `import memento_core`: **{imports['import_median_s']} s** (median of "
        f"{imports['runs']} fresh interpreters, samples {imports['import_samples_s']}; the "
        f"whole `python -c` process {imports['process_median_s']} s; load average "
        f"{imports['load_average']}).",
        f"- Peak RSS, LoCoMo run (`locomo.py` child of `make bench`): "
        f"{cell(rss.get('locomo'))} MB"
        + ("" if rss.get("locomo") is not None else " (measured by `make bench`: not run yet)")
        + ".",
        "",
    ]
    runs = report.get("runs") or {}
    if runs:
        lines += [
            "Scripts run by `make bench` (`summary.py --run`):",
            "",
            "| script | exit | wall s | peak RSS MB | finished |",
            "|---|---:|---:|---:|---|",
        ]
        for name, run in runs.items():
            lines.append(
                f"| {name}.py | {run['exit_code']} | {run['wall_seconds']} | "
                f"{run['peak_rss_mb']} | {run['finished']} |"
            )
        lines.append("")
    lines += [
        "## Sources",
        "",
        "| results | started | wall s | load average | command |",
        "|---|---|---:|---|---|",
    ]
    for source in report["sources"]:
        lines.append(
            f"| `{source['file']}` | {source['started']} | {cell(source['wall_seconds'], 0)} | "
            f"{source['load']} | `{source['command']}` |"
        )
    lines.append("")
    return "\n".join(lines)


def hotword_figures(data: dict[str, Any] | None) -> dict[str, Any] | None:
    if data is None:
        return None
    stream = data["stream"]
    return {
        "memories": data["build"]["memories"],
        "variants": data["build"]["variants"],
        "text_mb": stream["text_mb_utf8"],
        "stream_mb_s_cpu": stream["throughput_mb_s_cpu"]["stream"],
        "raw_mb_s_cpu": stream["throughput_mb_s_cpu"]["raw"],
        "stream_vs_raw": stream["stream_vs_raw_cpu"],
        # Older reports have only the median of the rounds' ratios.
        "stream_vs_raw_fastest": stream.get(
            "stream_vs_raw_cpu_fastest", stream["stream_vs_raw_cpu"]
        ),
        "rounds": stream["rounds"],
        "latency_us": stream["latency_us"],
    }


def gateway_figures(data: dict[str, Any] | None) -> dict[str, Any] | None:
    if data is None:
        return None
    latency, rooms = data["latency"], data["rooms"]
    return {
        "model_interval_ms": latency["model_interval_ms"],
        "added_ms": latency["added_ms"],
        "added_ms_without_hotwords": data["latency_without_hotwords"]["added_ms"],
        "rooms": rooms["rooms"],
        "stream_frames_per_s": rooms["stream_frames_per_s"],
        "frames_per_s_whole_turns": rooms["frames_per_s_whole_turns"],
        "quick": data.get("quick", False),
    }


def server_figures(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """``langgraph_server.py``'s figures: R@ through the server beside in process, speed."""
    if data is None:
        return None
    return {
        "conversations": data["conversations"],
        "conversations_available": data["conversations_available"],
        "questions": data["questions_scored"],
        "r5": {name: summary["overall"]["R@5"] for name, summary in data["stores"].items()},
        "r5_gap": data["r5_server_minus_in_process"],
        "r5_met": data["r5_within_tolerance"],
        "search_ms": {n: {"p50": t["p50"], "p95": t["p95"]} for n, t in data["search_ms"].items()},
        "puts_per_s": {n: p["items_per_s"] for n, p in data["puts"].items()},
        "load": [data["load_average_at_start"], data["load_average_at_end"]],
    }


def server_targets(server: dict[str, Any] | None) -> list[dict[str, Any]]:
    if server is None:
        return []
    return [
        {
            "target": "LoCoMo R@5 through a LangGraph server (`search_items`) within 0.5 of "
            "`MementoStore` in process",
            "value": f"{server['r5_gap']:+.1f} points ({server['conversations']} of "
            f"{server['conversations_available']} conversations)",
            "met": server["r5_met"],
        }
    ]


def compact(value: Any) -> str:
    """A load-average record as short text: numbers to one decimal."""
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('load_average_', '')} {compact(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(compact(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def sources(results: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(results.glob("*.json")):
        if path.name.startswith("summary"):
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        machine = data.get("machine") if isinstance(data.get("machine"), dict) else {}
        load = (
            data.get("load_average")
            or data.get("load_average_start")
            or data.get("load_average_at_start")
            or {k: v for k, v in (machine or {}).items() if k.startswith("load_average")}
        )
        found.append(
            {
                "file": path.name,
                "started": data.get("started") or data.get("finished_at") or "—",
                "wall_seconds": data.get("wall_seconds"),
                "load": compact(load),
                "command": data.get("command", ""),
            }
        )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--from-results",
        action="store_true",
        help="render from the results already in --results (the default)",
    )
    mode.add_argument("--run", nargs="+", metavar="SCRIPT", help="benchmarks/<SCRIPT>.py to run")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--import-runs", type=int, default=7)
    args = parser.parse_args(argv)
    results: Path = args.results

    failed: list[str] = []
    if args.run:
        _, failed = run_scripts(args.run, results)
    runs_path = results / RUNS_FILE
    runs = json.loads(runs_path.read_text(encoding="utf-8")) if runs_path.is_file() else {}

    rows = locomo_rows(results)
    scale = load_result(results, "scale")
    imports = measure_import(args.import_runs)
    hotwords = hotword_figures(load_result(results, "hotwords"))
    gateway = gateway_figures(load_result(results, "gateway"))
    server = server_figures(load_result(results, "langgraph_server"))
    best, _, _ = best_r5(rows)
    report: dict[str, Any] = {
        "rendered": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(
            ["benchmarks/summary.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "targets": targets(rows, scale, imports, hotwords, load_result(results, "chat_to_memory"))
        + gateway_targets(gateway)
        + server_targets(server)
        + engine_targets(results)
        + install_targets(results)
        + inspector_targets(results)
        + history_targets(results),
        "locomo": [asdict(r) for r in rows],
        "parity": parity_rows(results),
        "best_r5": asdict(best) if best else None,
        "import": imports,
        "peak_rss_mb": {
            "locomo": runs.get("locomo", {}).get("peak_rss_mb"),
            **{f"run_{name}": run["peak_rss_mb"] for name, run in runs.items()},
        },
        "hotwords": hotwords,
        "gateway": gateway,
        "langgraph_server": server,
        "runs": runs,
        "sources": sources(results),
    }
    if scale is not None:
        report["scale"] = {
            "users": scale["corpus"]["users"],
            "projects": scale["corpus"]["projects"],
            "curve": scale_curve(scale),
            "plot": SCALE_PLOT,
        }
        footprint = load_result(results, "chroma_footprint")
        if footprint is not None:
            report["scale"]["embedded_chroma_mb_at_1m"] = footprint["at_one_million_mb"]
    mirror_writes = load_result(results, "mirror_writes")
    if mirror_writes is not None:
        report["mirror_writes"] = mirror_writes
    mirror_folds = load_result(results, "mirror_folds")
    if mirror_folds is not None:
        report["mirror_folds"] = mirror_folds
    partition_search = load_result(results, "partition_search")
    if partition_search is not None:
        report["partition_search"] = {
            "size": partition_search["size"],
            "public": next(iter(partition_search["modes"].values()))["public"],
            "modes": partition_search["modes"],
        }
    markdown = render_markdown(report)
    write_report(results, "summary", report, markdown)
    print(markdown)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
