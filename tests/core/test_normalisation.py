"""Normalisation: the streamed result equals the whole-text result, whatever the chunking."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core.hotwords import StreamNormaliser, normalise_text

# Characters chosen to stress the chunk boundary: Latin letters that take accents, combining
# marks of different classes (they reorder), decomposed Hangul jamo, syllables with and without a
# final consonant, characters whose case folding expands or decomposes, and assorted whitespace.
TRICKY = [
    *"aeAEsSnN 34=<\t\n",
    *["\u0301", "\u0323", "\u0302", "\u0338", "\u0345", "\u0334", "\u0f71", "\u0f72", "\u0f73"],
    *["İ", "ẞ", "ß", "ǰ", "ΐ", "ﬁ", "\u1e9b", "\u212b", "Ι", "\u0b47", "\u0b3e", "\u0b4b"],
    *["\u1103", "\u1169", "\u1109", "\u11ab", "\u1100", "\u1161", "도", "손", "가", "각"],
    *["\u3000", "\xa0", "\u2000", "\u200b"],
]


def reference(text: str) -> str:
    """The definition, written independently of the implementation."""
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    return re.sub(r"\s+", " ", folded)


def stream(chunks: list[str]) -> str:
    """What a consumer of StreamNormaliser ends up holding."""
    normaliser = StreamNormaliser()
    held, provisional = "", ""
    for chunk in chunks:
        replace, text, provisional_now = normaliser.push(chunk)
        if replace:
            held = held[: len(held) - len(provisional)]
        held += text
        provisional = provisional_now
        assert held.endswith(provisional)
    return held


@st.composite
def split_text(draw: st.DrawFn, alphabet: list[str]) -> tuple[str, list[str]]:
    text = "".join(draw(st.lists(st.sampled_from(alphabet), max_size=24)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    chunks = [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)])]
    return text, chunks


def test_normalise_text_examples() -> None:
    assert normalise_text("Jo  MALONE\n\tLondon") == "jo malone london"
    assert normalise_text("\u1103\u1169\u1109\u1169\u11ab") == "도손"
    assert normalise_text("Cafe\u0301") == "café"
    assert normalise_text("Straße") == "strasse"


@settings(max_examples=1000)
@given(split_text(TRICKY))
def test_streamed_equals_whole(case: tuple[str, list[str]]) -> None:
    text, chunks = case

    assert normalise_text(text) == reference(text)
    assert stream(chunks) == reference(text)


@settings(max_examples=300)
@given(
    split_text([chr(cp) for cp in range(0x1E00, 0x1F00)] + [chr(c) for c in range(0x300, 0x370)])
)
def test_streamed_equals_whole_for_vietnamese_and_greek_accents(
    case: tuple[str, list[str]],
) -> None:
    text, chunks = case

    assert stream(chunks) == reference(text)


def test_a_chunk_that_merges_into_the_previous_one_replaces_its_end() -> None:
    normaliser = StreamNormaliser()

    assert normaliser.push("cafe") == (False, "cafe", "e")
    assert normaliser.push("\u0301 ok") == (True, "é ok", "k")


# --- the fast path (``extend``) and the general one (``push``) mixed --------------------------

# ASCII words and spaces take the fast path; decomposed Hangul, marks and the Latin letters they
# attach to make chunks that begin or end inside a combining sequence, which take the general one.
MIXED = [
    *["Jo", "MALONE", "a", "E", "q", "34", " ", "  ", "\n", "\t "],
    *["도", "손", "가", "\u1103", "\u1169", "\u1109", "\u11ab", "\u1161", "\u11a8"],
    *["\u0301", "\u0323", "e\u0301", "ẛ", "ß", "\u3000"],
]


def stream_fast(chunks: list[str]) -> tuple[str, list[bool]]:
    """What a consumer that tries ``extend`` first (as the detector does) ends up holding, checking
    after each chunk that everything before the provisional tail is final; and which chunks took
    the fast path."""
    whole = reference("".join(chunks))
    normaliser = StreamNormaliser()
    held, provisional, fast = "", "", []
    for chunk in chunks:
        text = normaliser.extend(chunk)
        fast.append(text is not None)
        if text is None:
            replace, text, _ = normaliser.push(chunk)
            if replace:
                held = held[: len(held) - len(provisional)]
        held += text
        provisional = normaliser.provisional
        assert held.endswith(provisional)
        assert whole.startswith(held[: len(held) - len(provisional)])
    return held, fast


@settings(max_examples=1000)
@given(split_text(MIXED))
def test_extend_then_push_equals_whole(case: tuple[str, list[str]]) -> None:
    text, chunks = case

    held, _ = stream_fast(chunks)

    assert held == reference(text)
    assert stream(chunks) == reference(text)


def test_extend_takes_only_chunks_that_do_not_reach_back() -> None:
    normaliser = StreamNormaliser()

    assert normaliser.extend("Cafe") == "cafe"
    assert normaliser.provisional == "e"
    assert normaliser.extend("\u0301 ok") is None  # would merge into the "e" before it
    assert normaliser.push("\u0301 ok") == (True, "é ok", "k")
    assert normaliser.extend("\n 도") == " 도"
    assert normaliser.provisional == "도"
    assert normaliser.extend("\u11ab") is None  # a final consonant completing 도 into 돈
    assert normaliser.extend("x\u0301") is None  # ends inside a combining sequence
    assert normaliser.extend("") == ""


def test_both_paths_are_exercised_by_the_mixed_alphabet() -> None:
    _, fast = stream_fast(["Jo ", "도", "\u11ab", " e", "\u0301", "x", " 34"])

    assert fast == [True, True, False, True, False, True, True]
