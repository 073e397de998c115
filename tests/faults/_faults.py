"""Helpers of the fault tests: child processes that report each acknowledged write, and a
``chroma run`` server a test owns (so it may kill and restart it)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from memento_core.testing import HashEmbedder

HERE = Path(__file__).resolve().parent

__all__ = ["Child", "ChromaServer", "HashEmbedder", "child_env", "own_server", "seeded"]

SERVER_START_SECONDS = 60
SEED = int(os.environ.get("MEMENTO_FAULT_SEED", "20240607"))


def seeded(name: str) -> random.Random:
    """A random generator per test, fixed by ``$MEMENTO_FAULT_SEED`` (printed on failure)."""
    return random.Random(f"{SEED}:{name}")


def child_env() -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "OMP_NUM_THREADS": "1",
    }


class Child:
    """``_child.py`` running one job; ``lines()`` yields what it printed, parsed."""

    def __init__(self, config: dict[str, Any], log_dir: Path, name: str = "child") -> None:
        self.config = config
        self.stderr_path = log_dir / f"{name}.stderr"
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "_child.py"), json.dumps(config)],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=child_env(),
            text=True,
        )
        self.acknowledged: dict[int, str] = {}
        self.errors: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []

    @property
    def stdout(self) -> IO[str]:
        assert self.process.stdout is not None
        return self.process.stdout

    def read(self) -> dict[str, Any]:
        """The next line; fails the test with the child's stderr if it ended instead."""
        line = self.stdout.readline()
        if not line:
            code = self.process.wait()
            pytest.fail(f"the child ended (exit code {code}):\n{self.stderr_path.read_text()}")
        return self._note(json.loads(line))

    def _note(self, record: dict[str, Any]) -> dict[str, Any]:
        self.records.append(record)
        if "id" in record:
            self.acknowledged[record["n"]] = record["id"]
        if "error" in record:
            self.errors.append(record)
        return record

    def wait_ready(self) -> None:
        assert self.read() == {"ready": True}

    def read_until(self, acknowledged: int) -> None:
        while len(self.acknowledged) < acknowledged:
            self.read()

    def drain(self) -> None:
        """Read everything left (after the child finished or was killed)."""
        for line in self.stdout:
            self._note(json.loads(line))

    def finish(self) -> None:
        """Wait for a child that ends by itself; fail on a non-zero exit."""
        self.drain()
        code = self.process.wait()
        self._stderr.close()
        assert code == 0, self.stderr_path.read_text()

    def kill(self, *, may_have_finished: bool = False) -> None:
        """SIGKILL, then collect whatever it had printed before dying. With
        ``may_have_finished``, a child that ended well before the signal came is accepted too
        (a moment drawn at random can fall after the work is done)."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.drain()
        self._stderr.close()
        allowed = (-signal.SIGKILL, 0) if may_have_finished else (-signal.SIGKILL,)
        assert self.process.returncode in allowed, self.stderr_path.read_text()

    def stop(self) -> None:
        """Teardown: kill if still running (after its stacks are dumped into its stderr file,
        to show where it was), close the pipes."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGUSR1)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1)  # it does not end: this only gives it time
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


class ChromaServer:
    """A ``chroma run`` on a fixed loopback port and data directory, which the test may kill
    and start again (same port, same data)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        chroma = Path(sys.executable).parent / "chroma"
        self.starts += 1
        log_path = self.root / f"server-{self.starts}.log"
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(chroma), "run", "--path", str(self.root / "data"), "--port", str(self.port),
                 "--host", "127.0.0.1"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env(),
            )  # fmt: skip
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not answers(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"chroma run did not answer at {self.url} (exit code {self.process.poll()}):"
                    f"\n{log_path.read_text(errors='replace')}"
                )
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: the server gets no chance to flush anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def own_server(root: Path) -> Iterator[ChromaServer]:
    """Body of a fixture: a started server, stopped at teardown."""
    server = ChromaServer(root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
