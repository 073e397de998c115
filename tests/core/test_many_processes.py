"""Many processes, one Chroma server: four processes with their own small index budgets write
and recall over forty users at once; nothing is lost or duplicated, nobody sees what they may
not, and every write is in every process's recall once the freshness bound has passed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from uuid import uuid4

import pytest

from memento_core import Memento, Scope
from memento_core.testing import HashEmbedder

PROCESSES = 4
WRITES_EACH = 40
USERS = 40
PROJECTS = 5

# One child: open the server store with a budget small enough that its partitions are evicted,
# write and recall in turns, wait for the go file, then recall every memory anyone wrote as its
# owner (must be found) and as a stranger (must not be found, unless public).
CHILD = textwrap.dedent(
    """
    import json, random, sys, time
    from pathlib import Path
    from memento_core import Memento, Scope
    from memento_core.testing import HashEmbedder

    url, prefix, number, writes, users, projects, work = sys.argv[1:]
    number, writes, users, projects = int(number), int(writes), int(users), int(projects)
    work = Path(work)
    rng = random.Random(number)

    def scope(user):
        return Scope(user_id=f"user-{user}", project_id=f"project-{user % projects}")

    written = []
    with Memento.open(url=url, collection_prefix=prefix, embedder=HashEmbedder(),
                      index_budget_mb=0.05) as mem:
        for n in range(writes):
            user = rng.randrange(users)
            privacy = ("private", "private", "team", "public")[n % 4]
            text = f"process{number} note{n} for user{user} zq{number}x{n}"
            memory_id = mem.remember(text, scope=scope(user), privacy=privacy)
            written.append({"id": memory_id, "user": user, "privacy": privacy, "text": text})
            mem.recall(f"note{n}", scope=scope(rng.randrange(users)))
        (work / f"written-{number}.json").write_text(json.dumps(written))
        while not (work / "go").exists():
            time.sleep(0.05)
        everything = json.loads((work / "all.json").read_text())
        time.sleep(0.3)  # the freshness bound (0.25 s) has passed for every write
        missing, leaked = [], []
        for memory in everything:
            query = memory["text"].split()[-1]
            owner = [h.item.id for h in mem.recall(query, scope=scope(memory["user"]), limit=3)]
            if memory["id"] not in owner:
                missing.append(memory["id"])
            stranger = Scope(user_id="stranger", project_id="nowhere")
            seen = [h.item.id for h in mem.recall(query, scope=stranger, limit=3)]
            if memory["id"] in seen and memory["privacy"] != "public":
                leaked.append(memory["id"])
        status = mem.index_status()
    print(json.dumps({"missing": missing, "leaked": leaked, "evictions": status.evictions}))
    """
)


@pytest.mark.slow  # 15-30 s on its own: `make test-slow` runs it
def test_four_processes_on_one_server_lose_nothing_and_see_every_write(
    chroma_server: str, tmp_path: Path
) -> None:
    prefix = f"mp{uuid4().hex[:10]}"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ANONYMIZED_TELEMETRY": "False"}
    arguments = [chroma_server, prefix, WRITES_EACH, USERS, PROJECTS, tmp_path]

    def child(number: int) -> subprocess.Popen[str]:
        argv = [sys.executable, "-c", CHILD, *map(str, [*arguments[:2], number, *arguments[2:]])]
        return subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )

    # The store exists before the processes start, as a deployment's would (four processes
    # creating the same collections at once is a different test, in tests/faults).
    Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()).close()
    children = [child(n) for n in range(PROCESSES)]
    try:
        deadline = time.monotonic() + 300
        files = [tmp_path / f"written-{n}.json" for n in range(PROCESSES)]
        while not all(f.exists() for f in files):
            failed = [c for c in children if c.poll() is not None]
            if failed or time.monotonic() > deadline:
                pytest.fail(
                    f"a child stopped or stalled: {failed[0].communicate()[1] if failed else ''}"
                )
            time.sleep(0.1)
        everything = [m for f in files for m in json.loads(f.read_text())]
        (tmp_path / "all.json").write_text(json.dumps(everything))
        (tmp_path / "go").touch()
        reports = []
        for child in children:
            out, err = child.communicate(timeout=300)
            assert child.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for child in children:
            child.kill()

    ids = [m["id"] for m in everything]
    assert len(ids) == PROCESSES * WRITES_EACH
    assert len(set(ids)) == len(ids)  # every text is distinct: one memory each
    for report in reports:
        assert report["missing"] == []
        assert report["leaked"] == []
        assert report["evictions"] > 0  # the budget was small enough to matter
    with Memento.open(url=chroma_server, collection_prefix=prefix, embedder=HashEmbedder()) as mem:
        assert mem.stats().memories == len(ids)
        for memory in everything[:: len(everything) // 20]:
            owner = Scope(user_id=f"user-{memory['user']}", project_id="any")
            assert mem.get(memory["id"], scope=owner).content == memory["text"]
