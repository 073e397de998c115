"""Text normalisation for hotword matching, for whole texts and for texts that arrive in chunks.

Hotwords and conversation text are compared after the same three steps:

1. Unicode NFC, so composed and decomposed text match (``한`` as one character or as three jamo,
   ``é`` as one character or as ``e`` and a combining accent);
2. case folding (``str.casefold``, then NFC again because folding can decompose), so ``Jo Malone``
   matches ``JO MALONE``; it leaves Hangul unchanged;
3. every run of whitespace (``str.isspace``) becomes one space.

``normalise_text`` does this to a whole text. ``StreamNormaliser`` does it to a text fed in chunks
and gives exactly the same result whatever the chunking. That takes care: NFC can merge a
character with the ones that follow (``e`` + U+0301 → ``é``, ``도`` + ``ᆫ`` → ``돈``), so a
chunk's last character stays *provisional* until the next chunk shows whether anything attaches.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["MAX_HELD_CHARS", "StreamNormaliser", "normalise_text"]

_WHITESPACE_RUN = re.compile(r"\s+")
_is_nfc = unicodedata.is_normalized  # a module global is found faster than a module attribute

MAX_HELD_CHARS = 64
"""Longest combining sequence held back as provisional. Longer runs (only in deliberately odd
text; Unicode's stream-safe format caps them at 30) are made final as they stand, so feeding
marks one at a time stays linear; such a run may then normalise slightly differently by chunking."""

# Hangul composes algorithmically (L + V → LV, LV + T → LVT); unicodedata lists no decomposition
# for syllables, so these ranges are added by hand.
_HANGUL_SYLLABLES = range(0xAC00, 0xD7A4)
_HANGUL_LEADING = range(0x1100, 0x1113)
_HANGUL_VOWELS = range(0x1161, 0x1176)
_HANGUL_TRAILING = range(0x11A8, 0x11C3)


@functools.cache
def _composition_tables() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(first elements, second elements, starters whose decomposition begins with a non-starter).

    Built on first use from ``unicodedata`` (~25 ms); all canonical compositions lie below U+30000.
    """
    firsts: set[str] = {chr(cp) for cp in _HANGUL_LEADING}
    firsts.update(chr(cp) for cp in _HANGUL_SYLLABLES if (cp - 0xAC00) % 28 == 0)
    seconds: set[str] = {chr(cp) for cp in (*_HANGUL_VOWELS, *_HANGUL_TRAILING)}
    unsafe_starters: set[str] = set()
    for cp in range(0x30000):
        char = chr(cp)
        decomposition = unicodedata.decomposition(char)
        if not decomposition or decomposition.startswith("<"):
            continue
        if unicodedata.combining(char) == 0:
            head = unicodedata.normalize("NFD", char)[0]
            if unicodedata.combining(head) != 0:
                unsafe_starters.add(char)
        parts = decomposition.split()
        if len(parts) == 2:
            first, second = chr(int(parts[0], 16)), chr(int(parts[1], 16))
            if unicodedata.normalize("NFC", first + second) == char:
                firsts.add(first)
                seconds.add(second)
    return frozenset(firsts), frozenset(seconds), frozenset(unsafe_starters)


def _starts_clean_segment(char: str) -> bool:
    """Whether normalisation never joins ``char`` with anything before it (a safe place to cut)."""
    if char < "\u0300":  # nothing below the combining diacritics composes backwards
        return True
    _, seconds, unsafe_starters = _composition_tables()
    return unicodedata.combining(char) == 0 and char not in seconds and char not in unsafe_starters


@functools.lru_cache(maxsize=8192)
def _may_change_with_what_follows(char: str) -> bool:
    """Whether text appended after ``char`` can change how ``char`` itself normalises."""
    normalised = normalise_text(char)
    if not normalised:
        return False
    last = normalised[-1]
    if ord(last) in _HANGUL_SYLLABLES:
        return (ord(last) - 0xAC00) % 28 == 0  # only a syllable without a final consonant grows
    firsts, _, _ = _composition_tables()
    # A precomposed character (or a trailing mark) can absorb marks that follow it: NFC puts
    # them in canonical order and composes again, e.g. ẛ + U+0323 → ṩ.
    return (
        last in firsts
        or unicodedata.combining(last) != 0
        or unicodedata.normalize("NFD", last) != last
    )


# The ASCII characters that are the first half of some canonical composition (q is not: no q̃).
_ASCII_MAY_CHANGE = frozenset("<=>ABCDEFGHIJKLMNOPRSTUVWXYZabcdefghijklmnoprstuvwxyz")


def _fold(raw: str) -> str:
    """Steps 1 and 2: NFC, case folding, NFC again."""
    if raw.isascii():
        return raw.lower()  # for ASCII, casefold is lower() and NFC is a no-op
    if not unicodedata.is_normalized("NFC", raw):
        raw = unicodedata.normalize("NFC", raw)
    text = raw.casefold()
    if text != raw and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


def _collapse_whitespace(text: str) -> str:
    """Step 3: every run of whitespace becomes one space."""
    text = text.replace("\n", " ")  # newlines are the usual case, and cheaper than the regex
    if not text.isprintable() or "  " in text:
        text = _WHITESPACE_RUN.sub(" ", text)
    return text


def _normalise(raw: str, after_space: bool) -> str:
    """Normalise ``raw``; ``after_space`` says the text before it ended in a (collapsed) space."""
    text = _fold(raw)
    # isprintable() is false for every whitespace character but the ASCII space, so this skips
    # collapsing for most chunks.
    if not text.isprintable() or "  " in text:
        text = _collapse_whitespace(text)
    if after_space and text[:1] == " ":
        return text[1:]
    return text


def normalise_text(text: str) -> str:
    """NFC, case folding, and whitespace runs collapsed to one space: the form hotwords match in."""
    return _normalise(text, False)


def _held_form(char: str) -> str:
    """For a chunk ending in ``char``, a clean starter: how ``char`` normalises if what follows
    could still change it (so it is held back as provisional), else ``""``."""
    if char < "\x80":
        return char.lower() if char in _ASCII_MAY_CHANGE else ""
    if "\uac00" <= char <= "\ud7a3":
        return char if (ord(char) - 0xAC00) % 28 == 0 else ""  # a syllable with no final consonant
    return _held_form_other(char)


@functools.lru_cache(maxsize=8192)
def _held_form_other(char: str) -> str:
    return normalise_text(char) if _may_change_with_what_follows(char) else ""


class StreamNormaliser:
    """Normalises a text that arrives in chunks, exactly as ``normalise_text`` would the whole.

    ``push`` returns ``(replace, text, provisional)``. Append ``text`` to what you already hold,
    unless ``replace`` is true: then first drop the provisional tail of what you hold (what the
    previous push called provisional). After either, what you hold ends with ``provisional``, which
    may still change; everything before it is final. ``replace`` is rare: it happens only when a
    chunk begins with a character that merges into the previous chunk's end, such as a combining
    accent or a decomposed Hangul vowel.

    ``extend`` is the fast way in for callers that feed many short chunks: it handles the common
    case only, returning just the text to append (``replace`` is false, and ``provisional`` says
    what is provisional when it is needed), and ``None``, feeding nothing, for a chunk that needs
    ``push``.
    """

    __slots__ = ("_after_space", "_last_chunk", "_last_text", "_provisional", "_raw_tail")

    def __init__(self) -> None:
        self._raw_tail = ""  # input not yet final: from the last safe cut point on
        self._provisional = ""  # how _raw_tail normalises if the text ended now
        self._after_space = False  # whether the final text so far ends in a space
        # The last chunk ``extend`` took and the text it returned, while the three above are not
        # yet brought up to date for it (``_update_held_tail``): then the held tail is at most
        # that chunk's last character, and working it out is left until someone asks.
        self._last_chunk = ""
        self._last_text = ""

    @property
    def provisional(self) -> str:
        """The end of the text so far that may still change (see the class docstring)."""
        self._update_held_tail()
        return self._provisional

    def extend(self, chunk: str) -> str | None:
        """Feed a chunk that starts and ends with a character normalisation never joins to what
        precedes it (nearly every chunk): return the text to append. For any other chunk, feed
        nothing and return ``None``; ``push`` it instead.

        Such a chunk leaves the held tail final as it stands, and holds back at most its own last
        character (``_held_form``), so this does only ``_normalise``'s work.
        """
        if chunk.isascii():
            if not chunk:
                return ""
            text = chunk.lower()  # _fold for ASCII
        else:
            # Both ends must start a clean segment. Everything below the combining diacritics and
            # every Hangul syllable does; testing that inline saves two calls for most chunks.
            first, last = chunk[0], chunk[-1]
            if not (
                first < "\u0300" or "\uac00" <= first <= "\ud7a3" or _starts_clean_segment(first)
            ):
                return None
            if not (last < "\u0300" or "\uac00" <= last <= "\ud7a3" or _starts_clean_segment(last)):
                return None
            # _fold, inlined for the same reason
            nfc = chunk if _is_nfc("NFC", chunk) else unicodedata.normalize("NFC", chunk)
            text = nfc.casefold()
            if text != nfc and not _is_nfc("NFC", text):
                text = unicodedata.normalize("NFC", text)
        # isprintable() is false for every whitespace character but the ASCII space.
        if not text.isprintable() or "  " in text:
            text = _collapse_whitespace(text)
        if text[0] == " " and self._ends_in_space():  # text is not empty here
            text = text[1:]
        self._last_chunk = chunk
        self._last_text = text
        return text

    def push(self, chunk: str) -> tuple[bool, str, str]:
        """Feed one chunk; see the class docstring for what the result means."""
        text = self.extend(chunk)
        if text is None:
            return self._push_across(chunk)
        return False, text, self.provisional

    def resume(self, chunk: str, *, ends_in_space: bool) -> None:
        """Take up the state ``extend(chunk)`` would have left, for a chunk that a compiled fast
        path (``hotwords._hotfeed``) normalised in this normaliser's place; ``ends_in_space``
        says whether the text so far, that chunk's included, ends in a space."""
        self._last_chunk = chunk
        # _last_text serves only _ends_in_space: any text that gives the same answer will do.
        self._last_text = "" if ends_in_space else "x"

    def ends_in_space(self) -> bool:
        """Whether the text so far, provisional tail included, ends in a space."""
        return self._ends_in_space()

    def _ends_in_space(self) -> bool:
        """Whether the text so far, provisional tail included, ends in a space."""
        if self._last_chunk:
            text = self._last_text  # empty only if it was a space collapsed into the one before
            return not text or text[-1] == " "
        return self._after_space and not self._provisional

    def _update_held_tail(self) -> None:
        """Bring ``_raw_tail``, ``_provisional`` and ``_after_space`` up to date after ``extend``:
        the held tail is the chunk's last character if what follows could still change it."""
        chunk = self._last_chunk
        if not chunk:
            return
        ends_in_space = self._ends_in_space()
        last = chunk[-1]
        self._provisional = _held_form(last)
        self._raw_tail = last if self._provisional else ""
        # With a provisional tail this is False where "the final text ends in a space" might
        # be true, but then nothing reads it: the held tail never starts with a space, so
        # nothing normalised after it can lose a leading space.
        self._after_space = ends_in_space
        self._last_chunk = ""

    def _push_across(self, chunk: str) -> tuple[bool, str, str]:
        """The general case: renormalise the held tail together with the chunk."""
        self._update_held_tail()
        raw = self._raw_tail + chunk
        cut = len(raw) - 1
        while cut > 0 and not _starts_clean_segment(raw[cut]):
            cut -= 1
        if cut == len(raw) - 1 and _starts_clean_segment(raw[cut]) and not _held_form(raw[cut]):
            cut = len(raw)
        elif len(raw) - cut > MAX_HELD_CHARS:
            cut = len(raw)  # a pathological run of combining marks: stop holding it (see above)
        final = _normalise(raw[:cut], self._after_space) if cut else ""
        if final:
            self._after_space = final[-1] == " "
        tail = raw[cut:]
        provisional = _normalise(tail, self._after_space) if tail else ""
        old_provisional = self._provisional
        self._raw_tail = tail
        self._provisional = provisional
        text = final + provisional if final else provisional
        if text.startswith(old_provisional):
            return False, text[len(old_provisional) :], provisional
        return True, text, provisional

    def reset(self) -> None:
        """End the text: what was provisional becomes final, and the next push starts afresh."""
        self._raw_tail = ""
        self._provisional = ""
        self._after_space = False
        self._last_chunk = ""
        self._last_text = ""
