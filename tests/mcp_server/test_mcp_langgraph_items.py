"""An MCP server started with ``--project langgraph`` sees none of the users' LangGraph store
items (issue 21): they live in the store's reserved home project, which the server refuses to
be started with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from _mcp_support import CALL_SECONDS, open_session, server_env
from mcp import StdioServerParameters, stdio_client

from memento_core import Embedder, Memento
from memento_langgraph import MementoStore

PROBE = "the locker code for the gym"


def test_a_server_of_the_plain_project_recalls_no_store_items(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "store"
    with Memento.open(path, embedder=embedder) as mem:
        store = MementoStore(mem)
        store.put(
            ("alice", "memories"), "locker", {"text": "Alice's locker code for the gym is 4471"}
        )
        store.put(("memories", "bob"), "locker", {"text": "Bob's locker code for the gym is 9012"})

    assert _recalled(path, "mallory") == []
    assert [("4471" in item["snippet"]) for item in _recalled(path, "alice")] == [True]


def _recalled(path: Path, user: str) -> list[Any]:
    """What a stdio server for ``user`` in project ``langgraph`` recalls for the probe."""
    args = ["-m", "memento_mcp", "--path", str(path), "--user", user, "--project", "langgraph"]
    params = StdioServerParameters(command=sys.executable, args=args, env=server_env())
    for session in open_session(lambda: stdio_client(params)):
        found: list[Any] = session.ok("recall", {"query": PROBE, "limit": 50})["items"]
    return found


def test_the_server_refuses_the_reserved_home_project(tmp_path: Path) -> None:
    args = ["--path", str(tmp_path / "s"), "--user", "mallory", "--project", "adapter:langgraph"]
    done = subprocess.run(
        [sys.executable, "-m", "memento_mcp", *args],
        capture_output=True, text=True, env=server_env(), timeout=CALL_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "reserved for adapters' own records" in done.stderr
    assert "Traceback" not in done.stderr
