"""Working-memory benchmark: chat append and window latency in a 1,000-message session.

For each store mode (embedded, and a ``chroma run`` server on loopback that this script starts)
it appends a deterministic 1,000-message conversation (user and assistant turns, a tool-call
exchange every tenth turn) to one session under a 2,000-token window and times, per message,
``append`` and the ``window()`` read that follows it. Then it times reopening the session
(rebuilding its window in a fresh store handle), reading the whole history, and archiving the
session with ``summarize_thread`` (extractive summary, embedding, write). A second session with
overflow snapshots on shows what automatic archiving adds to appends.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/working_memory.py [--messages N] [--out DIR]

Latencies are wall-clock on whatever else the machine is doing; the load average is recorded.
"""

from __future__ import annotations

import functools
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _common import arguments, chroma_server, machine, machine_line, write_report

from memento_core import Memento, Scope
from memento_core._chat import ChatMemory, WindowPolicy
from memento_core._chat_archive import summarize_thread
from memento_core._messages import Message, ToolCall
from memento_core._summarize import ExtractiveSummarizer
from memento_core.embedding import SentenceTransformerEmbedder

WINDOW_TOKENS = 2_000
SCOPE = Scope(user_id="bench", agent_id="assistant")
WORDS = (  # noqa: SIM905 - a vocabulary reads better as text than as 40 list lines
    "flight hotel Lisbon budget museum train dinner booking refund weather seat window airport "
    "luggage passport visa taxi ferry beach castle tram tiles bakery wine river bridge night "
    "morning ticket price change cancel confirm email receipt card upgrade breakfast"
).split()


def conversation(count: int, seed: int = 7) -> Iterator[Message]:
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."

    turn = 0
    while True:
        turn += 1
        if turn % 10 == 0:
            call_id = f"call-{turn}"
            args = {"city": "Lisbon", "day": turn}
            yield Message.assistant(tool_calls=[ToolCall(call_id, "search_hotels", args)])
            yield Message.tool(f'{{"hotels": {rng.randint(1, 40)}}}', tool_call_id=call_id)
        else:
            yield Message.user(" ".join(sentence() for _ in range(rng.randint(1, 3))))
            yield Message.assistant(" ".join(sentence() for _ in range(rng.randint(1, 4))))
        count -= 2
        if count <= 0:
            return


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return (time.perf_counter() - start) * 1000, result


def summary(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "mean_ms": round(statistics.fmean(ordered), 2),
        "p50_ms": round(ordered[len(ordered) // 2], 2),
        "p95_ms": round(ordered[int(len(ordered) * 0.95)], 2),
        "max_ms": round(ordered[-1], 2),
    }


def run_mode(mode: str, open_store: Callable[[], Memento], messages: int) -> dict[str, Any]:
    script = list(conversation(messages))
    policy = WindowPolicy(max_tokens=WINDOW_TOKENS, snapshot_on_overflow=False)
    result: dict[str, Any] = {"mode": mode, "messages": len(script)}
    with open_store() as mem:
        memory = ChatMemory(mem, "bench", scope=SCOPE, policy=policy)
        appends: list[float] = []
        reads: list[float] = []
        for message in script:
            appends.append(timed(lambda m=message: memory.append(m))[0])
            reads.append(timed(memory.window)[0])
        window = memory.window()
        result["append"] = summary(appends)
        result["window"] = summary(reads)
        result["window_messages"] = len(window)
        result["window_tokens"] = memory.tokens()
        result["history_ms"] = round(timed(memory.history)[0], 1)
        started = time.perf_counter()
        summary_text = ExtractiveSummarizer().summarize(memory.history())
        result["summarize_only_ms"] = round((time.perf_counter() - started) * 1000, 1)
        archive_ms, memory_id = timed(lambda: summarize_thread(mem, "bench"))
        result["archive_ms"] = round(archive_ms, 1)
        result["archive_chars"] = len(mem.get(memory_id).content)
        assert summary_text in mem.get(memory_id).content

        snapshots = ChatMemory(
            mem, "bench-snapshots", scope=SCOPE, policy=WindowPolicy(max_tokens=WINDOW_TOKENS)
        )
        with_snapshots = [timed(lambda m=m: snapshots.append(m))[0] for m in script]
        archived = [i for i in mem.items() if "chat-overflow" in i.tags]
        result["append_with_overflow_snapshots"] = summary(with_snapshots)
        result["overflow_snapshots"] = len(archived)
    with open_store() as mem:
        reopen_ms, reopened = timed(
            lambda: ChatMemory(mem, "bench", scope=SCOPE, policy=policy).window()
        )
        assert reopened == window and [m.id for m in reopened] == [m.id for m in window]
        result["reopen_window_ms"] = round(reopen_ms, 1)
    return result


def render_markdown(report: dict[str, Any]) -> str:
    rows = [
        "# Working memory: chat append and window latency",
        "",
        f"{report['messages']:,}-message session, {WINDOW_TOKENS:,}-token window, "
        f"run {report['finished_at']}. Command: `{report['command']}`.",
        "",
        "| | " + " | ".join(r["mode"] for r in report["modes"]) + " |",
        "|---|" + "---:|" * len(report["modes"]),
    ]

    def row(label: str, value: Callable[[dict[str, Any]], Any]) -> None:
        rows.append(f"| {label} | " + " | ".join(str(value(r)) for r in report["modes"]) + " |")

    for key, label in (("append", "append"), ("window", "window()")):
        row(f"{label} p50 / p95 ms", lambda r, k=key: f"{r[k]['p50_ms']} / {r[k]['p95_ms']}")
        row(f"{label} mean ms", lambda r, k=key: r[k]["mean_ms"])
    row(
        "window held (messages / tokens)",
        lambda r: f"{r['window_messages']} / {r['window_tokens']}",
    )
    row("reopen: rebuild the window, ms", lambda r: r["reopen_window_ms"])
    row("history(): read all, ms", lambda r: r["history_ms"])
    row("archive (summarize_thread), ms", lambda r: r["archive_ms"])
    row("… of which the summary, ms", lambda r: r["summarize_only_ms"])
    key = "append_with_overflow_snapshots"
    row("append with overflow snapshots p50 / p95 ms",
        lambda r: f"{r[key]['p50_ms']} / {r[key]['p95_ms']}")  # fmt: skip
    row("overflow snapshots written", lambda r: r["overflow_snapshots"])
    rows += [
        "",
        "Load average before / after: "
        + " / ".join(", ".join(f"{x:.1f}" for x in load) for load in report["load_average"]),
        "",
        "Machine: " + machine_line(report["machine"]),
        "",
    ]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--modes", default="embedded,server")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = SentenceTransformerEmbedder()
    embedder.embed_query("warm up")  # load the model outside the timings
    load_before = os.getloadavg()
    modes = []
    for mode in args.modes.split(","):
        if mode == "embedded":
            path = Path(tempfile.mkdtemp(prefix="wm-bench-")) / "store"
            opener = functools.partial(Memento.open, path, embedder=embedder)
            modes.append(run_mode(mode, opener, args.messages))
        else:
            with chroma_server() as url:
                modes.append(
                    run_mode(mode, lambda: Memento.open(url=url, embedder=embedder), args.messages)
                )
        print(json.dumps(modes[-1]), flush=True)
    report = {
        "benchmark": "working_memory",
        "messages": args.messages,
        "window_tokens": WINDOW_TOKENS,
        "command": "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/working_memory.py",
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_average": [load_before, os.getloadavg()],
        "modes": modes,
        "machine": machine(),
    }
    write_report(args.out, "working_memory", report, render_markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
