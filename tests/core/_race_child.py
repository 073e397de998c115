"""A process racing another on one Chroma server store (``test_erasure_races``): it reads one
JSON command a line from stdin and prints one JSON line a result, flushed.

Run as ``python _race_child.py <url> <prefix> <load limit>``. Commands (``op``):

- ``remember``: ``content``, ``user``, ``project``, ``privacy`` → ``{"id"}``;
- ``fold``: fold every mirrored partition's tail (``mirror_large_partitions``) → ``{"folded"}``;
- ``gate``: ``file``, ``at`` (``publish``: a fold waits after reading what it folds, before
  writing; ``written``: after writing its generation, before checking it), ``partition``
  (``public`` or ``user:<id>``) → the next fold of that partition prints ``{"gated": at}``
  and waits for ``file`` to exist;
- ``loop``: ``rounds``, ``user``, ``stop`` (a file): write a public memory and fold, again and
  again, until ``rounds`` or ``stop`` exists → ``{"rounds"}``;
- ``exit``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from memento_core import Memento, Scope
from memento_core._partitions import digest
from memento_core._storage import _postings
from memento_core.testing import HashEmbedder


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def install_gate(at: str, gate: str, partition: str) -> None:
    """Hold the next fold of ``partition`` at ``at`` until ``gate`` exists (the parent races
    it there)."""
    cls = _postings.PartitionPostings
    name = "_publish" if at == "publish" else "_settle"
    original = getattr(cls, name)
    held_digest = digest(partition)

    def held(self: Any, folded: str, *args: Any, **kwargs: Any) -> Any:
        if folded == held_digest:
            setattr(cls, name, original)
            say(gated=at)
            while not Path(gate).exists():
                time.sleep(0.01)
        return original(self, folded, *args, **kwargs)

    setattr(cls, name, held)


def main() -> None:
    url, prefix, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Memento.open(
        url=url, collection_prefix=prefix, embedder=HashEmbedder(), partition_load_limit=limit
    ) as mem:
        say(ready=True)
        for line in sys.stdin:
            command = json.loads(line)
            op = command["op"]
            if op == "remember":
                scope = Scope(user_id=command["user"], project_id=command.get("project"))
                privacy = command.get("privacy", "private")
                say(id=mem.remember(command["content"], scope=scope, privacy=privacy))
            elif op == "fold":
                say(folded=mem.mirror_large_partitions())
            elif op == "gate":
                install_gate(command["at"], command["file"], command.get("partition", "public"))
                say(installed=True)
            elif op == "loop":
                stop = Path(command["stop"])
                rounds = 0
                scope = Scope(user_id=command["user"])
                while rounds < command["rounds"] and not stop.exists():
                    mem.remember(f"loop note {rounds} about the ferry", scope=scope,
                                 privacy="public")  # fmt: skip
                    mem.mirror_large_partitions()
                    rounds += 1
                say(rounds=rounds)
            elif op == "exit":
                break


if __name__ == "__main__":
    main()
