"""The maintenance worker: purge, review cards and sleep on an interval — in process, and in a
process of its own against a Chroma server while other processes write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    Embedder,
    InvalidInput,
    LinkType,
    MaintenanceReport,
    Memento,
    MemoryNotFound,
    MemoryType,
    ReviewPolicy,
    Scope,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

T0 = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
DAY = timedelta(days=1)
PET = (
    "Ann adopted a beagle puppy called Biscuit from the animal shelter.",
    "Biscuit, Ann's beagle puppy, chews her slippers every morning.",
    "Ann takes her beagle Biscuit to puppy training class on Sundays.",
)
GARDEN = (
    "Ben planted tomatoes and basil in his garden.",
    "Ben's garden tomatoes are finally turning red.",
    "Ben waters the tomatoes in his garden every morning.",
)


def seed(mem: Memento) -> dict[str, str]:
    """One of everything the worker handles; ``mem`` must give no card below 0.95."""
    now = datetime.now(timezone.utc)
    ids = {
        "expired": mem.remember(
            "Carl's boarding pass from last spring", scope=Scope(user_id="carl"),
            expires_at=now - timedelta(days=40),
        ),
        "forgotten": mem.remember("Carl's old locker code", scope=Scope(user_id="carl")),
        "important": mem.remember(
            "Ann's visa interview is on 9 June", scope=Scope(user_id="ann"), type="semantic",
            importance=0.8,
        ),
        "lone": mem.remember("Carl's car needs new tyres", scope=Scope(user_id="carl")),
    }  # fmt: skip
    mem.forget(ids["forgotten"])
    for n, (pet, garden) in enumerate(zip(PET, GARDEN)):
        mem.remember(pet, scope=Scope(user_id="ann"), created_at=T0 + timedelta(hours=n))
        mem.remember(garden, scope=Scope(user_id="ben"), created_at=T0 + timedelta(hours=n))
    return ids


def test_one_pass_purges_gives_cards_and_sleeps_every_user(store_factory: StoreFactory) -> None:
    ids = seed(store_factory.open(review=ReviewPolicy(threshold=0.95)))
    mem = store_factory.open()  # the worker's view: the default review threshold, 0.7

    report = mem.maintain()
    assert report.purged.erased == (ids["expired"],)
    with pytest.raises(MemoryNotFound):
        mem.get(ids["expired"], include_deleted=True)
    assert mem.get(ids["forgotten"], include_deleted=True).is_deleted  # inside its grace period
    assert report.review_cards == 1 and mem.get(ids["important"]).review_due_at is not None
    assert set(report.sleeps) == {"ann", "ben", "carl"}
    assert [len(report.sleeps[u].written) for u in ("ann", "ben", "carl")] == [1, 1, 0]

    before = list(mem.export())
    again = mem.maintain()
    assert (again.purged.erased, again.review_cards) == ((), 0)
    assert set(again.sleeps) == {"carl"}  # the only user with episodes still unconsolidated
    assert again.sleeps["carl"].written == []
    assert list(mem.export()) == before


def test_run_worker_runs_passes_until_told_to_stop(mem: Memento) -> None:
    reports: list[MaintenanceReport] = []
    assert mem.run_worker(interval=0.01, passes=2, on_report=reports.append) == 2
    assert len(reports) == 2
    stopped = threading.Event()
    stopped.set()
    assert mem.run_worker(stop=stopped) == 0

    # A stop request cuts the wait between passes short.
    stop, first_pass = threading.Event(), threading.Event()
    passes: list[int] = []
    thread = threading.Thread(
        target=lambda: passes.append(
            mem.run_worker(interval=3600, stop=stop, on_report=lambda _: first_pass.set())
        )
    )
    thread.start()
    assert first_pass.wait(timeout=300)
    stop.set()
    thread.join(timeout=300)
    assert not thread.is_alive() and passes == [1]


@pytest.mark.parametrize(
    "options",
    [{"interval": -1}, {"interval": 0}, {"interval": float("nan")}, {"interval": "5"},
     {"interval": True}, {"passes": -1}, {"passes": 1.5}],
    ids=repr,
)  # fmt: skip
def test_run_worker_refuses_bad_settings_before_any_pass(
    mem: Memento, options: dict[str, Any]
) -> None:
    mem.remember("Ann's old parking ticket", expires_at=datetime.now(timezone.utc) - 40 * DAY)
    before = list(mem.export())
    with pytest.raises(InvalidInput):
        mem.run_worker(**options)
    assert list(mem.export()) == before


WRITER = textwrap.dedent(
    """
    import json, sys
    from memento_core import Memento, Scope

    url, prefix, user, count, sentences = sys.argv[1:6]
    texts = json.loads(sentences)
    mem = Memento.open(url=url, collection_prefix=prefix)
    mem.embedder.embed_query("load the model before the start line")
    print("ready", flush=True)
    sys.stdin.readline()
    written = []
    for n in range(int(count)):
        # The same few sentences in new sessions: distinct memories that cluster by topic.
        scope = Scope(user_id=user, session_id=f"session-{n}")
        written.append(mem.remember(texts[n % len(texts)], scope=scope))
    print(json.dumps(written), flush=True)
    """
)

WORKER = textwrap.dedent(
    """
    import json, sys, threading
    from memento_core import Memento


    url, prefix = sys.argv[1:3]
    mem = Memento.open(url=url, collection_prefix=prefix)
    mem.embedder.embed_query("load the model before the start line")
    print("ready", flush=True)
    sys.stdin.readline()
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()

    def show(report):
        facts = sum(len(s.written) for s in report.sleeps.values())
        print(json.dumps({"purged": report.purged.erased, "cards": report.review_cards,
                          "facts": facts}), flush=True)

    mem.run_worker(interval=0.2, stop=stop, on_report=show)
    show(mem.maintain())  # one last pass, after the writers are done
    """
)


def sentences(user: str) -> str:
    """The pet and garden sentences, about ``user``, as JSON for a writer's command line."""
    mine = [t.replace("Ann", user).replace("Ben", user) for t in PET + GARDEN]
    return json.dumps([t.replace(" his ", " their ").replace(" her ", " their ") for t in mine])


