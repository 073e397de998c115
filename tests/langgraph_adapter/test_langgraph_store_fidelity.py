"""MementoStore behaves as LangGraph's reference store does where Memento's own rules differ:
namespace labels that are not valid Memento scope values, the reserved root label in ``batch``,
``index`` configs that carry ``embed``, and many threads putting and searching at once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, IndexConfig, InvalidNamespaceError, Item, PutOp, SearchOp

from memento_core import Embedder, Memento, MemoryItem, Scope, plugins
from memento_core.plugins import hookimpl
from memento_langgraph import MementoStore
from memento_langgraph._grouping import Group

Fresh = Callable[[str], str]


@pytest.fixture
def store(shared_mem: Memento) -> MementoStore:
    return MementoStore(shared_mem, index={"fields": ["text"]})


@pytest.mark.parametrize(
    "label",
    ["alice\n", "   ", "x" * 300, "tab\there", "\u0085next-line"],
    ids=["trailing-newline", "whitespace-only", "300-chars", "tab", "c1-control"],
)
def test_any_valid_langgraph_user_label_can_be_stored(
    shared_mem: Memento, fresh: Fresh, label: str
) -> None:
    # The user is the second label here (the default reads ("users", x) as user "users").
    store = MementoStore(shared_mem, index={"fields": ["text"]}, user_label=1)
    namespace = (fresh("users"), label)
    store.put(namespace, "pref", {"text": "Prefers tea over coffee"})

    item = store.get(namespace, "pref")
    assert item is not None and item.namespace == namespace
    assert item.value == {"text": "Prefers tea over coffee"}
    assert [h.namespace for h in store.search(namespace, query="tea")] == [namespace]
    assert store.list_namespaces(prefix=(namespace[0],)) == [namespace]
    # The memory's user id stands for the label: one label, one id, never another user's.
    memory = shared_mem.get(store.mapping.memory_id(namespace, "pref"))
    assert memory.scope.user_id is not None and memory.scope.user_id.startswith("lg-user-")
    store.put((namespace[0], label + "!"), "pref", {"text": "Prefers coffee"})
    other = shared_mem.get(store.mapping.memory_id((namespace[0], label + "!"), "pref"))
    assert other.scope.user_id != memory.scope.user_id
    store.delete(namespace, "pref")
    assert store.get(namespace, "pref") is None


def test_a_label_spelling_another_labels_hash_is_another_user(
    shared_mem: Memento, fresh: Fresh
) -> None:
    """Issue 31: ``"lg-user-<hash>"`` as a label was that label's own id, the very user the
    hashed label (say, ``"alice\n"``) is stored as: two namespaces, one user."""
    store = MementoStore(shared_mem, index={"fields": ["text"]}, user_label=1)
    root = fresh("users")
    store.put((root, "alice\n"), "pin", {"text": "Alice's locker code is 4711"})
    hashed = shared_mem.get(store.mapping.memory_id((root, "alice\n"), "pin")).scope.user_id
    assert hashed is not None and hashed.startswith("lg-user-")
    store.put((root, hashed), "pin", {"text": "Someone else's note"})
    lookalike = shared_mem.get(store.mapping.memory_id((root, hashed), "pin")).scope.user_id
    assert lookalike != hashed
    mine = shared_mem.recall("locker code", scope=Scope(user_id=lookalike), limit=5)
    assert "4711" not in " ".join(r.item.content for r in mine)


def test_a_valid_scope_label_stays_the_user_id(store: MementoStore, fresh: Fresh) -> None:
    user = fresh("alice")
    store.put(("memories", user), "k", {"text": "Alice rows on Sundays"})
    recalled = store.memento.recall("rowing", scope=Scope(user_id=user), limit=1)
    assert [r.item.data for r in recalled] == [{"text": "Alice rows on Sundays"}]


def test_batch_accepts_the_root_label_that_only_the_public_put_refuses(
    store: MementoStore, fresh: Fresh
) -> None:
    namespace = ("langgraph", fresh("internal"))
    results = store.batch(
        [
            PutOp(namespace, "k", {"text": "written by LangGraph itself"}),
            GetOp(namespace, "k"),
            SearchOp(namespace, query="written by LangGraph"),
        ]
    )
    got, found = results[1], results[2]
    assert isinstance(got, Item) and got.value == {"text": "written by LangGraph itself"}
    assert isinstance(found, list) and [h.key for h in found if isinstance(h, Item)] == ["k"]
    with pytest.raises(InvalidNamespaceError, match="langgraph"):
        store.put(("langgraph", "x"), "k", {"text": "refused"})


def test_an_index_config_with_embed_is_accepted_and_memento_embeds(
    shared_mem: Memento, fresh: Fresh
) -> None:
    called: list[Any] = []

    def their_embed(texts: Sequence[str]) -> list[list[float]]:
        called.append(texts)
        return [[0.0] * 1536 for _ in texts]

    index: IndexConfig = {"dims": 1536, "embed": their_embed, "fields": ["text"]}
    store = MementoStore(shared_mem, index=index)
    assert store.index_config == {"dims": shared_mem.embedder.dimension, "fields": ["text"]}
    namespace = (fresh("kb"),)
    store.put(namespace, "db", {"text": "Production runs on MariaDB"})
    store.put(namespace, "hike", {"text": "The team hike is in June"})
    assert store.search(namespace, query="which database?")[0].key == "db"
    assert called == []  # the store's own embedder did the work
    # Without ``embed``, ``dims`` can only describe Memento's embedder, so it is checked.
    with pytest.raises(ValueError, match="dims"):
        MementoStore(shared_mem, index={"dims": 1536, "fields": ["text"]})


def test_concurrent_callers_each_see_their_own_writes(store: MementoStore, fresh: Fresh) -> None:
    root = fresh("threads")
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        try:
            start.wait()
            for i in range(5):
                namespace = (root, f"user{n}")
                store.put(namespace, f"k{i}", {"text": f"thread {n} note {i}"})
                item = store.get(namespace, f"k{i}")
                assert item is not None and item.value == {"text": f"thread {n} note {i}"}
                store.search((root,), query=f"note {i}", limit=3)
        except BaseException as err:  # reported below, with the thread's number
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.search((root,), limit=100)) == 40


def test_concurrent_callers_embed_each_text_once_before_writing(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    root = fresh("embed")
    texts = [f"{root} thread {n} says hello" for n in range(6)]
    queries = [f"{root} what did thread {n} say" for n in range(6)]
    embedded = shared_mem.embedder.texts_embedded
    start = threading.Barrier(6)

    def worker(n: int) -> None:
        start.wait()
        store.batch(
            [PutOp((root,), f"k{n}", {"text": texts[n]}), SearchOp((root,), query=queries[n])]
        )

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Each text and each query reached the model once: the grouped write and the recalls
    # found what their callers embedded.
    assert shared_mem.embedder.texts_embedded - embedded == 12
    assert sorted(h.key for h in store.search((root,), limit=10)) == [f"k{n}" for n in range(6)]


def test_a_value_that_cannot_be_embedded_fails_its_own_put_only(
    shared_mem: Memento, fresh: Fresh
) -> None:
    store = MementoStore(shared_mem)  # the whole value is embedded: it must be JSON
    root = fresh("bad")
    with pytest.raises(TypeError, match="JSON serializable"):
        store.batch(
            [PutOp((root,), "good", {"text": "fine"}), PutOp((root,), "bad", {"x": object()})]
        )
    assert store.search((root,)) == []  # nothing of that batch was stored
    store.put((root,), "good", {"text": "fine"})
    assert [h.key for h in store.search((root,))] == ["good"]


def _put_while_the_first_write_is_slow(
    store: MementoStore, root: str, values: dict[int, Any]
) -> tuple[list[int], dict[int, str]]:
    """Put ``values[n]`` under key ``kn`` from one thread each; the first write takes 2 s, so
    the others queue up behind it. Returns the size of each write call and each outcome."""
    writes: list[int] = []
    first_write = threading.Event()

    class Slow:
        @hookimpl
        def memento_on_remember(self, memento: Memento, items: list[MemoryItem]) -> None:
            if any(f"lg:ns:{root}" in item.tags for item in items):
                writes.append(len(items))
                if not first_write.is_set():
                    first_write.set()
                    time.sleep(2)

    outcomes: dict[int, str] = {}

    def worker(n: int) -> None:
        try:
            store.put((root,), f"k{n}", values[n])
            outcomes[n] = "stored"
        except Exception as err:  # the outcome is what the test checks
            outcomes[n] = f"{type(err).__name__}: {err}"

    plugins.manager().register(Slow(), name="slow-observer")
    try:
        first = threading.Thread(target=worker, args=(0,))
        first.start()
        assert first_write.wait(timeout=60)
        others = [threading.Thread(target=worker, args=(n,)) for n in values if n]
        for thread in others:
            thread.start()
        for thread in [first, *others]:
            thread.join()
    finally:
        plugins.manager().unregister(name="slow-observer")
    return writes, outcomes


class ThreadNoting:
    """The test embedder, noting which thread embedded each text."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.threads: dict[int, list[str]] = {}
        self.name, self.dimension = inner.name, inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.threads.setdefault(threading.get_ident(), []).extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.embed_documents([text])[0]


