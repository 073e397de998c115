"""A reader beside an in-place re-embedding: opens the store read-only again and again, with
whichever of MiniLM fp32 / int8 the store's space now is, and prints one JSON line per look:
the space, how many memories it holds, and the lowest cosine between a memory's text, embedded
now, and the vector recall found it by. A space seen whole gives ~1.0 for every memory; a mix
(vectors of the other model) gives less, and a half-copied space fewer memories.

Run as ``python _reembed_reader.py STORE_PATH STOP_FILE USER``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memento_core import EmbedderMismatch, Memento, MementoError, OnnxEmbedder, Scope


def main() -> None:
    path, stop, user = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    spaces = [OnnxEmbedder(), OnnxEmbedder("all-MiniLM-L6-v2-int8")]
    for space in spaces:
        space.embed_query("warm up")
    print(json.dumps({"ready": True}), flush=True)
    while not stop.exists():
        try:
            look(path, spaces, Scope(user_id=user))
        except MementoError as err:  # the old space dropped under an open reader, say
            print(json.dumps({"error": f"{type(err).__name__}: {err}"}), flush=True)


def look(path: Path, spaces: list[OnnxEmbedder], scope: Scope) -> None:
    for embedder in spaces:
        try:
            store = Memento.open(path, embedder=embedder, read_only=True)
        except EmbedderMismatch:
            continue
        with store:
            items = store.items(include_deleted=True)
            worst = 1.0
            for item in items[:: max(1, len(items) // 12)]:
                found = store.recall(item.content, scope=scope, limit=1)
                same = bool(found) and found[0].item.id == item.id
                worst = min(worst, found[0].reason.dense if same else -1.0)
            print(json.dumps({"space": embedder.name, "count": len(items), "worst": worst}),
                  flush=True)  # fmt: skip
        return
    print(json.dumps({"error": "no space opens"}), flush=True)


if __name__ == "__main__":
    main()