def _start(script: str, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).parent),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _send(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()


@pytest.mark.slow
@pytest.mark.server
def test_a_worker_process_keeps_up_with_writer_processes_and_loses_nothing(
    chroma_server: str, embedder: Embedder, tmp_path: Path
) -> None:
    prefix = f"worker{os.getpid()}{tmp_path.name[-6:]}".replace("_", "")
    strict = Memento.open(
        url=chroma_server,
        collection_prefix=prefix,
        embedder=embedder,
        review=ReviewPolicy(threshold=0.95),
    )
    seeded = seed(strict)
    per_writer = 24
    worker = _start(WORKER, chroma_server, prefix)
    writers = {
        user: _start(WRITER, chroma_server, prefix, user, str(per_writer), sentences(user))
        for user in ("Dora", "Emil")
    }
    for process in (worker, *writers.values()):
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", process.stderr
    for process in (worker, *writers.values()):
        _send(process, "go")
    written: dict[str, list[str]] = {}
    for user, process in writers.items():
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        written[user] = json.loads(out.splitlines()[-1])
    _send(worker, "stop")
    out, err = worker.communicate(timeout=600)
    assert worker.returncode == 0, err
    passes = [json.loads(line) for line in out.splitlines()]
    assert len(passes) >= 2  # at least one pass on the interval, and the last one

    mem = Memento.open(url=chroma_server, collection_prefix=prefix, embedder=embedder)
    # Nothing the writers wrote is lost, and all of it was consolidated by the last pass.
    for user, ids in written.items():
        assert len(set(ids)) == per_writer
        for memory_id in ids:
            item = mem.get(memory_id)
            assert item.user_id == user and item.type is MemoryType.EPISODIC
            assert item.consolidated_at is not None
        facts = [
            i for i in mem.items(scope=Scope(user_id=user), include_deleted=False)
            if i.type is MemoryType.SEMANTIC
        ]  # fmt: skip
        fed = [
            link.target_id
            for fact in facts
            for link in mem.links(fact.id)
            if link.type is LinkType.DERIVED_FROM and link.source_id == fact.id
        ]
        assert sorted(fed) == sorted(ids), f"{user}: an episode in no fact, or in two"
        assert len({f.content for f in facts}) == len(facts)
    # And the seeded chores were done.
    assert [seeded["expired"]] in [p["purged"] for p in passes]
    with pytest.raises(MemoryNotFound):
        mem.get(seeded["expired"], include_deleted=True)
    assert mem.get(seeded["important"]).review_due_at is not None
    assert sum(p["facts"] for p in passes) >= 3  # ann, ben, and at least one per writer
