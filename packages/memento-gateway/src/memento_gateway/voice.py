"""The voice hook: turns a finished sentence into a voice clip for a ``voice_ready`` frame.

The gateway has no voice of its own. Pass ``voice=`` to ``Gateway`` to call a TTS service; it is
called once per sentence, only for requests with ``return_voice`` 1, and the sentence's
``voice_ready`` frame is sent when it returns (``None``: no frame for that sentence).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from memento_core import InvalidInput

__all__ = ["MAX_VOICE_URL_CHARS", "Sentence", "Voice", "VoiceHook"]

MAX_VOICE_URL_CHARS = 8_192


@dataclass(frozen=True)
class Sentence:
    """A sentence of a reply, as the voice hook gets it."""

    space_id: str
    room_uid: str
    stream_uid: str
    sent_uid: str
    text: str


@dataclass(frozen=True)
class Voice:
    """Where the clip of a sentence is, and how many seconds it lasts."""

    url: str
    length: float

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not 0 < len(self.url) <= MAX_VOICE_URL_CHARS:
            raise InvalidInput(f"a voice url must be 1 to {MAX_VOICE_URL_CHARS} characters")
        if (
            isinstance(self.length, bool)
            or not isinstance(self.length, (int, float))
            or not math.isfinite(self.length)
            or self.length < 0
        ):
            raise InvalidInput(f"a voice length must be seconds ≥ 0, got {self.length!r}")


VoiceHook = Callable[[Sentence], Awaitable["Voice | None"]]
