"""Re-embedding a store into another embedder's space (``Memento.reembed``): every record kept
(compared through the public API before and after), into a new directory or in place, a run cut
short continued, a half-built target refused. MiniLM fp32 and int8 are two real spaces;
``HashEmbedder`` is a third where a test needs one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    Embedder,
    EmbedderMismatch,
    InvalidInput,
    Memento,
    MemoryDraft,
    OnnxEmbedder,
    ReembedReport,
    Scope,
    StoreError,
    StoreNotFound,
)
from memento_core.testing import HashEmbedder

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann", project_id="harbour", session_id="s1")
BOB = Scope(user_id="bob", project_id="harbour")


@pytest.fixture(scope="module")
def int8() -> OnnxEmbedder:
    return OnnxEmbedder("all-MiniLM-L6-v2-int8")


class Interrupted(Exception):
    """Raised from ``on_progress`` to cut a run short after some steps."""


def stop_after(steps: int) -> Any:
    seen = [0]

    def progress(done: int, total: int) -> None:
        seen[0] += 1
        if seen[0] >= steps:
            raise Interrupted(f"stopped at {done}/{total}")

    return progress


def fill(mem: Memento, extra: int = 0) -> list[str]:
    """A store with a bit of everything a re-embedding must keep."""
    ids = mem.remember_many(
        [
            MemoryDraft(f"note {n}: the ferry to the island leaves at {n} o'clock", scope=ANN)
            for n in range(extra)
        ]
    )
    coffee = mem.remember("Alice takes her coffee black.", scope=ANN, tags=["pref:coffee"],
                          hotwords=["coffee", "커피"], importance=0.9, pinned=True,
                          data={"drink": "coffee", "sugar": 0})  # fmt: skip
    deploy = mem.remember("The deploy runs every Friday at noon.", scope=BOB, privacy="team",
                          type="procedural")  # fmt: skip
    fact = mem.remember("도손의 해안 마을에서 커피를 마셨다", scope=BOB, privacy="public",
                        type="semantic")  # fmt: skip
    gone = mem.remember("A note to forget softly.", scope=ANN)
    mem.forget(gone)
    mem.link(coffee, "cause_of", deploy, note="why", scope=ANN)
    mem.feedback(deploy, "helpful", score=0.8, note="useful", scope=BOB)
    mem.update(fact, content="도손의 해안 마을에서 녹차를 마셨다", scope=BOB)
    mem.update(coffee, content="Alice takes her coffee with oat milk now.", supersede=True,
               scope=ANN)  # fmt: skip
    mem.recall("how does Alice drink coffee?", scope=ANN)  # usage counts
    chat = mem.chat("s1", scope=ANN)
    chat.append({"role": "user", "content": "what time does the ferry leave?"})
    chat.append({"role": "assistant", "content": "at nine"})
    mem.side_records("adapter_notes").put(["n1"], ["a record of an adapter"], [{"user_id": "ann"}])
    return [*ids, coffee, deploy, fact, gone]


def snapshot(mem: Memento) -> dict[str, Any]:
    """Everything a caller can read of the store, but the embedder's name."""
    ids = [item.id for item in mem.items(include_deleted=True)]
    stats = mem.stats()
    return {
        "export": "".join(mem.export()),
        "changes": {i: [(c.kind, c.before, c.after) for c in mem.changes(i)] for i in ids},
        "chat": [(m.role, m.content) for m in mem.history("s1")],
        "side": [
            (r.id, r.document, dict(r.metadata)) for r in mem.side_records("adapter_notes").find()
        ],
        "counts": (
            stats.memories,
            stats.deleted,
            stats.links,
            stats.feedback_events,
            dict(stats.by_type),
            dict(stats.by_privacy),
            stats.users,
        ),
        "usage": {i.id: (i.access_count, i.last_accessed_at) for i in mem.items()},
    }


