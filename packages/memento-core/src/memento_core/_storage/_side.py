"""Side records: collections of records without vectors beside the memories (chat messages,
adapters' checkpoints, the change feed, the partition directory)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memento_core._storage._chroma import PAGE, PLACEHOLDER_VECTOR, ChromaStore
from memento_core._storage._records import check_storable

NAMING_PAGE = 50
"""Texts looked for per read in ``SideRecords.naming`` (one ``$or`` of ``$contains``)."""

Where = Mapping[str, Any]


@dataclass(frozen=True)
class SideRecord:
    """One record of a side collection: an id, a text document and flat metadata."""

    id: str
    document: str
    metadata: Mapping[str, Any]


class SideRecords:
    """A collection of records without vectors (chat messages, adapters' checkpoints, the
    change feed). ``where`` clauses compare flat metadata, as in Chroma. A record whose
    metadata ``user_id`` names a user is that user's: ``Memento.erase_user`` deletes it from
    every collection adapters got through ``Memento.side_records``, whichever instance or
    process erases."""

    def __init__(self, collection: Any, store: ChromaStore) -> None:
        self._collection = collection
        self._store = store

    def put(
        self,
        ids: Sequence[str],
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Write records, replacing any stored under the same ids."""
        self._write(self._collection.upsert, ids, documents, metadatas)

    def add(
        self,
        ids: Sequence[str],
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Write records whose ids are not stored yet; a stored id keeps its first record."""
        self._write(self._collection.add, ids, documents, metadatas)

    @staticmethod
    def _write(
        write: Any,
        ids: Sequence[str],
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        if ids:
            write(
                ids=list(ids),
                embeddings=[PLACEHOLDER_VECTOR] * len(ids),
                documents=list(documents),
                # Every value checked before the write: Chroma fails deep inside on a number
                # it cannot hold, or silently turns a huge int into a float.
                metadatas=[check_storable(m) for m in metadatas],
            )

    def get(self, ids: Sequence[str]) -> list[SideRecord]:
        """The records with these ids that exist, in no particular order."""
        if not ids:
            return []
        return [
            SideRecord(i, d or "", m)
            for i, m, d, _ in self._store.records_by_id(
                self._collection, list(ids), include=["metadatas", "documents"]
            )
        ]

    def find(self, where: Where | None = None) -> list[SideRecord]:
        """Every record matching ``where`` (all of them without it), sorted by id."""
        found = [
            SideRecord(i, d or "", m)
            for i, m, d, _ in self._store.iter_records(
                self._collection, where=where, include=["metadatas", "documents"]
            )
        ]
        return sorted(found, key=lambda record: record.id)

    def naming(self, texts: Sequence[str]) -> list[SideRecord]:
        """Every record whose document contains one of ``texts`` (as given: a caller looking
        for an id in a JSON list passes ``json.dumps(id)``), sorted by id."""
        found: dict[str, SideRecord] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), NAMING_PAGE):
            page = unique[start : start + NAMING_PAGE]
            clauses = [{"$contains": text} for text in page]
            where_document = clauses[0] if len(clauses) == 1 else {"$or": clauses}
            got = self._collection.get(
                where_document=where_document, include=["metadatas", "documents"]
            )
            for i, m, d in zip(got["ids"], got["metadatas"], got["documents"]):
                found[i] = SideRecord(i, d or "", m)
        return sorted(found.values(), key=lambda record: record.id)

    def ids(self, where: Where | None = None) -> list[str]:
        return [
            i for i, _, _, _ in self._store.iter_records(self._collection, where=where, include=[])
        ]

    def delete(self, *, ids: Sequence[str] | None = None, where: Where | None = None) -> None:
        """Delete the records with these ids, or those matching ``where``."""
        if ids is not None:
            for start in range(0, len(ids), PAGE):
                self._collection.delete(ids=list(ids[start : start + PAGE]))
        elif where is not None:
            self._collection.delete(where=dict(where))

    def count(self) -> int:
        return int(self._collection.count())
