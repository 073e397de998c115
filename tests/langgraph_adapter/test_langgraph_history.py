"""A LangGraph store keeps LangGraph's semantics (a put replaces, a get gives the latest
value), while its items' history is readable through core (``Memento.changes``)."""

from __future__ import annotations

from collections.abc import Callable

from memento_core import Memento
from memento_langgraph import MementoStore


def test_an_items_puts_are_its_history_in_core(
    shared_mem: Memento, fresh: Callable[[str], str]
) -> None:
    store = MementoStore(shared_mem)
    namespace = (fresh("user"), "memories")
    store.put(namespace, "locker", {"text": "The gym locker code is 4471"})
    store.put(namespace, "locker", {"text": "The gym locker code is 9012"})
    store.put(namespace, "locker", {"text": "The gym locker code is 9012"})  # unchanged

    got = store.get(namespace, "locker")
    assert got is not None and got.value == {"text": "The gym locker code is 9012"}
    memory_id = store.mapping.memory_id(namespace, "locker")
    changes = shared_mem.changes(memory_id)
    assert [c.kind.value for c in changes] == ["created", "updated"]
    assert changes[0].after["data"] == {"text": "The gym locker code is 4471"}
    assert changes[1].before["data"] == {"text": "The gym locker code is 4471"}
    assert changes[1].after["data"] == {"text": "The gym locker code is 9012"}

    store.delete(namespace, "locker")
    assert store.get(namespace, "locker") is None
    assert not [i for i in shared_mem.items(include_deleted=True) if i.id == memory_id]
