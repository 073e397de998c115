"""Hotword detection in streamed text: one Aho–Corasick automaton per hotword set, shared by every
conversation, and a small state per conversation.

Matching happens on normalised text (``memento_core.hotwords``), so composed and decomposed
Hangul, letter case and runs of whitespace make no difference. The automaton runs over the UTF-8
bytes of that text: pyahocorasick looks a node's children up one by one, and Hangul gives the root
node thousands of children as characters but only a few as bytes (8x faster in
``benchmarks/hotwords.py``). UTF-8 is self-synchronising, so byte matches are exactly character
matches.

Rules, in the order they apply:

- Substring matching by default: ``34`` matches inside ``2345``, ``도손`` inside ``도손에서``.
  With ``word_boundary=True``, a variant edge that is a letter, digit or ``_`` of a space-separated
  script (Latin, Greek, Cyrillic, ...) must not touch another such character: ``34`` no longer
  matches in ``2345`` but still does in ``34번가``; Hangul and CJK edges stay substring matches,
  so ``Jo Malone을`` still matches ``Jo Malone``.
- A match counts only in the final normalised text, so one that ends on the last character of a
  chunk may have to wait for the next chunk (or ``flush``): an accent or a decomposed Hangul vowel
  in the next chunk could still change that character, and in word-boundary mode the next
  character decides. This is what makes the detections independent of the chunking.
- Each uid fires at most once per conversation; once it has, its variants are ignored.
- Events are released chunk by chunk. When several variants of one uid complete in the same chunk,
  the earliest-listed is reported. Within a chunk, uids fire in the order their first match ended;
  uids whose matches end at the same character fire in uid order.
- ``flush`` ends a text (a user message, or a model's reply): pending decisions are settled with the
  end of text as a boundary, and no hotword spans two texts. The fired uids are kept.

The uids fired, and their order, are the same whatever the chunking. The variant reported can
differ when two variants of one uid complete in different places, e.g. ``조 말론`` then
``조 말론 런던``: fed whole, both complete in one chunk and the earlier-listed wins; streamed,
the first to complete does.

Two implementations of the per-chunk work give the same detections. When the C extension
``hotwords._hotfeed`` is built (``pip install`` builds it when a C compiler is present), the
detector uses its own byte automaton and a compiled fast path for chunks of ASCII and Hangul
syllables; any other chunk takes the pure-Python normaliser. ``Conversation.feed`` is then a C
method: a chunk that completes no hotword yet to fire runs no Python at all, and when nothing waits
for a decision and no boundary is to be checked, C also applies the rules above, leaving only the
events to Python; everything else after a match stays in Python. Without the extension, or with
the environment variable ``MEMENTO_PURE_PYTHON=1`` set when ``memento_core.hotwords`` is imported,
the pure-Python path (pyahocorasick's automaton) is used; it is the reference.
``HotwordDetector.compiled`` says which a detector uses.
"""

from __future__ import annotations

import os
import unicodedata
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Generator, Iterable
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import ahocorasick

from memento_core.errors import InvalidInput
from memento_core.hotwords._events import (
    MAX_EVENT_BYTES,
    HotwordDetected,
    HotwordEvent,
    MemoryDict,
    encode_payload,
    json_string_bytes,
    make_event,
    memory_dict_bytes,
)
from memento_core.hotwords._normalisation import MAX_HELD_CHARS, StreamNormaliser
from memento_core.hotwords._sets import HotwordEntry, HotwordSet

if TYPE_CHECKING:
    from memento_core.hotwords._hotfeed import Automaton as _CompiledAutomaton
    from memento_core.hotwords._hotfeed import ConversationBase as _CompiledConversationBase
    from memento_core.hotwords._hotfeed import Scanner as _Scanner

__all__ = [
    "MAX_CONNECTION_ID_CHARS",
    "Conversation",
    "HotwordDetector",
    "adetect_stream",
    "detect_stream",
]

MAX_CONNECTION_ID_CHARS = 256

T = TypeVar("T")

