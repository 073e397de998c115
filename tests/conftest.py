"""Shared fixtures: one embedding model per session, one real Chroma server, stores in both modes.

Every store test runs twice, ``embedded`` (a Chroma directory under ``tmp_path``) and ``server``
(the session's ``chroma run`` on loopback, with a collection prefix of its own so tests never see
each other's data). ``-m "not server"`` skips the server runs without starting the server.

Test stores live on a RAM disk (``pytest_configure``): most of a test's time on disk was
Chroma syncing SQLite (measured: opening an embedded store 190-330 ms on disk, 25-50 ms on
tmpfs; one ``remember`` 100-300 ms against 30-80 ms). Under pytest-xdist each worker process
has its own model and its own server.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from memento_core import Embedder, Memento, OnnxEmbedder
from memento_core import _memento as memento_module

# Importing memento_core loads neither huggingface_hub nor chromadb, so these still come first.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["ANONYMIZED_TELEMETRY"] = "False"
# Tests embed a few short texts at a time; on a small, busy machine a thread pool only
# adds contention (measured: 5 s instead of 1 s to store five memories at load 10 on 2 cores).
os.environ.setdefault("OMP_NUM_THREADS", "1")

SERVER_START_SECONDS = 60
RAM_DISK = Path("/dev/shm")
ON_DISK_VARIABLE = "MEMENTO_TESTS_ON_DISK"
"""Set to 1 to keep test stores on disk (the default is a RAM disk where there is one)."""


def pytest_configure(config: pytest.Config) -> None:
    """Put the session's temporary directories on a RAM disk unless told otherwise.

    A RAM disk keeps what a killed process wrote (the crash tests SIGKILL writers and read what
    they left), so the tests prove the same; only fsync stops costing. xdist workers inherit the
    controller's ``--basetemp`` and make their own folders under it.
    """
    explicit = config.option.basetemp is not None
    wanted = os.environ.get(ON_DISK_VARIABLE, "") not in ("1", "true", "yes")
    is_worker = hasattr(config, "workerinput")
    if explicit or not wanted or is_worker or not RAM_DISK.is_dir():
        return
    if not os.access(RAM_DISK, os.W_OK):
        return
    root = Path(tempfile.mkdtemp(prefix="memento-tests-", dir=RAM_DISK))
    config.option.basetemp = str(root / "base")
    config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real all-MiniLM-L6-v2 on ONNX Runtime (the default embedder), loaded once (lazily, on
    first use) and shared by every store."""
    return OnnxEmbedder()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``chroma run`` on a free loopback port for the whole session; yields its URL."""
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.fail(f"the chroma executable is missing: {chroma}")
    root = tmp_path_factory.mktemp("chroma-server")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = root / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(chroma), "run", "--path", str(root / "data"), "--port", str(port),
             "--host", "127.0.0.1"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )  # fmt: skip
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                output = log_path.read_text(errors="replace")
                pytest.fail(
                    f"chroma run did not answer at {url} (exit code {process.poll()}):\n{output}"
                )
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class StoreFactory:
    """Opens stores in one mode. The same ``name`` in the same test opens the same store again."""

    def __init__(self, mode: str, embedder: Embedder, root: Path, url: str | None = None) -> None:
        self.mode = mode
        self.embedder = embedder
        self.root = root
        self.url = url
        self._test_prefix = f"t{uuid4().hex[:12]}"

    def open(self, name: str = "main", **options: Any) -> Memento:
        """Open (or create) the store called ``name``; ``options`` go to ``Memento.open``."""
        options.setdefault("embedder", self.embedder)
        if self.mode == "embedded":
            return Memento.open(self.root / name, **options)
        return Memento.open(url=self.url, collection_prefix=f"{self._test_prefix}{name}", **options)


MODES = ["embedded", pytest.param("server", marks=pytest.mark.server)]


def _factory(request: pytest.FixtureRequest, embedder: Embedder, root: Path) -> StoreFactory:
    if request.param == "server":
        return StoreFactory("server", embedder, root, request.getfixturevalue("chroma_server"))
    return StoreFactory("embedded", embedder, root)


@pytest.fixture(params=MODES)
def store_factory(
    request: pytest.FixtureRequest, embedder: Embedder, tmp_path: Path
) -> StoreFactory:
    """Opens stores for one test, in each mode."""
    return _factory(request, embedder, tmp_path)


@pytest.fixture(scope="module", params=MODES)
def module_store_factory(
    request: pytest.FixtureRequest, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> StoreFactory:
    """Opens stores shared by a whole module, in each mode (for tests that must not write)."""
    return _factory(request, embedder, tmp_path_factory.mktemp("module-stores"))


@pytest.fixture
def writer_and_reader(chroma_server: str, embedder: Embedder) -> Iterator[tuple[Memento, Memento]]:
    """Two instances on one fresh server store, as two processes would open it."""
    prefix = f"p{uuid4().hex[:12]}"
    with (
        Memento.open(url=chroma_server, collection_prefix=prefix, embedder=embedder) as writer,
        Memento.open(url=chroma_server, collection_prefix=prefix, embedder=embedder) as reader,
    ):
        yield writer, reader


@pytest.fixture
def mem(store_factory: StoreFactory) -> Iterator[Memento]:
    """A fresh, empty store in the current mode."""
    with store_factory.open() as store:
        yield store


@pytest.fixture
def cli_store(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Memento, list[str]]]:
    """An embedded store and the ``--path`` arguments that reach it, for the command line's
    tests; commands reuse the session's model instead of loading their own."""
    monkeypatch.setattr(memento_module, "default_embedder", lambda: embedder)
    path = tmp_path / "store"
    with Memento.open(path, embedder=embedder) as mem:
        yield mem, ["--path", str(path)]
