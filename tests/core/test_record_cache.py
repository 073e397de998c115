"""Recall keeps the memories it reads in a cache; another process's changes to them — a pin,
feedback, a soft forget and a restore, an erasure — reach this process's recall within the
freshness bound, as its new memories do."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from uuid import uuid4

import pytest

from memento_core import Memento, Recalled, Scope
from memento_core.testing import HashEmbedder

ANN = Scope(user_id="ann")
BOUND_S = 5.0
"""How long a change may take to show here: the freshness bound (0.25 s) with room for a
loaded machine."""

CHILD = textwrap.dedent(
    """
    import sys
    from memento_core import Memento
    from memento_core.testing import HashEmbedder
    url, prefix, action, memory_id = sys.argv[1:]
    with Memento.open(url=url, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        if action == "feedback":
            mem.feedback(memory_id, "helpful")
        elif action == "erase":
            mem.erase_user("ann")
        else:
            getattr(mem, action)(memory_id)
    """
)


def _in_another_process(url: str, prefix: str, action: str, memory_id: str) -> None:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, url, prefix, action, memory_id],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def _until(mem: Memento, wanted: Callable[[list[Recalled]], bool]) -> list[Recalled]:
    deadline = time.monotonic() + BOUND_S
    while True:
        hits = mem.recall("the boiler service", scope=ANN, limit=5)
        if wanted(hits) or time.monotonic() > deadline:
            return hits
        time.sleep(0.05)


@pytest.mark.server
def test_another_process_changes_reach_recalled_records(chroma_server: str) -> None:
    prefix = f"rc{uuid4().hex[:10]}"
    with Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        boiler = mem.remember("The boiler service is booked for May.", scope=ANN)
        mem.remember("The boiler service costs ninety pounds.", scope=ANN)
        hits = mem.recall("the boiler service", scope=ANN)
        assert boiler in [h.item.id for h in hits]
        assert not next(h for h in hits if h.item.id == boiler).item.pinned

        _in_another_process(chroma_server, prefix, "pin", boiler)
        hits = _until(mem, lambda hits: any(h.item.pinned for h in hits))
        assert next(h for h in hits if h.item.id == boiler).item.pinned

        _in_another_process(chroma_server, prefix, "feedback", boiler)
        hits = _until(mem, lambda hits: any(h.item.feedback for h in hits))
        assert next(h for h in hits if h.item.id == boiler).item.feedback == {"helpful": 1}

        _in_another_process(chroma_server, prefix, "forget", boiler)
        hits = _until(mem, lambda hits: boiler not in [h.item.id for h in hits])
        assert boiler not in [h.item.id for h in hits]

        _in_another_process(chroma_server, prefix, "restore", boiler)
        hits = _until(mem, lambda hits: boiler in [h.item.id for h in hits])
        assert boiler in [h.item.id for h in hits]

        _in_another_process(chroma_server, prefix, "erase", boiler)
        assert _until(mem, lambda hits: not hits) == []
