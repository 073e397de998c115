"""Fixtures for the LlamaIndex adapter: an embedded store per test over the shared MiniLM model.

Server mode has its own module (``test_llamaindex_server.py``) on the session's ``chroma run``;
the behaviours are the same, so the other modules run embedded only and stay fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from memento_core import Embedder, Memento


@pytest.fixture
def store(embedder: Embedder, tmp_path: Path) -> Iterator[Memento]:
    """A fresh embedded store in a temporary directory."""
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        yield mem


@pytest.fixture
def fresh() -> Callable[[str], str]:
    """Ids no other test uses: ``fresh("session")`` → ``"session-3f9c0a1b"``."""
    suffix = uuid4().hex[:8]
    return lambda name: f"{name}-{suffix}"
