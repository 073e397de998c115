"""Fixtures: the module's ``langgraph dev`` on Memento (on the session's ``chroma run``) and the
same project on LangGraph's own store and checkpointer (see ``_server_support``)."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import uuid4

import pytest
from _server_support import LangGraphServer, prepare_project, start


@pytest.fixture(scope="module")
def store_prefix() -> str:
    """The collection prefix of the module's Memento store on the session's Chroma server."""
    return f"lgs{uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def server_env(chroma_server: str, store_prefix: str) -> dict[str, str]:
    return {"MEMENTO_URL": chroma_server, "MEMENTO_COLLECTION_PREFIX": store_prefix}


@pytest.fixture(scope="module")
def langgraph_server(
    tmp_path_factory: pytest.TempPathFactory, server_env: dict[str, str]
) -> Iterator[LangGraphServer]:
    """One ``langgraph dev`` on the example's ``langgraph.json`` for the module."""
    workdir = prepare_project(tmp_path_factory.mktemp("langgraph-project"))
    server = start(workdir, server_env)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def reference_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphServer]:
    """``langgraph dev`` on the same project with LangGraph's own store and checkpointer."""
    workdir = prepare_project(tmp_path_factory.mktemp("langgraph-reference"), built_in=True)
    server = start(workdir, {}, name="reference")
    try:
        yield server
    finally:
        server.stop()
