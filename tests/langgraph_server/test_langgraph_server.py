"""Memento behind a real LangGraph server: ``langgraph dev`` on the example's ``langgraph.json``
(``memento_langgraph.server``'s store and checkpointer on the session's ``chroma run``), driven
with ``langgraph-sdk`` and plain HTTP, compared with the same server on LangGraph's own store
and checkpointer (the reference, whose store embeds with the same MiniLM model).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import uuid4

import httpx
import pytest
from _server_support import LangGraphServer, prepare_project, start
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Command

from memento_core import Embedder, Memento, Scope

pytestmark = pytest.mark.server

FRESHNESS = 0.3
"""Core's bound (0.25 s) for a write of one process to show in another's reads."""
RUN_WAIT_SECONDS = 120.0
"""A guard against a run that never reaches the state waited for, not a timing assertion."""


@pytest.fixture
def fresh() -> Callable[[str], str]:
    suffix = uuid4().hex[:8]
    return lambda name: f"{name}{suffix}"


@pytest.fixture
async def client(langgraph_server: LangGraphServer) -> AsyncIterator[LangGraphClient]:
    async with get_client(url=langgraph_server.url) as sdk:
        yield sdk


@pytest.fixture
async def reference(reference_server: LangGraphServer) -> AsyncIterator[LangGraphClient]:
    async with get_client(url=reference_server.url) as sdk:
        yield sdk


@pytest.fixture
def mem(chroma_server: str, store_prefix: str, embedder: Embedder) -> Any:
    """The server's Memento store, opened by the test process too."""
    with Memento.open(url=chroma_server, collection_prefix=store_prefix, embedder=embedder) as m:
        yield m


# The tests pass the SDK's clients on as ``Any``: its TypedDicts type the JSON the server
# returns more loosely than the tests read it.


