"""``MementoSaver``: a LangGraph checkpointer persisted in a Memento store (embedded or server).

Checkpoints are records, not memories: they live in three side collections of the Memento store
(``<prefix>_lg_checkpoints``, ``_lg_blobs``, ``_lg_writes``) with placeholder vectors. As in
LangGraph's own savers, a checkpoint is stored without its channel values, and each channel value
is a blob stored once per (thread, namespace, channel, version), so unchanged channels cost nothing
per step. Serialised bytes (``serde.dumps_typed``) travel base64-encoded in the documents.

When a thread ends — ``delete_thread``, ``prune(strategy="delete")``, ``archive_thread`` or the
``end_of_thread`` predicate — its messages (the ``messages`` channel of its latest root
checkpoint) are recorded as the history of Memento session ``thread_id`` and archived into one
episodic memory by core's working memory. The user is the checkpoint metadata's ``user_id``
(LangGraph copies ``config["configurable"]["user_id"]`` there).

Every checkpoint, blob and write records its thread's user (``configurable[user_key]``, else
the metadata's, else ``scope.user_id``; a write without one in its config takes its
checkpoint's) as the side record's ``user_id``, so ``Memento.erase_user`` deletes them from any
instance or process — the CLI's ``memento-core erase-user`` too — without this saver being
built there. Blobs and writes stored before they carried a user take their checkpoint's when
a writable saver first opens the store (``_migration``).
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from memento_core import Memento, Scope, Summarizer
from memento_langgraph._records import CheckpointRecords, Record, decode
from memento_langgraph.messages import archive_messages, as_langchain

__all__ = ["EndOfThread", "MementoSaver"]

EndOfThread = Callable[[Checkpoint, CheckpointMetadata], bool]
"""Decides, for each new root checkpoint, whether its thread has ended (and is archived)."""
# The class defines ``list`` (the saver's API), which hides the builtin in its body.
Tuples = list[CheckpointTuple]
Records = list[Record]


class MementoSaver(BaseCheckpointSaver[str]):
    """Checkpoints in the Memento store ``memento``: ``graph.compile(checkpointer=...)``.

    ``archive_on_delete``: archive a thread's messages before deleting it (default on).
    ``end_of_thread``: a predicate on each new root checkpoint and its metadata; when it holds,
    the thread is archived (and kept). ``messages_key`` and ``user_key`` name the state channel
    holding the conversation and the metadata key holding the user; ``scope`` gives the rest of
    the archive's scope (agent, project). ``summarizer`` defaults to core's extractive one.
    """

    def __init__(
        self,
        memento: Memento,
        *,
        serde: SerializerProtocol | None = None,
        archive_on_delete: bool = True,
        end_of_thread: EndOfThread | None = None,
        messages_key: str = "messages",
        user_key: str = "user_id",
        scope: Scope | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.memento = memento
        self.archive_on_delete = archive_on_delete
        self.end_of_thread = end_of_thread
        self.messages_key = messages_key
        self.user_key = user_key
        self.scope = scope or Scope()
        self.summarizer = summarizer
        self._records = CheckpointRecords(memento)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ reading

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        thread, ns = _address(configurable)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            found = self._records.checkpoints(ids=[(thread, ns, checkpoint_id)])
        else:
            heads = self._records.checkpoint_heads(thread=thread, ns=ns)
            if not heads:
                return None
            newest = max(heads, key=lambda r: r.meta["checkpoint_id"])
            found = self._records.checkpoints(ids=[(thread, ns, newest.meta["checkpoint_id"])])
        tuples = self._tuples(found)
        return tuples[0] if tuples else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        configurable = (config or {}).get("configurable") or {}
        heads = self._records.checkpoint_heads(
            thread=str(configurable["thread_id"]) if "thread_id" in configurable else None,
            ns=configurable.get("checkpoint_ns"),
            checkpoint_id=configurable.get("checkpoint_id"),
        )
        heads.sort(key=lambda r: r.meta["checkpoint_id"], reverse=True)
        before_id = get_checkpoint_id(before) if before else None
        chosen: Records = []
        for head in heads:
            if limit is not None and len(chosen) >= limit:
                break
            if before_id and head.meta["checkpoint_id"] >= before_id:
                continue
            if filter:
                metadata = self.serde.loads_typed(decode(head.meta["md_type"], head.meta["md"]))
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            chosen.append(head)
        keys = [_key(r) for r in chosen]
        yield from self._tuples(self._records.checkpoints(ids=keys))

    def _tuples(self, records: Sequence[Record]) -> Tuples:
        """Whole tuples for checkpoint records, their blobs and writes fetched in two reads."""
        loaded = [(r, self.serde.loads_typed(decode(r.meta["type"], r.document))) for r in records]
        blob_keys = [
            (r.meta["thread_id"], r.meta["checkpoint_ns"], channel, version)
            for r, checkpoint in loaded
            for channel, version in checkpoint["channel_versions"].items()
        ]
        blobs = self._records.blobs(blob_keys)
        writes = self._records.writes_of([r.meta for r, _ in loaded])
        out: Tuples = []
        for record, checkpoint in loaded:
            meta = record.meta
            thread, ns, checkpoint_id = _key(record)
            values: dict[str, Any] = {}
            for channel, version in checkpoint["channel_versions"].items():
                blob = blobs.get((thread, ns, channel, str(version)))
                if blob is not None and blob[0] != "empty":
                    values[channel] = self.serde.loads_typed(blob)
            parent = meta["parent_id"]
            out.append(
                CheckpointTuple(
                    config=_config(thread, ns, checkpoint_id),
                    # A checkpoint read back whole; the serialiser's output is untyped.
                    checkpoint=cast(Checkpoint, {**checkpoint, "channel_values": values}),
                    metadata=self.serde.loads_typed(decode(meta["md_type"], meta["md"])),
                    parent_config=_config(thread, ns, parent) if parent else None,
                    pending_writes=[
                        (task_id, channel, self.serde.loads_typed(value))
                        for task_id, channel, value in writes.get((thread, ns, checkpoint_id), [])
                    ],
                )
            )
        return out

    # ------------------------------------------------------------------ writing

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = config["configurable"]
        thread, ns = _address(configurable)
        stored = checkpoint.copy()
        values: dict[str, Any] = stored.pop("channel_values")  # type: ignore[misc]  # stored apart
        full_metadata = get_serializable_checkpoint_metadata(config, metadata)
        user_id = self._user_of(configurable, full_metadata)
        self._records.put_blobs(
            thread,
            ns,
            {
                (channel, str(version)): (
                    self.serde.dumps_typed(values[channel]) if channel in values else ("empty", b"")
                )
                for channel, version in new_versions.items()
            },
            user_id=user_id,
        )
        self._records.put_checkpoint(
            thread,
            ns,
            checkpoint["id"],
            parent_id=configurable.get("checkpoint_id") or "",
            checkpoint=self.serde.dumps_typed(stored),
            metadata=self.serde.dumps_typed(full_metadata),
            run_id=str(full_metadata.get("run_id") or ""),
            user_id=user_id,
        )
        ended = self.end_of_thread
        if ns == "" and ended is not None and ended(checkpoint, full_metadata):
            self.archive_thread(thread)
        return _config(thread, ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        configurable = config["configurable"]
        thread, ns = _address(configurable)
        checkpoint_id = configurable["checkpoint_id"]
        indexed = [
            (WRITES_IDX_MAP.get(channel, n), channel, self.serde.dumps_typed(value))
            for n, (channel, value) in enumerate(writes)
        ]
        with self._lock:  # the existence check and the write must not interleave
            self._records.put_writes(
                thread,
                ns,
                checkpoint_id,
                task_id,
                task_path,
                indexed,
                user_id=self._run_user(config),
            )

    def _run_user(self, config: RunnableConfig) -> str | None:
        """The user a run's config names (``configurable[user_key]``); None when it names none."""
        found = config["configurable"].get(self.user_key)
        return found if isinstance(found, str) and found else None

    def _user_of(self, configurable: dict[str, Any], metadata: CheckpointMetadata) -> str:
        """The thread's user: ``configurable[user_key]``, else the metadata's, else the saver's
        scope; ``""`` for none."""
        for found in (configurable.get(self.user_key), metadata.get(self.user_key)):
            if isinstance(found, str) and found:
                return found
        return self.scope.user_id or ""

    # ------------------------------------------------------------------ deleting

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread's checkpoints and writes; first archive its messages (if enabled)."""
        if self.archive_on_delete:
            self.archive_thread(thread_id)
        self._records.delete_thread(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._records.delete_runs(list(run_ids), self.serde)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._records.copy_thread(str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint and the ancestors its delta
        channels still need; ``delete`` (``delete_all``, as a LangGraph server names it): delete
        the threads (archiving them, if enabled)."""
        if strategy in ("delete", "delete_all"):
            for thread_id in thread_ids:
                self.delete_thread(thread_id)
        elif strategy == "keep_latest":
            for thread_id in thread_ids:
                self._records.keep_latest(str(thread_id), self.serde)
        else:
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")

    # ------------------------------------------------------------------ archiving

    def archive_thread(self, thread_id: str) -> str | None:
        """Archive the thread's conversation into an episodic memory now; returns its id, or
        None when the thread has no messages. The checkpoints stay."""
        thread_id = str(thread_id)
        latest = self.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        if latest is None:
            return None
        messages = as_langchain(latest.checkpoint["channel_values"].get(self.messages_key))
        user = latest.metadata.get(self.user_key)
        scope = Scope(
            user_id=user if isinstance(user, str) and user else self.scope.user_id,
            agent_id=self.scope.agent_id,
            project_id=self.scope.project_id,
        )
        return archive_messages(
            self.memento, thread_id, messages, scope=scope, summarizer=self.summarizer
        )

    # ------------------------------------------------------------------ versions

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Zero-padded counter plus a random fraction: increasing, and distinct across forks
        (blobs are keyed by version, so two branches must never share one)."""
        if current is None:
            step = 0
        elif isinstance(current, int):
            step = current
        else:
            step = int(current.split(".")[0])
        return f"{step + 1:032}.{random.random():016}"

    # ------------------------------------------------------------------ async twins

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))

    async def aarchive_thread(self, thread_id: str) -> str | None:
        return await asyncio.to_thread(self.archive_thread, thread_id)


def _address(configurable: dict[str, Any]) -> tuple[str, str]:
    """(thread, namespace) of a config; thread ids are kept as text, whatever was passed."""
    return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns") or "")


def _key(record: Record) -> tuple[str, str, str]:
    meta = record.meta
    return meta["thread_id"], meta["checkpoint_ns"], meta["checkpoint_id"]


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }
