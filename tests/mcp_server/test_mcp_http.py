"""Streamable HTTP: the same server on loopback, behind a bearer token.

One ``memento-mcp-server --transport http`` subprocess serves this module, for Alice with no
project, on its own store (an embedded store belongs to one process). Bob's private memory is seeded
through core before the server starts.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from _mcp_support import (
    BOB,
    CALL_SECONDS,
    Streams,
    SyncSession,
    free_port,
    open_session,
    server_command,
    server_env,
)
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from memento_core import Embedder, Memento, Scope

TOKEN = "s3cret-token-for-tests"
UNAUTHORIZED = -32001


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[str]:
    """The server's MCP endpoint URL, with Bob's secret and Alice's note already stored."""
    path = tmp_path_factory.mktemp("mcp-http") / "store"
    with Memento.open(path, embedder=embedder) as mem:
        mem.remember("Bob's locker combination is 12-34-56.", scope=BOB)
        mem.remember("Alice's locker is number 7, by the window.", scope=Scope(user_id="alice"))
    port = free_port()
    log = path.parent / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            server_command(
                "--transport", "http", "--port", str(port), "--path", str(path), "--user", "alice"
            ),
            env=server_env(MEMENTO_MCP_TOKEN=TOKEN),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_port(port, process, log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + CALL_SECONDS
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(
                f"memento-mcp-server did not listen on {port}:\n{log.read_text(errors='replace')}"
            )
        time.sleep(0.2)


def _connect(url: str, headers: dict[str, str]) -> Any:
    @asynccontextmanager
    async def connect() -> AsyncIterator[Streams]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=CALL_SECONDS) as http,
            streamable_http_client(url, http_client=http) as streams,
        ):
            yield streams

    return connect


@pytest.fixture(scope="module")
def http(server: str) -> Iterator[SyncSession]:
    """A session that sends the right token."""
    yield from open_session(_connect(server, {"Authorization": f"Bearer {TOKEN}"}))


def _refusal(url: str, headers: dict[str, str]) -> MCPError:
    """The error ``initialize`` fails with, sending ``headers``."""

    async def attempt() -> None:
        async with _connect(url, headers)() as (read, write), ClientSession(read, write) as s:
            await s.initialize()

    try:
        asyncio.run(asyncio.wait_for(attempt(), CALL_SECONDS))
    except BaseException as err:
        found = _find(err, MCPError)
        if found is None:
            raise
        return found
    pytest.fail("the server accepted the session")


def _find(err: BaseException, kind: type[MCPError]) -> MCPError | None:
    if isinstance(err, kind):
        return err
    for inner in getattr(err, "exceptions", ()):
        found = _find(inner, kind)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({}, "this server needs a bearer token: send 'Authorization: Bearer <token>'"),
        ({"Authorization": "Bearer not-the-token"}, "the bearer token is wrong"),
        ({"Authorization": f"Bearer {TOKEN}x"}, "the bearer token is wrong"),
        ({"Authorization": f"Basic {TOKEN}"}, "the Authorization header must be 'Bearer <token>'"),
    ],
    ids=["no-token", "wrong-token", "token-prefix", "wrong-scheme"],
)
def test_a_session_without_the_right_token_is_refused(
    server: str, headers: dict[str, str], says: str
) -> None:
    refused = _refusal(server, headers)
    assert refused.error.code == UNAUTHORIZED
    assert refused.error.message == says


@pytest.mark.parametrize("authorization", [None, "Bearer wrong"])
def test_refusals_are_401_with_a_bearer_challenge(server: str, authorization: str | None) -> None:
    request = urllib.request.Request(
        server,
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    if authorization:
        request.add_header("Authorization", authorization)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=CALL_SECONDS)
    assert refused.value.code == 401
    challenge = refused.value.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert ('error="invalid_token"' in challenge) is (authorization is not None)
    assert json.loads(refused.value.read())["error"]["code"] == UNAUTHORIZED


def test_the_right_token_gets_the_tools(http: SyncSession) -> None:
    names = {tool.name for tool in http.run(lambda s: s.list_tools()).tools}
    assert {"remember", "recall", "forget", "summarize_thread", "export"} <= names


def test_remember_and_recall_over_http(http: SyncSession) -> None:
    stored = http.ok("remember", {"content": "Alice parks on level -2, spot 41."})
    found = http.ok("recall", {"query": "where does Alice park", "limit": 5})
    assert found["items"][0]["id"] == stored["memory_id"]
    assert http.read(stored["uri"])["user_id"] == "alice"


def test_other_users_private_memories_stay_hidden_over_http(http: SyncSession) -> None:
    found = http.ok("recall", {"query": "locker combination", "limit": 50})
    snippets = [item["snippet"] for item in found["items"]]
    assert snippets and not [s for s in snippets if "Bob" in s]
    search = http.read("memory://search?query=locker+combination&limit=50")
    assert not [item for item in search["items"] if "12-34-56" in item["snippet"]]
    assert "12-34-56" not in http.export()


def test_a_team_memory_needs_a_configured_project(http: SyncSession) -> None:
    before = http.export()
    message = http.error("remember", {"content": "Ship it on Friday.", "privacy_scope": "team"})
    assert "this server has none configured (start it with --project)" in message
    assert http.export() == before
