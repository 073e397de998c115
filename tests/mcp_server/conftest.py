"""Fixtures for the MCP server tests: a seeded store and one stdio server shared by the tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _mcp_support import SERVER_SCOPE_ARGS, Seeded, SyncSession, open_session, seed, server_env
from mcp import StdioServerParameters, stdio_client

from memento_core import Embedder, Memento


@pytest.fixture(scope="session")
def seeded_store(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> tuple[Path, Seeded]:
    """An embedded store seeded through core; the test process writes to it no more."""
    path = tmp_path_factory.mktemp("mcp-store") / "store"
    with Memento.open(path, embedder=embedder) as mem:
        ids = seed(mem)
    return path, ids


@pytest.fixture(scope="session")
def stdio(seeded_store: tuple[Path, Seeded]) -> Iterator[SyncSession]:
    """One stdio server for alice on the seeded store, shared by every stdio test."""
    path, _ = seeded_store
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memento_mcp", "--path", str(path), *SERVER_SCOPE_ARGS],
        env=server_env(),
    )
    yield from open_session(lambda: stdio_client(params))


@pytest.fixture(scope="session")
def ids(seeded_store: tuple[Path, Seeded]) -> Seeded:
    return seeded_store[1]