# Scripts written without spaces between words (or, for Hangul, with particles glued on): their
# letters never count as word characters for the word-boundary rule.
_UNSPACED_SCRIPTS = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3000, 0x9FFF),  # kana, Hangul compatibility jamo, CJK ideographs
    (0xA960, 0xA97F),  # Hangul Jamo Extended-A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo Extended-B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF65, 0xFFDC),  # halfwidth kana and Hangul
    (0x20000, 0x3FFFF),  # CJK extensions
)

# A key's value in the automaton, one flat tuple to keep a million keys small: (length in bytes,
# check the start boundary, check the end boundary, then an entry index and a variant index for
# every uid the key belongs to).
_Target = tuple[int, ...]
# ``feed`` brings ``Conversation._recent`` up to date (and trims it) once per this many chunks.
_MAX_PIECES = 32
# A match waiting for its decision: (chunk serial, end byte, entry index, variant index, check end).
_Candidate = tuple[int, int, int, int, bool]


def _compiled_types() -> tuple[type[_CompiledAutomaton], type[_CompiledConversationBase]] | None:
    """The extension's automaton and conversation base, or None: the extension is not built, or
    MEMENTO_PURE_PYTHON is set (to anything but "" or "0")."""
    if os.environ.get("MEMENTO_PURE_PYTHON", "").strip() not in ("", "0"):
        return None
    try:
        from memento_core.hotwords._hotfeed import Automaton, ConversationBase
    except ImportError:  # built without a compiler, or for another Python: the pure path
        return None
    return Automaton, ConversationBase


# Read once, at import; tests switch detectors' paths by setting _COMPILED_AUTOMATON.
_COMPILED = _compiled_types()
_COMPILED_AUTOMATON = None if _COMPILED is None else _COMPILED[0]
# Bytes of old text a compiled scanner keeps beyond the detector's window: room for the longest
# provisional tail, MAX_HELD_CHARS characters that case folding may triple, 4 UTF-8 bytes each.
_SCANNER_SLACK_BYTES = MAX_HELD_CHARS * 3 * 4


def _is_word_char(char: str) -> bool:
    if not (char.isalnum() or char == "_"):
        return False
    code = ord(char)
    return not any(low <= code <= high for low, high in _UNSPACED_SCRIPTS)


def _char_at(window: str, index: int) -> str:
    """The character whose UTF-8 lead byte is at ``window[index]`` (``window`` holds bytes as
    Latin-1 characters)."""
    lead = ord(window[index])
    size = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return window[index : index + size].encode("latin-1").decode("utf-8", "replace")


def _char_before(window: str, index: int) -> str:
    start = index - 1
    while start > 0 and 0x80 <= ord(window[start]) < 0xC0:  # skip continuation bytes
        start -= 1
    return _char_at(window, start)


def _byte_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _as_bytes_text(text: str) -> str:
    """UTF-8 bytes of ``text`` as a Latin-1 string, the alphabet the automaton runs on.

    Lone surrogates in conversation text are passed through ("surrogatepass"): their bytes can
    never be part of a hotword, and refusing them would break a stream mid-way.
    """
    return text if text.isascii() else text.encode("utf-8", "surrogatepass").decode("latin-1")


