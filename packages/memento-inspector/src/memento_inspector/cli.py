"""The ``memento-inspector`` command (also ``python -m memento_inspector``): serve the inspector
over a store on loopback.

It prints a one-time token at start (as notebook servers do), acting as the store's owner or as
``--user``; the address it prints carries it once, then a cookie does. ``--no-token`` (with
``--user`` only) serves without one, and warns. It binds 127.0.0.1 unless ``--host`` says
otherwise, and serves only requests whose Host header names that host.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

PROG = "memento-inspector"
DEFAULT_PORT = 8766
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65_535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="See, search, correct and erase what an agent remembers, in a browser.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--path", type=Path, help="embedded store directory (default: $MEMENTO_PATH, else the "
        "per-user data directory, as for the library)"
    )  # fmt: skip
    where.add_argument("--url", help="Chroma server URL instead, e.g. http://127.0.0.1:8000")
    parser.add_argument("--collection-prefix", default="memento")
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help="embedder by registered name (e.g. multilingual); default: the store's recorded one",
    )
    parser.add_argument(
        "--user", help="act as this user: see only what they may see, change only theirs"
    )
    parser.add_argument("--project", help="with --user: the user's project (team memories)")
    parser.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help="port (default: %(default)s; 0: any)"
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="open the store read-only (beside a writing process) and refuse every change",
    )
    parser.add_argument(
        "--no-token",
        action="store_true",
        help="with --user: ask no token (any process or person that reaches the port acts as "
        "that user)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.no_token and not args.user:
        parser.error("--no-token needs --user: acting as the store's owner always takes a token")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import uvicorn

    from memento_core import Memento, MementoError, Scope
    from memento_inspector.app import create_app

    try:
        if args.user is not None or args.project is not None:
            Scope(user_id=args.user, project_id=args.project)  # before the store is opened
    except MementoError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    try:
        mem = Memento.open(
            args.path,
            url=args.url,
            collection_prefix=args.collection_prefix,
            read_only=args.read_only,
            embedder=args.embedder,
            track_usage=False,  # a search here is not an access: no expiry moves
        )
    except MementoError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    token = None if args.no_token else secrets.token_urlsafe(24)
    hosts = set(LOOPBACK) | {args.host}
    try:
        app = create_app(
            mem,
            user=args.user,
            project=args.project,
            read_only=args.read_only,
            token=token,
            no_token=args.no_token,
            allowed_hosts=hosts,
        )
    except MementoError as err:
        mem.close()
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    # No proxy stands in front: X-Forwarded-* from a local process must not change the scheme.
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", proxy_headers=False
    )
    server = uvicorn.Server(config)

    def announce() -> None:
        port = server.servers[0].sockets[0].getsockname()[1] if server.servers else args.port
        host = f"[{args.host}]" if ":" in args.host else args.host
        address = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
        who = f"as user {args.user!r}" if args.user else "as the store's owner"
        print(f"Memento Inspector on {mem.location}, {who}: {address}", flush=True)
        if token is None:
            print(
                f"{PROG}: warning: --no-token: anything that reaches {address} (any process or "
                f"person on this machine) acts as user {args.user!r}",
                file=sys.stderr,
                flush=True,
            )

    # uvicorn calls startup hooks after binding: announce the real port (``--port 0``).
    original = server.startup

    async def startup(sockets: object = None) -> None:
        await original(sockets)  # type: ignore[arg-type]  # uvicorn's own signature
        announce()

    server.startup = startup  # type: ignore[method-assign]  # to print once bound
    try:
        server.run()
    finally:
        mem.close()
    return 0
