"""Store items are seen through the store and by their own user, not by a whole project
(issue 21): items live in the store's reserved home project (``adapter:<project_id>``), which
no front end lets a caller claim, and items stored the old way (team memories of the plain
project) move there when the store opens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memento_core import Embedder, InvalidScope, Memento, MemoryDraft, Scope, check_claimable
from memento_core import _memento as memento_module
from memento_core.cli import main
from memento_langgraph import MementoStore
from memento_langgraph.namespaces import NamespaceMapping

PROBE = "the locker code for the gym"
ALICE_NS, BOB_NS = ("alice", "memories"), ("memories", "bob")


@pytest.fixture
def path(tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store where alice and bob put items through a ``MementoStore`` (closed again)."""
    monkeypatch.setattr(memento_module, "default_embedder", lambda: embedder)  # for the CLI
    where = tmp_path / "store"
    with Memento.open(where, embedder=embedder) as mem:
        store = MementoStore(mem)
        store.put(ALICE_NS, "locker", {"text": "Alice's locker code for the gym is 4471"})
        store.put(BOB_NS, "locker", {"text": "Bob's locker code for the gym is 9012"})
        store.put(("team",), "gym", {"text": "The gym locker room closes at ten"})
    return where


@pytest.fixture
def mem(path: Path, embedder: Embedder) -> Iterator[Memento]:
    with Memento.open(path, embedder=embedder) as opened:
        yield opened


def _texts(mem: Memento, scope: Scope) -> set[str]:
    return {r.item.data["text"] for r in mem.recall(PROBE, scope=scope, limit=50) if r.item.data}


def test_a_viewer_of_the_plain_project_sees_no_store_items(mem: Memento) -> None:
    assert _texts(mem, Scope(user_id="mallory", project_id="langgraph")) == set()
    assert _texts(mem, Scope(project_id="langgraph")) == set()
    assert _texts(mem, Scope()) == set()  # the anonymous user: the store's own items are not its
    assert _texts(mem, Scope(user_id="alice", project_id="langgraph")) == {
        "Alice's locker code for the gym is 4471"
    }
    assert _texts(mem, Scope(user_id="bob")) == {"Bob's locker code for the gym is 9012"}


def test_the_store_still_gets_searches_and_lists_every_users_items(mem: Memento) -> None:
    store = MementoStore(mem)
    got = store.get(BOB_NS, "locker")
    assert got is not None and got.value == {"text": "Bob's locker code for the gym is 9012"}
    assert {h.key for h in store.search((), query=PROBE)} == {"locker", "gym"}
    assert len(store.search((), query=PROBE)) == 3
    assert {h.namespace for h in store.search(("memories",))} == {BOB_NS}
    assert store.list_namespaces() == [ALICE_NS, BOB_NS, ("team",)]


def test_the_cli_with_the_plain_project_sees_no_store_items(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["recall", PROBE, "--json", "--path", str(path), "--user", "mallory"]
    assert main([*argv, "--project", "langgraph"]) == 0
    assert json.loads(capsys.readouterr().out) == []

    assert main([*argv, "--project", "adapter:langgraph"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reserved for adapters' own records" in err[0], err


def test_front_ends_cannot_claim_a_reserved_scope() -> None:
    assert check_claimable(Scope(user_id="alice", project_id="langgraph")).user_id == "alice"
    for scope in (Scope(project_id="adapter:langgraph"), Scope(user_id="adapter:x")):
        with pytest.raises(InvalidScope, match="reserved for adapters"):
            check_claimable(scope)


def test_a_namespace_label_that_looks_reserved_is_hashed(mem: Memento) -> None:
    store = MementoStore(mem)
    store.put(("adapter:langgraph", "memories"), "k", {"text": "not the store's own"})
    owner = mem.get(store.mapping.memory_id(("adapter:langgraph", "memories"), "k")).user_id
    assert owner is not None and owner.startswith("lg-user-")


# ----------------------------------------------------------------- old items move home


def _old_item(mapping: NamespaceMapping, namespace: tuple[str, ...], key: str, text: str,
              user: str | None) -> MemoryDraft:  # fmt: skip
    """An item as ``MementoStore`` wrote it before it had a home: a team memory of the plain
    project ``"langgraph"``."""
    return MemoryDraft(
        id=mapping.memory_id(namespace, key),
        content=text,
        type="semantic",
        scope=Scope(user_id=user, project_id=mapping.project_id),
        privacy="team",
        data={"text": text},
        source="langgraph",
        tags=mapping.tags(namespace, indexed=True),
        origin_trace=mapping.trace(namespace, key),
    )


def test_items_stored_the_old_way_move_home_when_the_store_opens(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "old"
    old = NamespaceMapping()
    with Memento.open(path, embedder=embedder) as mem:
        ids = mem.remember_many(
            [
                _old_item(
                    old, ALICE_NS, "locker", "Alice's locker code for the gym is 4471", "alice"
                ),
                _old_item(old, BOB_NS, "locker", "Bob's locker code for the gym is 9012", "bob"),
            ]
        )
        unrelated = mem.remember("a team note of the plain project", scope=Scope(
            user_id="carol", project_id="langgraph"), privacy="team")  # fmt: skip
        before = {i: mem.get(i) for i in ids}
        # The leak this fixes: a viewer of the plain project saw every user's items.
        assert len(_texts(mem, Scope(user_id="mallory", project_id="langgraph"))) == 2

    with Memento.open(path, embedder=embedder) as mem:
        store = MementoStore(mem)
        assert _texts(mem, Scope(user_id="mallory", project_id="langgraph")) == set()
        assert _texts(mem, Scope(user_id="alice")) == {"Alice's locker code for the gym is 4471"}
        got = store.get(BOB_NS, "locker")
        assert got is not None and got.value == {"text": "Bob's locker code for the gym is 9012"}
        assert got.created_at == before[ids[1]].created_at
        assert {h.namespace for h in store.search((), query=PROBE)} == {ALICE_NS, BOB_NS}
        for memory_id in ids:
            moved = mem.get(memory_id)
            assert moved.scope.project_id == "adapter:langgraph"
            assert moved.user_id == before[memory_id].user_id
        # Only the store's items moved; the plain project's own memories stay where they are.
        assert mem.get(unrelated).scope.project_id == "langgraph"

        mem.erase_user("alice")
        assert store.get(ALICE_NS, "locker") is None
        assert store.get(BOB_NS, "locker") is not None
