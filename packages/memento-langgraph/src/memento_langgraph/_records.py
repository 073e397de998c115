"""The checkpointer's records in three Chroma side collections of a Memento store.

``lg_checkpoints``: one record per (thread, namespace, checkpoint id): the checkpoint without its
channel values in the document, its metadata (serialised) and the parent and run ids in the
record's metadata. ``lg_blobs``: one record per (thread, namespace, channel, version).
``lg_writes``: one record per (thread, namespace, checkpoint id, task id, write index).
Record ids are hashes of those keys; bytes are base64 text. Every record's ``user_id`` is its
thread's user, so core's ``erase_user`` deletes it. Nothing here is a memory: the records carry
Memento's placeholder vector and never take part in recall.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

from memento_core import Memento, SideRecords
from memento_langgraph._migration import tag_old_records

__all__ = ["CheckpointRecords", "Record", "decode"]

Typed = tuple[str, bytes]
WRITE_PAGE = 500


@dataclass(frozen=True)
class Record:
    id: str
    meta: Mapping[str, Any]
    document: str


def encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode(type_: str, data: str) -> Typed:
    return type_, base64.b64decode(data)


def record_id(kind: str, *parts: str) -> str:
    """``kind`` + a hash of ``parts``, one id per tuple of parts: joined by ``\x1f`` (the ids
    records always had), or as JSON after a leading ``\x1e`` when a part holds a separator
    (no joined form starts with ``\x1e`` then: a first part holding one goes as JSON)."""
    if any("\x1f" in part or "\x1e" in part for part in parts):
        text = "\x1e" + json.dumps(list(parts))
    else:
        text = "\x1f".join(parts)
    raw = text.encode("utf-8", "surrogatepass")
    return f"{kind}-{hashlib.sha256(raw).hexdigest()[:40]}"


def _where(**equal: Any) -> dict[str, Any] | None:
    clauses = [{k: v} for k, v in equal.items() if v is not None]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class CheckpointRecords:
    """Reads and writes the checkpointer's records; every method is one or a few Chroma calls."""

    def __init__(self, memento: Memento) -> None:
        # Side records are what core offers adapters for records like these.
        self.checkpoints_col = memento.side_records("lg_checkpoints")
        self.blobs_col = memento.side_records("lg_blobs")
        self.writes_col = memento.side_records("lg_writes")
        # Blobs and writes of earlier versions get their user, so erase_user finds them.
        tag_old_records(memento, self.checkpoints_col, self.blobs_col, self.writes_col)

    # ------------------------------------------------------------------ reading

    def _records(
        self, collection: SideRecords, where: Mapping[str, Any] | None, *, documents: bool = True
    ) -> list[Record]:
        return [
            Record(found.id, found.metadata, found.document if documents else "")
            for found in collection.find(where)
        ]

    def checkpoint_heads(
        self,
        *,
        thread: str | None = None,
        ns: str | None = None,
        checkpoint_id: str | None = None,
    ) -> list[Record]:
        """Checkpoint records without their documents (enough to choose, sort and filter)."""
        where = _where(thread_id=thread, checkpoint_ns=ns, checkpoint_id=checkpoint_id)
        return self._records(self.checkpoints_col, where, documents=False)

    def checkpoints(self, *, ids: Sequence[tuple[str, str, str]]) -> list[Record]:
        """Whole checkpoint records for (thread, namespace, checkpoint id) keys, in that order."""
        if not ids:
            return []
        wanted = [record_id("cp", *key) for key in ids]
        by_id = {
            r.id: Record(r.id, r.metadata, r.document) for r in self.checkpoints_col.get(wanted)
        }
        return [by_id[i] for i in wanted if i in by_id]

    def blobs(self, keys: Iterable[tuple[str, str, str, Any]]) -> dict[tuple[str, ...], Typed]:
        by_id = {record_id("blob", t, n, c, str(v)): (t, n, c, str(v)) for t, n, c, v in keys}
        if not by_id:
            return {}
        return {
            by_id[r.id]: decode(r.metadata["type"], r.document)
            for r in self.blobs_col.get(list(by_id))
        }

    def writes_of(
        self, checkpoints: Sequence[Mapping[str, Any]]
    ) -> dict[tuple[str, str, str], list[tuple[str, str, Typed]]]:
        """Pending writes of checkpoint records, each list in ``writes_sort_key`` order."""
        keys = {
            record_id("cp", m["thread_id"], m["checkpoint_ns"], m["checkpoint_id"]): (
                m["thread_id"],
                m["checkpoint_ns"],
                m["checkpoint_id"],
            )
            for m in checkpoints
        }
        if not keys:
            return {}
        found = self._records(self.writes_col, {"cp": {"$in": list(keys)}})
        found.sort(
            key=lambda r: writes_sort_key(r.meta["task_path"], r.meta["task_id"], r.meta["idx"])
        )
        out: dict[tuple[str, str, str], list[tuple[str, str, Typed]]] = {}
        for r in found:
            out.setdefault(keys[r.meta["cp"]], []).append(
                (r.meta["task_id"], r.meta["channel"], decode(r.meta["type"], r.document))
            )
        return out

    # ------------------------------------------------------------------ writing

    def put_blobs(
        self, thread: str, ns: str, blobs: Mapping[tuple[str, str], Typed], *, user_id: str
    ) -> None:
        if not blobs:
            return
        items = list(blobs.items())
        self.blobs_col.put(
            [record_id("blob", thread, ns, *key) for key, _ in items],
            [encode(data) for _, (_, data) in items],
            [
                {
                    "thread_id": thread,
                    "checkpoint_ns": ns,
                    "channel": channel,
                    "version": version,
                    "type": type_,
                    "user_id": user_id,  # core's erase_user deletes the user's side records
                }
                for (channel, version), (type_, _) in items
            ],
        )

    def put_checkpoint(
        self,
        thread: str,
        ns: str,
        checkpoint_id: str,
        *,
        parent_id: str,
        checkpoint: Typed,
        metadata: Typed,
        run_id: str,
        user_id: str,
    ) -> None:
        self.checkpoints_col.put(
            [record_id("cp", thread, ns, checkpoint_id)],
            [encode(checkpoint[1])],
            [
                {
                    "thread_id": thread,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                    "parent_id": parent_id,
                    "run_id": run_id,
                    "user_id": user_id,  # core's erase_user deletes the user's side records
                    "type": checkpoint[0],
                    "md_type": metadata[0],
                    "md": encode(metadata[1]),
                }
            ],
        )

    def put_writes(
        self,
        thread: str,
        ns: str,
        checkpoint_id: str,
        task_id: str,
        task_path: str,
        writes: Sequence[tuple[int, str, Typed]],
        *,
        user_id: str | None,
    ) -> None:
        """Special channels (negative index) overwrite; a regular write already stored stays.
        ``user_id`` None: the user of the checkpoint the writes belong to."""
        ids = [record_id("w", thread, ns, checkpoint_id, task_id, str(i)) for i, _, _ in writes]
        regular = [rid for rid, (idx, _, _) in zip(ids, writes) if idx >= 0]
        stored = {r.id for r in self.writes_col.get(regular)}
        fresh = [(rid, w) for rid, w in zip(ids, writes) if rid not in stored]
        if not fresh:
            return
        cp = record_id("cp", thread, ns, checkpoint_id)
        if user_id is None:
            owner = self.checkpoints_col.get([cp])
            user_id = str(owner[0].metadata.get("user_id") or "") if owner else ""
        self.writes_col.put(
            [rid for rid, _ in fresh],
            [encode(value[1]) for _, (_, _, value) in fresh],
            [
                {
                    "thread_id": thread,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                    "cp": cp,
                    "task_id": task_id,
                    "task_path": task_path,
                    "idx": idx,
                    "channel": channel,
                    "type": value[0],
                    "user_id": user_id,
                }
                for _, (idx, channel, value) in fresh
            ],
        )

    # ------------------------------------------------------------------ deleting

    def delete_thread(self, thread: str) -> None:
        for collection in (self.checkpoints_col, self.blobs_col, self.writes_col):
            collection.delete(where={"thread_id": thread})

    def delete_runs(self, run_ids: Sequence[str], serde: SerializerProtocol) -> None:
        if not run_ids:
            return
        doomed = self._records(self.checkpoints_col, {"run_id": {"$in": list(run_ids)}})
        self._delete_checkpoints(doomed)
        for thread, ns in {(r.meta["thread_id"], r.meta["checkpoint_ns"]) for r in doomed}:
            self._collect_blobs(thread, ns, serde)

    def keep_latest(self, thread: str, serde: SerializerProtocol) -> None:
        """Keep each namespace's newest checkpoint, and the ancestors its delta channels need.

        A delta channel's value is rebuilt from the writes back to its last snapshot. The
        metadata's ``counters_since_delta_snapshot`` names the channels still counting since
        one; walking up the parents, a channel is settled at the first ancestor that no longer
        counts it (its snapshot, or the channel's start), and that ancestor is kept too.
        """
        heads = self._records(self.checkpoints_col, {"thread_id": thread}, documents=False)
        by_ns: dict[str, dict[str, Record]] = {}
        for head in heads:
            by_ns.setdefault(head.meta["checkpoint_ns"], {})[head.meta["checkpoint_id"]] = head
        for ns, records in by_ns.items():
            cursor: str | None = max(records)
            keep: set[str] = set()
            needed: set[str] | None = None
            while cursor in records and (needed is None or needed):
                keep.add(cursor)
                counting = set(_delta_counters(records[cursor], serde))
                needed = counting if needed is None else needed & counting
                cursor = records[cursor].meta["parent_id"] or None
            self._delete_checkpoints([r for cid, r in records.items() if cid not in keep])
            self._collect_blobs(thread, ns, serde)

    def _delete_checkpoints(self, records: Sequence[Record]) -> None:
        ids = [r.id for r in records]
        for start in range(0, len(ids), WRITE_PAGE):
            page = ids[start : start + WRITE_PAGE]
            self.writes_col.delete(where={"cp": {"$in": page}})
            self.checkpoints_col.delete(ids=page)

    def _collect_blobs(self, thread: str, ns: str, serde: SerializerProtocol) -> None:
        """Delete the blobs of (thread, namespace) that no remaining checkpoint refers to."""
        referenced: set[tuple[str, str]] = set()
        remaining = self._records(self.checkpoints_col, _where(thread_id=thread, checkpoint_ns=ns))
        for record in remaining:
            checkpoint = serde.loads_typed(decode(record.meta["type"], record.document))
            referenced.update((c, str(v)) for c, v in checkpoint["channel_versions"].items())
        blobs = self._records(
            self.blobs_col, _where(thread_id=thread, checkpoint_ns=ns), documents=False
        )
        unused = [b.id for b in blobs if (b.meta["channel"], b.meta["version"]) not in referenced]
        for start in range(0, len(unused), WRITE_PAGE):
            self.blobs_col.delete(ids=unused[start : start + WRITE_PAGE])

    # ------------------------------------------------------------------ copying

    def copy_thread(self, source: str, target: str) -> None:
        """Every checkpoint, blob and write of ``source`` again under ``target``."""
        blobs = []
        for record in self._records(self.blobs_col, {"thread_id": source}):
            meta = {**record.meta, "thread_id": target}
            blob_key = (target, meta["checkpoint_ns"], meta["channel"], meta["version"])
            blobs.append((record_id("blob", *blob_key), meta, record.document))
        checkpoints = []
        for record in self._records(self.checkpoints_col, {"thread_id": source}):
            meta = {**record.meta, "thread_id": target}
            checkpoints.append(
                (
                    record_id("cp", target, meta["checkpoint_ns"], meta["checkpoint_id"]),
                    meta,
                    record.document,
                )
            )
        writes = []
        for record in self._records(self.writes_col, {"thread_id": source}):
            ns, checkpoint_id = record.meta["checkpoint_ns"], record.meta["checkpoint_id"]
            cp = record_id("cp", target, ns, checkpoint_id)
            meta = {**record.meta, "thread_id": target, "cp": cp}
            write_id = record_id("w", target, ns, checkpoint_id, meta["task_id"], str(meta["idx"]))
            writes.append((write_id, meta, record.document))
        # Blobs first, checkpoints last: a reader never meets a copied checkpoint without data.
        for collection, rows in (
            (self.blobs_col, blobs),
            (self.writes_col, writes),
            (self.checkpoints_col, checkpoints),
        ):
            for start in range(0, len(rows), WRITE_PAGE):
                page = rows[start : start + WRITE_PAGE]
                collection.put(
                    [i for i, _, _ in page],
                    [d for _, _, d in page],
                    [m for _, m, _ in page],
                )


def _delta_counters(record: Record, serde: SerializerProtocol) -> Mapping[str, Any]:
    metadata = serde.loads_typed(decode(record.meta["md_type"], record.meta["md"]))
    counters = metadata.get("counters_since_delta_snapshot")
    return counters if isinstance(counters, Mapping) else {}
