"""Types of the compiled fast path of ``memento_core.detector`` (``_hotfeed.c``)."""

from collections.abc import Sequence
from typing import Literal, final

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
    def feed(self, chunk: object) -> list[tuple[int, int]] | Literal[False] | None:
        """Normalise and scan a chunk of ASCII and Hangul syllables: None if nothing matched,
        else the matches; False, changing nothing, for any other chunk."""
    def step(self, encoded: str, ends_in_space: bool) -> list[tuple[int, int]] | None:
        """Scan normalised text (UTF-8 bytes as Latin-1 characters)."""
    def take_chunk(self) -> str | None: ...
    def recent(self) -> tuple[int, str]: ...
    def rewind(self, end: int) -> None: ...
    def reset(self) -> None: ...
