"""Memento: memory for AI agents — working, episodic, semantic and procedural — on Chroma."""

from memento_core.chat import ChatMemory, FromSession, MessageTooLarge, WindowPolicy
from memento_core.consolidation import SleepReport
from memento_core.detector import Conversation, HotwordDetector, adetect_stream, detect_stream
from memento_core.drafts import MemoryDraft
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
from memento_core.events import MAX_EVENT_BYTES, HotwordDetected, HotwordEvent, MemoryDict
from memento_core.filters import RecallFilter
from memento_core.hotwords import HotwordEntry, HotwordSet
from memento_core.injection import InjectedMemory, Injection, memory_injection
from memento_core.lifecycle import ErasureReport, ForgetCandidate, PurgeReport
from memento_core.memento import DEFAULT_PATH, Memento, StoreStats
from memento_core.messages import Message, Role, ToolCall
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
from memento_core.policies import FOREVER, RetentionPolicy, ReviewPolicy
from memento_core.ranking import RankingWeights, Reason, Recalled
from memento_core.summarize import ExtractiveSummarizer, Summarizer
from memento_core.tokens import TokenCounter, WordPieceCounter

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PATH",
    "FOREVER",
    "MAX_CONTENT_CHARS",
    "MAX_EVENT_BYTES",
    "CachingEmbedder",
    "ChatMemory",
    "Conversation",
    "Embedder",
    "EmbedderMismatch",
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
    "Memento",
    "MementoError",
    "MemoryDict",
    "MemoryDraft",
    "MemoryItem",
    "MemoryNotFound",
    "MemoryType",
    "Message",
    "MessageTooLarge",
    "MissingDependency",
    "NotAMementoStore",
    "Privacy",
    "PurgeReport",
    "RankingWeights",
    "Reason",
    "RecallFilter",
    "Recalled",
    "RetentionPolicy",
    "ReviewPolicy",
    "Role",
    "Scope",
    "SentenceTransformerEmbedder",
    "SleepReport",
    "StoreError",
    "StoreStats",
    "StoreUnavailable",
    "Summarizer",
    "TokenCounter",
    "ToolCall",
    "WindowPolicy",
    "WordPieceCounter",
    "__version__",
    "adetect_stream",
    "detect_stream",
    "memory_injection",
]
