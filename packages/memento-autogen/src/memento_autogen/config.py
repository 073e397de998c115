"""``MementoMemoryConfig``: everything needed to rebuild a ``MementoMemory``, as plain JSON."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memento_core import MAX_RECALL_LIMIT
from memento_core.embedding import DEFAULT_MODEL


class MementoMemoryConfig(BaseModel):
    """Where the store lives, whose memories these are, and how many come back.

    Paths, names and numbers only, so ``dump_component`` gives JSON that ``load_component``
    turns back into a working memory in another process.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = Field(
        default=None,
        description="Directory of an embedded store; with neither path nor url, Memento's "
        "default ($MEMENTO_PATH, else the per-user data directory).",
    )
    url: str | None = Field(
        default=None, description="A Chroma server started with `chroma run`: http://host:port."
    )
    collection_prefix: str = Field(
        default="memento", description="Prefix of the store's Chroma collections."
    )
    embedding_model: str = Field(
        default=DEFAULT_MODEL,
        description="all-MiniLM-L6-v2 (ONNX Runtime; the default), all-MiniLM-L6-v2-int8, or, "
        "with memento-core[torch], a sentence-transformers model name or local path; it must "
        "be the model that built the store.",
    )
    user_id: str | None = Field(
        default=None, description="Whose memories these are; none: the store's anonymous user."
    )
    agent_id: str | None = Field(default=None, description="The agent that writes them.")
    project_id: str | None = Field(default=None, description="The project (team) they belong to.")
    session_id: str | None = Field(default=None, description="The conversation they come from.")
    privacy: Literal["private", "team", "public"] = Field(
        default="private", description="Who may see new memories: private, team or public."
    )
    memory_type: Literal["working", "episodic", "semantic", "procedural"] = Field(
        default="semantic", description="The type of new memories unless metadata says otherwise."
    )
    k: int = Field(
        default=5, ge=1, le=MAX_RECALL_LIMIT, description="How many memories a query returns."
    )
    score_threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Minimum relevance (0..1, cosine similarity fused with the keyword score) "
        "a memory needs to come back; None keeps every match.",
    )

    @model_validator(mode="after")
    def _one_location(self) -> MementoMemoryConfig:
        if self.path is not None and self.url is not None:
            raise ValueError("give either path (an embedded store) or url (a Chroma server)")
        return self
