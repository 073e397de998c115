"""Memento: memory for AI agents — working, episodic, semantic and procedural — on Chroma."""

from memento_core.embedding import CachingEmbedder, Embedder, SentenceTransformerEmbedder
from memento_core.errors import (
    EmbedderMismatch,
    InvalidContent,
    InvalidFilter,
    InvalidHotwords,
    InvalidImport,
    InvalidInput,
    InvalidScope,
    MementoError,
    MemoryNotFound,
    MissingDependency,
    NotAMementoStore,
    StoreError,
    StoreUnavailable,
)
from memento_core.filters import RecallFilter
from memento_core.memento import DEFAULT_PATH, Memento, MemoryDraft, StoreStats
from memento_core.model import (
    MAX_CONTENT_CHARS,
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
)
from memento_core.ranking import RankingWeights, Reason, Recalled

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PATH",
    "MAX_CONTENT_CHARS",
    "CachingEmbedder",
    "Embedder",
    "EmbedderMismatch",
    "FeedbackEvent",
    "FeedbackKind",
    "InvalidContent",
    "InvalidFilter",
    "InvalidHotwords",
    "InvalidImport",
    "InvalidInput",
    "InvalidScope",
    "Link",
    "LinkType",
    "Memento",
    "MementoError",
    "MemoryDraft",
    "MemoryItem",
    "MemoryNotFound",
    "MemoryType",
    "MissingDependency",
    "NotAMementoStore",
    "Privacy",
    "RankingWeights",
    "Reason",
    "RecallFilter",
    "Recalled",
    "Scope",
    "SentenceTransformerEmbedder",
    "StoreError",
    "StoreStats",
    "StoreUnavailable",
    "__version__",
]
