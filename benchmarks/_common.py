"""Helpers shared by the benchmark scripts: the command line (``--out``, LoCoMo's ``--data``),
machine facts, percentiles, memory, a progress bar, a ``chroma run`` server on loopback, and
writing and reading reports. Not a benchmark itself."""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
LOCOMO_DATA = REPO.parent / "shared" / "bench" / "locomo10.json"
"""Where LoCoMo is read, in place (never copied into the repository); ``$LOCOMO_PATH`` overrides."""


def offline_single_thread() -> None:
    """What every benchmark sets before torch loads: no hub access, one OpenMP thread."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def percentile(values: Sequence[float], q: float, digits: int = 1) -> float:
    return round(float(np.percentile(values, q)), digits) if len(values) else 0.0


def latency_summary(values_ms: Sequence[float], digits: int = 1) -> dict[str, float]:
    """p50, p95, p99, mean and max of a list of milliseconds, rounded to ``digits``."""
    if not values_ms:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0, "max": 0.0, "n": 0}
    return {
        "p50": percentile(values_ms, 50, digits),
        "p95": percentile(values_ms, 95, digits),
        "p99": percentile(values_ms, 99, digits),
        "mean": round(float(np.mean(values_ms)), digits),
        "max": round(float(np.max(values_ms)), digits),
        "n": len(values_ms),
    }


def peak_rss_mb() -> float:
    """This process's peak resident set so far (Linux reports ``ru_maxrss`` in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def process_peak_rss_mb(pid: int) -> float:
    """Another live process's peak resident set (Linux ``VmHWM``; 0 where unknown). Unlike
    ``RUSAGE_CHILDREN`` it is not inflated by the parent's memory copied at fork."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def rss_mb() -> float:
    """This process's resident set now (Linux; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text(encoding="ascii").split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    import chromadb

    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "chromadb": chromadb.__version__,
        "platform": platform.platform(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
    }
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def chroma_server(
    path: Path | None = None, *, timeout: float = 90.0, stats: dict[str, float] | None = None
) -> Iterator[str]:
    """A ``chroma run`` server on a free loopback port over ``path`` (a fresh temporary
    directory by default); yields its URL and stops it on exit. Its log is ``<dir>.log``;
    ``stats`` receives the server's ``peak_rss_mb`` when it stops."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    root = path or Path(tempfile.mkdtemp(prefix="memento-bench-chroma-"))
    chroma = Path(sys.executable).parent / "chroma"
    command = [str(chroma), "run", "--path", str(root), "--port", str(port), "--host", "127.0.0.1"]
    with (root.parent / f"{root.name}.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"chroma run did not start at {url}") from None
                time.sleep(0.3)
        yield url
    finally:
        if stats is not None:
            stats["peak_rss_mb"] = process_peak_rss_mb(process.pid)
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def arguments(
    doc: str | None, *, out: Path = RESULTS, locomo: bool = False
) -> argparse.ArgumentParser:
    """A benchmark's command line: the first paragraph of its docstring as the description,
    ``--out`` (the directory its report goes to) and, with ``locomo``, ``--data`` (LoCoMo)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    if locomo:
        default = Path(os.environ.get("LOCOMO_PATH", LOCOMO_DATA))
        parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--out", type=Path, default=out)
    return parser


def locomo_missing(path: Path) -> bool:
    """Whether the LoCoMo file is missing (said on standard error; the script then exits 2)."""
    if path.is_file():
        return False
    print(f"LoCoMo data not found at {path}; pass --data", file=sys.stderr)
    return True


def machine_line(facts: dict[str, Any]) -> str:
    """``machine()``'s facts as one line of a report: ``nproc 2, python 3.11.9, …``."""
    return ", ".join(f"{k} {v}" for k, v in facts.items())


def progress_bar(console: Console) -> Progress:
    """A rich progress bar on ``console``: the task, a bar, done of total, time elapsed."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(*columns, TimeElapsedColumn(), console=console)


def report_footer(
    report: dict[str, Any], *, seconds: str = "wall_seconds", load_at_start: bool = False
) -> list[str]:
    """A report's last lines in markdown: the machine, then the command, its start and length."""
    facts = machine_line(report["machine"])
    if load_at_start:
        facts += f"; load average at start {report['load_average_at_start']} (a shared machine)."
    return [
        "## Machine",
        "",
        facts,
        "",
        f"Run: `{report['command']}`, {report['started']}, {report[seconds]:.0f} s.",
        "",
    ]


def write_report(out: Path, name: str, report: dict[str, Any], markdown: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / f"{name}.md").write_text(markdown, encoding="utf-8")


def load_result(results: Path, name: str) -> dict[str, Any] | None:
    """A script's results, ``<results>/<name>.json``; None when it has not run."""
    path = results / f"{name}.json"
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
