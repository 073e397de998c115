"""LoCoMo through a LangGraph server: Memento's store behind ``langgraph dev`` against the
server's built-in store, and against ``MementoStore`` in process.

Two ``langgraph dev`` servers run side by side on loopback, both on the project of
``examples/langgraph_server``: one with ``memento_langgraph.server``'s store and checkpointer
(an embedded Memento store in a temporary directory, index field ``text``), one with the
server's own store, given the same all-MiniLM-L6-v2 model (ONNX, fp32: Memento's default)
through a local ``embed`` function in ``langgraph.json`` (``index.fields = ["text"]``). Each
dialogue turn is one item ``{"text": "[<session date>] <speaker>: <text>"}`` under
``("locomo", <conversation>)``, put with ``client.store.put_item`` one at a time (as a graph or
an app writes through the API; the server API has no batch); each question is
``client.store.search_items(["locomo", <conversation>], query=..., limit=10)``, the two servers'
calls alternating question by question so machine load falls on both alike. Recall@k follows
``../shared/bench/README.md`` (categories 1–4 with evidence); items are dated when written,
as in ``langgraph_store.py``.

The same turns go into ``MementoStore`` in this process (``batch`` of 256 puts, the same
model), scored on the same questions: the target is R@5 through the server within 0.5 points
of it. Speed — each ``search_items`` call's latency (HTTP, the server's work and the query's
embedding) and ``put_item`` throughput (one client, one request at a time) — is the same run's,
with the load average at its start and end beside it: this 2-core machine is shared.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/langgraph_server.py [--conversations N]

``--conversations N`` takes the first N of LoCoMo's 10 (both servers and the in-process store
get the same ones; the report says how many). Writes ``benchmarks/results/langgraph_server.json``
and ``.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    arguments,
    free_port,
    latency_summary,
    load_average,
    locomo_missing,
    machine,
    report_footer,
    write_report,
)
from langgraph.store.base import PutOp
from langgraph_sdk import get_client
from locomo import CATEGORIES, KS, Conversation, Scores, load_conversations
from rich.console import Console

from memento_core import Memento, OnnxEmbedder
from memento_langgraph import MementoStore

NAME = "langgraph_server"
EXAMPLE = REPO / "examples" / "langgraph_server"
LANGGRAPH = Path(sys.executable).parent / "langgraph"
LIMIT = 10
WRITE_BATCH = 256
START_SECONDS = 300.0
R5_TOLERANCE = 0.5
"""R@5 through the server within this many points of MementoStore in process."""
MEMENTO_SERVER = "Memento store behind langgraph dev (search_items)"
BUILT_IN_SERVER = "built-in store behind langgraph dev (search_items, MiniLM embed)"
IN_PROCESS = "MementoStore in process (search)"
QUIET = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "OMP_NUM_THREADS": "1",
}
EMBED_PY = '''"""The built-in store's embed function: the model Memento embeds with."""
from memento_core import OnnxEmbedder

_model = OnnxEmbedder()


def embed(texts):
    return [[float(x) for x in row] for row in _model.embed_documents(list(texts))]