def _user_says(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _note(text: str, kind: str, year: int) -> dict[str, Any]:
    return {"text": text, "kind": kind, "year": year}


def _items(found: dict[str, Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [(tuple(i["namespace"]), i["key"], i["value"]) for i in found["items"]]


async def _both(clients: tuple[Any, Any], call: Callable[[Any], Any]) -> tuple[Any, Any]:
    ours, theirs = clients
    return await call(ours), await call(theirs)


# ---------------------------------------------------------------------------- start-up


def test_server_uses_memento_and_names_nothing_missing(langgraph_server: LangGraphServer) -> None:
    log = langgraph_server.log()
    assert "Using custom checkpointer: MementoSaver" in log
    assert "Using custom store: <memento_langgraph.store.MementoStore" in log
    # langgraph-api warns at start for each of adelete_thread, adelete_for_runs, acopy_thread
    # and aprune a custom checkpointer lacks.
    assert "Custom checkpointer missing" not in log


# ---------------------------------------------------------------------------- the store API


async def test_store_api_answers_as_the_built_in_store(
    client: Any, reference: Any, fresh: Callable[[str], str]
) -> None:
    root = fresh("shop")
    items = [
        ((root, "alice"), "a1", _note("Alice's sister Maya lives in Porto.", "family", 2020)),
        ((root, "alice"), "a2", _note("Alice drinks green tea every morning.", "habit", 2022)),
        ((root, "bob"), "b1", _note("Bob plays the cello in an orchestra.", "hobby", 2021)),
        ((root, "docs", "guides"), "g1", _note("How to reset a forgotten password.", "doc", 2019)),
    ]
    both = (client, reference)
    for namespace, key, value in items:
        for sdk in both:
            await sdk.store.put_item(namespace, key, value)

    ours, theirs = await _both(both, lambda c: c.store.get_item([root, "alice"], "a1"))
    assert {k: ours[k] for k in ("namespace", "key", "value")} == {
        k: theirs[k] for k in ("namespace", "key", "value")
    }
    assert ours["created_at"] and ours["updated_at"]

    # Without a query: the same items, filters included (a missing field matches nothing).
    searches: list[dict[str, Any]] = [
        {},
        {"filter": {"kind": "habit"}},
        {"filter": {"year": {"$gte": 2021}}},
        {"filter": {"kind": {"$ne": "doc"}, "year": {"$lt": 2022}}},
        {"filter": {"no_such_field": 1}},
    ]
    for kwargs in searches:
        ours = await client.store.search_items([root], limit=20, **kwargs)
        theirs = await reference.store.search_items([root], limit=20, **kwargs)
        assert sorted(_items(ours)) == sorted(_items(theirs)), kwargs
        assert all(i["score"] is None for i in ours["items"])
    assert (
        _items(await client.store.search_items([root], filter={"no_such_field": 1}, limit=20)) == []
    )

    # With a query: the same best item; scores are Memento's (the README's table).
    ours, theirs = await _both(
        both, lambda c: c.store.search_items([root], query="where does her sister live?", limit=2)
    )
    assert ours["items"][0]["key"] == theirs["items"][0]["key"] == "a1"
    assert all(isinstance(i["score"], float) for i in ours["items"])
    ours, theirs = await _both(
        both,
        lambda c: c.store.search_items(
            [root], query="morning drink", filter={"kind": "habit"}, limit=5
        ),
    )
    assert _items(ours) == _items(theirs) == [((root, "alice"), "a2", items[1][2])]

    listings: list[dict[str, Any]] = [
        {"prefix": [root]},
        {"prefix": [root], "max_depth": 2},
        {"prefix": [root], "suffix": ["guides"]},
        {"prefix": [root], "limit": 1, "offset": 1},
    ]
    for kwargs in listings:
        ours = await client.store.list_namespaces(**kwargs)
        assert ours == await reference.store.list_namespaces(**kwargs), kwargs

    await _both(both, lambda c: c.store.delete_item([root, "alice"], "a2"))
    ours, theirs = await _both(both, lambda c: c.store.get_item([root, "alice"], "a2"))
    assert ours is None and theirs is None
    ours, theirs = await _both(both, lambda c: c.store.search_items([root, "alice"], limit=20))
    assert _items(ours) == _items(theirs) == [((root, "alice"), "a1", items[0][2])]


async def test_unindexed_items_come_after_ranked_ones(
    client: Any, reference: Any, fresh: Callable[[str], str]
) -> None:
    root = fresh("notes")
    both = (client, reference)
    await _both(both, lambda c: c.store.put_item([root], "ranked", {"text": "the boat is blue"}))
    await _both(
        both, lambda c: c.store.put_item([root], "plain", {"text": "a blue boat"}, index=False)
    )
    ours, theirs = await _both(
        both, lambda c: c.store.search_items([root], query="blue boat", limit=5)
    )
    assert [i["key"] for i in ours["items"]] == [i["key"] for i in theirs["items"]]
    assert [i["key"] for i in ours["items"]] == ["ranked", "plain"]
    assert ours["items"][1]["score"] is None


async def test_ttl_passed_by_the_server_expires_the_item(
    langgraph_server: LangGraphServer, fresh: Callable[[str], str]
) -> None:
    root = fresh("ttl")
    async with httpx.AsyncClient(base_url=langgraph_server.url, timeout=60) as http:
        short = {"namespace": [root], "key": "short", "value": {"text": "soon gone"}, "ttl": 0.005}
        kept = {"namespace": [root], "key": "kept", "value": {"text": "stays"}, "ttl": 60}
        for body in (short, kept):
            assert (await http.put("/store/items", json=body)).status_code == 204
        await asyncio.sleep(0.6)  # past the 0.3 s retention of "short"
        gone = await http.get("/store/items", params={"namespace": root, "key": "short"})
        assert gone.status_code == 200 and gone.json() is None
        listed = await http.post("/store/items/search", json={"namespace_prefix": [root]})
        assert [i["key"] for i in listed.json()["items"]] == ["kept"]


# ---------------------------------------------------------------------------- bad input


BAD_PUTS: list[tuple[str, Any]] = [
    ("a label with a period", {"namespace": ["a.b"], "key": "k", "value": {"text": "x"}}),
    ("an empty label", {"namespace": [""], "key": "k", "value": {"text": "x"}}),
    ("no namespace", {"namespace": [], "key": "k", "value": {"text": "x"}}),
    ("a label that is a number", {"namespace": [1], "key": "k", "value": {"text": "x"}}),
    ("the reserved root label", {"namespace": ["langgraph"], "key": "k", "value": {"text": "x"}}),
    ("a string value", {"namespace": ["ok"], "key": "k", "value": "just text"}),
    ("a list value", {"namespace": ["ok"], "key": "k", "value": [1, 2]}),
    ("no key", {"namespace": ["ok"], "value": {"text": "x"}}),
]


async def test_bad_input_gets_the_built_in_stores_4xx_and_harms_nothing(
    langgraph_server: LangGraphServer,
    reference_server: LangGraphServer,
    fresh: Callable[[str], str],
) -> None:
    root = fresh("safe")
    kept = {"text": "the kept item", "n": 1}
    async with (
        httpx.AsyncClient(base_url=langgraph_server.url, timeout=120) as ours,
        httpx.AsyncClient(base_url=reference_server.url, timeout=120) as theirs,
    ):
        for http in (ours, theirs):
            body = {"namespace": [root], "key": "kept", "value": kept}
            assert (await http.put("/store/items", json=body)).status_code == 204
        for what, body in BAD_PUTS:
            body = {**body, "namespace": body.get("namespace")} if "namespace" in body else body
            answer, expected = (
                await ours.put("/store/items", json=body),
                await theirs.put("/store/items", json=body),
            )
            assert 400 <= answer.status_code < 500, (what, answer.text)
            assert answer.status_code == expected.status_code, (what, answer.text, expected.text)
        for raw in (b"{not json", b'{"namespace": ["ok"], "key": "k", "value": NaN}'):
            answer = await ours.put("/store/items", content=raw)
            assert answer.status_code == (await theirs.put("/store/items", content=raw)).status_code
            assert 400 <= answer.status_code < 500
        for query in ({"namespace": "a..b", "key": "k"}, {"namespace": root}):
            answer = await ours.get("/store/items", params=query)
            assert (
                answer.status_code == (await theirs.get("/store/items", params=query)).status_code
            )
            assert 400 <= answer.status_code < 500, query
        bad_search = {"namespace_prefix": ["a.b"]}
        answer = await ours.post("/store/items/search", json=bad_search)
        assert (
            answer.status_code
            == (await theirs.post("/store/items/search", json=bad_search)).status_code
        )
        assert 400 <= answer.status_code < 500

        # A huge value is stored whole, as the built-in store does.
        huge = {"text": "a very long note", "blob": "x" * 2_000_000}
        for http in (ours, theirs):
            body = {"namespace": [root], "key": "huge", "value": huge}
            assert (await http.put("/store/items", json=body)).status_code == 204
        got = await ours.get("/store/items", params={"namespace": root, "key": "huge"})
        assert got.json()["value"] == huge

        # Nothing stored was harmed.
        got = await ours.get("/store/items", params={"namespace": root, "key": "kept"})
        assert got.json()["value"] == kept
        listed = await ours.post("/store/items/search", json={"namespace_prefix": [root]})
        assert sorted(i["key"] for i in listed.json()["items"]) == ["huge", "kept"]
        for what, body in BAD_PUTS:
            if body.get("namespace") == ["ok"]:
                missing = await ours.get("/store/items", params={"namespace": "ok", "key": "k"})
                assert missing.json() is None, what


# ---------------------------------------------------------------------------- the checkpointer


async def test_threads_runs_history_and_update_state(
    client: Any, fresh: Callable[[str], str]
) -> None:
    user = fresh("u")
    config = {"configurable": {"user_id": user}}
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "agent", input=_user_says("I collect old maps."), config=config)
    await client.runs.wait(tid, "agent", input=_user_says("What do I collect?"), config=config)

    state = await client.threads.get_state(tid)
    replies = [m["content"] for m in state["values"]["messages"] if m["type"] == "ai"]
    assert replies == [
        "Thanks, I'll remember that.",
        "From what you told me before: I collect old maps.",
    ]
    history = await client.threads.get_history(tid, limit=100)
    assert history[0]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    steps = [h["metadata"]["step"] for h in history]
    assert steps == sorted(steps, reverse=True) and len(history) >= 6
    assert len({h["checkpoint"]["checkpoint_id"] for h in history}) == len(history)

    await client.threads.update_state(
        tid, {"messages": [{"role": "ai", "content": "(a note added by hand)"}]}, as_node="chatbot"
    )
    updated = await client.threads.get_state(tid)
    assert updated["values"]["messages"][-1]["content"] == "(a note added by hand)"
    assert len(await client.threads.get_history(tid, limit=100)) == len(history) + 1

    # The state of an older checkpoint is still there.
    first_reply = next(h for h in history if len(h["values"].get("messages", [])) == 2)
    old = await client.threads.get_state(
        tid, checkpoint_id=first_reply["checkpoint"]["checkpoint_id"]
    )
    assert [m["content"] for m in old["values"]["messages"]] == [
        "I collect old maps.", "Thanks, I'll remember that."
    ]  # fmt: skip


async def test_interrupt_and_resume(client: Any, fresh: Callable[[str], str]) -> None:
    user = fresh("u")
    config = {"configurable": {"user_id": user, "confirm": True}}
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "agent", input=_user_says("My locker code is 4411."), config=config)
    paused = await client.threads.get_state(tid)
    assert paused["next"] == ["remember"]
    assert paused["tasks"][0]["interrupts"][0]["value"] == {"remember": "My locker code is 4411."}
    assert (await client.store.search_items(["memories", user]))["items"] == []

    await client.runs.wait(tid, "agent", command=Command(resume=True), config=config)
    done = await client.threads.get_state(tid)
    assert done["next"] == []
    found = await client.store.search_items(["memories", user], query="locker code")
    assert [i["value"]["text"] for i in found["items"]] == ["My locker code is 4411."]

    # Declined: nothing more is remembered.
    await client.runs.wait(tid, "agent", input=_user_says("My PIN is 9999."), config=config)
    await client.runs.wait(tid, "agent", command=Command(resume=False), config=config)
    found = await client.store.search_items(["memories", user], limit=10)
    assert [i["value"]["text"] for i in found["items"]] == ["My locker code is 4411."]


async def _wait_for(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + RUN_WAIT_SECONDS
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


async def test_rollback_leaves_no_checkpoint_of_the_cancelled_run(client: Any) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "slow", input=_user_says("slow: take your time"))

    async def started() -> bool:
        history = await client.threads.get_history(tid, limit=10)
        return any(h["metadata"].get("run_id") == first["run_id"] for h in history)

    await _wait_for(started, "the first run's checkpoints")
    second = await client.runs.create(
        tid, "slow", input=_user_says("quick"), multitask_strategy="rollback"
    )
    await client.runs.join(tid, second["run_id"])

    history = await client.threads.get_history(tid, limit=100)
    assert history, "the second run's checkpoints"
    assert {h["metadata"].get("run_id") for h in history} == {second["run_id"]}
    state = await client.threads.get_state(tid)
    assert [m["content"] for m in state["values"]["messages"]] == ["quick", "started", "done"]


async def test_copied_thread_has_the_same_history(
    client: Any, langgraph_server: LangGraphServer, fresh: Callable[[str], str]
) -> None:
    config = {"configurable": {"user_id": fresh("u")}}
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "agent", input=_user_says("I was born in Oslo."), config=config)
    await client.runs.wait(tid, "agent", input=_user_says("Where was I born?"), config=config)
    # The SDK's ``threads.copy`` drops the answer, which names the new thread.
    async with httpx.AsyncClient(base_url=langgraph_server.url, timeout=60) as http:
        answer = await http.post(f"/threads/{tid}/copy")
    assert answer.status_code == 200, answer.text
    copy_id = answer.json()["thread_id"]
    assert copy_id != tid

    source = await client.threads.get_history(tid, limit=100)
    copied = await client.threads.get_history(copy_id, limit=100)
    assert [h["values"] for h in copied] == [h["values"] for h in source]
    assert [h["next"] for h in copied] == [h["next"] for h in source]
    assert [h["metadata"]["step"] for h in copied] == [h["metadata"]["step"] for h in source]

    # The copy goes its own way.
    await client.runs.wait(copy_id, "agent", input=_user_says("I like rain."), config=config)
    assert len(await client.threads.get_history(tid, limit=100)) == len(source)


