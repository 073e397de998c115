"""MementoStore keeps LangGraph's BaseStore contract, with Memento's ranking behind search."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from uuid import uuid4

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memento_core import Embedder, InvalidFilter, Memento, MemoryNotFound, MemoryType, Scope
from memento_langgraph import UNINDEXED, MementoStore

Fresh = Callable[[str], str]


@pytest.fixture
def store(shared_mem: Memento) -> MementoStore:
    return MementoStore(shared_mem, index={"fields": ["text"]})


# ----------------------------------------------------------------------------- get, put, delete


def test_put_then_get_returns_the_value_and_its_address(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("docs"), "alice")
    store.put(namespace, "k1", {"text": "Alice takes her coffee black", "n": 1, "tags": ["a"]})

    item = store.get(namespace, "k1")

    assert item is not None
    assert (item.namespace, item.key) == (namespace, "k1")
    assert item.value == {"text": "Alice takes her coffee black", "n": 1, "tags": ["a"]}
    assert item.created_at == item.updated_at
    assert store.get(namespace, "missing") is None
    assert store.get((fresh("elsewhere"), "alice"), "k1") is None


def test_put_again_replaces_the_value_keeping_created_at(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("docs"),)
    store.put(namespace, "k", {"text": "first version"})
    first = store.get(namespace, "k")
    store.put(namespace, "k", {"text": "second version"})
    second = store.get(namespace, "k")

    assert first is not None and second is not None
    assert second.value == {"text": "second version"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    hits = store.search(namespace, query="version")
    assert [h.value["text"] for h in hits] == ["second version"]


def test_delete_removes_the_item_and_its_memory(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("docs"),)
    store.put(namespace, "k", {"text": "to be deleted"})
    memory_id = store.mapping.memory_id(namespace, "k")
    assert shared_mem.get(memory_id).data == {"text": "to be deleted"}

    store.delete(namespace, "k")
    store.delete(namespace, "never-there")  # deleting a missing key is a no-op

    assert store.get(namespace, "k") is None
    with pytest.raises(MemoryNotFound):
        shared_mem.get(memory_id, include_deleted=True)


def test_an_item_is_a_memory_of_the_user_its_namespace_names(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    alice, bob = fresh("alice"), fresh("bob")
    store.put(("memories", alice), "coffee", {"text": f"{alice} drinks her espresso without sugar"})

    memory = shared_mem.get(store.mapping.memory_id(("memories", alice), "coffee"))
    assert memory.scope == Scope(user_id=alice, project_id="adapter:langgraph")
    assert memory.type is MemoryType.SEMANTIC
    assert memory.content == f"{alice} drinks her espresso without sugar"

    seen_by_alice = shared_mem.recall("espresso without sugar", scope=Scope(user_id=alice))
    seen_by_bob = shared_mem.recall("espresso without sugar", scope=Scope(user_id=bob))
    assert memory.id in [r.item.id for r in seen_by_alice]
    assert memory.id not in [r.item.id for r in seen_by_bob]

    shared_mem.erase_user(alice)
    assert store.get(("memories", alice), "coffee") is None


def test_the_usual_langgraph_namespace_names_its_user_first(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    user = fresh("u1")
    store.put((user, "memories"), "tea", {"text": f"{user} takes green tea"})
    memory = shared_mem.get(store.mapping.memory_id((user, "memories"), "tea"))
    assert memory.scope.user_id == user
    assert shared_mem.erase_user(user).memories == (memory.id,)
    assert store.get((user, "memories"), "tea") is None


def test_namespace_labels_and_keys_never_collide(store: MementoStore, fresh: Fresh) -> None:
    root = fresh("notes")
    store.put((root, "team", "a"), "b\x1ek", {"text": "the first item"})
    store.put((root, "team", "a\x1eb"), "k", {"text": "the second item"})
    first = store.get((root, "team", "a"), "b\x1ek")
    second = store.get((root, "team", "a\x1eb"), "k")
    assert first is not None and first.value == {"text": "the first item"}
    assert second is not None and second.value == {"text": "the second item"}


def test_the_user_label_can_be_moved_or_switched_off(shared_mem: Memento, fresh: Fresh) -> None:
    user = fresh("carol")
    first = MementoStore(shared_mem, user_label=0, project_id=fresh("p1"))
    first.put((user, "notes"), "k", {"text": "hello"})
    none = MementoStore(shared_mem, user_label=None, project_id=fresh("p2"))
    none.put((user, "notes"), "k", {"text": "hello"})

    assert shared_mem.get(first.mapping.memory_id((user, "notes"), "k")).scope.user_id == user
    # Without a user, an item is the store's own: its user is the store's reserved home.
    owner = shared_mem.get(none.mapping.memory_id((user, "notes"), "k")).scope.user_id
    assert owner == none.mapping.home == "adapter:" + none.mapping.project_id


def test_stores_with_different_projects_do_not_see_each_other(
    shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("docs"),)
    one = MementoStore(shared_mem, project_id=fresh("one"))
    two = MementoStore(shared_mem, project_id=fresh("two"))
    one.put(namespace, "k", {"text": "only in the first store"})

    assert two.get(namespace, "k") is None
    assert two.search(namespace, query="first store") == []
    assert two.list_namespaces(prefix=namespace) == []


def test_values_must_be_json(store: MementoStore, fresh: Fresh) -> None:
    with pytest.raises(ValueError, match="JSON"):
        store.put((fresh("docs"),), "k", {"when": object()})


# ----------------------------------------------------------------------------- search


def test_query_search_ranks_with_memento_and_returns_its_scores(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("kb"),)
    store.put(namespace, "db", {"text": "We moved the production database to MariaDB"})
    store.put(namespace, "coffee", {"text": "The office coffee machine is broken"})
    store.put(namespace, "hike", {"text": "The team hike is planned for June"})

    hits = store.search(namespace, query="which database do we run in production?")

    assert hits[0].key == "db"
    scores = [h.score for h in hits if h.score is not None]
    assert len(scores) == len(hits)
    assert scores == sorted(scores, reverse=True)
    recalled = shared_mem.recall(
        "which database do we run in production?",
        scope=store.mapping.viewer(),
        filter={"tags": [f"lg:ns:{namespace[0]}"]},
        limit=1,
    )
    assert recalled[0].item.id == store.mapping.memory_id(namespace, "db")


def test_search_matches_keywords_too(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("kb"),)
    store.put(namespace, "a", {"text": "Ticket QX-7731 is about the login page"})
    store.put(namespace, "b", {"text": "Ticket about the billing page"})

    assert store.search(namespace, query="QX-7731")[0].key == "a"


def test_put_embeds_the_configured_fields_only(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("kb"),)
    store.put(namespace, "hiking", {"text": "Alice loves hiking in the Alps", "note": "kubernetes"})
    store.put(namespace, "k8s", {"text": "Upgrade notes for the kubernetes cluster"})

    hits = store.search(namespace, query="kubernetes")

    assert [h.key for h in hits] == ["k8s", "hiking"]
    assert hits[0].score is not None and hits[1].score is not None
    assert hits[0].score > hits[1].score


def test_per_put_index_paths_override_the_store_fields(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("kb"),)
    value = {"text": "ignored", "meta": {"title": "Quarterly report"}, "parts": ["one", "two"]}
    store.put(namespace, "r", value, index=["meta.title", "parts[*]"])

    memory = shared_mem.get(store.mapping.memory_id(namespace, "r"))
    assert memory.content == "Quarterly report\none\ntwo"


def test_without_an_index_config_the_whole_value_is_embedded(
    shared_mem: Memento, fresh: Fresh
) -> None:
    store = MementoStore(shared_mem)
    namespace = (fresh("kb"),)
    store.put(namespace, "k", {"title": "Lisbon trip", "days": 4})

    memory = shared_mem.get(store.mapping.memory_id(namespace, "k"))
    assert "Lisbon trip" in memory.content and '"days": 4' in memory.content


def test_unindexed_items_never_rank_but_fill_the_page(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("kb"),)
    store.put(namespace, "plain", {"text": "sourdough bread recipe"}, index=False)
    store.put(namespace, "indexed", {"text": "how to feed a sourdough starter"})

    hits = store.search(namespace, query="sourdough bread recipe", limit=5)

    assert [(h.key, h.score is None) for h in hits] == [("indexed", False), ("plain", True)]
    assert store.search(namespace, query="sourdough", limit=1)[0].key == "indexed"
    assert shared_mem.get(store.mapping.memory_id(namespace, "plain")).content == UNINDEXED


def test_search_is_limited_to_the_namespace_prefix(store: MementoStore, fresh: Fresh) -> None:
    root = fresh("root")
    store.put((root, "a"), "k", {"text": "shared words here"})
    store.put((root, "a", "deep"), "k", {"text": "shared words here too"})
    store.put((root, "b"), "k", {"text": "shared words here as well"})

    under_a = store.search((root, "a"), query="shared words")
    everything = store.search((root,), query="shared words")
    filtered_only = store.search((root, "a"))

    assert {h.namespace for h in under_a} == {(root, "a"), (root, "a", "deep")}
    assert len(everything) == 3
    assert {h.namespace for h in filtered_only} == {(root, "a"), (root, "a", "deep")}


def test_search_without_a_query_lists_the_latest_writes_first(
    store: MementoStore, fresh: Fresh
) -> None:
    namespace = (fresh("log"),)
    for key in ("first", "second", "third"):
        store.put(namespace, key, {"text": key})
    store.put(namespace, "first", {"text": "first, edited"})

    hits = store.search(namespace)

    assert [h.key for h in hits] == ["first", "third", "second"]
    assert all(h.score is None for h in hits)


def test_limit_and_offset_page_through_results(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("page"),)
    for n in range(7):
        store.put(namespace, f"k{n}", {"text": f"note number {n} about gardening"})

    for query in (None, "gardening notes"):
        whole = [h.key for h in store.search(namespace, query=query, limit=7)]
        pages = [
            h.key
            for offset in (0, 3, 6)
            for h in store.search(namespace, query=query, limit=3, offset=offset)
        ]
        assert sorted(whole) == [f"k{n}" for n in range(7)]
        assert pages == whole


@pytest.fixture(scope="module")
def fruit(shared_mem: Memento) -> tuple[MementoStore, tuple[str, ...]]:
    """One namespace of fruit shared by the filter cases (they only read it)."""
    store = MementoStore(shared_mem, index={"fields": ["text"]})
    namespace = ("fruit", uuid4().hex[:8])
    values = {
        "apple": {"colour": "red", "price": 1.5, "ripe": False},
        "banana": {"colour": "yellow", "price": 2, "ripe": True},
        "cherry": {"colour": "red", "price": 4, "origin": {"country": "PT", "region": "Fundão"}},
    }
    store.batch(
        [PutOp(namespace, k, {"name": k, "text": f"{k} fruit", **v}) for k, v in values.items()]
        + [PutOp(namespace, "plain", {"text": "no fields"})]
    )
    return store, namespace


@pytest.mark.parametrize(
    ("value_filter", "expected"),
    [
        ({"colour": "red"}, {"apple", "cherry"}),
        ({"colour": {"$eq": "red"}}, {"apple", "cherry"}),
        ({"colour": {"$ne": "red"}}, {"banana", "plain"}),
        ({"price": {"$gt": 2}}, {"cherry"}),
        ({"price": {"$gte": 2}}, {"banana", "cherry"}),
        ({"price": {"$lt": 2}}, {"apple"}),
        ({"price": {"$lte": 2}}, {"apple", "banana"}),
        ({"price": {"$gte": 1, "$lt": 3}}, {"apple", "banana"}),
        ({"colour": "red", "price": {"$lt": 2}}, {"apple"}),
        ({"origin": {"country": "PT"}}, {"cherry"}),
        ({"ripe": True}, {"banana"}),
        ({"ripe": 1}, set()),
        ({"name": {"$gt": "b"}}, {"banana", "cherry"}),
    ],
)
def test_filters_on_values(
    fruit: tuple[MementoStore, tuple[str, ...]],
    value_filter: dict[str, object],
    expected: set[str],
) -> None:
    store, namespace = fruit
    without_query = {h.key for h in store.search(namespace, filter=value_filter)}
    with_query = store.search(namespace, query="fruit", filter=value_filter)

    assert without_query == expected
    assert {h.key for h in with_query} == expected
    assert all(h.score is not None for h in with_query)


def test_a_filter_keeps_searching_past_rejected_hits(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("many"),)
    store.batch(
        [PutOp(namespace, f"k{n}", {"text": f"weather report {n}", "n": n}) for n in range(30)]
    )

    hits = store.search(namespace, query="weather report", filter={"n": {"$gte": 25}}, limit=5)

    assert sorted(h.value["n"] for h in hits) == [25, 26, 27, 28, 29]


def test_unknown_filter_operators_are_refused(store: MementoStore, fresh: Fresh) -> None:
    with pytest.raises(InvalidFilter, match=r"\$regex"):
        store.search((fresh("x"),), filter={"text": {"$regex": "a.*"}})


# ----------------------------------------------------------------------------- namespaces


def test_list_namespaces_by_prefix_suffix_wildcard_depth_and_page(
    store: MementoStore, fresh: Fresh
) -> None:
    root = fresh("ns")
    for namespace in [
        (root, "a", "b"),
        (root, "a", "c", "v1"),
        (root, "a", "d", "v1"),
        (root, "b", "c"),
        (root, "b", "d", "v2"),
    ]:
        store.put(namespace, "k", {"text": "x"})

    assert store.list_namespaces(prefix=(root, "a")) == [
        (root, "a", "b"),
        (root, "a", "c", "v1"),
        (root, "a", "d", "v1"),
    ]
    assert store.list_namespaces(prefix=(root,), suffix=("v1",)) == [
        (root, "a", "c", "v1"),
        (root, "a", "d", "v1"),
    ]
    assert store.list_namespaces(prefix=(root, "*", "d")) == [
        (root, "a", "d", "v1"),
        (root, "b", "d", "v2"),
    ]
    assert store.list_namespaces(prefix=(root,), suffix=("*", "c")) == [(root, "b", "c")]
    assert store.list_namespaces(prefix=(root,), max_depth=2) == [(root, "a"), (root, "b")]
    assert store.list_namespaces(prefix=(root,), limit=2, offset=1) == [
        (root, "a", "c", "v1"),
        (root, "a", "d", "v1"),
    ]
    store.delete((root, "b", "c"), "k")
    assert (root, "b", "c") not in store.list_namespaces(prefix=(root,))


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put(("bad.label",), "k", {"text": "x"}),
        lambda s: s.put((), "k", {"text": "x"}),
        lambda s: s.put(("langgraph", "x"), "k", {"text": "x"}),
        lambda s: s.put(("a", ""), "k", {"text": "x"}),
        lambda s: s.get(("a.b",), "k"),
        lambda s: s.search(("a.b",)),
        lambda s: s.list_namespaces(prefix=("a.b",)),
        lambda s: s.batch([GetOp(("x", "y.z"), "k")]),
        lambda s: s.batch([ListNamespacesOp((MatchCondition("suffix", ("a.b",)),))]),
    ],
)
def test_langgraph_namespace_rules_are_enforced(
    store: MementoStore, call: Callable[..., object]
) -> None:
    with pytest.raises(InvalidNamespaceError):
        call(store)


# ----------------------------------------------------------------------------- batches


def test_batch_runs_ops_in_order_with_one_result_each(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("batch"),)
    results = store.batch(
        [
            GetOp(namespace, "k"),
            PutOp(namespace, "k", {"text": "one"}),
            PutOp(namespace, "k", {"text": "two"}),
            GetOp(namespace, "k"),
            SearchOp(namespace, query="two"),
            PutOp(namespace, "k", None),
            GetOp(namespace, "k"),
            ListNamespacesOp((MatchCondition("prefix", namespace),)),
        ]
    )

    assert len(results) == 8
    assert results[0] is None and results[1] is None and results[2] is None
    assert isinstance(results[3], Item) and results[3].value == {"text": "two"}
    hits = results[4]
    assert isinstance(hits, list) and [h.key for h in hits if isinstance(h, Item)] == ["k"]
    assert results[5] is None and results[6] is None
    assert results[7] == []


async def test_async_methods_work_and_leave_the_event_loop_free(
    store: MementoStore, fresh: Fresh
) -> None:
    namespace = (fresh("async"), "alice")
    await store.aput(namespace, "k", {"text": "asynchronous hello"})
    item = await store.aget(namespace, "k")
    assert item is not None and item.value == {"text": "asynchronous hello"}
    assert await store.alist_namespaces(prefix=namespace[:1]) == [namespace]

    search = asyncio.create_task(store.asearch(namespace, query="hello"))
    turns = 0
    while not search.done():
        await asyncio.sleep(0)
        turns += 1
    assert [h.key for h in search.result()] == ["k"]
    assert turns > 1  # the loop kept running other work while the search ran

    await store.adelete(namespace, "k")
    assert await store.aget(namespace, "k") is None
    assert (await store.abatch([GetOp(namespace, "k")])) == [None]


# ----------------------------------------------------------------------------- TTL


def test_ttl_becomes_the_memorys_retention(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("ttl"),)
    assert store.supports_ttl
    store.put(namespace, "short", {"text": "short-lived"}, ttl=30)
    store.put(namespace, "forever", {"text": "kept"})

    short = shared_mem.get(store.mapping.memory_id(namespace, "short"))
    kept = shared_mem.get(store.mapping.memory_id(namespace, "forever"))
    assert short.retention == timedelta(minutes=30)
    assert short.expires_at is not None
    lifetime = short.expires_at - short.created_at
    assert timedelta(minutes=30) <= lifetime < timedelta(minutes=30, seconds=30)
    assert kept.retention is None and kept.expires_at is None


def test_reads_push_the_expiry_out_unless_told_not_to(
    store: MementoStore, shared_mem: Memento, fresh: Fresh
) -> None:
    namespace = (fresh("ttl"),)
    store.put(namespace, "k", {"text": "refresh me"}, ttl=60)
    memory_id = store.mapping.memory_id(namespace, "k")
    written = shared_mem.get(memory_id).expires_at
    assert written is not None

    store.get(namespace, "k", refresh_ttl=False)
    store.search(namespace, refresh_ttl=False)
    assert shared_mem.get(memory_id).expires_at == written

    store.get(namespace, "k")
    after_get = shared_mem.get(memory_id).expires_at
    assert after_get is not None and after_get > written
    store.search(namespace)
    after_search = shared_mem.get(memory_id).expires_at
    assert after_search is not None and after_search > after_get


def test_ttl_config_sets_the_default_and_the_read_refresh(
    shared_mem: Memento, fresh: Fresh
) -> None:
    store = MementoStore(shared_mem, ttl={"default_ttl": 15, "refresh_on_read": False})
    namespace = (fresh("ttl"),)
    store.put(namespace, "k", {"text": "default ttl"})
    memory_id = store.mapping.memory_id(namespace, "k")
    written = shared_mem.get(memory_id)
    assert written.retention == timedelta(minutes=15)

    store.get(namespace, "k")
    assert shared_mem.get(memory_id).expires_at == written.expires_at
    store.get(namespace, "k", refresh_ttl=True)
    refreshed = shared_mem.get(memory_id).expires_at
    assert refreshed is not None and written.expires_at is not None
    assert refreshed > written.expires_at


def test_expired_items_are_gone_from_every_read(store: MementoStore, fresh: Fresh) -> None:
    namespace = (fresh("ttl"),)
    store.put(namespace, "gone", {"text": "ephemeral note"}, ttl=0.001)  # 60 ms
    store.put(namespace, "kept", {"text": "durable note"})
    time.sleep(0.5)

    assert store.get(namespace, "gone") is None
    assert [h.key for h in store.search(namespace)] == ["kept"]
    assert [h.key for h in store.search(namespace, query="ephemeral note")] == ["kept"]


# ----------------------------------------------------------------------------- configuration


def test_the_index_config_dims_must_be_the_memento_embedders(shared_mem: Memento) -> None:
    with pytest.raises(ValueError, match="dims"):
        MementoStore(shared_mem, index={"dims": 1536, "fields": ["text"]})
    ok = MementoStore(shared_mem, index={"dims": 384, "fields": ["text"]})
    assert ok.index_config == {"dims": 384, "fields": ["text"]}


def test_open_wraps_a_new_memento(tmp_path: Path, embedder: Embedder) -> None:
    store = MementoStore.open(tmp_path, embedder=embedder, memory_type="procedural")
    store.put(("how-to",), "deploy", {"text": "run make deploy"})
    memory = store.memento.get(store.mapping.memory_id(("how-to",), "deploy"))
    assert memory.type is MemoryType.PROCEDURAL
