"""The ``memento-mcp-server`` command (also ``python -m memento_mcp``): serve a Memento store
over MCP (stdio or streamable HTTP).

The user the server acts for is fixed here, by ``--user`` (or ``$MEMENTO_USER``), and cannot be
changed by a client. Over HTTP the server binds to 127.0.0.1 unless told otherwise, and with
``--token`` (or ``$MEMENTO_MCP_TOKEN``) refuses every request that lacks that bearer token.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from memento_core import Memento, Scope

PROG = "memento-mcp-server"
DISTRIBUTION = "memento-mcp-server"
EXIT_USAGE = 2
DEFAULT_PORT = 8765
LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "MEMENTO_MCP_TOKEN"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Serve a Memento memory store to MCP clients, acting for one user.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    store = parser.add_argument_group("store")
    where = store.add_mutually_exclusive_group()
    where.add_argument(
        "--path",
        type=Path,
        help="embedded store directory (default: $MEMENTO_PATH, else ~/.local/share/memento "
        "or the platform's per-user data directory, as for the library and memento-core)",
    )
    where.add_argument("--url", help="Chroma server URL instead, e.g. http://127.0.0.1:8000")
    store.add_argument(
        "--collection-prefix",
        default="memento",
        help="name prefix of the store's collections (several stores on one Chroma server)",
    )
    store.add_argument(
        "--embedder",
        metavar="NAME",
        help="embedder of a new store, by registered name (e.g. multilingual, with "
        "memento-core[multilingual]; default all-MiniLM-L6-v2); an existing store opens in "
        "the space it recorded",
    )
    who = parser.add_argument_group("scope (fixed for every client)")
    who.add_argument(
        "--user",
        default=os.environ.get("MEMENTO_USER"),
        help="the user whose memories are served (default: $MEMENTO_USER)",
    )
    who.add_argument("--agent", help="agent id recorded on new memories")
    who.add_argument("--project", help="project: team memories of it are shared")
    serve = parser.add_argument_group("transport")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address (default: 127.0.0.1)")
    serve.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help="HTTP port (default: %(default)s)"
    )
    serve.add_argument(
        "--token",
        default=None,
        help=f"bearer token HTTP clients must send (default: ${TOKEN_ENV}); "
        "prefer the variable: arguments are visible to other local users",
    )
    parser.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        default="WARNING",
        help="server log level (logs go to standard error)",
    )
    return parser


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65_535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    return int(text)


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.user:
        parser.error("give the user to serve with --user or $MEMENTO_USER")
    # An empty $MEMENTO_MCP_TOKEN is refused like --token "": it must not mean "no token".
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    if args.transport == "stdio" and args.token is not None:
        parser.error("--token applies to --transport http only")
    if args.transport == "stdio":
        token = None  # stdio has no bearer; $MEMENTO_MCP_TOKEN is for HTTP
    if token is not None and (not token.strip() or token != token.strip()):
        parser.error("the bearer token must be non-empty, without surrounding spaces")

    # The default model ships inside a Python package: nothing needs the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

    from memento_core import MementoError, Scope
    from memento_mcp.server import build_server

    try:
        scope = Scope(user_id=args.user, agent_id=args.agent, project_id=args.project)
        # Over stdio, standard output is the protocol: anything a library prints while the
        # store and model load must go elsewhere.
        with contextlib.redirect_stdout(sys.stderr):
            mem = _open_store(args)
        server = build_server(mem, scope, log_level=args.log_level)
    except MementoError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None

    threading.Thread(target=warm_up, args=(mem, scope), daemon=True).start()
    try:
        if args.transport == "stdio":
            server.run("stdio")
        else:
            _serve_http(
                server, host=args.host, port=args.port, token=token, user=args.user,
                log_level=args.log_level.lower(),
            )  # fmt: skip
    except KeyboardInterrupt:
        pass


def warm_up(mem: Memento, scope: Scope) -> None:
    """Load the embedding model and what the user's recalls read (``Memento.preload``) beside
    the server, so the first call waits for neither. A store that fails here fails again on
    that call, which reports it."""
    from memento_core import MementoError

    mem.embedder.embed_query("warm up")
    with contextlib.suppress(MementoError):
        mem.preload(scope)


def _open_store(args: argparse.Namespace) -> Memento:
    from memento_core import Memento

    if args.url:
        return Memento.open(
            url=args.url, collection_prefix=args.collection_prefix, embedder=args.embedder
        )
    # No path: Memento's default ($MEMENTO_PATH, else the per-user data directory).
    return Memento.open(args.path, collection_prefix=args.collection_prefix, embedder=args.embedder)


def _serve_http(
    server: MCPServer[Any], *, host: str, port: int, token: str | None, user: str, log_level: str
) -> None:
    import uvicorn
    from starlette.types import ASGIApp

    from memento_mcp.auth import BearerTokenGuard

    app: ASGIApp = server.streamable_http_app(host=host)
    if token:
        app = BearerTokenGuard(app, token)
    elif host not in LOOPBACK:
        print(
            f"{PROG}: warning: serving {host} without a bearer token: anyone who can "
            f"reach this port can read and change {user!r}'s memories",
            file=sys.stderr,
        )
    where = f"[{host}]" if ":" in host else host
    guard = "bearer token required" if token else "no token"
    print(f"{PROG}: user {user!r} at http://{where}:{port}/mcp ({guard})", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
