"""Types of the compiled fast path of ``memento_core.hotwords._detector`` (``_hotfeed.c``)."""

from collections.abc import Sequence
from typing import Literal, final

from memento_core.hotwords._events import HotwordEvent

# What Scanner.feed returns: the matches as (end offset, key index), None, or False (declined).
_Found = list[tuple[int, int]] | Literal[False] | None

@final
class Automaton:
    """Aho–Corasick over bytes; keys are UTF-8 bytes as Latin-1 strings, non-empty, distinct."""

    def __init__(self, keys: Sequence[str]) -> None: ...
    def __len__(self) -> int: ...
    @property
    def nodes(self) -> int: ...
    @property
    def longest(self) -> int: ...
    def findall(self, text: str) -> list[tuple[int, int]]:
        """(end offset, key index) of every match in a whole text."""
    def scanner(self, window: int, keep: int) -> Scanner:
        """A new scanner at the start of a text."""

@final
class Scanner:
    """One conversation's place in an ``Automaton`` and the last bytes of its text."""

    @property
    def end(self) -> int: ...
    @property
    def ends_in_space(self) -> bool: ...
    @property
    def stable_end(self) -> int | None:
        """Where the provisional tail starts, if the scanner took the last chunk; else None."""
    @property
    def serial(self) -> int:
        """Chunks taken by ``feed`` or ``step``: the serial of the last one."""
    waiting: bool
    """Set while matches wait for a decision: ``ConversationBase.feed`` then hands every chunk
    over."""
    def feed(self, chunk: object) -> _Found:
        """Normalise and scan a chunk of ASCII and Hangul syllables: None if nothing matched,
        else the matches; False, changing nothing, for any other chunk."""
    def step(self, encoded: str, ends_in_space: bool) -> list[tuple[int, int]] | None:
        """Scan normalised text (UTF-8 bytes as Latin-1 characters)."""
    def take_chunk(self) -> str | None: ...
    def recent(self) -> tuple[int, str]: ...
    def rewind(self, end: int) -> None: ...
    def reset(self) -> None: ...

class ConversationBase:
    """The base class of ``memento_core.hotwords._detector.Conversation``: its compiled ``feed``."""

    def feed(self, text_chunk: str) -> tuple[HotwordEvent, ...]:
        """On the compiled path: ``Scanner.feed`` the chunk; then, if the scanner took it and
        nothing is ``waiting``, return ``()`` (no allocation) if no match is for a uid yet to fire,
        or ``self._fire([(entry index, variant index), ...])`` if every such match ends before
        the provisional tail and has no boundary to check; else return
        ``self._feed_compiled(chunk, found)``. On the pure-Python path, and for any call but
        with one positional argument, ``self._feed(...)``."""
    def _attach_scanner(
        self, scanner: Scanner, targets: list[tuple[int, ...]], fired: set[int]
    ) -> None:
        """Take the compiled path: ``targets`` is ``HotwordDetector._targets``, ``fired`` the
        conversation's set of fired entry indices."""
