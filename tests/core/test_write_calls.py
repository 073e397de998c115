"""What one write costs in Chroma calls: each call is a durable commit (milliseconds), so a
single ``remember`` makes one read (is this id stored?; on a server a second: is the memory
it follows still there?) and, on a server, three writes (the
memory, its partition directory record, the change-feed entry); on an embedded store two, the
feed entry listing it in the directory until the writer folds (``_directory``). It reads
nothing it already knows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import pytest
from chromadb.api.models.Collection import Collection

from memento_core import Memento, MemoryDraft, Scope

if TYPE_CHECKING:
    from conftest import StoreFactory

ALICE = Scope(user_id="alice")


@pytest.fixture
def chroma_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every call a Chroma collection answers, as ``<collection suffix>.<method>``."""
    calls: Counter[str] = Counter()
    for method in ("add", "upsert", "update", "get", "delete", "query"):
        original = getattr(Collection, method)

        def counted(self: Any, *args: Any, _m: str = method, _o: Any = original, **kw: Any) -> Any:
            calls[f"{self.name.rsplit('_', 1)[-1]}.{_m}"] += 1
            return _o(self, *args, **kw)

        monkeypatch.setattr(Collection, method, counted)
    yield calls


def _writes(calls: Counter[str]) -> Counter[str]:
    return Counter({k: n for k, n in calls.items() if not k.endswith(".get")})


def test_one_remember_is_one_read_and_two_or_three_writes(
    mem: Memento, store_factory: StoreFactory, chroma_calls: Counter[str]
) -> None:
    mem.remember("Alice's first note: the budget review moved", scope=ALICE)  # opens records
    chroma_calls.clear()
    mem.remember("Alice's second note: the soup needs paprika", scope=ALICE)
    listed = {} if store_factory.mode == "embedded" else {"partitions.upsert": 1}
    assert _writes(chroma_calls) == {"items.add": 1, "changes.add": 1} | listed
    # A server writer appends a directory record of its own (never rewriting one, so it reads
    # none), and reads the memory this one follows again after storing: another process may
    # have erased it meanwhile. Embedded, this process is the sole writer and knows both.
    reads = {"items.get": 1 if store_factory.mode == "embedded" else 2}
    # On a server, the list of mirrored partitions is read again at most every 0.25 s (another
    # process may start one); the embedded store's sole writer read it with the first write.
    catalog = chroma_calls.pop("meta.get", 0)
    assert catalog <= (0 if store_factory.mode == "embedded" else 1)
    assert {k: n for k, n in chroma_calls.items() if k.endswith(".get")} == reads


def test_a_large_batch_reuses_vectors_of_identical_text_and_a_small_one_embeds(
    store_factory: StoreFactory,
) -> None:
    """Identical text stored in another scope: a batch of ``REUSE_AT`` texts reads its vectors
    from the store; one text is embedded (cheaper than the store-wide read)."""
    texts = [f"shared fact {n} {uuid4().hex}" for n in range(16)]
    with store_factory.open() as mem:
        mem.remember_many([MemoryDraft(content=t, scope=ALICE) for t in texts])
    with store_factory.open() as mem:  # each open starts with an empty embedding cache
        embedder: Any = mem.embedder
        mem.remember_many([MemoryDraft(content=t, scope=Scope(user_id="bob")) for t in texts])
        assert embedder.texts_embedded == 0
    with store_factory.open() as mem:
        embedder = mem.embedder
        carol = Scope(user_id="carol")
        mem.remember(texts[0], scope=carol)
        assert embedder.texts_embedded == 1
        assert [h.item.content for h in mem.recall(texts[0], scope=carol)] == [texts[0]]
