"""Moving items stored before the store had a home of its own.

Until issue 21, an item was a team memory of the plain project ``project_id`` (``"langgraph"``),
so anyone recalling with that project saw every user's items. Items now live in the reserved
project ``adapter:<project_id>`` (see ``memento_langgraph.namespaces``). Their ids do not
depend on the project they live in, so moving one is rewriting it in place under its id with
its new scope: its value, creation time and usage stay. The move runs once per store and
project, when a writable ``MementoStore`` opens; a marker in the side collection ``lg_store``
records that it ran. Expired items are left where they are: they are hidden from everyone, and
core's ``purge`` erases them.
"""

from __future__ import annotations

from memento_core import FOREVER, Memento, MemoryDraft, MemoryItem, Scope
from memento_langgraph.namespaces import NamespaceMapping

__all__ = ["move_old_items"]

MARKERS = "lg_store"


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
