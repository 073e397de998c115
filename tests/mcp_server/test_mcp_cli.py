"""The ``memento-mcp-server`` command: its defaults, ``--version``, and the one-line errors of a
bad configuration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _mcp_support import CALL_SECONDS, server_command, server_env

import memento_mcp
from memento_core import Embedder, Memento, Scope, StoreUnavailable
from memento_mcp.cli import build_parser, warm_up


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args),
        capture_output=True, text=True, env=server_env(**env), timeout=CALL_SECONDS, check=False,
    )  # fmt: skip


def test_defaults_are_stdio_and_loopback() -> None:
    args = build_parser().parse_args(["--user", "alice"])
    assert (args.transport, args.host, args.port) == ("stdio", "127.0.0.1", 8765)
    assert args.token is None


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "memento-mcp-server"
    done = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=CALL_SECONDS, check=False
    )
    assert done.returncode == 0
    assert "--transport {stdio,http}" in done.stdout and "MEMENTO_MCP_TOKEN" in done.stdout


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        ([], {"MEMENTO_USER": ""}, "give the user to serve with --user or $MEMENTO_USER"),
        (["--user", "alice", "--token", "t"], {}, "--token applies to --transport http only"),
        (["--user", "alice", "--transport", "http", "--token", " t"], {},
         "the bearer token must be non-empty, without surrounding spaces"),
        (["--user", "alice", "--transport", "http"], {"MEMENTO_MCP_TOKEN": ""},
         "the bearer token must be non-empty, without surrounding spaces"),
        (["--user", "alice", "--port", "70000"], {}, "not a port number: '70000'"),
        (["--user", "alice", "--path", "x", "--url", "http://127.0.0.1:1"], {},
         "argument --url: not allowed with argument --path"),
        (["--user", "alice", "--transport", "sse"], {}, "invalid choice: 'sse'"),
    ],
    ids=["no-user", "token-on-stdio", "blank-token", "empty-env-token", "bad-port",
         "path-and-url", "bad-transport"],
)  # fmt: skip
def test_a_bad_configuration_exits_2_with_one_line(
    args: list[str], env: dict[str, str], says: str
) -> None:
    done = _run(*args, **env)
    assert done.returncode == 2
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_store_that_cannot_open_is_a_one_line_error(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("not a store")
    done = _run("--user", "alice", "--path", str(not_a_directory))
    assert done.returncode == 2
    assert done.stderr.startswith("memento-mcp-server: error: ")
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_version_prints_the_distribution_version() -> None:
    from importlib.metadata import version

    done = _run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"memento-mcp-server {version('memento-mcp-server')}"


def test_public_api_is_sorted_and_complete() -> None:
    assert memento_mcp.__all__ == sorted(memento_mcp.__all__)
    for name in memento_mcp.__all__:
        assert hasattr(memento_mcp, name), name
    public = {n for n in vars(memento_mcp) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(memento_mcp.__all__)


def test_the_warm_up_loads_what_the_users_recalls_read(tmp_path: Path, embedder: Embedder) -> None:
    alice = Scope(user_id="alice", project_id="apollo")
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        mem.remember("alice's bike is the blue one", scope=alice)
        mem.remember("the office opens at eight", scope=Scope(user_id="bob"), privacy="public")
    with Memento.open(tmp_path / "store", embedder=embedder) as mem:
        warm_up(mem, alice)
        status = mem.index_status()
        assert (status.partitions, status.memories) == (3, 2)  # hers, apollo's, public


def test_a_store_failing_during_the_warm_up_is_left_to_the_first_call(
    tmp_path: Path, embedder: Embedder
) -> None:
    mem = Memento.open(tmp_path / "store", embedder=embedder)
    mem.close()
    warm_up(mem, Scope(user_id="alice"))  # the first tool call reports it
    with pytest.raises(StoreUnavailable, match="closed"):
        mem.recall("bike", scope=Scope(user_id="alice"))
