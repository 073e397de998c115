"""Real ``langgraph dev`` servers for the tests (``conftest.py`` holds the fixtures): started
on a free loopback port from a copy of ``examples/langgraph_server`` (its ``langgraph.json``
and graph), driven with ``langgraph-sdk``, stopped by their PID.

Each server is its own process with its own embedding model and Memento. The tests' servers
use the session's ``chroma run`` (``MEMENTO_URL``) unless a test gives ``MEMENTO_PATH``, so the
test process can open the same store and look at what the server wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "langgraph_server"
LANGGRAPH = Path(sys.executable).parent / "langgraph"
START_SECONDS = 180
"""A guard against a server that never answers, not a timing assertion (model loads on a busy
machine are slow)."""
STOP_SECONDS = 60
TEST_GRAPHS = Path(__file__).parent / "graphs.py"
TEST_EMBED = Path(__file__).parent / "embed.py"
BUILT_IN_STORE = {"index": {"embed": "./embed.py:embed", "dims": 384, "fields": ["text"]}}
"""The reference server's store: LangGraph's own, on the MiniLM model Memento uses."""
QUIET = {
    # Nothing leaves the machine: no analytics, no version check, no tracing, no model download.
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "OMP_NUM_THREADS": "1",
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@dataclass
class LangGraphServer:
    """One ``langgraph dev`` process."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    workdir: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        """SIGINT by PID (uvicorn's graceful shutdown: the store and checkpointer are left),
        SIGKILL if it hangs. Returns the exit code."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return int(self.process.returncode)


def prepare_project(workdir: Path, *, extra_graphs: bool = True, built_in: bool = False) -> Path:
    """A copy of the example project in ``workdir``; with ``extra_graphs`` its
    ``langgraph.json`` also names the tests' own graphs (``graphs.py``), all else as given.
    ``built_in``: the server's own store and checkpointer instead of Memento's (the reference
    the tests compare with)."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "agent.py", workdir / "agent.py")
    config: dict[str, Any] = json.loads((EXAMPLE / "langgraph.json").read_text())
    if built_in:
        shutil.copy(TEST_EMBED, workdir / "embed.py")
        config["store"] = BUILT_IN_STORE
        del config["checkpointer"]
    if extra_graphs:
        shutil.copy(TEST_GRAPHS, workdir / "graphs.py")
        config["graphs"] = {**config["graphs"], "slow": "./graphs.py:graph"}
    (workdir / "langgraph.json").write_text(json.dumps(config, indent=2))
    return workdir


def launch(workdir: Path, env: Mapping[str, str], *, name: str = "server") -> LangGraphServer:
    """Start ``langgraph dev`` in ``workdir`` (no waiting)."""
    port = free_port()
    log_path = workdir / f"{name}.log"
    environ = {**os.environ, **QUIET, **env}
    for unset in ("MEMENTO_PATH", "MEMENTO_URL"):
        if unset not in env:
            environ.pop(unset, None)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
             "--port", str(port), "--config", "langgraph.json"],
            cwd=workdir,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    return LangGraphServer(f"http://127.0.0.1:{port}", process, log_path, workdir)


def start(workdir: Path, env: Mapping[str, str], *, name: str = "server") -> LangGraphServer:
    """Start ``langgraph dev`` and wait until it answers; fails with its log if it exits."""
    server = launch(workdir, env, name=name)
    deadline = time.monotonic() + START_SECONDS
    while not _answers(server.url):
        if server.process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            pytest.fail(f"langgraph dev did not start at {server.url}:\n{server.log()[-6000:]}")
        time.sleep(0.3)
    return server