async def test_deleting_a_thread_deletes_its_checkpoints(
    client: Any, mem: Memento, fresh: Callable[[str], str]
) -> None:
    config = {"configurable": {"user_id": fresh("u")}}
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "agent", input=_user_says("Delete me later."), config=config)
    from memento_langgraph import MementoSaver

    saver = MementoSaver(mem, archive_on_delete=False)
    assert saver.get_tuple({"configurable": {"thread_id": tid}}) is not None
    await client.threads.delete(tid)
    assert saver.get_tuple({"configurable": {"thread_id": tid}}) is None


# ---------------------------------------------------------------------------- memories


async def test_graph_memories_reach_search_recall_and_erasure(
    client: Any, mem: Memento, fresh: Callable[[str], str]
) -> None:
    user = fresh("u")
    config = {"configurable": {"user_id": user}}
    thread = await client.threads.create()
    await client.runs.wait(
        thread["thread_id"],
        "agent",
        input=_user_says("I keep my bike in the garage."),
        config=config,
    )
    # Another thread of the same user is answered from it.
    other = await client.threads.create()
    answer = await client.runs.wait(
        other["thread_id"], "agent", input=_user_says("Where is my bike?"), config=config
    )
    assert "garage" in answer["messages"][-1]["content"]

    found = await client.store.search_items(["memories", user], query="bike")
    assert [i["value"]["text"] for i in found["items"]] == ["I keep my bike in the garage."]
    recalled = mem.recall("where is my bike", scope=Scope(user_id=user))
    assert [r.item.content for r in recalled] == ["I keep my bike in the garage."]

    report = mem.erase_user(user)
    assert len(report.memories) >= 1
    assert mem.recall("where is my bike", scope=Scope(user_id=user)) == []
    time.sleep(FRESHNESS)
    found = await client.store.search_items(["memories", user], query="bike")
    assert found["items"] == []
    listed = await client.store.search_items(["memories", user])
    assert listed["items"] == []


async def test_two_servers_on_one_store_see_each_others_writes(
    client: Any,
    server_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    fresh: Callable[[str], str],
) -> None:
    workdir = prepare_project(tmp_path_factory.mktemp("langgraph-second"))
    second = start(workdir, server_env, name="second")
    try:
        async with get_client(url=second.url) as other:
            root = fresh("team")
            await client.store.put_item([root], "from-a", {"text": "written through server A"})
            await other.store.put_item([root], "from-b", {"text": "written through server B"})
            time.sleep(FRESHNESS)
            for sdk in (client, other):
                got = await sdk.store.get_item([root], "from-a")
                assert got is not None and got["value"] == {"text": "written through server A"}
                listed = await sdk.store.search_items([root], query="written through server B")
                assert listed["items"][0]["key"] == "from-b"
                assert sorted(i["key"] for i in listed["items"]) == ["from-a", "from-b"]
            await other.store.delete_item([root], "from-a")
            time.sleep(FRESHNESS)
            assert await client.store.get_item([root], "from-a") is None
    finally:
        assert second.stop() == 0, second.log()[-3000:]
    # Its shutdown left the store and the checkpointer, and the last one closed the Memento.
    assert "memento_langgraph.server closed the Memento store" in second.log()
