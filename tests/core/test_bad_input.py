"""Bad input gets a clear error, and nothing already stored is harmed.

Every case runs against one seeded store per mode and checks both halves: the error (its type
and a word of its message) and the store (its full NDJSON export is unchanged afterwards).
"""

from __future__ import annotations

import math
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memento_core import (
    MAX_CONTENT_CHARS,
    Embedder,
    InvalidContent,
    InvalidFilter,
    InvalidInput,
    InvalidScope,
    Memento,
    MementoError,
    MemoryDraft,
    MemoryNotFound,
    Scope,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

ANN = Scope(user_id="ann", project_id="apollo")
BEN = Scope(user_id="ben", project_id="apollo")
MISSING = "0" * 32


@dataclass(frozen=True)
class Seeded:
    store: Memento
    a: str
    b: str


@pytest.fixture(scope="module")
def seeded(module_store_factory: StoreFactory) -> Iterator[Seeded]:
    with module_store_factory.open("bad-input") as store:
        a = store.remember("Ann's locker code is 2481", scope=ANN, tags=["locker"])
        b = store.remember("Ben's team notes on the release", scope=BEN, privacy="team")
        store.link(a, "cause_of", b)
        store.feedback(a, "helpful")
        yield Seeded(store, a, b)


Case = Callable[[Memento, str, str], object]


def case(error: type[MementoError], word: str, call: Case, id: str) -> Any:
    """One bad call: the error it must raise and a word its message must hold."""
    return pytest.param(error, word, call, id=id)


# fmt: off
CASES = [
    # ------------------------------------------------------------------ content
    case(InvalidContent, "empty", lambda m, a, b: m.remember("", scope=ANN), "content-empty"),
    case(InvalidContent, "whitespace", lambda m, a, b: m.remember(" \n\t ", scope=ANN),
         "content-whitespace"),
    case(InvalidContent, "maximum",
         lambda m, a, b: m.remember("x" * (MAX_CONTENT_CHARS + 1), scope=ANN), "content-too-long"),
    case(InvalidContent, "string", lambda m, a, b: m.remember(b"bytes", scope=ANN),
         "content-bytes"),
    case(InvalidContent, "string", lambda m, a, b: m.remember(42, scope=ANN), "content-int"),
    case(InvalidContent, "string", lambda m, a, b: m.remember(None, scope=ANN), "content-none"),
    case(InvalidContent, "surrogate", lambda m, a, b: m.remember("bad \ud800 text", scope=ANN),
         "content-lone-surrogate"),
    case(InvalidContent, "title", lambda m, a, b: m.remember("ok", title="\udfff", scope=ANN),
         "title-lone-surrogate"),
    # --------------------------------------------------------------- importance
    case(InvalidInput, "importance", lambda m, a, b: m.remember("ok", importance=-0.1),
         "importance-negative"),
    case(InvalidInput, "importance", lambda m, a, b: m.remember("ok", importance=1.1),
         "importance-above-one"),
    case(InvalidInput, "importance", lambda m, a, b: m.remember("ok", importance=math.nan),
         "importance-nan"),
    case(InvalidInput, "importance", lambda m, a, b: m.remember("ok", importance=math.inf),
         "importance-inf"),
    case(InvalidInput, "importance", lambda m, a, b: m.remember("ok", importance="high"),
         "importance-string"),
    case(InvalidInput, "importance", lambda m, a, b: m.remember("ok", importance=True),
         "importance-bool"),
    # -------------------------------------------------------------------- enums
    case(InvalidInput, "memory type", lambda m, a, b: m.remember("ok", type="dream"),
         "unknown-type"),
    case(InvalidInput, "privacy", lambda m, a, b: m.remember("ok", privacy="secret"),
         "unknown-privacy"),
    case(InvalidInput, "link type", lambda m, a, b: m.link(a, "likes", b), "unknown-link-type"),
    case(InvalidInput, "feedback kind", lambda m, a, b: m.feedback(a, "loved"),
         "unknown-feedback-kind"),
    case(InvalidInput, "score", lambda m, a, b: m.feedback(a, "used", score=math.nan),
         "feedback-score-nan"),
    case(InvalidInput, "score", lambda m, a, b: m.feedback(a, "used", score="high"),
         "feedback-score-string"),
    # --------------------------------------------------------- other fields
    case(InvalidInput, "created_at", lambda m, a, b: m.remember("ok", created_at="yesterday"),
         "created-at-string"),
    case(InvalidInput, "dictionary", lambda m, a, b: m.remember("ok", data=[1, 2]),
         "data-list"),
    case(InvalidInput, "JSON", lambda m, a, b: m.remember("ok", data={"x": object()}),
         "data-not-json"),
    case(InvalidInput, "JSON", lambda m, a, b: m.remember("ok", data={"x": math.nan}),
         "data-nan"),
    case(InvalidInput, "data", lambda m, a, b: m.remember("ok", data={"k": "\ud800"}),
         "data-lone-surrogate"),
    case(InvalidInput, "origin_trace", lambda m, a, b: m.remember("ok", origin_trace={1, 2}),
         "origin-trace-set"),
    case(InvalidInput, "source", lambda m, a, b: m.remember("ok", source=""), "source-empty"),
    # ----------------------------------------------------------- tags, scopes
    case(InvalidInput, "tag", lambda m, a, b: m.remember("ok", tags=["ok", ""]), "tag-empty"),
    case(InvalidInput, "tags", lambda m, a, b: m.remember("ok", tags="one-string"),
         "tags-one-string"),
    case(InvalidInput, "tag", lambda m, a, b: m.remember("ok", tags=[{"$ne": 1}]),
         "tag-operator"),
    case(InvalidInput, "tags", lambda m, a, b: m.remember("ok", tags={"$ne": 1}),
         "tags-operator-dict"),
    case(InvalidInput, "surrogate", lambda m, a, b: m.remember("ok", tags=["\ud800"]),
         "tag-lone-surrogate"),
    case(InvalidInput, "surrogate", lambda m, a, b: m.remember("ok", hotwords=["\ud800"]),
         "hotword-lone-surrogate"),
    case(InvalidInput, "at most",
         lambda m, a, b: m.remember("ok", tags=[f"t{n}" for n in range(65)]), "too-many-tags"),
    case(InvalidScope, "user_id",
         lambda m, a, b: m.remember("ok", scope=Scope(user_id={"$ne": "me"})),
         "scope-operator"),
    case(InvalidScope, "surrogate",
         lambda m, a, b: m.remember("ok", scope=Scope(user_id="\ud800")), "scope-lone-surrogate"),
    case(InvalidInput, "Scope", lambda m, a, b: m.remember("ok", scope={"user_id": "ann"}),
         "scope-as-dict"),
    case(InvalidScope, "Scope",
         lambda m, a, b: m.recall("locker", scope={"user_id": {"$ne": "x"}}),
         "recall-scope-as-dict"),
    case(InvalidScope, "Scope", lambda m, a, b: m.get(a, scope={"user_id": "ann"}),
         "get-scope-as-dict"),
    case(InvalidScope, "Scope", lambda m, a, b: m.items(scope={"$ne": None}),
         "items-scope-as-dict"),
    # ------------------------------------------------------------------ filters
    case(InvalidFilter, "unknown filter field",
         lambda m, a, b: m.recall("locker", scope=ANN, filter={"colour": "red"}), "filter-unknown"),
    case(InvalidFilter, "unknown filter field",
         lambda m, a, b: m.recall("locker", scope=ANN, filter={"user_id": {"$ne": "x"}}),
         "filter-user-operator"),
    case(InvalidFilter, "tag",
         lambda m, a, b: m.recall("locker", scope=ANN, filter={"tags": [{"$ne": 1}]}),
         "filter-tag-operator"),
    case(InvalidFilter, "agent_id",
         lambda m, a, b: m.recall("locker", scope=ANN, filter={"agent_id": {"$ne": "x"}}),
         "filter-agent-operator"),
    case(InvalidFilter, "types",
         lambda m, a, b: m.recall("locker", scope=ANN, filter={"types": {"$nin": []}}),
         "filter-types-operator"),
    case(InvalidFilter, "memory type",
         lambda m, a, b: m.recall("locker", scope=ANN, filter={"types": ["dream"]}),
         "filter-unknown-type"),
    case(InvalidFilter, "since",
         lambda m, a, b: m.recall("locker", scope=ANN, filter={"since": "last week"}),
         "filter-since-string"),
    case(InvalidFilter, "mapping",
         lambda m, a, b: m.recall("locker", scope=ANN, filter=[("types", "episodic")]),
         "filter-not-a-mapping"),
    # -------------------------------------------------------------- unknown ids
    case(MemoryNotFound, MISSING, lambda m, a, b: m.get(MISSING), "get-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.forget(MISSING), "forget-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.forget(MISSING, hard=True),
         "forget-hard-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.pin(MISSING), "pin-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.unpin(MISSING), "unpin-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.restore(MISSING), "restore-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.feedback(MISSING, "used"),
         "feedback-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.link(MISSING, "cause_of", a),
         "link-from-unknown"),
    case(MemoryNotFound, MISSING, lambda m, a, b: m.link(a, "cause_of", MISSING),
         "link-to-missing-item"),
    case(MemoryNotFound, "", lambda m, a, b: m.get(b, scope=Scope(user_id="eve")),
         "get-hidden-from-scope"),
    case(InvalidInput, "id", lambda m, a, b: m.get({"$ne": ""}), "get-id-operator"),
    case(InvalidInput, "id", lambda m, a, b: m.forget(123), "forget-id-int"),
    case(InvalidInput, "id", lambda m, a, b: m.links({"$ne": ""}), "links-id-operator"),
    case(InvalidInput, "id", lambda m, a, b: m.feedback_events(None), "events-id-none"),
    case(InvalidInput, "itself", lambda m, a, b: m.link(a, "duplicates", a), "link-to-itself"),
    case(InvalidContent, "surrogate", lambda m, a, b: m.link(a, "cause_of", b, note="\ud800"),
         "link-note-lone-surrogate"),
    case(InvalidContent, "surrogate", lambda m, a, b: m.feedback(a, "used", note="\ud800"),
         "feedback-note-lone-surrogate"),
    # -------------------------------------------------------------------- recall
    case(InvalidInput, "limit", lambda m, a, b: m.recall("locker", scope=ANN, limit=0),
         "limit-zero"),
    case(InvalidInput, "limit", lambda m, a, b: m.recall("locker", scope=ANN, limit=10_001),
         "limit-too-big"),
    case(InvalidInput, "limit", lambda m, a, b: m.recall("locker", scope=ANN, limit="5"),
         "limit-string"),
    case(InvalidInput, "limit", lambda m, a, b: m.recall("locker", scope=ANN, limit=-1),
         "limit-negative"),
    case(InvalidInput, "limit", lambda m, a, b: m.recall("locker", scope=ANN, limit=2.0),
         "limit-float"),
    case(InvalidContent, "query", lambda m, a, b: m.recall("  ", scope=ANN), "query-blank"),
    case(InvalidContent, "surrogate", lambda m, a, b: m.recall("\ud800", scope=ANN),
         "query-lone-surrogate"),
    case(InvalidInput, "ranking weight",
         lambda m, a, b: m.recall("locker", scope=ANN, weights={"recency": "high"}),
         "weight-string"),
    case(InvalidInput, "format", lambda m, a, b: list(m.export("xml")), "export-format"),
    # -------------------------------------------------------------------- batches
    case(InvalidContent, "empty",
         lambda m, a, b: m.remember_many(
             [MemoryDraft("batch one fine", scope=ANN), MemoryDraft("batch two fine", scope=ANN),
              MemoryDraft("", scope=ANN)]),
         "batch-with-one-empty-draft"),
    case(InvalidInput, "importance",
         lambda m, a, b: m.remember_many(
             [MemoryDraft(f"batch fine {n}", scope=ANN) for n in range(300)]
             + [MemoryDraft("bad importance", scope=ANN, importance=2)], batch_size=100),
         "batch-bad-last-of-many"),
    case(InvalidInput, "MemoryDraft",
         lambda m, a, b: m.remember_many([MemoryDraft("fine", scope=ANN), "not a draft"]),
         "batch-not-a-draft"),
]
# fmt: on


@pytest.mark.parametrize(("error", "word", "call"), CASES)
def test_bad_input_is_refused_and_nothing_stored_is_harmed(
    seeded: Seeded, error: type[MementoError], word: str, call: Case
) -> None:
    store = seeded.store
    before = list(store.export())
    with pytest.raises(error) as caught:
        call(store, seeded.a, seeded.b)
    assert word in str(caught.value), f"{str(caught.value)!r} should mention {word!r}"
    assert list(store.export()) == before


def test_the_store_still_works_after_all_that(seeded: Seeded) -> None:
    store = seeded.store
    assert store.stats().memories == 2
    top = store.recall("locker code", scope=ANN, limit=1)
    assert [r.item.id for r in top] == [seeded.a]
    assert [x.target_id for x in store.links(seeded.a)] == [seeded.b]


def test_errors_are_catchable_as_builtins(seeded: Seeded) -> None:
    with pytest.raises(ValueError):
        seeded.store.remember("")
    with pytest.raises(KeyError):
        seeded.store.get(MISSING)


def test_give_a_path_or_a_url_not_both(embedder: Embedder, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="either"):
        Memento.open(tmp_path, url="http://127.0.0.1:8000", embedder=embedder)
    with pytest.raises(InvalidInput, match="URL"):
        Memento.open(url="ftp://example.org", embedder=embedder)
    assert list(tmp_path.iterdir()) == []


def test_no_server_listening_is_store_unavailable(embedder: Embedder) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        with pytest.raises(StoreUnavailable, match="no Chroma server"):
            Memento.open(url=f"http://127.0.0.1:{port}", embedder=embedder)


def test_a_naive_or_aware_time_is_fine_but_not_a_date_string(seeded: Seeded) -> None:
    before = list(seeded.store.export())
    with pytest.raises(InvalidFilter, match="until"):
        seeded.store.recall("locker", scope=ANN, filter={"until": "2020-01-01"})
    ok = seeded.store.recall(
        "locker", scope=ANN, filter={"until": datetime(2000, 1, 1, tzinfo=timezone.utc)}
    )
    assert ok == []
    assert list(seeded.store.export()) == before