def stored(snapshot: dict[str, Any]) -> int:
    """How many memories a snapshot's store holds (soft-forgotten ones too)."""
    return int(snapshot["export"].count('"kind":"memory"'))


def where(factory: StoreFactory, name: str = "main") -> dict[str, Any]:
    """How ``Memento.reembed`` reaches the factory's store ``name``."""
    if factory.mode == "embedded":
        return {"path": factory.root / name}
    assert factory.url is not None
    return {"url": factory.url, "collection_prefix": f"{factory._test_prefix}{name}"}


def test_reembedding_into_a_directory_keeps_every_record(
    store_factory: StoreFactory, tmp_path: Path, int8: OnnxEmbedder
) -> None:
    with store_factory.open() as mem:
        fill(mem, extra=30)
        before = snapshot(mem)
    seen: list[tuple[int, int]] = []
    report = Memento.reembed(
        **where(store_factory),
        embedder=int8,
        to=tmp_path / "new",
        batch_size=8,
        on_progress=lambda done, total: seen.append((done, total)),
    )
    assert isinstance(report, ReembedReport)
    assert (report.embedder, report.previous_embedder) == ("all-MiniLM-L6-v2-int8",
                                                           "all-MiniLM-L6-v2")  # fmt: skip
    assert report.memories == report.embedded == stored(before)
    assert not report.resumed and report.kept == 0
    assert seen[-1] == (report.memories, report.memories) and len(seen) == -(-report.memories // 8)
    prefix = where(store_factory).get("collection_prefix", "memento")
    with Memento.open(tmp_path / "new", embedder=int8, collection_prefix=prefix) as copy:
        assert snapshot(copy) == before
        top = copy.recall("when does the ferry leave for the island?", scope=ANN)[0]
        assert top.item.content.startswith("note ")
        assert top.reason.dense > 0.5
    with store_factory.open() as mem:  # the source is as it was, in its own space
        assert snapshot(mem) == before


def test_reembedding_in_place_switches_the_space_and_keeps_every_record(
    store_factory: StoreFactory, int8: OnnxEmbedder
) -> None:
    with store_factory.open() as mem:
        fill(mem, extra=12)
        before = snapshot(mem)
    report = Memento.reembed(**where(store_factory), embedder=int8, in_place=True)
    assert report.target == "in place" and report.embedded == stored(before)
    with pytest.raises(EmbedderMismatch):
        store_factory.open()
    with store_factory.open(embedder=int8) as mem:
        assert snapshot(mem) == before
        tea = mem.remember("Bob drinks green tea every morning.", scope=BOB)
        assert mem.recall("what does Bob drink?", scope=BOB)[0].item.id == tea
        before = snapshot(mem)
    # And back again: a second switch, from the space the first one made.
    again = Memento.reembed(**where(store_factory), embedder=store_factory.embedder,
                            in_place=True)  # fmt: skip
    assert again.previous_embedder == "all-MiniLM-L6-v2-int8"
    with store_factory.open() as mem:
        assert snapshot(mem) == before
        assert mem.recall("what does Bob drink?", scope=BOB)[0].item.id == tea


def test_the_old_space_is_dropped_after_the_switch(tmp_path: Path, int8: OnnxEmbedder) -> None:
    import chromadb

    with Memento.open(tmp_path / "store") as mem:
        fill(mem)
    Memento.reembed(tmp_path / "store", embedder=int8, in_place=True)
    Memento.reembed(tmp_path / "store", embedder=HashEmbedder(), in_place=True)
    client = chromadb.PersistentClient(str(tmp_path / "store"))
    names = {c.name for c in client.list_collections()}
    assert "memento_meta" in names and "memento.g2_items" in names
    assert not [n for n in names if n != "memento_meta" and not n.startswith("memento.g2_")]


def test_a_run_cut_short_continues_where_it_stopped(
    store_factory: StoreFactory, tmp_path: Path, int8: OnnxEmbedder
) -> None:
    with store_factory.open() as mem:
        fill(mem, extra=40)
        before = snapshot(mem)
    target = tmp_path / "new"
    with pytest.raises(Interrupted):
        Memento.reembed(**where(store_factory), embedder=int8, to=target, batch_size=10,
                        on_progress=stop_after(2))  # fmt: skip
    prefix = where(store_factory).get("collection_prefix", "memento")
    with pytest.raises(StoreError, match="unfinished re-embedding") as caught:
        Memento.open(target, embedder=int8, collection_prefix=prefix)
    assert "run the same `memento-core reembed` again" in str(caught.value)
    assert "\n" not in str(caught.value)
    report = Memento.reembed(**where(store_factory), embedder=int8, to=target, batch_size=10)
    assert report.resumed and report.kept == 20
    assert report.embedded == report.memories - 20
    with Memento.open(target, embedder=int8, collection_prefix=prefix) as copy:
        assert snapshot(copy) == before


def test_what_changed_between_two_runs_is_caught_up(
    store_factory: StoreFactory, tmp_path: Path, int8: OnnxEmbedder
) -> None:
    with store_factory.open() as mem:
        ids = fill(mem, extra=20)
    target = tmp_path / "new"
    with pytest.raises(Interrupted):
        Memento.reembed(**where(store_factory), embedder=int8, to=target, batch_size=30,
                        on_progress=stop_after(1))  # fmt: skip
    with store_factory.open() as mem:
        mem.forget(ids[0], hard=True)
        mem.update(ids[1], content="note 1: the ferry was cancelled for the storm")
        mem.remember("A memory written between the two runs.", scope=BOB)
        mem.unlink(ids[-4], "cause_of", ids[-3], scope=ANN)
        before = snapshot(mem)
    report = Memento.reembed(**where(store_factory), embedder=int8, to=target, batch_size=30)
    assert report.resumed and report.removed >= 1
    prefix = where(store_factory).get("collection_prefix", "memento")
    with Memento.open(target, embedder=int8, collection_prefix=prefix) as copy:
        assert snapshot(copy) == before
        found = copy.recall("was the ferry cancelled?", scope=ANN)[0].item
        assert found.content == "note 1: the ferry was cancelled for the storm"


def test_a_half_built_target_refuses_another_run(
    tmp_path: Path, int8: OnnxEmbedder, embedder: Embedder
) -> None:
    with Memento.open(tmp_path / "store") as mem:
        fill(mem, extra=20)
        before = snapshot(mem)
    target = tmp_path / "new"
    with pytest.raises(Interrupted):
        Memento.reembed(tmp_path / "store", embedder=int8, to=target, batch_size=5,
                        on_progress=stop_after(1))  # fmt: skip
    with pytest.raises(StoreError) as caught:
        Memento.reembed(tmp_path / "store", embedder=HashEmbedder(), to=target)
    message = str(caught.value)
    assert f"{target} holds an unfinished re-embedding of {tmp_path / 'store'} (memento) " in (
        message
    )
    assert "into 'all-MiniLM-L6-v2-int8'" in message and "delete the directory" in message
    with Memento.open(tmp_path / "other", embedder=embedder) as other:
        other.remember("a store of its own", scope=ANN)
    with pytest.raises(StoreError, match="holds a Memento store already"):
        Memento.reembed(tmp_path / "store", embedder=int8, to=tmp_path / "other")
    with Memento.open(tmp_path / "other", embedder=embedder) as other:
        assert [i.content for i in other.items()] == ["a store of its own"]
    assert Memento.reembed(tmp_path / "store", embedder=int8, to=target).resumed
    with Memento.open(tmp_path / "store") as mem:
        assert snapshot(mem) == before


@pytest.mark.slow  # 15-30 s on its own: `make test-slow` runs it
def test_in_place_a_run_cut_short_leaves_the_old_space_whole(
    store_factory: StoreFactory, int8: OnnxEmbedder
) -> None:
    with store_factory.open() as mem:
        fill(mem, extra=20)
        before = snapshot(mem)
    with pytest.raises(Interrupted):
        Memento.reembed(**where(store_factory), embedder=int8, in_place=True, batch_size=5,
                        on_progress=stop_after(2))  # fmt: skip
    with store_factory.open() as mem:  # the old space, whole, and still writable
        assert snapshot(mem) == before
    with pytest.raises(EmbedderMismatch):
        store_factory.open(embedder=int8)
    with pytest.raises(StoreError) as caught:
        Memento.reembed(**where(store_factory), embedder=HashEmbedder(), in_place=True)
    assert "this store holds an unfinished re-embedding of" in str(caught.value)
    assert "--restart" in str(caught.value)
    report = Memento.reembed(**where(store_factory), embedder=int8, in_place=True, batch_size=5)
    assert report.resumed and report.kept == 10
    with store_factory.open(embedder=int8) as mem:
        assert snapshot(mem) == before
    again = Memento.reembed(**where(store_factory), embedder=int8, in_place=True)
    assert (again.memories, again.embedded) == (0, 0)  # already in that space


def test_restart_discards_an_unfinished_run_into_another_space(
    tmp_path: Path, int8: OnnxEmbedder
) -> None:
    with Memento.open(tmp_path / "store") as mem:
        fill(mem, extra=20)
        before = snapshot(mem)
    with pytest.raises(Interrupted):
        Memento.reembed(tmp_path / "store", embedder=int8, in_place=True, batch_size=5,
                        on_progress=stop_after(1))  # fmt: skip
    hashed = HashEmbedder()
    report = Memento.reembed(tmp_path / "store", embedder=hashed, in_place=True, restart=True)
    assert not report.resumed and report.embedded == report.memories
    with Memento.open(tmp_path / "store", embedder=hashed) as mem:
        assert snapshot(mem) == before


def test_the_async_twin_reembeds(tmp_path: Path, int8: OnnxEmbedder) -> None:
    with Memento.open(tmp_path / "store") as mem:
        fill(mem)
        before = snapshot(mem)
    report = asyncio.run(Memento.areembed(tmp_path / "store", embedder=int8, in_place=True))
    assert report.embedded == report.memories > 0
    with Memento.open(tmp_path / "store", embedder=int8) as mem:
        assert snapshot(mem) == before


def test_an_embedder_may_be_given_by_name(tmp_path: Path) -> None:
    with Memento.open(tmp_path / "store") as mem:
        fill(mem)
    report = Memento.reembed(tmp_path / "store", embedder="all-MiniLM-L6-v2-int8", in_place=True)
    assert report.embedder == "all-MiniLM-L6-v2-int8"
    with pytest.raises(InvalidInput, match="no embedder named 'nope'"):
        Memento.reembed(tmp_path / "store", embedder="nope", in_place=True)


@pytest.mark.parametrize(
    ("options", "error", "says"),
    [
        ({}, InvalidInput, "either into a new directory (to=...) or in place"),
        ({"in_place": True, "to": "x"}, InvalidInput, "either into a new directory"),
        ({"in_place": True, "read_only": True}, InvalidInput, "cannot be read-only"),
        ({"in_place": True, "batch_size": 0}, InvalidInput, "batch_size must be"),
    ],
)
def test_bad_arguments_are_one_line_errors_and_change_nothing(
    tmp_path: Path, options: dict[str, Any], error: type[Exception], says: str
) -> None:
    with Memento.open(tmp_path / "store") as mem:
        fill(mem)
        before = snapshot(mem)
    with pytest.raises(error) as caught:
        Memento.reembed(tmp_path / "store", embedder=HashEmbedder(), **options)
    assert says in str(caught.value) and "\n" not in str(caught.value)
    with Memento.open(tmp_path / "store") as mem:
        assert snapshot(mem) == before


def test_no_store_open_store_and_the_store_itself_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFound, match="no Memento store at"):
        Memento.reembed(tmp_path / "none", embedder=HashEmbedder(), in_place=True)
    assert not (tmp_path / "none").exists()
    with Memento.open(tmp_path / "store") as mem:
        mem.remember("Alice takes her coffee black.", scope=ANN)
        with pytest.raises(StoreError, match="close the store"):
            Memento.reembed(tmp_path / "store", embedder=HashEmbedder(), in_place=True)
    with pytest.raises(InvalidInput, match="the target directory is the store itself"):
        Memento.reembed(tmp_path / "store", embedder=HashEmbedder(), to=tmp_path / "store")
    with Memento.open(tmp_path / "store") as mem:
        assert mem.stats().memories == 1


