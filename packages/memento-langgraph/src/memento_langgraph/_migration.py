"""Bringing records stored by earlier versions up to date, once per store.

**Store items.** Until issue 21, an item was a team memory of the plain project ``project_id``
(``"langgraph"``), so anyone recalling with that project saw every user's items. Items now live
in the reserved project ``adapter:<project_id>`` (see ``memento_langgraph.namespaces``). Their
ids hash the store's ``project_id``, not the project they live in, so moving one is rewriting
it in place under its id with its new scope: its value, creation time and usage stay. Expired
items are left where they are: they are hidden from everyone, and core's ``purge`` erases them.

**Checkpoint records.** Checkpoints always named their thread's user; blobs and writes now do
too (``user_id``), so that core's ``erase_user`` deletes them from any instance. Older blobs and
writes take the user of their checkpoint (writes) or of their thread's newest checkpoint
(blobs).

Each runs when a writable ``MementoStore`` (per project) or ``MementoSaver`` opens, until a
marker in the side collection ``lg_migrations`` records that it ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memento_core import FOREVER, Memento, MemoryDraft, MemoryItem, Scope, SideRecords
from memento_langgraph.namespaces import NamespaceMapping

__all__ = ["move_old_items", "tag_old_records"]

MARKERS = "lg_migrations"
PAGE = 500


def move_old_items(memento: Memento, mapping: NamespaceMapping) -> int:
    """Move this project's old-shaped items into its home, once; returns how many moved."""
    if memento.read_only:
        return 0
    markers = memento.side_records(MARKERS)
    marker = f"home:{mapping.project_id}"
    if markers.get([marker]):
        return 0
    # The old home: team memories of the plain project, which a viewer of it sees.
    drafts = [
        _moved(item, address, mapping)
        for item in memento.items(scope=Scope(project_id=mapping.project_id))
        if item.scope.project_id == mapping.project_id
        and (address := mapping.traced_address(item)) is not None
    ]
    if drafts:
        memento.remember_many(drafts)
    markers.put([marker], [mapping.home], [{"project_id": mapping.project_id}])
    return len(drafts)


def _moved(
    item: MemoryItem, address: tuple[tuple[str, ...], str], mapping: NamespaceMapping
) -> MemoryDraft:
    namespace, _ = address
    return MemoryDraft(
        id=item.id,
        content=item.content,
        type=item.type,
        title=item.title,
        scope=mapping.scope(namespace),
        privacy="team",
        data=item.data,
        source=item.source,
        importance=item.importance,
        pinned=item.pinned,
        tags=item.tags,
        hotwords=item.hotwords,
        origin_trace=item.origin_trace,
        retention=FOREVER if item.retention is None else item.retention,
    )


def tag_old_records(
    memento: Memento, checkpoints: SideRecords, blobs: SideRecords, writes: SideRecords
) -> int:
    """Give blobs and writes stored without a user their checkpoint's, once; returns how many."""
    if memento.read_only:
        return 0
    markers = memento.side_records(MARKERS)
    marker = "checkpoint-users"
    if markers.get([marker]):
        return 0
    by_checkpoint: dict[str, str] = {}
    newest: dict[str, tuple[str, str]] = {}  # thread -> (checkpoint id, user)
    for record in checkpoints.find():
        meta = record.metadata
        user = str(meta.get("user_id") or "")
        by_checkpoint[record.id] = user
        thread, checkpoint_id = str(meta["thread_id"]), str(meta["checkpoint_id"])
        if thread not in newest or checkpoint_id > newest[thread][0]:
            newest[thread] = (checkpoint_id, user)

    def blob_user(meta: Mapping[str, Any]) -> str:
        return newest.get(str(meta["thread_id"]), ("", ""))[1]

    def write_user(meta: Mapping[str, Any]) -> str:
        return by_checkpoint.get(str(meta["cp"]), "")

    tagged = 0
    for collection, user_of in ((blobs, blob_user), (writes, write_user)):
        untagged = [r for r in collection.find() if "user_id" not in r.metadata]
        for start in range(0, len(untagged), PAGE):
            page = untagged[start : start + PAGE]
            collection.put(
                [r.id for r in page],
                [r.document for r in page],
                [{**r.metadata, "user_id": user_of(r.metadata)} for r in page],
            )
        tagged += len(untagged)
    markers.put([marker], ["blobs and writes carry their user"], [{"done": True}])
    return tagged
