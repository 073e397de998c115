"""Where one write's time goes: Chroma calls, embedding and the rest, per memory, on each path.

Writes memories one at a time (as an agent writes one per turn) into a fresh embedded store
with the default ONNX embedder, through core's ``remember`` and through each adapter's single
write (LangGraph ``MementoStore.put``, the LlamaIndex block's ``aput`` of one message, AutoGen
``MementoMemory.add``). Every call a Chroma collection answers is counted and timed (by
collection and method), and so is the embedder; what is left is Python in Memento and the
framework. A warm-up write comes first (the model loads, the collections open).

The ``floor`` path, first, is what no write path can go below on this disk: the embedding of
one text, then bare ``chromadb`` calls beside the store — one ``add`` of a record shaped like a
memory (its vector, document and ~20 metadata fields) and one of a record shaped like a
change-feed entry — each its own durable commit, as every Chroma write is.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/write_profile.py [--writes N]

Not a published benchmark: a profile for finding what a write costs. Prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import offline_single_thread

offline_single_thread()

import chromadb.api.models.Collection as chroma_collection  # noqa: E402

from memento_core import Memento, Scope  # noqa: E402

TEXTS = [
    f"[turn {n}] Caroline said she went to the LGBTQ support group on day {n} and it was "
    f"powerful; Melanie asked about painting number {n} and the lake sunrise."
    for n in range(10_000)
]
METHODS = ("add", "upsert", "update", "get", "delete", "query", "count")


class Counter:
    """Calls and seconds per (collection suffix, method), and embedding time."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.seconds: dict[str, float] = defaultdict(float)

    def reset(self) -> None:
        self.calls.clear()
        self.seconds.clear()


@contextmanager
def counted(counter: Counter, store: Memento) -> Iterator[None]:
    """Count every Chroma collection call and the embedder's encoding while inside."""
    originals: dict[str, Callable[..., Any]] = {}
    cls = chroma_collection.Collection
    for method in METHODS:
        original = getattr(cls, method)
        originals[method] = original

        def wrapper(self: Any, *args: Any, _m: str = method, _o: Any = original, **kw: Any) -> Any:
            key = f"{self.name.split('_', 1)[-1]}.{_m}"
            start = time.perf_counter()
            try:
                return _o(self, *args, **kw)
            finally:
                counter.calls[key] += 1
                counter.seconds[key] += time.perf_counter() - start

        setattr(cls, method, wrapper)
    embedder: Any = store.embedder
    inner = getattr(embedder, "_inner", None) or getattr(embedder, "inner", None) or embedder
    encode = inner.embed_documents

    def timed_encode(texts: list[str]) -> Any:
        start = time.perf_counter()
        try:
            return encode(texts)
        finally:
            counter.calls["embed"] += 1
            counter.seconds["embed"] += time.perf_counter() - start

    inner.embed_documents = timed_encode
    try:
        yield
    finally:
        for method, original in originals.items():
            setattr(cls, method, original)
        del inner.embed_documents


def profile(name: str, store: Memento, write: Callable[[int], object], writes: int) -> None:
    counter = Counter()
    write(0)  # warm-up: model, collections, partition records
    times = []
    with counted(counter, store):
        for n in range(1, writes + 1):
            start = time.perf_counter()
            write(n)
            times.append(time.perf_counter() - start)
    total = sum(times)
    p50 = statistics.median(times) * 1000
    half = len(times) // 2
    halves = [statistics.median(times[:half]) * 1000, statistics.median(times[half:]) * 1000]
    print(
        f"\n{name}: p50 {p50:.1f} ms (first half {halves[0]:.1f}, second {halves[1]:.1f}), "
        f"mean {total / writes * 1000:.1f} ms, {writes} writes"
    )
    accounted = 0.0
    for key in sorted(counter.calls, key=lambda k: -counter.seconds[k]):
        per = counter.seconds[key] / writes * 1000
        accounted += counter.seconds[key]
        print(f"  {key:28} {counter.calls[key] / writes:5.2f} calls  {per:6.2f} ms per write")
    rest = (total - accounted) / writes * 1000
    print(f"  {'(everything else)':28} {'':11} {rest:6.2f} ms per write")


MEMORY_LIKE = {
    "type": "episodic", "user_id": "u", "agent_id": "", "project_id": "", "session_id": "",
    "privacy": "private", "source": "chat", "importance": 0.5, "pinned": False,
    "created_at": 1_764_000_000_000_000, "updated_at": 1_764_000_000_000_000,
    "last_accessed_at": 0, "access_count": 0, "expires_at": 0, "deleted_at": 0,
    "text_hash": "0" * 32, "tags": "", "hotwords": "", "title": "", "follows": "",
}  # fmt: skip
"""Metadata of the size and kinds a memory record carries."""


