"""Crash safety of the embedded store, and what importing memento_core costs.

Both run in child processes: a writer killed with SIGKILL mid-stream, and a fresh interpreter
that reports which heavy packages ``import memento_core`` pulled in.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memento_core import Memento, Scope
from memento_core.testing import HashEmbedder

HERE = Path(__file__).resolve().parent
ACKNOWLEDGED_BEFORE_KILL = 30
WRITER = Scope(user_id="writer")

WRITER_SCRIPT = textwrap.dedent(
    """
    import sys

    from memento_core.testing import HashEmbedder
    from memento_core import Memento, Scope

    store = Memento.open(sys.argv[1], embedder=HashEmbedder())
    scope = Scope(user_id="writer")
    n = 0
    while True:
        memory_id = store.remember(f"durable memory number {n}", scope=scope, tags=[f"n:{n}"])
        print(n, memory_id, flush=True)  # printed only once remember() has returned
        n += 1
    """
)


def child_env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_every_acknowledged_write_survives_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "store"
    stderr_path = tmp_path / "writer.stderr"
    acknowledged: dict[int, str] = {}
    with stderr_path.open("wb") as stderr:
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, str(path), str(HERE)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=child_env(),
            text=True,
        )
        try:
            assert writer.stdout is not None
            while len(acknowledged) < ACKNOWLEDGED_BEFORE_KILL:
                line = writer.stdout.readline()
                if not line:
                    pytest.fail(
                        f"the writer stopped after {len(acknowledged)} writes "
                        f"(exit code {writer.wait()}):\n{stderr_path.read_text()}"
                    )
                number, memory_id = line.split()
                acknowledged[int(number)] = memory_id
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait()
    assert writer.returncode == -signal.SIGKILL

    with Memento.open(path, embedder=HashEmbedder()) as store:
        for number, memory_id in acknowledged.items():
            item = store.get(memory_id)
            assert item.content == f"durable memory number {number}"
            assert item.tags == (f"n:{number}",)
        assert store.stats().memories >= len(acknowledged)

        # The store still works: writes, reads, keyword and vector search, export.
        new_id = store.remember("written after the crash", scope=WRITER)
        assert store.get(new_id).content == "written after the crash"
        hits = store.recall("durable memory number 7", scope=WRITER, limit=3)
        assert acknowledged[7] in [r.item.id for r in hits]
        exported = "".join(store.export())
        assert all(memory_id in exported for memory_id in acknowledged.values())

    with Memento.open(path, embedder=HashEmbedder()) as again:
        assert again.get(new_id).content == "written after the crash"


HEAVY = ["torch", "chromadb", "sentence_transformers", "langgraph", "llama_index",
         "autogen_core", "mcp", "transformers", "onnxruntime", "tokenizers"]  # fmt: skip


def test_importing_memento_core_loads_no_heavy_package() -> None:
    probe = textwrap.dedent(
        f"""
        import json, sys
        import memento_core
        from memento_core import Memento, OnnxEmbedder, Scope, SentenceTransformerEmbedder
        OnnxEmbedder(), SentenceTransformerEmbedder()  # creating them must not load a model
        heavy = {HEAVY!r}
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_the_probe_would_notice_a_heavy_import() -> None:
    """Guards the test above: the same probe does see a package once something imports it."""
    probe = "import json, sys, chromadb; print(json.dumps('chromadb' in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=child_env(), check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) is True
