"""After a hard forget or ``erase_user``, no erased id stays in the change feed or the
partition directory, and the erased user's name stays in no raw record; other processes
still stop recalling what was erased (issue 31). Read from the raw Chroma collections."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import chromadb

from memento_core import Memento, Scope

if TYPE_CHECKING:
    from conftest import StoreFactory

ZELDA = Scope(user_id="zelda-erased-31", project_id="castle")
KEPT = Scope(user_id="link-keeper", project_id="castle")


def _client(factory: StoreFactory) -> Any:
    if factory.mode == "embedded":
        return chromadb.PersistentClient(path=str(factory.root / "main"))
    host, port = str(factory.url).rsplit("//", 1)[1].split(":")
    return chromadb.HttpClient(host=host, port=int(port))


def _raw(factory: StoreFactory, mem: Memento) -> dict[str, str]:
    """Every collection of the store, as the text of its ids, documents and metadata."""
    client = _client(factory)
    found = {}
    for collection in client.list_collections():
        name = collection if isinstance(collection, str) else collection.name
        if name.startswith(mem.collection_prefix + "_"):
            records = client.get_collection(name).get(include=["documents", "metadatas"])
            found[name] = json.dumps(
                [records["ids"], records["documents"], records["metadatas"]], ensure_ascii=False
            )
    return found


def _fill(mem: Memento) -> tuple[list[str], str, str]:
    zelda = [
        mem.remember("Zelda hides the key under the third stone", scope=ZELDA),
        mem.remember("Zelda's team plan: open the gate at dawn", scope=ZELDA, privacy="team"),
        mem.remember("Zelda says the bridge is public knowledge", scope=ZELDA, privacy="public"),
    ]
    a = mem.remember("The keeper's own note on lanterns", scope=KEPT, privacy="public")
    b = mem.remember("The keeper's note on the well", scope=KEPT, privacy="public")
    mem.link(a, "cause_of", b, scope=Scope(user_id=ZELDA.user_id))  # made by zelda
    mem.update(zelda[0], privacy="team", scope=ZELDA)  # listed in two partitions since
    return zelda, a, b


def test_hard_forget_leaves_no_id_in_the_feed_or_the_directory(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:
        zelda, a, _ = _fill(mem)
        for viewer in (ZELDA, KEPT, Scope()):
            mem.recall("key gate bridge", scope=viewer)  # partitions loaded and listed
        mem.forget(zelda[0], hard=True, scope=ZELDA)
        # Later writes to the same partitions append to the writer's records: not the id.
        mem.remember("Zelda's second key is in the well", scope=ZELDA, privacy="team")
        raw = _raw(store_factory, mem)
        for name, text in raw.items():
            assert zelda[0] not in text, name
        assert zelda[1] in raw[f"{mem.collection_prefix}_items"]  # the others stay
        assert a in raw[f"{mem.collection_prefix}_changes"]


def test_erase_user_leaves_no_id_and_no_name_in_raw_storage(
    store_factory: StoreFactory,
) -> None:
    with store_factory.open() as mem:
        zelda, a, b = _fill(mem)
        mem.chat("zelda-session", scope=ZELDA).append({"role": "user", "content": "I am Zelda"})
        for viewer in (ZELDA, KEPT, Scope()):
            mem.recall("key gate bridge", scope=viewer)
        mem.erase_user("zelda-erased-31")
        for name, text in _raw(store_factory, mem).items():
            assert "zelda-erased-31" not in text, name
            for memory_id in zelda:
                assert memory_id not in text, name
        assert [link.made_by for link in mem.all_links()] == [None]
        assert {i.id for i in mem.items()} == {a, b}


def test_another_process_stops_recalling_an_erased_memory(
    writer_and_reader: tuple[Memento, Memento],
) -> None:
    writer, reader = writer_and_reader
    secret = writer.remember("Zelda hides the key under the third stone", scope=ZELDA)
    other = writer.remember("Zelda hides a spare key in the shed", scope=ZELDA)
    deadline = time.monotonic() + 30
    while secret not in {r.item.id for r in reader.recall("key stone", scope=ZELDA)}:
        assert time.monotonic() < deadline, "the reader never saw the write"
    writer.forget(secret, hard=True, scope=ZELDA)
    while secret in {r.item.id for r in reader.recall("key stone", scope=ZELDA)}:
        assert time.monotonic() < deadline, "the reader still recalls the erased memory"
    assert other in {r.item.id for r in reader.recall("key stone", scope=ZELDA)}
    assert not reader.index_status().memories or secret not in {
        r.item.id for r in reader.recall("third stone", scope=ZELDA, limit=50)
    }
