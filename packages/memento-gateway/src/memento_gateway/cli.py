"""``memento-gateway``: serve a LangGraph graph or LangChain runnable over the sendmsg protocol.

memento-gateway my_app.graph:graph --keys keys.json [--path DIR | --url URL]
                [--embedder NAME] [--host 127.0.0.1] [--port 8765]

The protocol is a Korean product's: a new store gets the ``multilingual`` embedder when
``memento-multilingual`` is installed (``pip install "memento-sendmsg-gateway[multilingual]"``).
Without it the gateway still serves, with all-MiniLM-L6-v2 (English only) for a new store, and
says so on standard error at start. An existing store always opens in the space it recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import threading

from memento_core import EmbedderMismatch, Memento, MementoError, plugins
from memento_gateway.loading import load_keys
from memento_gateway.server import Gateway

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memento-gateway",
        description="Serve a LangGraph graph over the sendmsg WebSocket protocol, with memory.",
    )
    parser.add_argument(
        "graph", help="module:attr of a compiled graph, a runnable, or a function(mem) -> one"
    )
    parser.add_argument("--keys", required=True, help="JSON table of api_key -> space")
    store = parser.add_mutually_exclusive_group()
    store.add_argument(
        "--path",
        help="embedded store directory (default: $MEMENTO_PATH, else the per-user data directory)",
    )
    store.add_argument("--url", help="Chroma server URL (chroma run)")
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help=f"embedder of a new store, by registered name (default: {MULTILINGUAL} when "
        "installed, else all-MiniLM-L6-v2); an existing store opens in its recorded space",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    return parser


MULTILINGUAL = "multilingual"


def open_store(path: str | None, url: str | None, embedder: str | None) -> Memento:
    """The gateway's store. Without ``embedder``: ``multilingual`` for a new store when it is
    installed (the protocol's users speak Korean), and an existing store's own space."""
    if embedder is not None:
        return Memento.open(path, url=url, embedder=embedder)
    if MULTILINGUAL not in plugins.registered_names()["embedders"]:
        print(
            "memento-gateway: memento-multilingual is not installed, so a new store gets "
            "all-MiniLM-L6-v2, which understands English only; for Korean: "
            'pip install "memento-sendmsg-gateway[multilingual]"',
            file=sys.stderr,
            flush=True,
        )
        return Memento.open(path, url=url)
    try:
        return Memento.open(path, url=url, embedder=MULTILINGUAL)
    except EmbedderMismatch:  # a store built in another space keeps it
        return Memento.open(path, url=url)


def preload_public(mem: Memento) -> None:
    """Load the public memories every space's recall reads (``Memento.preload``) beside the
    server, so the first turn does not wait for them. A store that fails here fails again on
    that turn, which reports it."""
    with contextlib.suppress(MementoError):
        mem.preload()


async def _serve(args: argparse.Namespace) -> None:
    mem = open_store(args.path, args.url, args.embedder)
    sys.path.insert(0, os.getcwd())  # module:attr is looked up from where the command runs
    keys = load_keys(args.keys, args.graph, mem)
    threading.Thread(target=preload_public, args=(mem,), daemon=True).start()
    async with await Gateway(mem, keys).serve(args.host, args.port) as server:
        print(f"serving on ws://{args.host}:{args.port} (Ctrl-C to stop)", flush=True)
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        asyncio.run(_serve(args))
    except MementoError as err:
        print(f"memento-gateway: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
