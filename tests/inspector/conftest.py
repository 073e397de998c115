"""Fixtures for the inspector: a seeded embedded store, read-only for a module or fresh for
one test (see ``_inspector_support`` for the seed and the test clients)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _inspector_support import Seeded, seed

from memento_core import Embedder, Memento


@pytest.fixture(scope="module")
def seeded(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> Iterator[tuple[Memento, Seeded]]:
    """A store the module's tests only read."""
    with Memento.open(tmp_path_factory.mktemp("inspector") / "store", embedder=embedder) as mem:
        yield mem, seed(mem)


@pytest.fixture
def fresh(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Memento, Seeded]]:
    """A store of the test's own, to change."""
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        yield mem, seed(mem)