class HotwordDetector:
    """The automaton for one ``HotwordSet``, built once and shared by all its conversations.

    Building takes about half a second of CPU per 100,000 variants and about 300 bytes per variant
    (see ``benchmarks/results/hotwords.md``). The detector is read-only once built, so
    conversations in any number of tasks or threads may share it; one ``Conversation`` must be fed
    by one task at a time. Keep one detector per ``hotword_set.fingerprint`` (and mode) and build a
    new one only when the fingerprint changes.
    """

    def __init__(
        self,
        hotword_set: HotwordSet,
        *,
        word_boundary: bool = False,
        on_event: Callable[[HotwordEvent], object] | None = None,
    ) -> None:
        if not isinstance(hotword_set, HotwordSet):
            raise InvalidInput(f"expected a HotwordSet, got {type(hotword_set).__name__}")
        self.hotword_set = hotword_set
        self.word_boundary = word_boundary
        # Called with every event any conversation releases, before it is returned: an observer
        # (for plugins). It runs on the streaming path, and what it raises propagates.
        self.on_event = on_event
        self._entries: tuple[HotwordEntry, ...] = tuple(hotword_set)
        # (entry index, variant index) -> what its events hold but the connection id: (primary,
        # hotword, uid, payload message or None, encoded size of the ``memory_dict`` event without
        # the connection id), worked out on first use: json.dumps is slow.
        self._event_fields: dict[tuple[int, int], tuple[str, str, str, str | None, int]] = {}
        self._automaton: Any = None  # pyahocorasick's, on the pure-Python path
        self._compiled: _CompiledAutomaton | None = None  # or the extension's
        self._longest = 0
        targets: dict[str, _Target] = {}  # key -> its value
        for entry_index, entry in enumerate(self._entries):
            seen: set[str] = set()
            for variant_index, form in enumerate(entry.matched_forms):
                if form in seen:  # variants that normalise alike: the first one is reported
                    continue
                seen.add(form)
                key = _as_bytes_text(form)
                target = targets.get(key)
                if target is None:  # the key's first uid
                    check_start = word_boundary and _is_word_char(form[0])
                    check_end = word_boundary and _is_word_char(form[-1])
                    target = (len(key), check_start, check_end)
                    self._longest = max(self._longest, len(key))
                targets[key] = (*target, entry_index, variant_index)
        # The compiled automaton reports keys by their index in this list.
        self._targets: list[_Target] = []
        compiled_type = _COMPILED_AUTOMATON
        if targets and compiled_type is not None:
            self._compiled = compiled_type(list(targets))
            self._targets = list(targets.values())
        elif targets:
            automaton = ahocorasick.Automaton()
            for key, target in targets.items():
                automaton.add_word(key, target)
            automaton.make_automaton()
            self._automaton = automaton
        del targets
        # Bytes of recent text a conversation keeps: the longest key plus one character before it.
        self._window_bytes = self._longest + 8

    @property
    def fingerprint(self) -> str:
        return self.hotword_set.fingerprint

    @property
    def compiled(self) -> bool:
        """Whether this detector runs on the compiled fast path (see the module docstring)."""
        return self._compiled is not None

    def conversation(self, connection_id: str) -> Conversation:
        """A new conversation: its own position in the text and its own set of fired uids."""
        return Conversation(self, connection_id)

    def _new_search(self, prefix: str = "") -> Any:
        """A pyahocorasick search iterator, advanced over ``prefix`` without reporting matches."""
        search = self._automaton.iter(prefix)
        for _ in search:
            pass
        return search

    def _events_for(
        self, connection_id: str, connection_id_bytes: int, entry_index: int, variant_index: int
    ) -> tuple[HotwordEvent, ...]:
        """``hotword_detected``, then ``memory_dict`` if the entry has a payload that fits
        (``connection_id_bytes`` is ``json_string_bytes(connection_id)``)."""
        key = (entry_index, variant_index)
        fields = self._event_fields.get(key)
        if fields is None:  # encode each payload once, not once per conversation
            fields = self._event_fields[key] = self._new_event_fields(entry_index, variant_index)
        primary, hotword, uid, message, size = fields
        detected = make_event(HotwordDetected, connection_id, primary, hotword, uid)
        events: tuple[HotwordEvent, ...] = (detected,)
        if message is not None and size + connection_id_bytes <= MAX_EVENT_BYTES:
            events = (detected, make_event(MemoryDict, connection_id, message, hotword, uid))
        if self.on_event is not None:
            for event in events:
                self.on_event(event)
        return events

    def _new_event_fields(
        self, entry_index: int, variant_index: int
    ) -> tuple[str, str, str, str | None, int]:
        entry = self._entries[entry_index]
        hotword = entry.variants[variant_index]
        if entry.payload is None:
            return entry.primary, hotword, entry.uid, None, 0
        message = encode_payload(entry.payload)
        # The fields of an event encode independently, so the connection id's share of the size
        # is added per conversation (json_string_bytes("") is 0).
        size = memory_dict_bytes(
            connection_id="",
            msg_bytes=json_string_bytes(message),
            hotword=hotword,
            hotword_uid=entry.uid,
        )
        return entry.primary, hotword, entry.uid, message, size

    def _uid_of(self, entry_index: int) -> str:
        return self._entries[entry_index].uid