def test_the_command_line_reembeds_and_says_what_it_did(
    tmp_path: Path, int8: OnnxEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    from memento_core.cli import main

    with Memento.open(tmp_path / "store") as mem:
        fill(mem, extra=5)
        before = snapshot(mem)
    option = "model=all-MiniLM-L6-v2-int8"
    argv = ["reembed", "--path", str(tmp_path / "store"), "--embedder", "onnx",
            "--embedder-option", option, "--to", str(tmp_path / "new")]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    said = f"re-embedded {stored(before)} memories into {tmp_path / 'new'} with "
    said += "'all-MiniLM-L6-v2-int8' (384 dimensions; was 'all-MiniLM-L6-v2')"
    assert out.startswith(said)
    assert f"re-embedded {stored(before)}/{stored(before)} memories" in err  # progress lines
    with Memento.open(tmp_path / "new", embedder=int8) as mem:
        assert snapshot(mem) == before


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--embedder", "nope", "--in-place"], "no embedder named 'nope'"),
        (["--embedder", "onnx", "--embedder-option", "colour", "--in-place"], "KEY=VALUE"),
        (["--embedder", "onnx", "--embedder-option", "colour=red", "--in-place"], "'colour'"),
    ],
)
def test_command_line_mistakes_are_one_line(
    tmp_path: Path, argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from memento_core.cli import main

    with Memento.open(tmp_path / "store") as mem:
        fill(mem)
        before = snapshot(mem)
    assert main(["reembed", "--path", str(tmp_path / "store"), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and err.startswith("memento-core: error: ")
    with Memento.open(tmp_path / "store") as mem:
        assert snapshot(mem) == before


def test_the_command_line_wants_one_target(tmp_path: Path) -> None:
    from memento_core.cli import main

    with pytest.raises(SystemExit) as neither:
        main(["reembed", "--path", str(tmp_path), "--embedder", "onnx"])
    with pytest.raises(SystemExit) as both:
        main(["reembed", "--path", str(tmp_path), "--embedder", "onnx", "--to", "x", "--in-place"])
    assert neither.value.code == both.value.code == 2


def test_large_partitions_searched_in_the_store_get_the_new_vectors(
    store_factory: StoreFactory, int8: OnnxEmbedder, embedder: Embedder
) -> None:
    # From int8 to fp32: fp32 gives a text one vector in any batch, so a memory found by its
    # own text scores a cosine of 1 only with the vector of the new space.
    notes = [f"note {n}: the ferry to island {n} leaves at dawn" for n in range(24)]
    with store_factory.open(embedder=int8, partition_load_limit=5) as mem:
        mem.remember_many([MemoryDraft(note, scope=ANN) for note in notes])
        mem.mirror_large_partitions()  # the batch write mirrored ANN's; this folds its tail
        before = snapshot(mem)
    Memento.reembed(**where(store_factory), embedder=embedder, in_place=True)
    with store_factory.open(partition_load_limit=5) as mem:
        assert snapshot(mem) == before
        for note in notes[::5]:
            top = mem.recall(note, scope=ANN, limit=1)[0]
            assert top.item.content == note and top.reason.dense > 0.9999
        assert mem.index_status().searched_in_store >= 1
