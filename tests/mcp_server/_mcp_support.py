"""Helpers for the MCP server tests: the seed data and a synchronous face for the SDK's client.

The server runs as a subprocess (``python -m memento_mcp``), spoken to with the SDK's own
client over stdio or streamable HTTP, and shared by many tests. ``SyncSession`` holds the
client session in one task on a background event loop and lets tests call it synchronously,
so the SDK's task groups never cross tasks between fixtures and tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from mcp import ClientSession
from mcp.types import CallToolResult

from memento_core import Memento, Scope
from memento_core._chat import ChatMemory
from memento_core._model import utcnow

CALL_SECONDS = 300
"""A guard against a hung server, not a timing assertion."""

ALICE = Scope(user_id="alice", agent_id="claude", project_id="apollo")
BOB = Scope(user_id="bob", agent_id="cursor", project_id="zeus")
CAROL_APOLLO = Scope(user_id="carol", project_id="apollo")
CAROL_ZEUS = Scope(user_id="carol", project_id="zeus")
SERVER_SCOPE_ARGS = ["--user", "alice", "--agent", "claude", "--project", "apollo"]

T = TypeVar("T")
Streams = Any


@dataclass(frozen=True)
class Seeded:
    """Ids of the memories written through core before the server started."""

    alice_coffee: str
    alice_due: str
    alice_hikes: tuple[str, ...]
    bob_secret: str
    bob_due: str
    bob_hike: str
    bob_public: str
    carol_team_apollo: str
    carol_team_zeus: str

    @property
    def invisible(self) -> tuple[str, ...]:
        """What alice may never see: bob's private memories and another project's team one."""
        return (self.bob_secret, self.bob_due, self.bob_hike, self.carol_team_zeus)


def seed(mem: Memento) -> Seeded:
    """Memories of alice and of other users, chat sessions of both, and due review cards."""
    long_ago = utcnow() - timedelta(days=20)
    ids = Seeded(
        alice_coffee=mem.remember(
            "Alice takes her coffee with oat milk, never with sugar.",
            scope=ALICE, type="semantic", tags=["pref:coffee"],
        ),
        alice_due=mem.remember(
            "The staging database password rotates on the first Monday of each month.",
            scope=ALICE, type="procedural", importance=0.9,
        ),
        alice_hikes=tuple(
            mem.remember(text, scope=ALICE, type="episodic", tags=["hiking"])
            for text in (
                "Alice went hiking in the Alps in June and loved the glacier trail.",
                "In June Alice hiked the Alps glacier trail again with her friends.",
            )
        ),
        bob_secret=mem.remember(
            "Bob's bank PIN is 4921; he drinks his coffee black with sugar.",
            scope=BOB, type="semantic", tags=["pref:coffee"],
        ),
        bob_due=mem.remember(
            "The production database password rotates every Monday at dawn.",
            scope=BOB, type="procedural", importance=0.9,
        ),
        bob_hike=mem.remember(
            "Bob went hiking in the Alps in June and loved the glacier trail.",
            scope=BOB, type="episodic", tags=["hiking"],
        ),
        bob_public=mem.remember(
            "The office coffee machine is on the third floor next to the kitchen.",
            scope=BOB, privacy="public", type="semantic",
        ),
        carol_team_apollo=mem.remember(
            "The apollo team stand-up is at 9:30 in the blue room.",
            scope=CAROL_APOLLO, privacy="team", type="semantic",
        ),
        carol_team_zeus=mem.remember(
            "The zeus team stand-up is at 10:00 in the red room.",
            scope=CAROL_ZEUS, privacy="team", type="semantic",
        ),
    )  # fmt: skip
    # Review cards fall due: a failed review long ago scheduled the next one long ago.
    mem.review(ids.alice_due, 0, now=long_ago)
    mem.review(ids.bob_due, 0, now=long_ago)
    alice_chat = ChatMemory(mem, "alice-trip", scope=ALICE)
    alice_chat.append({"role": "user", "content": "Book me a train to Zermatt for Friday."})
    alice_chat.append({"role": "assistant", "content": "Booked the 8:02 train to Zermatt."})
    bob_chat = ChatMemory(mem, "bob-plans", scope=BOB)
    bob_chat.append({"role": "user", "content": "My surprise party plan for Dana is at 7pm."})
    return ids


class SyncSession:
    """A ``ClientSession`` held open on a background event loop, called synchronously."""

    def __init__(self, connect: Callable[[], AbstractAsyncContextManager[Streams]]) -> None:
        self._connect = connect
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),))

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self._connect() as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except BaseException as err:  # reported to the fixture that started the session
            self._failure = err
        finally:
            self._ready.set()

    def start(self) -> SyncSession:
        self._thread.start()
        self._ready.wait(CALL_SECONDS)
        if self._session is None:
            raise RuntimeError(f"the MCP session did not start: {self._failure!r}")
        return self

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(CALL_SECONDS)
        self._loop.close()

    def run(self, call: Callable[[ClientSession], Awaitable[T]]) -> T:
        assert self._session is not None
        session = self._session

        async def invoke() -> T:
            return await call(session)

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(CALL_SECONDS)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return self.run(lambda s: s.call_tool(tool, arguments or {}))

    def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        """Call a tool that must succeed; its structured result (or its text)."""
        result = self.call(tool, arguments)
        assert not result.is_error, text_of(result)
        return (
            result.structured_content
            if result.structured_content is not None
            else (text_of(result))
        )

    def error(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        """Call a tool that must fail; the error text the client sees."""
        result = self.call(tool, arguments)
        assert result.is_error, f"{tool}({arguments}) succeeded: {text_of(result)[:300]}"
        return text_of(result)

    def read(self, uri: str) -> Any:
        result = self.run(lambda s: s.read_resource(uri))
        return json.loads(getattr(result.contents[0], "text", ""))

    def prompt(self, name: str, arguments: dict[str, str]) -> str:
        """The text of the prompt's one message."""
        result = self.run(lambda s: s.get_prompt(name, arguments))
        assert [m.role for m in result.messages] == ["user"]
        return str(getattr(result.messages[0].content, "text", ""))

    def export(self) -> str:
        return str(self.ok("export", {"format": "ndjson"}))


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def server_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "memento_mcp", *args]


def server_env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "TOKENIZERS_PARALLELISM": "false",
        **extra,
    }


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def store_export(path: Path) -> list[dict[str, Any]]:
    """The whole store, read by a fresh ``memento-core export`` process (core's CLI, not MCP)."""
    done = subprocess.run(
        [sys.executable, "-m", "memento_core.cli", "export", "--path", str(path)],
        capture_output=True, text=True, env=server_env(), timeout=CALL_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def open_session(
    connect: Callable[[], AbstractAsyncContextManager[Streams]],
) -> Iterator[SyncSession]:
    """For fixtures: a started ``SyncSession``, closed (and its server stopped) afterwards."""
    session = SyncSession(connect).start()
    try:
        yield session
    finally:
        session.close()
