"""Test support for Memento and its adapters: the cross-adapter conformance scenarios, reusable by
any adapter (no pytest needed), and ``HashEmbedder``, a cheap deterministic embedder.

An adapter proves it keeps Memento's contract by offering a *driver*: a small object that
performs the scenario steps through the adapter's own framework API (its store, memory class,
tool, …). Every scenario takes drivers over ONE shared ``Memento`` — opened with
``track_usage=False`` so that recalling does not change later scores — and raises
``ConformanceError`` with a message saying what differed.

A third-party adapter registers its driver factory in ``AdapterInfo.conformance_driver``
(see ``memento_core.plugins``) and runs ``run_all(drivers)`` in its own tests.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memento_core._memento import Memento
from memento_core._model import Scope

SCORE_TOLERANCE = 1e-6


class ConformanceError(AssertionError):
    """An adapter behaved differently from core."""


@dataclass(frozen=True)
class Hit:
    memory_id: str
    score: float


@runtime_checkable
class ConformanceDriver(Protocol):
    """The steps each scenario needs, done through one adapter's framework API."""

    name: str
    streams_hotwords: bool
    """False when the framework has no streamed text passing through Memento (MCP: the
    client's model streams on the client side); the hotword scenario leaves such a driver out."""

    def remember(self, text: str, *, user_id: str) -> str:
        """Store ``text`` as a private memory of ``user_id``; return the Memento memory id."""
        ...

    def recall(self, query: str, *, user_id: str, limit: int) -> list[Hit]:
        """Recall for ``user_id``, best first, with Memento's scores."""
        ...

    def forget(self, memory_id: str, *, user_id: str) -> None:
        """Forget (hard) a memory of ``user_id``."""
        ...

    def hotword_events(self, chunks: Sequence[str], *, connection_id: str) -> list[dict[str, Any]]:
        """Stream ``chunks`` through the framework's streaming path; return the hotword events
        (as ``to_dict()`` dictionaries) in the order they were emitted."""
        ...


class CoreDriver:
    """The reference: core's own API."""

    name = "core"
    streams_hotwords = True

    def __init__(self, mem: Memento) -> None:
        self.mem = mem

    def remember(self, text: str, *, user_id: str) -> str:
        return self.mem.remember(text, scope=Scope(user_id=user_id))

    def recall(self, query: str, *, user_id: str, limit: int) -> list[Hit]:
        results = self.mem.recall(query, scope=Scope(user_id=user_id), limit=limit)
        return [Hit(r.item.id, r.score) for r in results]

    def forget(self, memory_id: str, *, user_id: str) -> None:
        self.mem.forget(memory_id, hard=True)

    def hotword_events(self, chunks: Sequence[str], *, connection_id: str) -> list[dict[str, Any]]:
        from memento_core.hotwords import HotwordEvent, detect_stream

        conversation = self.mem.hotword_detector().conversation(connection_id)
        return [
            piece.to_dict()
            for piece in detect_stream(conversation, list(chunks))
            if isinstance(piece, HotwordEvent)
        ]


FACTS = (
    "Mina keeps her bicycle in the blue shed behind the library.",
    "Mina's favourite tea is a smoky lapsang souchong.",
    "Mina is learning the cello and practises on Tuesdays.",
    "The team retrospective moved to Thursday afternoons.",
)
QUERIES = ("where is the bicycle kept?", "what tea does Mina like?", "when is cello practice?")


def _user() -> str:
    return f"conformance-{uuid.uuid4().hex[:10]}"


def _same(a: list[Hit], b: list[Hit]) -> bool:
    return [h.memory_id for h in a] == [h.memory_id for h in b] and all(
        math.isclose(x.score, y.score, abs_tol=SCORE_TOLERANCE) for x, y in zip(a, b)
    )


def check_cross_recall(drivers: Sequence[ConformanceDriver]) -> None:
    """A memory written through any driver is recalled through every other, in the same
    order with the same scores (the shared store must not track usage, so scores stay put)."""
    reference = drivers[0]
    for writer in drivers:
        user = _user()
        ids = {writer.remember(text, user_id=user) for text in FACTS}
        for query in QUERIES:
            expected = reference.recall(query, user_id=user, limit=len(FACTS))
            if {h.memory_id for h in expected} != ids:
                raise ConformanceError(
                    f"{reference.name} recalled {len(expected)} of the {len(ids)} memories "
                    f"{writer.name} wrote, for {query!r}"
                )
            for reader in drivers[1:]:
                got = reader.recall(query, user_id=user, limit=len(FACTS))
                if not _same(got, expected):
                    raise ConformanceError(
                        f"{reader.name} answers {query!r} differently from {reference.name}: "
                        f"{[(h.memory_id[:8], round(h.score, 4)) for h in got]} vs "
                        f"{[(h.memory_id[:8], round(h.score, 4)) for h in expected]}"
                    )


