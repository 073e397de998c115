"""Export and import with random Unicode everywhere: content, title, tags, data payloads,
hotwords, scope ids, links and feedback notes.

- NDJSON: export, import into an empty store, export again: the same bytes. Also through a
  file read the way ``memento-core import`` reads it (``splitlines``), so no character inside a
  record may end its line.
- Markdown and CSV exports never raise, and the CSV reads back to the stored content and ids.

Run longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/properties``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from uuid import uuid4

import pytest
from _prop_support import budget, ids, json_values
from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core import Memento, MemoryDraft, Scope
from memento_core.testing import HashEmbedder

# Text core takes as content: any Unicode but lone surrogates, and not blank.
valid_chars = st.characters(exclude_categories=("Cs",))
content = st.text(valid_chars, min_size=1, max_size=60).filter(str.strip) | st.sampled_from(
    ["a\u2028b", "line\u2029para", "nel\x85x", "nul\x00byte", "cr\rlf\n", "tab\tvt\x0bff\x0c",
     "fs\x1cgs\x1drs\x1eus\x1f", "😀", "e\u0301 é", "한국어", "\ufeffbom", "</script>", "\\u2028"]
)  # fmt: skip
tags = st.lists(st.text(valid_chars, min_size=1, max_size=20).filter(str.strip), max_size=4)
hotword_chars = st.characters(exclude_categories=("Cs", "Cc"))
hotwords = st.lists(st.text(hotword_chars, min_size=1, max_size=12).filter(str.strip), max_size=3)
payloads = st.none() | st.dictionaries(st.text(valid_chars, max_size=8), json_values, max_size=4)


@st.composite
def drafts(draw: st.DrawFn) -> MemoryDraft:
    return MemoryDraft(
        content=draw(content),
        type=draw(st.sampled_from(["working", "episodic", "semantic", "procedural"])),
        scope=Scope(
            user_id=draw(st.none() | ids), agent_id=draw(st.none() | ids),
            project_id=draw(st.none() | ids), session_id=draw(st.none() | ids),
        ),
        title=draw(st.none() | content),
        data=draw(payloads),
        source=draw(st.sampled_from(["chat", "import", "ünï", "🙂"])),
        privacy=draw(st.sampled_from(["private", "team", "public"])),
        importance=draw(st.floats(0, 1)),
        pinned=draw(st.booleans()),
        tags=draw(tags),
        hotwords=draw(hotwords),
        created_at=draw(st.none() | st.datetimes(
            min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1),
            timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=-3, minutes=-30))]),
        )),
        origin_trace=draw(json_values),
    )  # fmt: skip


@st.composite
def stores(draw: st.DrawFn) -> tuple[list[MemoryDraft], list[tuple[int, int, str | None]]]:
    """Drafts, and links/feedback between them as (source, target, note) index pairs."""
    memories = draw(st.lists(drafts(), min_size=1, max_size=5))
    relations = draw(
        st.lists(
            st.tuples(
                st.integers(0, len(memories) - 1),
                st.integers(0, len(memories) - 1),
                st.none() | content,
            ),
            max_size=4,
        )
    )
    return memories, relations


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("transfer")


def fresh(root: Path) -> Memento:
    return Memento.open(root / uuid4().hex, embedder=HashEmbedder(), track_usage=False)


def fill(mem: Memento, case: tuple[list[MemoryDraft], list[tuple[int, int, str | None]]]) -> None:
    memories, relations = case
    stored = mem.remember_many(memories)
    for n, (source, target, note) in enumerate(relations):
        if n % 2 and stored[source] != stored[target]:
            mem.link(stored[source], "cause_of", stored[target], note=note)
        else:
            mem.feedback(stored[source], "helpful" if n % 3 else "used", score=0.25, note=note)
    if len(stored) > 1:
        mem.forget(stored[-1])  # a soft-deleted memory travels too


def lines_of(text: str) -> Iterator[str]:
    """Lines as ``memento-core import`` reads a file (``cli.py``: ``read_text().splitlines``)."""
    return iter(text.splitlines(keepends=True))


@settings(max_examples=budget(15, share=0.002))
@given(case=stores())
def test_ndjson_export_import_export_is_byte_identical(
    root: Path, case: tuple[list[MemoryDraft], list[tuple[int, int, str | None]]]
) -> None:
    with fresh(root) as source, fresh(root) as target, fresh(root) as via_file:
        fill(source, case)
        exported = list(source.export())
        assert all(line.endswith("\n") and line.count("\n") == 1 for line in exported)
        assert [json.loads(line) for line in exported]

        target.import_ndjson(exported)
        assert list(target.export()) == exported

        path = root / f"{uuid4().hex}.ndjson"
        path.write_text("".join(exported), encoding="utf-8")
        via_file.import_ndjson(lines_of(path.read_text(encoding="utf-8")))
        assert list(via_file.export()) == exported


@settings(max_examples=budget(15, share=0.002))
@given(case=stores())
def test_markdown_and_csv_exports_never_fail_and_csv_reads_back(
    root: Path, case: tuple[list[MemoryDraft], list[tuple[int, int, str | None]]]
) -> None:
    with fresh(root) as mem:
        fill(mem, case)
        markdown = "".join(mem.export("markdown"))
        rows = list(csv.reader(io.StringIO("".join(mem.export("csv")), newline="")))
        items = mem.items(include_deleted=True)

    assert markdown.startswith("# Memento export\n")
    header, *records = rows
    assert header[:3] == ["id", "type", "content"]
    assert [(r[0], r[2]) for r in records] == [(i.id, i.content) for i in items]
