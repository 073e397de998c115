"""Memento: memory for AI agents — working, episodic, semantic and procedural — on Chroma."""

from memento_core._census import Census, Listed
from memento_core._chat import ChatMemory, FromSession, MessageTooLarge, WindowPolicy
from memento_core._consolidation import SleepReport
from memento_core._drafts import MemoryDraft
from memento_core._filters import RecallFilter
from memento_core._history import ChangeKind, MemoryChange
from memento_core._injection import InjectedMemory, Injection
from memento_core._lifecycle import ErasureReport, ForgetCandidate, PurgeReport
from memento_core._memento import MAX_RECALL_LIMIT, Memento, StoreStats
from memento_core._messages import Message, Role, ToolCall
from memento_core._model import (
    ADAPTER_PREFIX,
    MAX_CONTENT_CHARS,
    FeedbackEvent,
    FeedbackKind,
    Link,
    LinkType,
    MemoryItem,
    MemoryType,
    Privacy,
    Scope,
    adapter_scope_value,
    as_utc,
    check_claimable,
    check_scope_value,
    parse_enum,
)
from memento_core._onnx_embedding import OnnxEmbedder
from memento_core._partitions import IndexStatus
from memento_core._paths import DEFAULT_PATH, default_store_path
from memento_core._policies import FOREVER, RetentionPolicy, ReviewPolicy
from memento_core._ranking import RankingWeights, Reason, Recalled
from memento_core._reembed import ReembedReport
from memento_core._remote_embedding import OpenAICompatibleEmbedder
from memento_core._storage import SideRecord, SideRecords
from memento_core._summarize import ExtractiveSummarizer, Summarizer
from memento_core._tokens import TokenCounter, WordPieceCounter
from memento_core._worker import MaintenanceReport
from memento_core.embedding import (
    CachingEmbedder,
    Embedder,
    SentenceTransformerEmbedder,
    embedder_for,
)
from memento_core.errors import (
    EmbedderMismatch,
    EmbeddingFailed,
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
    NotOwner,
    ReadOnlyStore,
    StoreError,
    StoreLocked,
    StoreNotFound,
    StoreUnavailable,
)
from memento_core.hotwords import (
    MAX_EVENT_BYTES,
    Conversation,
    HotwordDetected,
    HotwordDetector,
    HotwordEntry,
    HotwordEvent,
    HotwordSet,
    MemoryDict,
    adetect_stream,
    detect_stream,
)

__version__ = "0.1.0"

__all__ = [
    "ADAPTER_PREFIX",
    "DEFAULT_PATH",
    "FOREVER",
    "MAX_CONTENT_CHARS",
    "MAX_EVENT_BYTES",
    "MAX_RECALL_LIMIT",
    "CachingEmbedder",
    "Census",
    "ChangeKind",
    "ChatMemory",
    "Conversation",
    "Embedder",
    "EmbedderMismatch",
    "EmbeddingFailed",
    "ErasureReport",
    "ExtractiveSummarizer",
    "FeedbackEvent",
    "FeedbackKind",
    "ForgetCandidate",
    "FromSession",
    "HotwordDetected",
    "HotwordDetector",
    "HotwordEntry",
    "HotwordEvent",
    "HotwordSet",
    "IndexStatus",
    "InjectedMemory",
    "Injection",
    "InvalidContent",
    "InvalidFilter",
    "InvalidHotwords",
    "InvalidImport",
    "InvalidInput",
    "InvalidScope",
    "Link",
    "LinkType",
    "Listed",
    "MaintenanceReport",
    "Memento",
    "MementoError",
    "MemoryChange",
    "MemoryDict",
    "MemoryDraft",
    "MemoryItem",
    "MemoryNotFound",
    "MemoryType",
    "Message",
    "MessageTooLarge",
    "MissingDependency",
    "NotAMementoStore",
    "NotOwner",
    "OnnxEmbedder",
    "OpenAICompatibleEmbedder",
    "Privacy",
    "PurgeReport",
    "RankingWeights",
    "ReadOnlyStore",
    "Reason",
    "RecallFilter",
    "Recalled",
    "ReembedReport",
    "RetentionPolicy",
    "ReviewPolicy",
    "Role",
    "Scope",
    "SentenceTransformerEmbedder",
    "SideRecord",
    "SideRecords",
    "SleepReport",
    "StoreError",
    "StoreLocked",
    "StoreNotFound",
    "StoreStats",
    "StoreUnavailable",
    "Summarizer",
    "TokenCounter",
    "ToolCall",
    "WindowPolicy",
    "WordPieceCounter",
    "__version__",
    "adapter_scope_value",
    "adetect_stream",
    "as_utc",
    "check_claimable",
    "check_scope_value",
    "default_store_path",
    "detect_stream",
    "embedder_for",
    "parse_enum",
]
