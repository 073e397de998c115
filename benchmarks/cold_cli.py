"""Cold start: wall time of ``memento-core remember`` and ``memento-core recall`` run as
commands, and of a fresh Python process's first ``remember``, on a fresh store each round.

Every timed run is a new process (``subprocess``), so each pays what a user's first command pays:
interpreter start, imports, plugin discovery, opening Chroma, loading the embedding model, the
work itself. Each round uses a new store directory: ``remember`` writes the store's first memory,
then ``recall`` reads it back. The operating system's file cache stays warm (one untimed
warm-up round first): what is measured is the process, not the disk. The in-process run also
reports its phases (import, open, first remember, first recall) and which agent frameworks were
imported — with every adapter installed, none should be (plugin discovery is lazy).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cold_cli.py [--rounds N] [--quick]

Writes ``benchmarks/results/cold_cli.json`` and ``.md``. Target: ≤ 3 s for each command.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _common import (
    arguments,
    latency_summary,
    load_average,
    machine,
    offline_single_thread,
    report_footer,
    write_report,
)

TARGET_S = 3.0
FRAMEWORKS = (
    "langgraph",
    "langchain_core",
    "llama_index",
    "autogen_core",
    "autogen_agentchat",
    "mcp",
)
FACT = "The wifi password at the Hanoi office is tulip-42."
QUESTION = "what is the office wifi password?"
IN_PROCESS = textwrap.dedent(
    """
    import json, sys, time
    started = time.perf_counter()
    from memento_core import Memento
    imported = time.perf_counter()
    mem = Memento.open(sys.argv[1])
    opened = time.perf_counter()
    mem.remember(sys.argv[2])
    remembered = time.perf_counter()
    hits = mem.recall(sys.argv[3])
    recalled = time.perf_counter()
    mem.close()
    loaded = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[4].split(",")))
    print(json.dumps({
        "import_s": imported - started, "open_s": opened - imported,
        "first_remember_s": remembered - opened, "first_recall_s": recalled - remembered,
        "hits": len(hits), "frameworks_imported": loaded,
    }))
    """
)


def timed(command: list[str]) -> tuple[float, str]:
    """Seconds from start to exit of ``command`` (which must succeed), and its output."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed:\n{done.stderr}")
    return seconds, done.stdout


def one_round(memento: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cold-cli-") as tmp:
        cli_store, py_store = str(Path(tmp) / "cli"), str(Path(tmp) / "py")
        remember_s, _ = timed([memento, "remember", FACT, "--path", cli_store])
        recall_s, out = timed([memento, "recall", QUESTION, "--path", cli_store, "--json"])
        if "tulip-42" not in out:
            raise SystemExit(f"recall did not find the fact:\n{out}")
        process_s, out = timed(
            [sys.executable, "-c", IN_PROCESS, py_store, FACT, QUESTION, ",".join(FRAMEWORKS)]
        )
        phases = json.loads(out.strip().splitlines()[-1])
    # What the phases leave out: interpreter start and, mostly, exit (module teardown).
    worked = sum(v for k, v in phases.items() if k.endswith("_s"))
    phases["start_and_exit_s"] = process_s - worked
    return {"cli_remember": remember_s, "cli_recall": recall_s, "process": process_s, **phases}


def render_markdown(report: dict[str, Any]) -> str:
    wall = report["wall_s"]
    lines = [
        "# Cold start: `memento-core remember` / `memento-core recall` and a first `remember`",
        "",
        f"Each figure is a new process on a fresh store ({report['rounds']} round(s)"
        + ("" if report["quick"] else " after one untimed warm-up")
        + "; the file cache is warm). Model load included. Target: "
        f"≤ {TARGET_S:.0f} s.",
        "",
        "| run | p50 s | max s | within target (p50) |",
        "|---|---|---|---|",
    ]
    labels = {
        "cli_remember": "`memento-core remember` (command)",
        "cli_recall": "`memento-core recall` (command)",
        "process": "`python -c` open + first remember + first recall",
    }
    for key, label in labels.items():
        p50, top = wall[key]["p50"], wall[key]["max"]
        lines.append(f"| {label} | {p50} | {top} | {'yes' if p50 <= TARGET_S else 'no'} |")
    phases = report["in_process_phases_s"]
    lines += [
        "",
        "In-process phases (p50, seconds): "
        + ", ".join(f"{name.removesuffix('_s')} {value['p50']}" for name, value in phases.items())
        + ". The first remember includes loading the embedding model; start_and_exit is the "
        "process's wall time outside the phases (interpreter start, then module teardown at "
        "exit).",
        "",
        "Agent frameworks imported by that process: "
        + (", ".join(report["frameworks_imported"]) or "none")
        + " (every adapter installed; plugin discovery must import none).",
        "",
        *report_footer(report, seconds="total_s", load_at_start=True),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one round, no warm-up")
    args = parser.parse_args(argv)
    offline_single_thread()
    memento = str(Path(sys.executable).with_name("memento-core"))
    load = load_average()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    total = time.perf_counter()
    if not args.quick:
        one_round(memento)  # warm-up: the file cache, not the process, is what it warms
    rounds = [one_round(memento) for _ in range(1 if args.quick else args.rounds)]
    seconds = {key: [r[key] * 1000 for r in rounds] for key in rounds[0] if key.endswith("_s")}
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/cold_cli.py", *(argv or sys.argv[1:])]),
        "started": started,
        "rounds": len(rounds),
        "quick": args.quick,
        "target_s": TARGET_S,
        "wall_s": {
            key: {
                k: round(v / 1000, 2) if k != "n" else v
                for k, v in latency_summary([r[key] * 1000 for r in rounds], 0).items()
            }
            for key in ("cli_remember", "cli_recall", "process")
        },
        "in_process_phases_s": {
            key: {k: round(v / 1000, 2) if k != "n" else v for k, v in latency_summary(ms).items()}
            for key, ms in seconds.items()
        },
        "frameworks_imported": sorted({f for r in rounds for f in r["frameworks_imported"]}),
        "raw": rounds,
        "load_average_at_start": load,
        "machine": machine(),
        "total_s": round(time.perf_counter() - total, 1),
    }
    markdown = render_markdown(report)
    write_report(args.out, "cold_cli", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