def _check_connection_id(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"connection_id must be a non-empty string, got {value!r}")
    if len(value) > MAX_CONNECTION_ID_CHARS:
        raise InvalidInput(f"connection_id is longer than {MAX_CONNECTION_ID_CHARS} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
        raise InvalidInput(f"connection_id holds a control character: {value!r}")
    return value


class _PythonConversationBase:
    """``Conversation``'s base without the extension, which has a compiled one."""

    __slots__ = ()

    def feed(self, text_chunk: str) -> tuple[HotwordEvent, ...]:
        """Feed the next chunk of a streamed text; return the events decided by it (a tuple,
        the shared empty one for nearly every chunk).

        A hotword that ends exactly at the end of this chunk may be reported by the next ``feed``
        or by ``flush`` (see ``memento_core.hotwords``); ``detect_stream`` keeps such a chunk back
        so its events still come first.
        """
        return self._feed(text_chunk)

    def _feed(self, text_chunk: str) -> tuple[HotwordEvent, ...]:
        raise NotImplementedError

    def _attach_scanner(self, scanner: _Scanner, targets: list[_Target], fired: set[int]) -> None:
        """Nothing to do: ``_feed`` reads ``Conversation._scanner``."""


# ``Conversation.feed`` is compiled when the extension is: a Python call per chunk would cost as
# much as scanning the chunk.
if TYPE_CHECKING:
    _ConversationBase = _CompiledConversationBase
else:
    _ConversationBase = _PythonConversationBase if _COMPILED is None else _COMPILED[1]


class Conversation(_ConversationBase):
    """One conversation's detection state: about a kilobyte, whatever the set's size.

    Get one from ``HotwordDetector.conversation``. Not thread-safe: feed it from one task.
    """

    __slots__ = (
        "_connection_id_bytes",
        "_detector",
        "_fired",
        "_groups",
        "_normaliser",
        "_origin",
        "_pending",
        "_pieces",
        "_recent",
        "_recent_start",
        "_released_serials",
        "_scanner",
        "_search",
        "_serial",
        "connection_id",
    )

    def __init__(self, detector: HotwordDetector, connection_id: str) -> None:
        self.connection_id = _check_connection_id(connection_id)
        self._connection_id_bytes = json_string_bytes(self.connection_id)
        self._detector = detector
        self._fired: set[int] = set()  # entry indices; the compiled feed reads this very set
        # Chunks fed so far on the pure path (the scanner counts them on the compiled path); tags
        # matches with the chunk they completed in.
        self._serial = 0
        self._pending: list[_Candidate] = []
        # Decided matches by chunk serial: entry index -> (first end, earliest variant index).
        self._groups: dict[int, dict[int, tuple[int, int]]] = {}
        self._released_serials: list[int] = []
        self._normaliser = StreamNormaliser()
        self._search: Any = None
        # On the compiled path, the scanner holds the search state and the recent text (and
        # takes most chunks in place of the normaliser); ``_recent`` is then a copy taken when
        # a match needs it.
        self._scanner: _Scanner | None = None
        compiled = detector._compiled
        if compiled is not None:
            window = detector._window_bytes
            self._scanner = compiled.scanner(window, window + _SCANNER_SLACK_BYTES)
            self._attach_scanner(self._scanner, detector._targets, self._fired)
        self._pieces: list[str] = []  # text fed since, cheaper than a concatenation per chunk
        self._start_text()

    def _start_text(self) -> None:
        self._normaliser.reset()
        if self._scanner is not None:
            self._scanner.reset()
        elif self._detector._automaton is not None:
            self._search = self._detector._new_search()
        # Positions are byte offsets into the normalised text since the text began.
        self._origin = 0  # where the search iterator started
        # At least the last window_bytes fed, for boundary checks and replays; ``feed`` appends
        # to ``_pieces`` instead, and ``_join_recent`` brings it up to date with them.
        self._recent = ""
        self._recent_start = 0  # where _recent starts
        self._pieces.clear()

    @property
    def fired_uids(self) -> frozenset[str]:
        """The uids that have fired in this conversation."""
        return frozenset(self._detector._uid_of(index) for index in self._fired)

    @property
    def pending(self) -> bool:
        """Whether a match at the end of the text waits for the next chunk (or ``flush``)."""
        return bool(self._pending)

    def _feed(self, text_chunk: str) -> tuple[HotwordEvent, ...]:
        """``feed`` in Python: the pure path, and on the compiled path what the compiled
        ``feed`` does (which settles the simple cases itself rather than in ``_feed_compiled``)."""
        scanner = self._scanner
        if scanner is not None:
            found = scanner.feed(text_chunk)
            if found is None and not scanner.waiting:  # the common case, which C takes
                return ()
            return self._feed_compiled(text_chunk, found)
        if not isinstance(text_chunk, str):
            raise InvalidInput(f"chunk text must be a string, got {type(text_chunk).__name__}")
        self._serial += 1
        search = self._search
        if search is None:  # an empty hotword set
            return ()
        # Nearly every chunk takes the normaliser's fast path, and then no allocation but the
        # text's own happens here unless something matches (see benchmarks/hotwords.py).
        normaliser = self._normaliser
        delta = normaliser.extend(text_chunk)
        if delta is None:  # the general path: the chunk may change the provisional end
            provisional = normaliser.provisional
            replace, delta, _ = normaliser.push(text_chunk)
            if replace:
                self._drop_provisional(provisional)
                search = self._search
        encoded = (
            delta if delta.isascii() else delta.encode("utf-8", "surrogatepass").decode("latin-1")
        )
        pieces = self._pieces
        pieces.append(encoded)
        # reset=False given explicitly: left out, pyahocorasick raises and clears an IndexError.
        search.set(encoded, False)
        for end_index, target in search:
            self._add_candidates(self._serial, self._origin + end_index, target)
        if self._pending or self._groups or len(pieces) >= _MAX_PIECES:
            released = self._settle(end_of_text=False) if self._pending or self._groups else ()
            self._trim_recent()
            return released
        return ()

    def _feed_compiled(
        self, text_chunk: str, found: list[tuple[int, int]] | Literal[False] | None
    ) -> tuple[HotwordEvent, ...]:
        """``feed`` on the compiled path, past its common case: ``found`` is what
        ``Scanner.feed`` returned for the chunk: its matches, None if it has none (but earlier
        matches wait for a decision), or False if the scanner declined the chunk."""
        scanner = self._scanner
        assert scanner is not None  # called only on the compiled path
        matches = found
        if found is False:  # the pure-Python normaliser's turn, as in the pure path
            if not isinstance(text_chunk, str):
                raise InvalidInput(f"chunk text must be a string, got {type(text_chunk).__name__}")
            normaliser = self._synced_normaliser()
            delta = normaliser.extend(text_chunk)
            if delta is None:
                provisional = normaliser.provisional
                replace, delta, _ = normaliser.push(text_chunk)
                if replace:
                    self._drop_provisional(provisional)
            matches = scanner.step(_as_bytes_text(delta), normaliser.ends_in_space())
        if matches:
            serial = scanner.serial
            targets = self._detector._targets
            for end, key_index in matches:
                self._add_candidates(serial, end, targets[key_index])
        if self._pending or self._groups:
            return self._settle(end_of_text=False)
        scanner.waiting = False  # a rewind may have dropped the matches that waited
        return ()

    def _fire(self, fires: list[tuple[int, int]]) -> tuple[HotwordEvent, ...]:
        """``feed`` on the compiled path for a chunk that the compiled ``feed`` settled: nothing
        waited, and these (entry index, variant index) fire now, in this order."""
        assert self._scanner is not None  # called only on the compiled path
        released: tuple[HotwordEvent, ...] = ()
        for entry_index, variant_index in fires:
            self._fired.add(entry_index)
            released += self._detector._events_for(
                self.connection_id, self._connection_id_bytes, entry_index, variant_index
            )
        self._released_serials = [self._scanner.serial] * len(released)
        return released

    def _synced_normaliser(self) -> StreamNormaliser:
        """The normaliser, told of the chunk the compiled fast path took last, if any."""
        normaliser = self._normaliser
        if self._scanner is not None:
            chunk = self._scanner.take_chunk()
            if chunk is not None:
                normaliser.resume(chunk, ends_in_space=self._scanner.ends_in_space)
        return normaliser

    def flush(self) -> tuple[HotwordEvent, ...]:
        """End the current text: settle what is pending. The next ``feed`` starts a new text."""
        released = self._settle(end_of_text=True) if self._pending or self._groups else ()
        self._start_text()
        return released

    def feed_message(self, text: str) -> tuple[HotwordEvent, ...]:
        """Feed a whole message (such as a user's input): ``feed`` then ``flush``."""
        return self.feed(text) + self.flush()

    def _oldest_open_chunk(self) -> int | None:
        """The serial of the oldest chunk whose events are not all decided, or None."""
        if not self._pending and not self._groups:
            return None
        serials = [candidate[0] for candidate in self._pending]
        serials.extend(self._groups)
        return min(serials)

    def _discard_text(self) -> None:
        """End the current text without firing anything still undecided."""
        self._pending = []
        self._groups = {}
        if self._scanner is not None:
            self._scanner.waiting = False
        self._start_text()

    def _last_serial(self) -> int:
        """The serial of the last chunk fed."""
        return self._serial if self._scanner is None else self._scanner.serial

    def _join_recent(self) -> str:
        """``_recent``, brought up to date with the pieces fed since (or with the scanner)."""
        if self._scanner is not None:
            self._recent_start, self._recent = self._scanner.recent()
        elif self._pieces:
            self._recent += "".join(self._pieces)
            self._pieces.clear()
        return self._recent

    def _end(self) -> int:
        """Where the text fed so far ends."""
        return self._recent_start + len(self._join_recent())

    def _trim_recent(self) -> None:
        recent = self._join_recent()
        keep = self._detector._window_bytes + _byte_length(self._normaliser.provisional)
        if len(recent) > keep:
            self._recent_start += len(recent) - keep
            self._recent = recent[-keep:]

    def _add_candidates(self, serial: int, end: int, target: _Target) -> None:
        key_bytes, check_start, check_end = target[:3]
        start = end - key_bytes + 1
        if (
            check_start
            and start > 0
            and _is_word_char(_char_before(self._join_recent(), start - self._recent_start))
        ):
            return
        for index in range(3, len(target), 2):
            entry_index = target[index]
            if entry_index not in self._fired:
                candidate = (serial, end, entry_index, target[index + 1], bool(check_end))
                self._pending.append(candidate)

    def _drop_provisional(self, provisional: str) -> None:
        """The provisional tail changed: forget it and put the automaton back just before it."""
        stable_end = self._end() - _byte_length(provisional)
        self._pending = [c for c in self._pending if c[1] < stable_end]
        if self._scanner is not None:
            self._scanner.rewind(stable_end)
            return
        self._recent = self._recent[: stable_end - self._recent_start]
        prefix = self._recent[-self._detector._window_bytes :]
        self._search = self._detector._new_search(prefix)
        self._origin = stable_end - len(prefix)

    def _settle(self, *, end_of_text: bool) -> tuple[HotwordEvent, ...]:
        scanner = self._scanner
        # The scanner knows where the text ends without a copy of its recent text, and after a
        # chunk it took, where the provisional tail starts without handing the chunk over.
        text_end = self._end() if scanner is None else scanner.end
        if end_of_text:
            stable_end = text_end
        elif scanner is not None and (known := scanner.stable_end) is not None:
            stable_end = known
        else:
            stable_end = text_end - _byte_length(self._synced_normaliser().provisional)
        undecided: list[_Candidate] = []
        for candidate in self._pending:
            serial, end, entry_index, variant_index, check_end = candidate
            if end >= stable_end:
                undecided.append(candidate)
                continue
            if check_end and end + 1 < text_end:
                recent = self._join_recent()
                if _is_word_char(_char_at(recent, end + 1 - self._recent_start)):
                    continue  # runs on into a word: not a match
            elif check_end and not end_of_text:
                undecided.append(candidate)  # the next character has not arrived yet
                continue
            group = self._groups.setdefault(serial, {})
            first_end, best_variant = group.get(entry_index, (end, variant_index))
            group[entry_index] = (min(first_end, end), min(best_variant, variant_index))
        self._pending = undecided
        released = self._release()
        if scanner is not None:
            scanner.waiting = bool(undecided or self._groups)
        return released

    def _release(self) -> tuple[HotwordEvent, ...]:
        """Turn every fully decided chunk's matches into events, oldest chunk first.

        ``_released_serials`` gets, for each event, the serial of the chunk it completed in.
        """
        blocked = min((candidate[0] for candidate in self._pending), default=None)
        released: list[HotwordEvent] = []
        serials: list[int] = []
        for serial in sorted(self._groups):
            if blocked is not None and serial >= blocked:
                break
            group = self._groups.pop(serial)
            for entry_index, (_, variant_index) in sorted(
                group.items(), key=lambda item: (item[1][0], item[0])
            ):
                if entry_index in self._fired:
                    continue
                self._fired.add(entry_index)
                events = self._detector._events_for(
                    self.connection_id, self._connection_id_bytes, entry_index, variant_index
                )
                released.extend(events)
                serials.extend(serial for _ in events)
        self._released_serials = serials
        return tuple(released)


class _Interleaver(Generic[T]):
    """Puts each chunk after the events it completed, holding it back while they are pending."""

    def __init__(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self._held: deque[tuple[int, T]] = deque()
        self._events: deque[tuple[int, HotwordEvent]] = deque()
        self.finished = False

    def idle_after(self, events: tuple[HotwordEvent, ...]) -> bool:
        """Whether the chunk just fed, which released ``events``, can go out as it is: the
        common case, nothing to put first and nothing to hold back."""
        conversation = self._conversation
        return not (
            events or self._held or self._events or conversation._pending or conversation._groups
        )

    def push(self, chunk: T, events: tuple[HotwordEvent, ...]) -> list[T | HotwordEvent]:
        """What to yield now, given the chunk just fed and the events it released."""
        conversation = self._conversation
        if events:
            self._events.extend(zip(conversation._released_serials, events))
        self._held.append((conversation._last_serial(), chunk))
        return self._drain(conversation._oldest_open_chunk())

    def finish(self) -> list[T | HotwordEvent]:
        self.finished = True
        conversation = self._conversation
        events = conversation.flush()
        if events:
            self._events.extend(zip(conversation._released_serials, events))
        return self._drain(None)

    def abandon(self) -> None:
        """The consumer stopped early: end the text without firing what it never saw."""
        if not self.finished:
            self._conversation._discard_text()

    def _drain(self, oldest_open: int | None) -> list[T | HotwordEvent]:
        out: list[T | HotwordEvent] = []
        while self._held:
            serial, chunk = self._held[0]
            while self._events and self._events[0][0] <= serial:
                out.append(self._events.popleft()[1])
            if oldest_open is not None and serial >= oldest_open:
                break
            self._held.popleft()
            out.append(chunk)
        if oldest_open is None:
            out.extend(event for _, event in self._events)
            self._events.clear()
        return out


def detect_stream(
    conversation: Conversation, chunks: Iterable[T], text_of: Callable[[T], str] = str
) -> Generator[T | HotwordEvent, None, None]:
    """Yield ``chunks`` unchanged, with each ``HotwordEvent`` just before the chunk that completed
    its hotword; the stream's end is the end of the text (``flush``).

    ``text_of`` extracts the text of a chunk object, e.g. ``lambda c: c.content`` for LangChain
    message chunks. A chunk that ends exactly on a hotword is held back until the next chunk shows
    the match is final, so that its events can still come first.
    """
    interleaver: _Interleaver[T] = _Interleaver(conversation)
    feed = conversation.feed
    try:
        for chunk in chunks:
            events = feed(text_of(chunk))
            if interleaver.idle_after(events):
                yield chunk
            else:
                yield from interleaver.push(chunk, events)
        yield from interleaver.finish()
    finally:
        interleaver.abandon()


async def adetect_stream(
    conversation: Conversation, chunks: AsyncIterable[T], text_of: Callable[[T], str] = str
) -> AsyncGenerator[T | HotwordEvent, None]:
    """``detect_stream`` for an async iterable. The work per chunk is a few microseconds of CPU, so
    it runs inline without blocking the event loop."""
    interleaver: _Interleaver[T] = _Interleaver(conversation)
    feed = conversation.feed
    try:
        async for chunk in chunks:
            events = feed(text_of(chunk))
            if interleaver.idle_after(events):
                yield chunk
                continue
            for item in interleaver.push(chunk, events):
                yield item
        for item in interleaver.finish():
            yield item
    finally:
        interleaver.abandon()
