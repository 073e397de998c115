"""One writing process per embedded store: an advisory lock file in the store directory.

Chroma's embedded mode keeps each collection's vector index in the memory of the process that
opened it and writes it back from there, so two writing processes would overwrite each other's
vectors (a reader opened before another process wrote cannot even read the new vectors: "Error
finding id"). The lock is ``flock`` on ``memento.lock``: the kernel releases it when its process
dies, SIGKILL included, so a crashed writer never leaves a stale lock. Instances in one process
share it (Chroma shares one client per path in a process, so they are safe together).
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from pathlib import Path

from memento_core.errors import StoreLocked, StoreUnavailable

LOCK_NAME = "memento.lock"
_held: dict[Path, tuple[int, int]] = {}  # directory → (file descriptor, instances holding it)
_guard = threading.Lock()


def acquire(directory: Path) -> None:
    """Hold the write lock of ``directory`` for one more instance of this process, or raise
    ``StoreLocked`` naming the process that holds it."""
    key = directory.resolve()
    with _guard:
        if key in _held:
            fd, count = _held[key]
            _held[key] = (fd, count + 1)
            return
        path = key / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise StoreUnavailable(f"cannot create the lock file {path}: {err}") from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 1024, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            raise StoreLocked(str(key), holder) from None
        command = " ".join(sys.argv)[:200] or "python"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, `{command}`, since {stamp}".encode(), 0)
        _held[key] = (fd, 1)


def release(directory: Path) -> None:
    """Let go of one instance's hold; the lock is freed when the last one closes."""
    key = directory.resolve()
    with _guard:
        if key not in _held:
            return
        fd, count = _held[key]
        if count > 1:
            _held[key] = (fd, count - 1)
            return
        del _held[key]
        os.close(fd)  # closing the descriptor releases the flock
