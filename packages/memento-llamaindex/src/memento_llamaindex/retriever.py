"""``MementoRetriever``: Memento's ranked recall as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from memento_core import MAX_RECALL_LIMIT, Memento, MemoryNotFound, Recalled, RecallFilter, Scope


class MementoRetriever(BaseRetriever):
    """Recall as ``NodeWithScore``: node id = memory id, score = Memento's ranking score (best
    first), text = the memory's content, metadata = its fields and why it came back (``reason``,
    ``relevance``, ``similarity``, ``matched_terms``). Use it in a query engine, a
    ``RetrieverTool`` for an agent, or on its own.

    Args:
        store: An open ``Memento``.
        user_id, agent_id, project_id: Whose memories: recall sees what this scope may see.
        similarity_top_k: How many memories come back.
        filter: Narrows recall (``RecallFilter`` fields: types, tags, since, until, …).
        min_relevance: Drop candidates whose relevance (0..1) is below this.
    """

    def __init__(
        self,
        store: Memento,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        project_id: str | None = None,
        similarity_top_k: int = 5,
        filter: RecallFilter | Mapping[str, Any] | None = None,
        min_relevance: float = 0.0,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(store, Memento):
            raise TypeError(f"store must be an open Memento, got {type(store).__name__}")
        if (
            isinstance(similarity_top_k, bool)
            or not isinstance(similarity_top_k, int)
            or not (1 <= similarity_top_k <= MAX_RECALL_LIMIT)
        ):
            raise ValueError(
                f"similarity_top_k must be a whole number from 1 to {MAX_RECALL_LIMIT}, "
                f"got {similarity_top_k!r}"
            )
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.store = store
        self.scope = Scope(user_id=user_id, agent_id=agent_id, project_id=project_id)
        self.similarity_top_k = similarity_top_k
        self.filter = filter if isinstance(filter, RecallFilter) else RecallFilter.build(filter)
        self.min_relevance = min_relevance

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.store.recall(
            query_bundle.query_str,
            scope=self.scope,
            limit=self.similarity_top_k,
            filter=self.filter,
            min_relevance=self.min_relevance,
        )
        return [node_from_recalled(r) for r in found]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def delete_nodes(self, node_ids: list[str]) -> None:
        """Erase these memories (hard delete: vectors, links and feedback go too).

        Only this scope's own memories may be deleted: an id of another user's memory, or an
        unknown one, raises ``MemoryNotFound`` and nothing is deleted."""
        for node_id in node_ids:
            item = self.store.get(node_id, scope=self.scope)
            if item.scope.user_id != self.scope.user_id:
                raise MemoryNotFound(node_id)
        for node_id in dict.fromkeys(node_ids):
            self.store.forget(node_id, hard=True, scope=self.scope)

    async def adelete_nodes(self, node_ids: list[str]) -> None:
        """The async twin of ``delete_nodes``."""
        await asyncio.to_thread(self.delete_nodes, node_ids)


def node_from_recalled(recalled: Recalled) -> NodeWithScore:
    """A recall result as a scored LlamaIndex node."""
    item, reason = recalled.item, recalled.reason
    metadata: dict[str, Any] = {
        name: value for name, value in item.scope.as_dict().items() if value is not None
    }
    metadata.update(
        memory_type=item.type.value,
        title=item.title,
        tags=list(item.tags),
        importance=item.importance,
        privacy=item.privacy.value,
        source=item.source,
        created_at=item.created_at.isoformat(),
        relevance=reason.relevance,
        similarity=reason.dense,
        reason=str(reason),
        matched_terms=list(reason.matched_terms),
    )
    if item.data is not None:
        metadata["data"] = dict(item.data)
    node = TextNode(
        id_=item.id,
        text=item.content,
        metadata=metadata,
        # The reason and the scores are for people and code, not for the LLM or the embedder.
        excluded_llm_metadata_keys=["relevance", "similarity", "reason", "matched_terms"],
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=recalled.score)