def floor(store: Memento, root: str, writes: int) -> None:
    """The embedding and two bare Chroma writes per memory, p50 of each, in this run."""
    import chromadb

    client = chromadb.PersistentClient(path=os.path.join(root, "bare-chroma"))
    items = client.create_collection("floor_items", embedding_function=None)
    feed = client.create_collection("floor_changes", embedding_function=None)
    embed = store.embedder.embed_documents
    took: dict[str, list[float]] = defaultdict(list)
    for n in range(writes + 1):
        text = TEXTS[-1 - n]  # texts no other path writes: nothing cached
        start = time.perf_counter()
        vector = [float(x) for x in embed([text])[0]]
        took["embed one text"].append(time.perf_counter() - start)
        start = time.perf_counter()
        items.add(ids=[f"m{n}"], embeddings=[vector], documents=[text], metadatas=[MEMORY_LIKE])
        took["chroma add, a memory-like record"].append(time.perf_counter() - start)
        start = time.perf_counter()
        feed.add(
            ids=[f"{n:020d}"],
            embeddings=[[1.0]],
            documents=[f'{{"ids": ["m{n}"], "partitions": [["abc"]]}}'],
            metadatas=[{"at": n, "op": "put"}],
        )
        took["chroma add, a feed-entry-like record"].append(time.perf_counter() - start)
    p50 = {name: statistics.median(values[1:]) * 1000 for name, values in took.items()}
    print(f"\nfloor (bare chromadb beside the store), {writes} writes, p50 ms:")
    for name, value in p50.items():
        half = len(took[name]) // 2
        first, second = (
            statistics.median(v) * 1000 for v in (took[name][1:half], took[name][half:])
        )
        print(f"  {name:40} {value:6.2f}  (first half {first:.2f}, second {second:.2f})")
    one, two = sum(list(p50.values())[:2]), sum(p50.values())
    print(f"  {'embed + the memory: one commit':40} {one:6.2f}")
    print(f"  {'embed + the memory + a feed entry':40} {two:6.2f}")


PATHS = {
    "floor": "floor",
    "core": "core remember",
    "langgraph": "langgraph MementoStore.put",
    "llamaindex": "llamaindex MementoMemoryBlock.aput (one message)",
    "autogen": "autogen MementoMemory.add",
}


def single_write(
    path: str, store: Memento, scope: Scope, loop: asyncio.AbstractEventLoop, offset: int
) -> Callable[[int], object] | None:
    """Write number n of ``path`` (None for the floor, which has its own loop)."""

    def text(n: int) -> str:
        return TEXTS[offset + n]

    if path == "core":
        return lambda n: store.remember(text(n), scope=scope)
    if path == "langgraph":
        from memento_langgraph import MementoStore

        lg = MementoStore(store)
        return lambda n: lg.put(("u", "memories"), f"k{offset + n}", {"text": text(n)})
    if path == "llamaindex":
        from llama_index.core.base.llms.types import ChatMessage

        from memento_llamaindex import MementoMemoryBlock

        block = MementoMemoryBlock(store=store, user_id="u")
        return lambda n: loop.run_until_complete(
            block.aput([ChatMessage(role="user", content=text(n))])
        )
    if path == "autogen":
        from autogen_core.memory import MemoryContent

        from memento_autogen import MementoMemory, MementoMemoryConfig

        memory = MementoMemory(MementoMemoryConfig(user_id="u"), store=store)
        return lambda n: loop.run_until_complete(
            memory.add(MemoryContent(content=text(n), mime_type="text/plain"))
        )
    if path == "floor":
        return None
    raise SystemExit(f"unknown path {path!r}; expected some of {', '.join(PATHS)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--paths", default="floor,core,langgraph,llamaindex,autogen")
    args = parser.parse_args()
    paths = args.paths.split(",")
    print(f"load average at start: {[round(x, 2) for x in os.getloadavg()]}")
    # One event loop for every async write, as an application has: a loop per write would
    # time loop and worker-thread start-up.
    loop = asyncio.new_event_loop()
    scope = Scope(user_id="u")
    with tempfile.TemporaryDirectory() as tmp:
        for n, path in enumerate(paths):
            # Each path writes into a fresh store of its own, so all write into stores of
            # the same sizes; texts differ between paths (nothing is cached).
            with Memento.open(os.path.join(tmp, path)) as store:
                offset = n * (args.writes + 1)
                write = single_write(path, store, scope, loop, offset)
                if write is None:
                    floor(store, tmp, args.writes)
                else:
                    profile(PATHS[path], store, write, args.writes)
    loop.close()
    print(f"load average at end: {[round(x, 2) for x in os.getloadavg()]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