'''


class Server:
    """One ``langgraph dev`` on loopback, stopped by its PID."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log_path = workdir / "server.log"
        port = self.url.rsplit(":", 1)[1]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
                 "--port", port, "--config", "langgraph.json"],
                cwd=workdir,
                env={**os.environ, **QUIET, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + START_SECONDS
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"langgraph dev did not start at {self.url}:\n{tail}")
            time.sleep(0.5)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ok", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()


def project(workdir: Path, *, built_in: bool) -> Path:
    """The example project in ``workdir``; ``built_in``: the server's own store, with ``embed``."""
    workdir.mkdir(parents=True)
    shutil.copy(EXAMPLE / "agent.py", workdir / "agent.py")
    config: dict[str, Any] = json.loads((EXAMPLE / "langgraph.json").read_text())
    if built_in:
        (workdir / "embed.py").write_text(EMBED_PY)
        config["store"] = {"index": {"embed": "./embed.py:embed", "dims": 384, "fields": ["text"]}}
        del config["checkpointer"]
    (workdir / "langgraph.json").write_text(json.dumps(config, indent=2))
    return workdir


async def put_turns(url: str, conversation: Conversation) -> float:
    """Every turn through ``put_item``, one request at a time; returns the seconds taken."""
    namespace = ["locomo", conversation.sample_id]
    async with get_client(url=url) as client:
        started = time.perf_counter()
        for turn in conversation.turns:
            await client.store.put_item(namespace, turn.dia_id, {"text": turn.text})
        return time.perf_counter() - started


async def search_both(
    urls: dict[str, str],
    conversation: Conversation,
    scores: dict[str, Scores],
    latency: dict[str, list[float]],
) -> None:
    namespace = ["locomo", conversation.sample_id]
    clients = {name: get_client(url=url) for name, url in urls.items()}
    try:
        for question in conversation.questions:
            for name, client in clients.items():
                started = time.perf_counter()
                found = await client.store.search_items(namespace, query=question.text, limit=LIMIT)
                latency[name].append(1000 * (time.perf_counter() - started))
                scores[name].add(question, [item["key"] for item in found["items"]])
    finally:
        for client in clients.values():
            await client.aclose()


def in_process(conversations: Sequence[Conversation], root: Path) -> Scores:
    """The same turns and questions through ``MementoStore`` in this process."""
    scores = Scores()
    with Memento.open(root / "in-process", embedder=OnnxEmbedder()) as memento:
        store = MementoStore(memento, index={"fields": ["text"]})
        for conversation in conversations:
            namespace = ("locomo", conversation.sample_id)
            ops = [PutOp(namespace, t.dia_id, {"text": t.text}) for t in conversation.turns]
            for start in range(0, len(ops), WRITE_BATCH):
                store.batch(ops[start : start + WRITE_BATCH])
            for question in conversation.questions:
                hits = store.search(namespace, query=question.text, limit=LIMIT)
                scores.add(question, [h.key for h in hits])
    return scores


async def run(
    conversations: Sequence[Conversation], root: Path, console: Console
) -> dict[str, Any]:
    store_dir = root / "memento-store"
    servers: dict[str, Server] = {}
    try:
        servers[MEMENTO_SERVER] = Server(
            project(root / "memento", built_in=False), {"MEMENTO_PATH": str(store_dir)}
        )
        servers[BUILT_IN_SERVER] = Server(project(root / "built-in", built_in=True), {})
        urls = {name: server.url for name, server in servers.items()}
        scores = {name: Scores() for name in urls}
        latency: dict[str, list[float]] = {name: [] for name in urls}
        put_seconds = {name: 0.0 for name in urls}
        for n, conversation in enumerate(conversations, 1):
            console.print(
                f"conversation {n}/{len(conversations)} ({conversation.sample_id}): "
                f"{len(conversation.turns)} turns, {len(conversation.questions)} questions"
            )
            for name, url in urls.items():  # in turn: each server's puts alone on the machine
                put_seconds[name] += await put_turns(url, conversation)
            await search_both(urls, conversation, scores, latency)
    finally:
        for server in servers.values():
            server.stop()
    turns = sum(len(c.turns) for c in conversations)
    return {
        "stores": {name: s.summary() for name, s in scores.items()},
        "search_ms": {name: latency_summary(values) for name, values in latency.items()},
        "puts": {
            name: {
                "items": turns,
                "seconds": round(seconds, 1),
                "items_per_s": round(turns / seconds, 1),
            }
            for name, seconds in put_seconds.items()
        },
    }


def render_markdown(report: dict[str, Any]) -> str:
    categories = list(CATEGORIES.values())
    head = ["store", "R@1", "R@5", "R@10", *(f"{c} R@5" for c in categories)]
    subset = report["conversations"] < report["conversations_available"]
    lines = [
        "# LoCoMo through a LangGraph server (`langgraph dev`)",
        "",
        f"Questions scored: **{report['questions_scored']:,}** (categories 1–4 with evidence) "
        f"over {report['conversations']} of LoCoMo's {report['conversations_available']} "
        f"conversations ({', '.join(report['sample_ids'])}; {report['turns']:,} turns)"
        + (", a subset: the full run over HTTP is long on this shared machine" if subset else "")
        + ". Each turn put with `client.store.put_item`, each question asked with "
        "`client.store.search_items(namespace, query=…, limit=10)`; the built-in store embeds "
        "with the same all-MiniLM-L6-v2 (ONNX fp32) through a local `embed` in `langgraph.json`; "
        "index field `text`. Items are dated when written.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, summary in report["stores"].items():
        overall = summary["overall"]
        cells = [name, *(f"{overall[f'R@{k}']:.1f}" for k in KS)]
        for category in categories:
            per = summary["by_category"].get(category)
            cells.append(f"{per['R@5']:.1f}" if per else "—")
        lines.append("| " + " | ".join(cells) + " |")
    gap = report["r5_server_minus_in_process"]
    met = "met" if report["r5_within_tolerance"] else "not met"
    lines += [
        "",
        f"R@5 through the server minus `MementoStore` in process: **{gap:+.1f}** points "
        f"(target within ±{R5_TOLERANCE}): **{met}**.",
        "",
        "## Speed through the server (same run, same items and questions)",
        "",
        f"Load average at start {report['load_average_at_start']}, at end "
        f"{report['load_average_at_end']} (2 cores, shared with other work: compare the two "
        "rows, not the absolute numbers).",
        "",
        "| server | search p50 ms | search p95 ms | searches | put_item items/s | put seconds |",
        "|---|---|---|---|---|---|",
    ]
    for name, timing in report["search_ms"].items():
        puts = report["puts"][name]
        lines.append(
            f"| {name} | {timing['p50']} | {timing['p95']} | {timing['n']} | "
            f"{puts['items_per_s']} | {puts['seconds']} |"
        )
    lines += [
        "",
        "Search latency is each HTTP call from the client (query embedding, the store's "
        "search, the server's JSON), the two servers' calls alternating. A `put_item` on "
        "Memento's store is one `remember` (durable Chroma writes and the change feed); on the "
        "built-in store it is a dict update plus the embedding (its file is written in the "
        "background).",
        "",
        *report_footer(report),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--conversations", type=int, default=None, help="the first N (default all)")
    args = parser.parse_args(argv)
    if locomo_missing(args.data):
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    console = Console()
    available = load_conversations(args.data)
    conversations = available[: args.conversations] if args.conversations else available
    report: dict[str, Any] = {
        "command": " ".join(["benchmarks/langgraph_server.py", *(argv or sys.argv[1:])]),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_average_at_start": load_average(),
        "conversations": len(conversations),
        "conversations_available": len(available),
        "sample_ids": [c.sample_id for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
    }
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memento-lg-server-") as tmp:
        report.update(asyncio.run(run(conversations, Path(tmp), console)))
        console.print("MementoStore in process …")
        report["stores"][IN_PROCESS] = in_process(conversations, Path(tmp)).summary()
    report["load_average_at_end"] = load_average()
    report["wall_seconds"] = round(time.perf_counter() - began, 1)
    report["machine"] = machine()
    report["questions_scored"] = report["stores"][IN_PROCESS]["questions"]
    gap = round(
        report["stores"][MEMENTO_SERVER]["overall"]["R@5"]
        - report["stores"][IN_PROCESS]["overall"]["R@5"],
        1,
    )
    report["r5_server_minus_in_process"] = gap
    report["r5_within_tolerance"] = abs(gap) <= R5_TOLERANCE
    markdown = render_markdown(report)
    write_report(args.out, NAME, report, markdown)
    console.print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
