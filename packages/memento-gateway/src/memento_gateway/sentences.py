"""Cutting a streamed reply into sentences, for ``sent_uid`` and the voice hook.

A sentence ends after ``.``, ``!``, ``?`` or ``…`` followed by whitespace, after a full-width
``。！？``, or at a line break; the whitespace after the end belongs to the sentence that ends
as far as the chunk it ended in goes (as in the spec's frames: ``"."``, ``" "``, then
``" 저는"`` starts the next sentence). So ``3.5`` or ``v1.2`` never end
one, and a chunk ending in ``.`` waits for the next chunk to decide. A sentence shorter than
``MIN_SENTENCE_CHARS`` runs on into the next (the spec's frames keep "안녕하세요! 만나서
반갑습니다." as one sentence: one clip, not a clip per exclamation). A sentence longer than
``MAX_SENTENCE_CHARS`` is cut there, so its ``voice_ready`` frame stays small.
"""

from __future__ import annotations

__all__ = ["MAX_SENTENCE_CHARS", "MIN_SENTENCE_CHARS", "SentenceSplitter"]

MAX_SENTENCE_CHARS = 2_000
MIN_SENTENCE_CHARS = 10
_ENDS_BEFORE_SPACE = ".!?…"
_ENDS_ALONE = "。！？\n"


class SentenceSplitter:
    """Feed text chunk by chunk; get the pieces, each flagged when it starts a new sentence."""

    def __init__(self) -> None:
        self._length = 0  # characters in the current sentence
        self._ended = False  # the current sentence has ended; whitespace may still join it
        self._terminal = False  # the last character was an end mark awaiting whitespace

    def feed(self, text: str) -> list[tuple[str, bool]]:
        pieces: list[tuple[str, bool]] = []
        start = 0
        new = False
        for index, char in enumerate(text):
            if self._ended and not char.isspace():
                cut = index  # the new sentence takes the spaces before it in this chunk
                while cut > start and text[cut - 1].isspace():
                    cut -= 1
                pieces.append((text[start:cut], new))
                start, new = cut, True
                self._length, self._ended = index - cut, False
            elif self._length >= MAX_SENTENCE_CHARS:
                pieces.append((text[start:index], new))
                start, new = index, True
                self._length, self._ended = 0, False
            self._length += 1
            long_enough = self._length >= MIN_SENTENCE_CHARS
            if long_enough and ((self._terminal and char.isspace()) or char in _ENDS_ALONE):
                self._ended = True
            self._terminal = char in _ENDS_BEFORE_SPACE
        if start < len(text) or new:
            pieces.append((text[start:], new))
        return [(piece, starts) for piece, starts in pieces if piece]
