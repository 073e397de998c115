"""``MementoStore``: a LangGraph ``BaseStore`` whose items are Memento memories.

Every item is one memory (see ``memento_langgraph.namespaces`` for the mapping). ``put`` embeds
the configured index fields through Memento (its own embedder: ``index["embed"]`` is ignored);
``search(query=...)`` is Memento's hybrid recall — embeddings and BM25, recency, importance,
usage, diversity — and each result's ``score`` is Memento's score. Expiry is Memento's:
``ttl`` (minutes) becomes the memory's retention, which every read can push out again.

Decisions a LangGraph user may notice:

- Search is always available: without an ``index`` config the whole value (``"$"``) is embedded.
  ``index=False`` stores the item with the placeholder text ``UNINDEXED`` and without the
  ``lg:indexed`` tag, so it never ranks; like ``InMemoryStore``, a query search that runs out of
  ranked items fills the page with unindexed ones (``score=None``).
- Searches without a query, ``list_namespaces`` and value filters read the store's items and
  decide here: Memento does not index payload fields, and core's listing takes no tag filter.
- Expired items are omitted from every read at once (``omit_expired`` is always on); core's
  ``purge`` (the maintenance worker) erases them later.
- Ops in one ``batch`` run in order; consecutive puts are written together, the last put of a
  key winning. Each caller first embeds its own puts' texts and queries, in its own thread
  (callers embed in parallel: the model releases the GIL, and one text at a time costs the
  least per text); then concurrent callers' puts are grouped (``_grouping``): puts waiting
  while another thread writes are written in one call, and a write about to start waits up to
  ``WRITE_LINGER`` for callers still embedding theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from memento_core import (
    FOREVER,
    MAX_CONTENT_CHARS,
    MAX_RECALL_LIMIT,
    CachingEmbedder,
    Embedder,
    Memento,
    MemoryDraft,
    MemoryItem,
    MemoryNotFound,
    MemoryType,
)
from memento_langgraph._grouping import Group
from memento_langgraph._migration import move_old_items
from memento_langgraph.filters import check_filter, matches_filter
from memento_langgraph.namespaces import (
    INDEXED_TAG,
    NamespaceMapping,
    matches_condition,
    prefix_tag,
)

__all__ = ["UNINDEXED", "MementoStore"]

WRITE_LINGER = 0.05
"""Seconds a grouped write waits for callers still embedding their puts (see ``_grouping``)."""
UNINDEXED = "∅"
"""The content of an item stored with ``index=False``: one symbol that has no keywords, so it
costs one cached embedding for all such items and never matches a keyword search."""


class MementoStore(BaseStore):
    """A LangGraph store on an open ``Memento``: ``graph.compile(store=MementoStore(mem))``.

    ``index``: LangGraph's ``IndexConfig``; ``fields`` says what is embedded (default
    ``["$"]``). ``embed`` is accepted and not called: items are embedded by the Memento store's
    embedder (choose it with ``Memento.open(..., embedder=...)``), and ``index_config["dims"]``
    reports that embedder's dimension. A ``dims`` given without ``embed`` must match it.
    ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl`` in minutes, ``refresh_on_read``).
    ``project_id``, ``user_label``: the namespace mapping (see ``memento_langgraph.namespaces``).
    ``memory_type``: the type items are stored as (default ``semantic``: facts kept until
    deleted). ``search`` results carry Memento's ranking score as ``score``, best first.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        memento: Memento,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        project_id: str = "langgraph",
        user_label: int | Literal["auto"] | None = "auto",
        memory_type: MemoryType | str = MemoryType.SEMANTIC,
    ) -> None:
        self.memento = memento
        self.mapping = NamespaceMapping(project_id=project_id, user_label=user_label)
        self.memory_type = MemoryType(memory_type)
        self.ttl_config = ttl
        fields = _index_fields(index, memento.embedder.dimension)
        self.index_config: IndexConfig = {"dims": memento.embedder.dimension, "fields": fields}
        self._fields = [(path, tokenize_path(path) if path != "$" else path) for path in fields]
        self._writes: Group[PutOp] = Group(self._apply_puts, linger=WRITE_LINGER)
        move_old_items(memento, self.mapping)  # once per store: items of the old mapping

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        collection_prefix: str = "memento",
        embedder: Embedder | None = None,
        **options: Any,
    ) -> MementoStore:
        """Open a Memento store (embedded at ``path`` or on the server at ``url``) and wrap it."""
        memento = Memento.open(
            path, url=url, collection_prefix=collection_prefix, embedder=embedder
        )
        return cls(memento, **options)

    # ------------------------------------------------------------------ batches

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            _check_op(op)
        writes = any(isinstance(op, PutOp) for op in ops)
        with self._writes.coming() if writes else contextlib.nullcontext():
            self._embed_ahead(ops)
            return self._run(ops)

    def _run(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = [None] * len(ops)
        puts: list[PutOp] = []
        for n, op in enumerate(ops):
            if isinstance(op, PutOp):
                puts.append(op)
                continue
            self._write(puts)
            if isinstance(op, GetOp):
                results[n] = self._get(op)
            elif isinstance(op, SearchOp):
                results[n] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[n] = self._list_namespaces(op)
        self._write(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------------ writing

    def _write(self, puts: list[PutOp]) -> None:
        """Apply this caller's pending puts, with those of callers writing at the same time."""
        if puts:
            pending = list(puts)
            puts.clear()
            self._writes.submit(pending)

    def _apply_puts(self, ops: list[PutOp]) -> None:
        """Deletions, then every write in one (batch-embedded) call; the last put of a key wins."""
        latest = list({(tuple(op.namespace), op.key): op for op in ops}.values())
        drafts = [self._draft(op) for op in latest if op.value is not None]
        for op in latest:
            if op.value is None:
                with contextlib.suppress(MemoryNotFound):  # deleting a missing item is a no-op
                    self.memento.forget(self.mapping.memory_id(op.namespace, op.key), hard=True)
        if drafts:
            self.memento.remember_many(drafts)

    def _embed_ahead(self, ops: Sequence[Op]) -> None:
        """Embed the texts of these puts and queries into the Memento store's cache, in the
        caller's thread: callers embed in parallel (the model releases the GIL), and the
        grouped write and the recalls find the vectors cached instead of embedding inside the
        group, one group at a time."""
        embedder = self.memento.embedder
        if not isinstance(embedder, CachingEmbedder):
            return
        # A value or query that cannot be embedded is left to its op, which then raises its
        # own error in order; nothing is stored here.
        with contextlib.suppress(Exception):
            texts = [
                self._content(op.value, op.index)
                for op in ops
                if isinstance(op, PutOp) and isinstance(op.value, Mapping)
            ]
            if texts:
                embedder.embed_documents(list(dict.fromkeys(texts)))
            # Queries as queries: an asymmetric model embeds a question unlike a stored text.
            for query in dict.fromkeys(op.query for op in ops if isinstance(op, SearchOp)):
                if query:
                    embedder.embed_query(query)

    def _draft(self, op: PutOp) -> MemoryDraft:
        if not isinstance(op.value, Mapping):  # checked in ``batch``; narrows the type
            raise TypeError(f"a store value is a mapping, got {type(op.value).__name__}")
        text = self._index_text(op.value, op.index)
        return MemoryDraft(
            id=self.mapping.memory_id(op.namespace, op.key),
            content=text or UNINDEXED,
            type=self.memory_type,
            scope=self.mapping.scope(op.namespace),
            privacy="team",
            data=op.value,
            source="langgraph",
            tags=self.mapping.tags(op.namespace, indexed=text is not None),
            origin_trace=self.mapping.trace(op.namespace, op.key),
            retention=timedelta(minutes=op.ttl) if op.ttl is not None else FOREVER,
        )

    def _content(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> str:
        """The memory's content: the index text, or ``UNINDEXED``."""
        text = self._index_text(value, index)
        return UNINDEXED if text is None else text

    def _index_text(
        self, value: Mapping[str, Any], index: Literal[False] | list[str] | None
    ) -> str | None:
        """The text Memento embeds: every configured path's text, one per line; None if none."""
        if index is False:
            return None
        paths: Sequence[tuple[str, Any]] = (
            self._fields if index is None else [(p, tokenize_path(p)) for p in index]
        )
        texts = [t for _, tokens in paths for t in get_text_at_path(value, tokens) if t.strip()]
        if not texts:
            return None
        # The value itself is kept whole in the payload; only the derived search text is cut.
        return "\n".join(texts)[:MAX_CONTENT_CHARS]

    # ------------------------------------------------------------------ reading

    def _get(self, op: GetOp) -> Item | None:
        try:
            memory = self.memento.get(self.mapping.memory_id(op.namespace, op.key))
        except MemoryNotFound:
            return None
        if self.mapping.address(memory) is None:
            return None
        if op.refresh_ttl:
            self._refresh([memory])
        return self._item(memory)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        check_filter(op.filter)
        tag = prefix_tag(op.namespace_prefix)
        wanted = max(0, op.offset) + max(0, op.limit)
        scored: list[tuple[MemoryItem, float | None]] = []
        exhausted = True
        if op.query and wanted:
            scored, exhausted = self._ranked(op.query, tag, op.filter, wanted)
        if exhausted and len(scored) < wanted:
            seen = {memory.id for memory, _ in scored}
            listed = self._listed(tag, op.filter, unindexed_only=bool(op.query))
            scored += [(memory, None) for memory in listed if memory.id not in seen]
        page = scored[max(0, op.offset) : wanted]
        if op.refresh_ttl:
            # Memento's recall already noted an access (pushing out the expiry) of what it ranked.
            ranked_refreshed = self.memento.track_usage
            self._refresh([m for m, score in page if score is None or not ranked_refreshed])
        return [self._search_item(memory, score) for memory, score in page]

    def _ranked(
        self, query: str, tag: str, value_filter: Mapping[str, Any] | None, wanted: int
    ) -> tuple[list[tuple[MemoryItem, float | None]], bool]:
        """Memento's ranking of the indexed items under a prefix that pass the value filter.

        Returns the hits and whether every indexed candidate was seen. A value filter may
        reject ranked hits, so the request grows until enough pass or nothing is left.
        """
        fetch = min(wanted * (4 if value_filter else 1), MAX_RECALL_LIMIT)
        recall_filter = {"tags": [tag, INDEXED_TAG], "project_id": self.mapping.home}
        while True:
            hits = self.memento.recall(
                query, scope=self.mapping.viewer(), limit=fetch, filter=recall_filter
            )
            kept: list[tuple[MemoryItem, float | None]] = [
                (hit.item, hit.score)
                for hit in hits
                if self.mapping.address(hit.item) is not None
                and matches_filter(hit.item.data or {}, value_filter)
            ]
            exhausted = len(hits) < fetch
            if len(kept) >= wanted or exhausted or fetch >= MAX_RECALL_LIMIT:
                return kept, exhausted
            fetch = min(fetch * 4, MAX_RECALL_LIMIT)

    def _listed(
        self, tag: str, value_filter: Mapping[str, Any] | None, *, unindexed_only: bool = False
    ) -> list[MemoryItem]:
        """The store's live items under a prefix tag, most recently written first."""
        found = [
            memory
            for memory in self.memento.items(scope=self.mapping.viewer(), include_deleted=False)
            if tag in memory.tags
            and not (unindexed_only and INDEXED_TAG in memory.tags)
            and self.mapping.address(memory) is not None
            and matches_filter(memory.data or {}, value_filter)
        ]
        found.sort(key=lambda m: (m.updated_at or m.created_at, m.id), reverse=True)
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for memory in self._listed(prefix_tag(()), None):
            address = self.mapping.address(memory)
            if address is None:
                continue
            namespace = address[0]
            if all(matches_condition(c, namespace) for c in op.match_conditions or ()):
                namespaces.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        ordered = sorted(namespaces)
        return ordered[max(0, op.offset) : max(0, op.offset) + max(0, op.limit)]

    def _refresh(self, memories: Iterable[MemoryItem]) -> None:
        """Restart the expiry clock of items that have one (a read counts as a use)."""
        for memory in memories:
            if memory.retention is None:
                continue
            with contextlib.suppress(MemoryNotFound):  # deleted since it was read
                self.memento.feedback(memory.id, "used")

    def _address(self, memory: MemoryItem) -> tuple[tuple[str, ...], str]:
        address = self.mapping.address(memory)
        if address is None:  # every caller has filtered on it
            raise MemoryNotFound(memory.id)
        return address

    def _item(self, memory: MemoryItem) -> Item:
        namespace, key = self._address(memory)
        return Item(
            value=dict(memory.data or {}),
            key=key,
            namespace=namespace,
            created_at=memory.created_at,
            updated_at=memory.updated_at or memory.created_at,
        )

    def _search_item(self, memory: MemoryItem, score: float | None) -> SearchItem:
        namespace, key = self._address(memory)
        return SearchItem(
            namespace,
            key,
            dict(memory.data or {}),
            memory.created_at,
            memory.updated_at or memory.created_at,
            score,
        )


def _check_op(op: Op) -> None:
    """LangGraph's namespace rules, for ops handed to ``batch`` directly too."""
    if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
        raise TypeError(f"unknown store operation {type(op).__name__}")
    validate_op_namespace(op)
    # The root label "langgraph" is refused by the public ``put`` only (LangGraph keeps it for
    # its own writes, which go straight to ``batch``), so ``batch`` accepts it like
    # InMemoryStore does.
    if isinstance(op, PutOp) and op.value is not None:
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if not isinstance(op.value, Mapping):
            raise TypeError(f"a store value is a mapping, got {type(op.value).__name__}")


def _index_fields(index: IndexConfig | None, dimension: int) -> list[str]:
    if index is None:
        return ["$"]
    # ``embed`` (and the ``dims`` that describe it) name the embedding a LangGraph store would
    # call; Memento embeds with its own store's embedder, so they are accepted and not used.
    # Only a ``dims`` given without ``embed`` is checked: it can only mean Memento's embedder.
    dims = index.get("dims")
    if index.get("embed") is None and dims is not None and dims != dimension:
        raise ValueError(
            f"index['dims'] is {dims} but the Memento store's embedder makes {dimension}-"
            "dimensional vectors; leave dims out or open the store with another embedder"
        )
    return list(index.get("fields") or ["$"])
