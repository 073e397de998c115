"""Every number that reaches the store fits it (64-bit whole numbers, finite floats), checked
before the first write on every path; an import is all or nothing even when the store fails
midway; importance is kept exactly (issue 31)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import chromadb
import pytest

from memento_core import InvalidImport, InvalidInput, Memento, Scope

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann")


def _memory(n: int, **fields: Any) -> str:
    record = {
        "kind": "memory",
        "id": f"imported-{n}",
        "content": f"imported memory number {n} about topic {n % 7}",
        "type": "episodic",
        "privacy": "private",
        "importance": 0.5,
        "created_at": "2025-01-01T00:00:00+00:00",
        "scope": {"user_id": "ann"},
        **fields,
    }
    return json.dumps(record)


def _raw(factory: StoreFactory, mem: Memento, name: str) -> str:
    """Every id, document and metadata of the raw collection ``<prefix>_<name>``, as text."""
    if factory.mode == "embedded":
        client: Any = chromadb.PersistentClient(path=str(factory.root / "main"))
    else:
        host, port = str(factory.url).rsplit("//", 1)[1].split(":")
        client = chromadb.HttpClient(host=host, port=int(port))
    found = client.get_collection(f"{mem.collection_prefix}_{name}").get(
        include=["documents", "metadatas"]
    )
    return json.dumps([found["ids"], found["documents"], found["metadatas"]])


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"access_count": 10**400}, "access_count"),
        ({"access_count": 10**30}, "access_count"),
        ({"access_count": 2**63 + 1}, "access_count"),
        ({"review_step": 2**63}, "review_step"),
        ({"retention_seconds": 10**30}, "retention_seconds"),
        ({"feedback": {"helpful": 10**400}}, "feedback helpful"),
    ],
    ids=["10**400", "10**30", "2**63+1", "review_step", "retention", "feedback"],
)
def test_an_import_refuses_numbers_the_store_cannot_hold_by_line_and_field(
    mem: Memento, bad: dict[str, Any], field: str
) -> None:
    kept = mem.remember("Ann keeps this one", scope=ANN)
    lines = [_memory(n) for n in range(1, 601)] + [_memory(601, **bad)] + [_memory(602)]
    with pytest.raises(InvalidImport, match=f"line 601.*{field}"):
        mem.import_ndjson(lines)
    assert [i.id for i in mem.items(include_deleted=True)] == [kept]
    short = [_memory(1), _memory(2, **bad)]
    with pytest.raises(InvalidImport, match=f"line 2.*{field}"):
        mem.import_ndjson(short)
    assert [i.id for i in mem.items(include_deleted=True)] == [kept]


def test_the_largest_storable_numbers_import_unchanged(mem: Memento) -> None:
    mem.import_ndjson([_memory(1, access_count=2**63 - 1, feedback={"helpful": 2**63 - 1})])
    item = mem.get("imported-1")
    assert item.access_count == 2**63 - 1 and item.feedback == {"helpful": 2**63 - 1}


def test_an_import_the_store_fails_midway_leaves_no_trace(
    store_factory: StoreFactory,
) -> None:
    """The store refusing the second batch (here: the progress callback raising after the
    first batch was written) undoes the memories, links and feedback written, and leaves no
    imported id in the change feed or the partition directory; stored records are as before."""
    with store_factory.open() as mem:
        first = mem.remember("Ann's first kept memory", scope=ANN)
        second = mem.remember("Ann's second kept memory", scope=ANN)
        mem.link(first, "cause_of", second, note="old note")
        before = (mem.items(include_deleted=True), mem.all_links(), mem.all_feedback())
        lines = [_memory(n) for n in range(1, 601)]
        lines.append(
            json.dumps(
                {
                    "kind": "link",
                    "source_id": first,
                    "type": "cause_of",
                    "target_id": second,
                    "created_at": "2025-01-01T00:00:00+00:00",
                    "note": "new note",
                }
            )
        )
        lines.append(
            json.dumps(
                {
                    "kind": "link",
                    "source_id": "imported-1",
                    "type": "cause_of",
                    "target_id": first,
                    "created_at": "2025-01-01T00:00:00+00:00",
                }
            )
        )
        lines.append(
            json.dumps(
                {
                    "kind": "feedback",
                    "memory_id": first,
                    "feedback": "helpful",
                    "at": "2025-01-02T00:00:00+00:00",
                }
            )
        )
        written: list[int] = []

        def fail_after_the_first_batch(n: int) -> None:
            written.append(n)
            raise OSError("disk full")

        with pytest.raises(OSError, match="disk full"):
            mem.import_ndjson(lines, on_progress=fail_after_the_first_batch)
        assert written  # a batch was written before the failure
        assert (mem.items(include_deleted=True), mem.all_links(), mem.all_feedback()) == before
        assert mem.recall("imported memory number", scope=ANN, limit=50)[0].item.id in {
            first,
            second,
        }
        for name in ("changes", "partitions", "links", "events", "items"):
            assert "imported-" not in _raw(store_factory, mem, name), name


def test_importance_is_kept_exactly(mem: Memento, store_factory: StoreFactory) -> None:
    third = mem.remember("A third of the way", scope=ANN, importance=1 / 3)
    tiny = mem.remember("Almost nothing", scope=ANN, importance=5e-324)
    assert mem.get(third).importance == 1 / 3
    assert mem.get(tiny).importance == 5e-324
    exported = list(mem.export())
    with store_factory.open("copy") as copy:
        copy.import_ndjson(exported)
        assert copy.get(third).importance == 1 / 3
        assert copy.get(tiny).importance == 5e-324
        assert list(copy.export()) == exported


def test_other_paths_refuse_numbers_the_store_cannot_hold(mem: Memento) -> None:
    kept = mem.remember("Ann's memory", scope=ANN, importance=0.4)
    with pytest.raises(InvalidInput, match="importance"):
        mem.remember("Too important", scope=ANN, importance=10**400)
    with pytest.raises(InvalidInput, match="importance"):
        mem.update(kept, importance=float("inf"), scope=ANN)
    with pytest.raises(InvalidInput, match="score"):
        mem.feedback(kept, "helpful", score=10**400, scope=ANN)
    records = mem.side_records("adapter_notes")
    with pytest.raises(InvalidInput, match="count is too large"):
        records.put(["a", "b"], ["x", "y"], [{"count": 1}, {"count": 2**64}])
    with pytest.raises(InvalidInput, match="weight must be a finite number"):
        records.put(["a"], ["x"], [{"weight": float("nan")}])
    assert records.get(["a", "b"]) == []
    item = mem.get(kept)
    assert item.importance == 0.4 and item.feedback == {}