def test_each_caller_embeds_its_own_put_while_another_writes(
    tmp_path: Path, embedder: Embedder, fresh: Fresh
) -> None:
    noting = ThreadNoting(embedder)
    with Memento.open(tmp_path, embedder=noting) as mem:
        store = MementoStore(mem, index={"fields": ["text"]})
        root = fresh("embedding")
        values: dict[int, Any] = {n: {"text": f"parallel note {n}"} for n in range(6)}
        writes, outcomes = _put_while_the_first_write_is_slow(store, root, values)
    assert set(outcomes.values()) == {"stored"} and len(writes) < 6  # they were grouped...
    put_texts = {v["text"] for v in values.values()}
    by_thread = [set(texts) & put_texts for texts in noting.threads.values()]
    # ...but not embedded by the group's leader: each caller embedded its own text.
    assert sorted(len(texts) for texts in by_thread if texts) == [1] * 6


def test_puts_waiting_together_are_written_in_one_call(store: MementoStore, fresh: Fresh) -> None:
    root = fresh("group")
    values: dict[int, Any] = {n: {"text": f"note {n}"} for n in range(8)}
    values[3] = "not a mapping"  # refused before it joins a group

    writes, outcomes = _put_while_the_first_write_is_slow(store, root, values)

    assert outcomes[3] == "TypeError: a store value is a mapping, got str"
    assert all(outcomes[n] == "stored" for n in values if n != 3)
    assert sum(writes) == 7
    assert len(writes) < 7  # the six that queued behind the first write went in fewer calls
    assert sorted(h.key for h in store.search((root,), limit=20)) == [
        f"k{n}" for n in values if n != 3
    ]


