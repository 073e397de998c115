"""Fuzzing hotword sets and the streaming detector with random Unicode.

- Hotword sets, from the JSON list form (text, bytes or parsed) or entry by entry: anything is
  either a set or ``InvalidHotwords``; a set always builds a detector.
- Detection: random texts drawn from the characters that make normalisation hard (combining
  marks that reorder, decomposed Hangul, case folds that expand or change length — ``ß``,
  ``İ``, ``ﬁ``, final sigma, the Kelvin and Ångström signs —, Unicode whitespace, lone
  surrogates, emoji) and random chunkings. Fed whole, the detector reports what a naive search of
  ``normalise_text(text)`` finds; streamed in any chunking, the same uids in the same order;
  nothing ever raises.

Default: a CI-sized run. Longer: ``MEMENTO_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest
tests/properties/test_prop_fuzz_hotwords.py``; ``make test-slow`` runs the ``slow`` variants.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from _prop_support import budget, json_values
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from memento_core import HotwordDetected, HotwordDetector, HotwordEntry, HotwordSet, InvalidInput
from memento_core.errors import InvalidHotwords
from memento_core.hotwords import normalise_text
from memento_core.hotwords._detector import _is_word_char, detect_stream

HARD = [
    "a", "b", "e", "s", "k", "i", "A", "S", "K", "I", "3", "4", "_", " ", "  ", "\t", "\n",
    "\u00a0", "\u3000", "\u2028", "\u0301", "\u0323", "\u0308", "\u031b", "\u0345", "\u0307",
    "é", "ß", "ẞ", "İ", "ı", "ſ", "Σ", "σ", "ς", "ﬁ", "ﬀ", "ǅ", "\u212a", "\u212b", "Å",
    "Ａ", "ａ", "가", "각", "도", "손", "돈", "\u1100", "\u1103", "\u1161", "\u1169", "\u11a8",
    "\u11ab", "中", "文", "😀", "\U0001f1f0\U0001f1f7", "\x00", "\ud800", "\udfff",
]  # fmt: skip
pieces = st.sampled_from(HARD) | st.characters(codec="utf-8") | st.characters()
texts = st.lists(pieces, max_size=30).map("".join)
variant_texts = st.lists(st.sampled_from(HARD) | st.characters(), min_size=1, max_size=4).map(
    "".join
)
UIDS = ["u1", "u2", "u3", "u4", "u5"]


@st.composite
def hotword_sets(draw: st.DrawFn) -> HotwordSet:
    """Random variants, each entry kept if core accepts it (the rest must be InvalidHotwords)."""
    entries = []
    for uid in draw(st.lists(st.sampled_from(UIDS), min_size=1, max_size=4, unique=True)):
        variants = draw(st.lists(variant_texts, min_size=1, max_size=3))
        with contextlib.suppress(InvalidHotwords):
            entries.append(HotwordEntry(uid, tuple(variants)))
    return HotwordSet(entries)


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def reference(hotword_set: HotwordSet, text: str, word_boundary: bool) -> list[tuple[str, str]]:
    """Fired (uid, variant) in order, by a naive search of the normalised text: uids by where
    their first valid match ends (then by uid), each with its earliest-listed matching variant."""
    normalised = normalise_text(text)
    first_end: dict[str, int] = {}
    best: dict[str, int] = {}
    for entry in hotword_set:
        for index, form in enumerate(entry.matched_forms):
            start = normalised.find(form)
            while start != -1:
                end = start + len(form)
                before = normalised[start - 1] if start else " "
                after = normalised[end] if end < len(normalised) else " "
                if not word_boundary or (
                    not (_is_word_char(form[0]) and _is_word_char(before))
                    and not (_is_word_char(form[-1]) and _is_word_char(after))
                ):
                    first_end[entry.uid] = min(first_end.get(entry.uid, end), end)
                    best[entry.uid] = min(best.get(entry.uid, index), index)
                start = normalised.find(form, start + 1)
    order = sorted(first_end, key=lambda uid: (first_end[uid], uid))
    return [(uid, hotword_set.get(uid).variants[best[uid]]) for uid in order]  # type: ignore[union-attr]  # uid is in the set


def fired(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.hotword_uid, e.hotword) for e in events if isinstance(e, HotwordDetected)]


def check_detection(
    hotword_set: HotwordSet, text: str, chunks: list[str], word_boundary: bool
) -> None:
    detector = HotwordDetector(hotword_set, word_boundary=word_boundary)
    whole = fired(detector.conversation("whole").feed_message(text))
    streamed = fired(list(detect_stream(detector.conversation("stream"), chunks)))
    conversation = detector.conversation("fed")
    fed = fired([*(e for chunk in chunks for e in conversation.feed(chunk)), *conversation.flush()])

    with contextlib.suppress(InvalidArgument):  # statistics, only inside a hypothesis test
        event(f"{min(len(whole), 3)}{'+' if len(whole) >= 3 else ''} uids fired")
        event(f"{min(len(chunks), 5)}{'+' if len(chunks) >= 5 else ''} chunks")
    assert whole == reference(hotword_set, text, word_boundary)
    assert [uid for uid, _ in streamed] == [uid for uid, _ in whole]
    assert [uid for uid, _ in fed] == [uid for uid, _ in whole]


@st.composite
def detection_cases(draw: st.DrawFn) -> tuple[HotwordSet, str, list[str]]:
    hotword_set = draw(hotword_sets())
    # Texts that hold the variants, between random Unicode, so that matches actually happen.
    variants = [v for entry in hotword_set for v in entry.variants] or ["x"]
    parts = draw(st.lists(st.sampled_from(variants) | texts, max_size=6))
    text = "".join(parts)
    return hotword_set, text, draw(chunkings(text))


@settings(max_examples=budget(400))
@given(case=detection_cases(), word_boundary=st.booleans())
def test_detection_matches_a_naive_search_and_ignores_the_chunking(
    case: tuple[HotwordSet, str, list[str]], word_boundary: bool
) -> None:
    check_detection(*case, word_boundary)


@pytest.mark.slow
@settings(max_examples=20_000)
@given(case=detection_cases(), word_boundary=st.booleans())
def test_detection_matches_a_naive_search_and_ignores_the_chunking_long(
    case: tuple[HotwordSet, str, list[str]], word_boundary: bool
) -> None:
    check_detection(*case, word_boundary)


def test_a_match_before_a_replaced_tail_is_not_lost() -> None:
    """Found by the property above: ``a`` in ``aa`` + U+0307 (the second ``a`` becomes ``ȧ``)."""
    check_detection(HotwordSet([HotwordEntry("u", ("a",))]), "aa\u0307", ["aa", "\u0307"], False)


# ----------------------------------------------------------------------------- bad sets

raw_entries = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"uid": st.one_of(st.text(max_size=8), json_values), "v": st.one_of(
            st.lists(st.one_of(variant_texts, st.text(max_size=8), json_values), max_size=3),
            json_values,
        )},
        optional={"data": json_values, "extra": json_values},
    ),
)  # fmt: skip
sources = st.one_of(
    st.lists(raw_entries, max_size=4),
    st.lists(raw_entries, max_size=4).map(lambda v: json.dumps(v, ensure_ascii=False)),
    st.lists(raw_entries, max_size=4).map(lambda v: json.dumps(v).encode("utf-8")),
    json_values,
    st.text(max_size=30),
    st.binary(max_size=30),
    st.sampled_from(["[" * 5000, "[" * 5000 + "]" * 5000, '[{"uid": "a", "v": ["\\ud800"]}]']),
)


def check_from_json(source: Any) -> None:
    try:
        hotword_set = HotwordSet.from_json(source)
    except InvalidHotwords as err:
        assert isinstance(err, InvalidInput) and str(err)
        return
    detector = HotwordDetector(hotword_set)
    detector.conversation("c").feed_message("any text at all ß 가 \ud800")
    assert HotwordSet.from_json(hotword_set.to_json(payloads=True)) == hotword_set


@settings(max_examples=budget(400))
@given(source=sources)
def test_any_json_is_a_hotword_set_or_invalid_hotwords(source: Any) -> None:
    check_from_json(source)


@pytest.mark.slow
@settings(max_examples=20_000)
@given(source=sources)
def test_any_json_is_a_hotword_set_or_invalid_hotwords_long(source: Any) -> None:
    check_from_json(source)
