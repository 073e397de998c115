"""Fuzzing the NDJSON importer (``transfer.import_ndjson``) with mutated exports.

A valid export of a few memories, links and feedback is mutated: lines dropped, doubled,
swapped, cut short or replaced by junk; values swapped for random JSON (huge numbers, ``NaN``,
deep nesting, wrong types), keys deleted. Importing the result into a store that already holds
memories either succeeds, or raises ``InvalidImport`` naming a line of the file; nothing else
escapes. A refused import stores nothing (the store's export is unchanged), and an accepted one
leaves every memory that was already stored as it was.

Default: a CI-sized run. Longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest
tests/properties/test_prop_fuzz_import.py``; ``make test-slow`` runs the ``slow`` variant.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from _prop_support import budget, json_values
from hypothesis import event, given, settings
from hypothesis import strategies as st

from memento_core import InvalidImport, Memento, MemoryDraft, Scope

SEED = [
    MemoryDraft("Ann's locker code is 2481", scope=Scope(user_id="ann"), tags=["locker"],
                data={"k": "v"}, hotwords=["locker"]),
    MemoryDraft("Ben's team notes on the release", scope=Scope(user_id="ben", project_id="p"),
                privacy="team"),
    MemoryDraft("The café opens at nine", privacy="public", importance=0.9),
]  # fmt: skip


@pytest.fixture(scope="module")
def incoming(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A valid export of other memories, with links and feedback: what gets mutated."""
    from memento_core.testing import HashEmbedder

    with Memento.open(tmp_path_factory.mktemp("incoming"), embedder=HashEmbedder()) as mem:
        a = mem.remember("An imported memory about tea", scope=Scope(user_id="cy"))
        b = mem.remember("Another one, about coffee", tags=["drink"], pinned=True)
        c = mem.remember("A third, soon deleted", data={"n": 1})
        mem.forget(c)
        mem.link(a, "cause_of", b, note="because")
        mem.feedback(a, "helpful", note="nice")
        mem.feedback(b, "used", score=0.5)
        return list(mem.export())


@pytest.fixture(scope="module")
def target(hash_store: Memento) -> Iterator[Memento]:
    hash_store.remember_many(SEED)
    yield hash_store


huge = st.sampled_from([2**63, 2**64 + 1, -(2**63) - 1, 10**30, 1e308, -1e308, 1e-320])
special = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0", "[" * 5000, "{" * 5000])
junk_lines = st.one_of(
    st.text(max_size=40), special, st.sampled_from(["{}", "[]", "null", '"x"', "{", "\ufeff{}"])
)


@st.composite
def mutated(draw: st.DrawFn, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(
            ["value", "value", "value", "delete-key", "drop", "double", "swap", "cut", "junk",
             "raw-value"]
        ))  # fmt: skip
        event(how)
        if how in ("value", "delete-key", "raw-value"):
            try:
                record = json.loads(lines[n])
            except (ValueError, RecursionError):  # an earlier mutation broke this line
                continue
            if not isinstance(record, dict) or not record:
                continue
            key = draw(st.sampled_from(sorted(record)))
            if how == "delete-key":
                del record[key]
                lines[n] = json.dumps(record, ensure_ascii=False) + "\n"
            elif how == "value":
                record[key] = draw(st.one_of(json_values, huge, st.floats()))
                lines[n] = json.dumps(record, ensure_ascii=False) + "\n"
            else:  # a value spelled as raw JSON text: NaN, Infinity, deep nesting
                record[key] = "\x00RAW\x00"
                text = json.dumps(record, ensure_ascii=False)
                raw = draw(special | st.sampled_from(["[" * 5000 + "]" * 5000, "1" * 5000]))
                lines[n] = text.replace('"\\u0000RAW\\u0000"', raw) + "\n"
        elif how == "drop" and len(lines) > 1:
            del lines[n]
        elif how == "double":
            lines.insert(n, lines[n])
        elif how == "swap":
            m = draw(st.integers(0, len(lines) - 1))
            lines[n], lines[m] = lines[m], lines[n]
        elif how == "cut":
            lines[n] = lines[n][: draw(st.integers(0, len(lines[n])))]
        elif how == "junk":
            lines[n] = draw(junk_lines)
    return lines


def check_import(target: Memento, lines: list[str]) -> None:
    before = list(target.export())
    records_before = {r["id"]: r for r in map(json.loads, before) if r.get("kind") == "memory"}
    try:
        target.import_ndjson(lines)
    except InvalidImport as err:
        event("refused")
        assert 1 <= err.line <= len(lines)
        assert str(err).startswith(f"line {err.line}: ")
        assert list(target.export()) == before, "a refused import must store nothing"
        return
    event("accepted")
    after = {r["id"]: r for r in map(json.loads, target.export()) if r.get("kind") == "memory"}
    for memory_id, record in records_before.items():
        assert after[memory_id] == record, "an import must leave stored memories as they were"
    for line in target.export():
        json.loads(line, parse_constant=_no_constants)  # the export is strict JSON


def _no_constants(name: str) -> Any:
    raise AssertionError(f"the export holds {name}, which is not JSON")


@settings(max_examples=budget(60, share=0.1))
@given(data=st.data())
def test_a_mutated_export_imports_or_is_refused_naming_its_line(
    target: Memento, incoming: list[str], data: st.DataObject
) -> None:
    check_import(target, data.draw(mutated(incoming)))


@pytest.mark.slow
@settings(max_examples=5_000)
@given(data=st.data())
def test_a_mutated_export_imports_or_is_refused_naming_its_line_long(
    target: Memento, incoming: list[str], data: st.DataObject
) -> None:
    check_import(target, data.draw(mutated(incoming)))
