"""The child process of the fault tests: one job against one store, every result on stdout.

Run as ``python _child.py '<json config>'``. Each line it prints is one JSON object, flushed, and
printed only once the call it reports has returned — so the parent knows exactly which writes were
acknowledged when it kills this process. Config keys:

``store``: ``{"path": ...}`` (embedded) or ``{"url": ..., "prefix": ...}`` (Chroma server);
``embedder``: ``"hash"`` (``testing.HashEmbedder``, fast) or ``"real"`` (MiniLM);
``job``: ``remember``, ``change``, ``sleep`` or ``checkpoint`` (see the functions below).
"""

from __future__ import annotations

import faulthandler
import json
import operator
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from memento_core import (
    Memento,
    MementoError,
    MemoryDraft,
    MemoryItem,
    Scope,
    plugins,
)
from memento_core.testing import HashEmbedder


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def open_store(config: dict[str, Any]) -> Memento:
    if config.get("embedder") == "gated":
        embedder: Any = GatedEmbedder(config["gate_file"])
    elif config.get("embedder") == "real":
        from memento_core import OnnxEmbedder

        embedder = OnnxEmbedder()
        embedder.embed_query("warm up")  # load the model before the first acknowledged write
    else:
        embedder = HashEmbedder()
    store = config["store"]
    limit = {"partition_load_limit": config["load_limit"]} if "load_limit" in config else {}
    if "url" in store:
        return Memento.open(
            url=store["url"], collection_prefix=store["prefix"], embedder=embedder, **limit
        )
    return Memento.open(store["path"], embedder=embedder, **limit)


class GatedEmbedder(HashEmbedder):
    """The hash embedder, except that its first ``embed_documents`` prints ``{"embedding":
    true}`` and waits for ``gate_file``: a write held between its existence check and its
    insert, for as long as the parent wants."""

    def __init__(self, gate_file: str) -> None:
        self.gate_file: str | None = gate_file

    def embed_documents(self, texts: Any) -> Any:
        if self.gate_file:
            say(embedding=True)
            wait_for(self.gate_file)
            self.gate_file = None
        return super().embed_documents(texts)


def wait_for(go_file: str | None) -> None:
    """A start line for concurrent writers: spin until the parent creates ``go_file``."""
    if go_file:
        while not Path(go_file).exists():
            time.sleep(0.005)


def remember(mem: Memento, config: dict[str, Any]) -> None:
    """Remember ``template.format(n=n)`` for n = start, start+1, … (``count`` of them, or until
    killed), printing ``{"n", "id"}`` after each. With ``retry``, a ``MementoError`` is printed as
    ``{"n", "error", "message"}`` and the same n is tried again; any other exception ends the
    child with its traceback. With ``stop_on_error``, the first error is printed and ends it.
    ``{g}`` in the template is ``n // group``; ``batch`` stores all ``count`` in one call;
    ``pin`` pins each memory before it is reported."""
    scope = Scope(**config.get("scope", {"user_id": "writer"}))
    template: str = config["template"]
    group = int(config.get("group", 1))
    padding = "x" * int(config.get("padding", 0))
    n = int(config.get("start", 0))
    end = n + int(config["count"]) if config.get("count") is not None else None

    def content(n: int) -> str:
        return template.format(n=n, g=n // group) + (f" {padding}" if padding else "")

    if config.get("batch") and end is not None:
        numbers = range(n, end)
        drafts = [MemoryDraft(content(k), scope=scope, tags=[f"n:{k}"]) for k in numbers]
        for k, memory_id in zip(numbers, mem.remember_many(drafts)):
            if config.get("pin"):
                mem.pin(memory_id)
            say(n=k, id=memory_id)
        return
    while end is None or n < end:
        try:
            memory_id = mem.remember(content(n), scope=scope, tags=[f"n:{n}"])
        except MementoError as err:
            say(n=n, error=type(err).__name__, message=str(err))
            if config.get("stop_on_error"):
                return
            if not config.get("retry"):
                raise
            time.sleep(0.1)
            continue
        if config.get("pin"):
            mem.pin(memory_id)
        say(n=n, id=memory_id)
        n += 1


def change(mem: Memento, config: dict[str, Any]) -> None:
    """Remember ``version 0``, then change it until killed: step n (from 1) updates its
    content to ``version n`` when n is odd and pins or unpins it when even, printing
    ``{"n", "id"}`` after each step returns (each change is logged in its history)."""
    scope = Scope(user_id="writer")
    memory_id = mem.remember("version 0", scope=scope)
    say(n=0, id=memory_id)
    n = 1
    while True:
        if n % 2:
            mem.update(memory_id, content=f"version {n}", scope=scope)
        elif n % 4:
            mem.pin(memory_id, scope=scope)
        else:
            mem.unpin(memory_id, scope=scope)
        say(n=n, id=memory_id)
        n += 1


class PauseAfterFacts:
    """A plugin that stops sleep right after its ``calls``-th batch of facts is stored (before
    their links and the sources' marks): it prints ``{"facts_stored": ids}`` and blocks, so the
    parent's SIGKILL lands exactly there."""

    def __init__(self, calls: int) -> None:
        self.calls = calls

    @plugins.hookimpl
    def memento_on_remember(self, memento: Memento, items: list[MemoryItem]) -> None:
        if items and all(item.source == "consolidation" for item in items):
            self.calls -= 1
            if self.calls == 0:
                say(facts_stored=[item.id for item in items])
                threading.Event().wait()


def sleep(mem: Memento, config: dict[str, Any]) -> None:
    """Consolidate the user's episodes, printing ``{"progress": [done, total]}`` per chunk.
    ``pause_after_facts``: see ``PauseAfterFacts``."""
    if config.get("pause_after_facts"):
        plugins.manager().register(PauseAfterFacts(int(config["pause_after_facts"])))
    report = mem.sleep(
        Scope(user_id=config["user"]),
        on_progress=lambda done, total: say(progress=[done, total]),
    )
    say(done=True, written=len(report.written), consolidated=len(report.consolidated))


def checkpoint(mem: Memento, config: dict[str, Any]) -> None:
    """Run a real LangGraph graph checkpointed by ``MementoSaver``: each invoke appends one line
    to the ``log`` channel; after it returns, print the step and the checkpoint it ended on."""
    from langgraph.graph import END, START, StateGraph

    from memento_langgraph import MementoSaver

    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    graph = builder.compile(checkpointer=MementoSaver(mem))
    run_config: Any = {"configurable": {"thread_id": config["thread"]}}
    n = 0
    while True:
        result = graph.invoke({"log": []}, run_config)
        state = graph.get_state(run_config)
        say(n=n, checkpoint_id=state.config["configurable"]["checkpoint_id"], log=result["log"])
        n += 1


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def step(state: State) -> dict[str, list[str]]:
    """The graph's one node: log which step this is."""
    return {"log": [f"step {len(state.get('log') or [])}"]}


def main() -> None:
    faulthandler.register(signal.SIGUSR1)  # the parent asks where a child hangs
    config = json.loads(sys.argv[1])
    try:
        store = open_store(config)
    except MementoError as err:  # reported like a failed write: {"error", "message"}
        say(error=type(err).__name__, message=str(err))
        return
    with store as mem:
        say(ready=True)
        wait_for(config.get("go_file"))
        jobs = {"remember": remember, "change": change, "sleep": sleep, "checkpoint": checkpoint}
        jobs[config["job"]](mem, config)


if __name__ == "__main__":
    main()
