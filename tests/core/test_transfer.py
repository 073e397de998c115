"""Export (NDJSON, Markdown, CSV) and NDJSON import."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import InvalidImport, InvalidInput, Memento, MemoryDraft, Scope

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann", agent_id="planner", project_id="apollo", session_id="s1")
BEN = Scope(user_id="김민수", project_id="apollo")
OLD = datetime(2019, 7, 14, 8, 9, 10, 123457, tzinfo=timezone.utc)


def fill(store: Memento) -> dict[str, str]:
    """A store with a bit of everything an export must carry."""
    ids = dict(
        zip(
            ["fact", "episode", "korean", "pinned", "gone"],
            store.remember_many(
                [
                    MemoryDraft(
                        "Ann prefers MariaDB for billing",
                        scope=ANN,
                        type="semantic",
                        title="DB preference",
                        data={"db": "mariadb", "nested": {"list": [1, 2.5, None, True]}},
                        source="tool",
                        privacy="team",
                        importance=0.85,
                        tags=["tech:mariadb", "team:billing"],
                        hotwords=["MariaDB", "마리아DB"],
                        origin_trace={"messages": ["m1"], "tool": "sql"},
                    ),
                    MemoryDraft("We moved billing off Postgres", scope=ANN, created_at=OLD),
                    MemoryDraft(
                        "도손의 해안 마을에서 휴가를 보냈다 — 长期记忆 🌊",
                        scope=BEN,
                        privacy="public",
                        tags=["여행"],
                        hotwords=["도손", "Do Son"],
                        created_at=OLD + timedelta(microseconds=1),
                    ),
                    MemoryDraft(
                        'Line one\nline two with "quotes", commas; and tabs\t.',
                        scope=ANN,
                        pinned=True,
                        expires_at=datetime(2030, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc),
                        type="procedural",
                    ),
                    MemoryDraft("A memory that was soft-forgotten", scope=ANN),
                ]
            ),
        )
    )
    store.forget(ids["gone"])
    store.link(ids["fact"], "derived_from", ids["episode"], note="from the migration")
    store.link(ids["korean"], "contradicts", ids["pinned"])
    store.feedback(ids["fact"], "helpful", note="used in planning ✓")
    store.feedback(ids["fact"], "used", score=0.25)
    store.feedback(ids["gone"], "not_helpful")
    store.recall("billing database", scope=ANN, limit=2)  # usage counters travel too
    return ids


def ndjson(store: Memento) -> str:
    return "".join(store.export("ndjson"))


@dataclass(frozen=True)
class Filled:
    store: Memento
    ids: dict[str, str]


@pytest.fixture(scope="module")
def filled(module_store_factory: StoreFactory) -> Iterator[Filled]:
    """One filled store per mode for the tests that only read it (or must leave it unchanged)."""
    with module_store_factory.open("filled") as store:
        yield Filled(store, fill(store))


# --------------------------------------------------------------------------------- NDJSON


def test_ndjson_round_trip_is_byte_identical(store_factory: StoreFactory) -> None:
    with store_factory.open("source") as source, store_factory.open("copy") as copy:
        ids = fill(source)
        exported = ndjson(source)
        records = [json.loads(line) for line in exported.splitlines()]
        assert [r["kind"] for r in records].count("memory") == 5
        assert [r["kind"] for r in records].count("link") == 2
        assert [r["kind"] for r in records].count("feedback") == 3
        assert [r["kind"] for r in records].count("change") == 1  # the soft forget

        counts = copy.import_ndjson(io.StringIO(exported))
        assert counts == {"memories": 5, "links": 2, "feedback": 3, "changes": 1}
        assert ndjson(copy) == exported

        item = copy.get(ids["fact"])
        assert item.data == {"db": "mariadb", "nested": {"list": [1, 2.5, None, True]}}
        assert item.hotwords == ("MariaDB", "마리아DB")
        assert copy.get(ids["episode"]).created_at == OLD
        assert copy.get(ids["gone"], include_deleted=True).deleted_at is not None
        assert copy.get(ids["pinned"]).pinned is True
        assert copy.get(ids["fact"]).feedback == {"helpful": 1, "used": 1}
        assert copy.get(ids["fact"]).access_count == source.get(ids["fact"]).access_count
        top = copy.recall("도손", scope=Scope(user_id="someone"), limit=1, weights={"usage": 0})
        assert [r.item.id for r in top] == [ids["korean"]], "the copy is searchable"


def test_export_lines_are_sorted_json_objects_one_per_line(filled: Filled) -> None:
    lines = list(filled.store.export())
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    for line in lines:
        record = json.loads(line)
        assert list(record) == sorted(record)
    assert "도손" in "".join(lines), "Unicode is written as is, not escaped"
    created = [json.loads(line)["created_at"] for line in lines if '"kind":"memory"' in line]
    assert "2019-07-14T08:09:10.123457+00:00" in created


def test_importing_the_same_export_twice_changes_nothing(store_factory: StoreFactory) -> None:
    with store_factory.open("source") as source, store_factory.open("copy") as copy:
        fill(source)
        exported = ndjson(source)
        copy.import_ndjson(exported.splitlines(keepends=True))
        copy.import_ndjson(exported.splitlines(keepends=True))
        assert ndjson(copy) == exported


def test_importing_an_export_into_its_own_store_changes_nothing(mem: Memento) -> None:
    fill(mem)
    exported = ndjson(mem)
    mem.import_ndjson(exported.splitlines())
    assert ndjson(mem) == exported


def test_import_reports_progress(store_factory: StoreFactory) -> None:
    with store_factory.open("source") as source, store_factory.open("copy") as copy:
        fill(source)
        progress: list[int] = []
        copy.import_ndjson(list(source.export()), on_progress=progress.append)
        assert sum(progress) == 5


def test_blank_lines_are_skipped(filled: Filled, store_factory: StoreFactory) -> None:
    exported = ndjson(filled.store)
    with store_factory.open("copy") as copy:
        copy.import_ndjson(["\n", *exported.splitlines(keepends=True), "   \n"])
        assert ndjson(copy) == exported


def test_hard_forgotten_memories_leave_the_export(mem: Memento) -> None:
    ids = fill(mem)
    mem.forget(ids["fact"], hard=True)
    exported = ndjson(mem)
    assert ids["fact"] not in exported
    assert "from the migration" not in exported
    assert "used in planning" not in exported


# ----------------------------------------------------------------------- Markdown and CSV


def test_markdown_export_holds_the_live_content(filled: Filled) -> None:
    ids = filled.ids
    text = "".join(filled.store.export("markdown"))
    assert text.startswith("# Memento export\n")
    assert "## DB preference" in text
    assert "Ann prefers MariaDB for billing" in text
    assert "도손의 해안 마을에서 휴가를 보냈다 — 长期记忆 🌊" in text
    assert 'line two with "quotes", commas; and tabs' in text
    assert ids["fact"] in text
    assert "tech:mariadb" in text
    assert "soft-forgotten" not in text, "Markdown is for people: forgotten memories stay out"


def test_csv_export_holds_every_memory(filled: Filled) -> None:
    ids = filled.ids
    rows = list(csv.DictReader(io.StringIO("".join(filled.store.export("csv")))))
    by_id = {row["id"]: row for row in rows}
    assert set(by_id) == set(ids.values())
    assert (
        by_id[ids["pinned"]]["content"] == 'Line one\nline two with "quotes", commas; and tabs\t.'
    )
    assert by_id[ids["korean"]]["content"] == "도손의 해안 마을에서 휴가를 보냈다 — 长期记忆 🌊"
    assert by_id[ids["fact"]]["tags"] == "tech:mariadb;team:billing"
    assert by_id[ids["fact"]]["privacy"] == "team"
    assert by_id[ids["korean"]]["user_id"] == "김민수"
    assert by_id[ids["gone"]]["deleted_at"] != ""
    assert by_id[ids["fact"]]["deleted_at"] == ""


@pytest.mark.parametrize("formula", ['=HYPERLINK("http://x")', "+1+1", "-2", "@SUM(A1)", "＝1"])
def test_csv_cells_are_never_live_formulas(mem: Memento, formula: str) -> None:
    memory_id = mem.remember(formula, scope=Scope(user_id="=cmd"), tags=["-tag"])
    rows = list(csv.DictReader(io.StringIO("".join(mem.export("csv")))))
    row = next(row for row in rows if row["id"] == memory_id)
    assert row["content"] == "'" + formula
    assert row["user_id"] == "'=cmd"
    assert row["tags"] == "'-tag"
    assert mem.get(memory_id).content == formula, "the memory itself is unchanged"


def test_an_unknown_export_format_is_refused(filled: Filled) -> None:
    with pytest.raises(InvalidInput, match="format"):
        list(filled.store.export("xml"))


# -------------------------------------------------------------------------- bad imports


def memory_line(**changes: Any) -> str:
    record = {
        "kind": "memory",
        "id": "0123456789abcdef0123456789abcdef",
        "type": "episodic",
        "content": "An imported memory",
        "scope": {"user_id": "ann"},
        "privacy": "private",
        "importance": 0.5,
        "created_at": "2020-01-01T00:00:00+00:00",
    }
    record.update(changes)
    return json.dumps(record)


GOOD = memory_line()


@pytest.mark.parametrize(
    ("bad_line", "word"),
    [
        ("{not json", "line 2"),
        ("[1, 2, 3]", "JSON object"),
        ('"just a string"', "JSON object"),
        ('{"kind": "alien"}', "unknown record kind"),
        ('{"kind": ["memory"]}', "line 2"),
        (memory_line(content=""), "content"),
        (memory_line(content=None), "content"),
        (memory_line(content="\ud800"), "surrogate"),
        (memory_line(importance=1.5), "importance"),
        (memory_line(importance="high"), "importance"),
        (memory_line(type="dream"), "memory type"),
        (memory_line(privacy="secret"), "privacy"),
        (memory_line(scope={"user_id": {"$ne": "x"}}), "user_id"),
        (memory_line(scope=["ann"]), "scope"),
        (memory_line(tags="one-string"), "tags"),
        (memory_line(tags={"$ne": 1}), "tags"),
        (memory_line(created_at="yesterday"), "created_at"),
        (memory_line(created_at=None), "created_at"),
        (memory_line(access_count=-1), "access_count"),
        (memory_line(feedback={"loved": 3}), "feedback"),
        (memory_line(data=[1, 2]), "data"),
        (memory_line(data={"text": "\udfff"}), "data"),
        (memory_line(id=""), "id"),
        ('{"kind": "link", "source_id": "a", "target_id": "b", "type": "likes", '
         '"created_at": "2020-01-01T00:00:00+00:00"}', "link type"),
        ('{"kind": "link", "source_id": 1, "target_id": "b", "type": "cause_of", '
         '"created_at": "2020-01-01T00:00:00+00:00"}', "source_id"),
        ('{"kind": "link", "source_id": "0123456789abcdef0123456789abcdef", "target_id": '
         '"0123456789abcdef0123456789abcdef", "type": "cause_of", "note": {"$ne": 1}, '
         '"created_at": "2020-01-01T00:00:00+00:00"}', "note"),
        ('{"kind": "feedback", "memory_id": "0123456789abcdef0123456789abcdef", '
         '"feedback": "loved", "at": "2020-01-01T00:00:00+00:00"}', "feedback kind"),
        ('{"kind": "feedback", "memory_id": "0123456789abcdef0123456789abcdef", '
         '"feedback": "used", "score": "high", "at": "2020-01-01T00:00:00+00:00"}', "score"),
        ('{"kind": "feedback", "memory_id": "0123456789abcdef0123456789abcdef", '
         '"feedback": "used", "note": 42, "at": "2020-01-01T00:00:00+00:00"}', "note"),
    ],
)  # fmt: skip
def test_a_malformed_line_names_its_number_and_stores_nothing(
    filled: Filled, bad_line: str, word: str
) -> None:
    before = ndjson(filled.store)
    with pytest.raises(InvalidImport, match=word) as caught:
        filled.store.import_ndjson(
            [GOOD, bad_line, memory_line(id="f" * 32, content="after the bad one")]
        )
    assert caught.value.line == 2
    assert str(caught.value).startswith("line 2: ")
    assert ndjson(filled.store) == before, "a refused import must store nothing"


def test_a_link_to_a_memory_in_neither_file_nor_store_is_refused(filled: Filled) -> None:
    mem = filled.store
    before = ndjson(mem)
    lines = [
        GOOD,
        json.dumps(
            {
                "kind": "link",
                "source_id": "0123456789abcdef0123456789abcdef",
                "target_id": "no-such-memory",
                "type": "cause_of",
                "created_at": "2020-01-01T00:00:00+00:00",
                "note": None,
            }
        ),
    ]
    with pytest.raises(InvalidImport, match="no-such-memory") as caught:
        mem.import_ndjson(lines)
    assert caught.value.line == 2
    assert ndjson(mem) == before


def test_feedback_on_a_memory_in_neither_file_nor_store_is_refused(filled: Filled) -> None:
    mem = filled.store
    before = ndjson(mem)
    line = json.dumps(
        {"kind": "feedback", "memory_id": "ghost", "feedback": "used", "score": 1.0,
         "at": "2020-01-01T00:00:00+00:00", "note": None}
    )  # fmt: skip
    with pytest.raises(InvalidImport, match="ghost") as caught:
        mem.import_ndjson(["\n", line])
    assert caught.value.line == 2
    assert ndjson(mem) == before


def test_links_may_name_memories_already_in_the_store(mem: Memento) -> None:
    ids = fill(mem)
    line = json.dumps(
        {"kind": "link", "source_id": ids["episode"], "target_id": ids["korean"],
         "type": "cause_of", "created_at": "2020-01-01T00:00:00+00:00", "note": None}
    )  # fmt: skip
    assert mem.import_ndjson([line]) == {"memories": 0, "links": 1, "feedback": 0}
    assert any(link.target_id == ids["korean"] for link in mem.links(ids["episode"]))