def check_scope_isolation(drivers: Sequence[ConformanceDriver]) -> None:
    """Another user's private memory never appears, whichever driver wrote or reads it."""
    for writer in drivers:
        owner, stranger = _user(), _user()
        secret = writer.remember("The vault combination is 31-07-44.", user_id=owner)
        for reader in drivers:
            hits = reader.recall("vault combination", user_id=stranger, limit=10)
            if any(h.memory_id == secret for h in hits):
                raise ConformanceError(
                    f"{reader.name} showed another user a private memory {writer.name} wrote"
                )
            if not any(
                h.memory_id == secret
                for h in reader.recall("vault combination", user_id=owner, limit=10)
            ):
                raise ConformanceError(f"{reader.name} did not show its owner a private memory")


def check_forgetting(drivers: Sequence[ConformanceDriver]) -> None:
    """A memory written and forgotten through any driver disappears through every driver.

    Each driver forgets a memory it wrote itself: a framework can only address what it stored
    (a LangGraph store item by namespace and key, an AutoGen memory by its scope)."""
    for forgetter in drivers:
        user = _user()
        memory_id = forgetter.remember(
            "The spare key hides under the third flowerpot.", user_id=user
        )
        if not any(
            h.memory_id == memory_id for h in drivers[0].recall("spare key", user_id=user, limit=10)
        ):
            raise ConformanceError(f"{drivers[0].name} cannot see a memory {forgetter.name} wrote")
        forgetter.forget(memory_id, user_id=user)
        for reader in drivers:
            if any(
                h.memory_id == memory_id for h in reader.recall("spare key", user_id=user, limit=10)
            ):
                raise ConformanceError(
                    f"{reader.name} still recalls a memory {forgetter.name} forgot"
                )


def check_hotwords(drivers: Sequence[ConformanceDriver], mem: Memento) -> None:
    """The same chunked stream gives the same hotword events through every streaming path."""
    mem.remember(
        "Do Son is a seaside town near Hai Phong.",
        scope=Scope(user_id=_user()),
        privacy="public",
        hotwords=["도손", "Do Son"],
        data={"place": "Do Son", "country": "Vietnam"},
    )
    chunks = ["We drove to Do", " So", "n last summer; 도", "손 was lovely. Do Son again!"]
    expected = drivers[0].hotword_events(chunks, connection_id="conformance")
    if not expected:
        raise ConformanceError(f"{drivers[0].name} detected no hotword in the stream")
    for driver in [d for d in drivers[1:] if getattr(d, "streams_hotwords", True)]:
        got = driver.hotword_events(chunks, connection_id="conformance")
        if got != expected:
            raise ConformanceError(f"{driver.name} emitted {got!r}, core emitted {expected!r}")


SCENARIOS: dict[str, Callable[..., None]] = {
    "cross_recall": check_cross_recall,
    "scope_isolation": check_scope_isolation,
    "forgetting": check_forgetting,
    "hotwords": check_hotwords,
}


def run_all(drivers: Sequence[ConformanceDriver], mem: Memento) -> None:
    """Every scenario, core's driver first. Raises ``ConformanceError`` on the first failure."""
    for name, scenario in SCENARIOS.items():
        if name == "hotwords":
            scenario(drivers, mem)
        else:
            scenario(drivers)


HASH_DIMENSION = 32


class HashEmbedder:
    """A cheap, deterministic embedder for tests that must start fast (a child process, say):
    each word adds ±1 to a bucket chosen by its hash; rows are L2-normalised. A real embedder,
    just not a good one; reopen its stores with the same class (same name and dimension)."""

    name = "test-hash-embedder"
    dimension = HASH_DIMENSION

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.zeros((len(texts), HASH_DIMENSION), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in re.findall(r"\w+", text.casefold()) or [text]:
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=2).digest()
                row[digest[0] % HASH_DIMENSION] += 1.0 if digest[1] & 1 else -1.0
            norm = float(np.linalg.norm(row))
            if norm == 0.0:  # words that cancel out: any fixed unit vector will do
                row[0], norm = 1.0, 1.0
            row /= norm
        return rows

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return row


def raw_traces(path: str | os.PathLike[str], *needles: str) -> list[str]:
    """``collection: record id`` of every record, in every collection of the embedded store at
    ``path``, whose id, document or metadata holds one of ``needles`` — as text or inside a
    base64 document (LangGraph checkpoints). An erasure test expects none: it reads Chroma
    directly, past every Memento API."""
    import base64
    import binascii

    import chromadb

    def holds(value: str) -> bool:
        if any(needle in value for needle in needles):
            return True
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return False
        return any(needle.encode() in decoded for needle in needles)

    client = chromadb.PersistentClient(path=str(path))
    found = []
    for collection in client.list_collections():
        records = collection.get(include=["documents", "metadatas"])
        for record_id, document, metadata in zip(
            records["ids"], records["documents"] or [], records["metadatas"] or []
        ):
            if holds(record_id) or holds(document or "") or holds(repr(metadata)):
                found.append(f"{collection.name}: {record_id}")
    return found