def test_a_failing_put_in_a_group_fails_only_its_caller(store: MementoStore, fresh: Fresh) -> None:
    root = fresh("group")
    values: dict[int, Any] = {n: {"text": f"note {n}"} for n in range(6)}
    values[4] = {"text": "note 4", "when": object()}  # not JSON: Memento refuses it

    _, outcomes = _put_while_the_first_write_is_slow(store, root, values)

    assert outcomes[4].startswith("InvalidInput") and "JSON" in outcomes[4]
    assert all(outcomes[n] == "stored" for n in values if n != 4)
    assert sorted(h.key for h in store.search((root,), limit=20)) == [
        f"k{n}" for n in values if n != 4
    ]
    assert store.get((root,), "k4") is None


def test_search_scores_are_memento_scores_best_first(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("kb"),)
    store.put(namespace, "db", {"text": "We moved the production database to MariaDB"})
    store.put(namespace, "coffee", {"text": "The office coffee machine is broken"})
    hits = store.search(namespace, query="production database")
    recalled = shared_mem.recall(
        "production database",
        scope=store.mapping.viewer(),
        filter={"tags": [f"lg:ns:{namespace[0]}"]},
    )
    assert [h.key for h in hits] == ["db", "coffee"]
    # ``item.score`` is the number Memento ranks by (its ``Recalled.score``), not a cosine.
    assert [h.score for h in hits] == pytest.approx([r.score for r in recalled], abs=0.05)
    assert hits[0].score is not None and hits[1].score is not None
    assert hits[0].score > hits[1].score


def _two_callers_preparing(
    group: Group[str], calls: list[list[str]], *, second_submits: bool
) -> None:
    """Callers "a" and "b" both announce their work; "a" submits, and once its call is about to
    start (its work is queued), "b" submits or leaves."""
    both_coming = threading.Barrier(2)

    def caller(name: str, submits: bool) -> None:
        with group.coming():
            both_coming.wait()
            if name == "b":
                while not group._waiting and not calls:  # "a" has submitted (or is done)
                    time.sleep(0.001)
            if submits:
                group.submit([name])

    threads = [
        threading.Thread(target=caller, args=("a", True)),
        threading.Thread(target=caller, args=("b", second_submits)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.timeout(60)
def test_a_grouped_call_waits_for_callers_still_preparing_their_work() -> None:
    calls: list[list[str]] = []
    # A long linger: "a" waits for "b", however slow.
    _two_callers_preparing(Group(calls.append, linger=600), calls, second_submits=True)
    assert calls == [["a", "b"]]


@pytest.mark.timeout(60)
def test_a_caller_leaving_without_work_does_not_hold_the_call_back() -> None:
    calls: list[list[str]] = []
    # Were the call held for the whole linger, the test would time out (after 60 s).
    _two_callers_preparing(Group(calls.append, linger=600), calls, second_submits=False)
    assert calls == [["a"]]


class WritesOf:
    """Notes the size of every write of memories under one root label."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.sizes: list[int] = []

    @hookimpl
    def memento_on_remember(self, memento: Memento, items: list[MemoryItem]) -> None:
        if any(f"lg:ns:{self.root}" in item.tags for item in items):
            self.sizes.append(len(items))


@pytest.mark.parametrize("run", ["batch", "abatch"])
def test_the_puts_of_one_batch_are_one_write(store: MementoStore, fresh: Fresh, run: str) -> None:
    root = fresh("batched")
    ops = [PutOp((root, "facts"), f"k{n}", {"text": f"fact {n} about {root}"}) for n in range(5)]
    noted = WritesOf(root)
    plugins.manager().register(noted, name="writes-of")
    try:
        if run == "batch":
            store.batch(ops)
        else:
            asyncio.run(store.abatch(ops))
    finally:
        plugins.manager().unregister(name="writes-of")
    assert noted.sizes == [5]
    assert {item.key for item in store.search((root,), limit=10)} == {f"k{n}" for n in range(5)}
