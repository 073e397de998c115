"""Hotwords: variants that trigger a memory while a conversation streams.

``_sets`` holds the validated sets (from memories or the JSON form), ``_normalisation`` folds text
the same way for variants and streams, ``_detector`` runs the Aho–Corasick automaton across chunk
boundaries (with ``_hotfeed``, its optional C fast path), and ``_events`` makes the protocol's
``hotword_detected`` / ``memory_dict`` events.
"""

from memento_core.hotwords._detector import (
    MAX_CONNECTION_ID_CHARS,
    Conversation,
    HotwordDetector,
    adetect_stream,
    detect_stream,
)
from memento_core.hotwords._events import MAX_EVENT_BYTES, HotwordDetected, HotwordEvent, MemoryDict
from memento_core.hotwords._normalisation import StreamNormaliser, normalise_text
from memento_core.hotwords._sets import (
    MAX_TOTAL_VARIANTS,
    MAX_UID_CHARS,
    MAX_VARIANT_CHARS,
    MAX_VARIANTS_PER_UID,
    HotwordEntry,
    HotwordSet,
    check_hotword_variants,
)

__all__ = [
    "MAX_CONNECTION_ID_CHARS",
    "MAX_EVENT_BYTES",
    "MAX_TOTAL_VARIANTS",
    "MAX_UID_CHARS",
    "MAX_VARIANTS_PER_UID",
    "MAX_VARIANT_CHARS",
    "Conversation",
    "HotwordDetected",
    "HotwordDetector",
    "HotwordEntry",
    "HotwordEvent",
    "HotwordSet",
    "MemoryDict",
    "StreamNormaliser",
    "adetect_stream",
    "check_hotword_variants",
    "detect_stream",
    "normalise_text",
]
