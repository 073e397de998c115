"""Fixtures for the LangGraph adapter: one Memento per module and mode, shared by its tests.

Opening a store is cheap but not free, so a module's tests share one store per mode
(``embedded`` in a temporary directory, ``server`` on the session's ``chroma run``) and keep out
of each other's way with their own namespace root, user and thread ids (``fresh``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from uuid import uuid4

import pytest

from memento_core import Embedder, Memento


@pytest.fixture(
    scope="module", params=["embedded", pytest.param("server", marks=pytest.mark.server)]
)
def shared_mem(
    request: pytest.FixtureRequest,
    embedder: Embedder,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Memento]:
    """One Memento per module and mode; tests isolate themselves with ``fresh`` ids."""
    if request.param == "server":
        url = request.getfixturevalue("chroma_server")
        prefix = f"lg{uuid4().hex[:10]}"
        mem = Memento.open(url=url, collection_prefix=prefix, embedder=embedder)
    else:
        mem = Memento.open(tmp_path_factory.mktemp("langgraph"), embedder=embedder)
    with mem:
        yield mem


@pytest.fixture
def fresh() -> Callable[[str], str]:
    """Ids no other test uses: ``fresh("user")`` → ``"user-3f9c0a1b"``."""
    suffix = uuid4().hex[:8]
    return lambda name: f"{name}-{suffix}"
