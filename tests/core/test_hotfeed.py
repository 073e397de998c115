"""The detector's compiled fast path (``hotwords._hotfeed``) against its pure-Python path.

The pure-Python path is the reference: on random sets, texts and chunkings, both must return the
same events from every ``feed`` and ``flush``. The texts mix what the fast path takes (ASCII and
Hangul syllables) with what it hands back to Python (decomposed Hangul, accents, other scripts,
Unicode whitespace, lone surrogates), so the two hand the state back and forth mid-text.
"""

from __future__ import annotations

import gc
import inspect
import os
import subprocess
import sys
import tracemalloc
from typing import Any

import ahocorasick
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core.errors import InvalidInput
from memento_core.hotwords import (
    Conversation,
    HotwordDetector,
    HotwordEntry,
    HotwordEvent,
    HotwordSet,
    StreamNormaliser,
    detect_stream,
)
from memento_core.hotwords import _detector as detector_module

COMPILED = detector_module._COMPILED_AUTOMATON
needs_extension = pytest.mark.skipif(
    COMPILED is None,
    reason="memento_core.hotwords._hotfeed is not built (or MEMENTO_PURE_PYTHON is set)",
)


def build(hotword_set: HotwordSet, *, compiled: bool, word_boundary: bool = False) -> Any:
    saved = detector_module._COMPILED_AUTOMATON
    detector_module._COMPILED_AUTOMATON = saved if compiled else None
    try:
        detector = HotwordDetector(hotword_set, word_boundary=word_boundary)
    finally:
        detector_module._COMPILED_AUTOMATON = saved
    assert detector.compiled == (compiled and len(hotword_set) > 0)
    return detector


def per_call(detector: HotwordDetector, texts: list[list[str]]) -> list[Any]:
    """What every feed and flush returns, text after text in one conversation."""
    conversation = detector.conversation("c")
    out: list[Any] = []
    for chunks in texts:
        for chunk in chunks:
            out.append(conversation.feed(chunk))
            out.append(conversation.pending)
        out.append(conversation.flush())
    out.append(sorted(conversation.fired_uids))
    return out


# The fast path's alphabet, and what it declines: it must hand these to Python mid-text.
FAST = ["a", "B", "z", "3", "4", "_", " ", "  ", "\n", "\t", "\x1c", "\x00", ".", "가", "각", "도"]
SLOW = [
    *["é", "e\u0301", "\u0301", "\u0323", "\u1100", "\u1161", "\u11a8", "\u1103", "\u1169"],
    *["ß", "İ", "Σ", "ς", "\u212a", "\u00a0", "\u3000", "中", "😀", "\ud800", "\x85", "ǅ"],
]
pieces = st.sampled_from(FAST) | st.sampled_from(SLOW) | st.characters()
VARIANT_PIECES = ["a", "b", "B", "z", "3", "4", " ", "가", "각", "도", "é", "ß", "\u1100", "中"]


@st.composite
def hotword_sets(draw: st.DrawFn) -> HotwordSet:
    variant = st.lists(st.sampled_from(VARIANT_PIECES), min_size=1, max_size=4).map("".join)
    entries = draw(
        st.dictionaries(
            st.sampled_from(["u1", "u2", "u3", "u4"]),
            st.lists(variant.filter(str.strip), min_size=1, max_size=3),
        )
    )
    return HotwordSet(HotwordEntry(uid, tuple(variants)) for uid, variants in entries.items())


@st.composite
def chunked_texts(draw: st.DrawFn, hotword_set: HotwordSet) -> list[list[str]]:
    """One to three texts, each with the set's variants among random pieces, cut anywhere."""
    variants = [v for entry in hotword_set for v in entry.variants] or ["x"]
    texts = []
    for _ in range(draw(st.integers(1, 3))):
        parts = draw(st.lists(st.sampled_from(variants) | pieces, max_size=25))
        text = "".join(parts)
        cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=15)))
        texts.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])])
    return texts


@needs_extension
@settings(max_examples=400, deadline=None)
@given(data=st.data(), word_boundary=st.booleans())
def test_compiled_and_pure_paths_return_the_same_events_call_by_call(
    data: st.DataObject, word_boundary: bool
) -> None:
    hotword_set = data.draw(hotword_sets())
    texts = data.draw(chunked_texts(hotword_set))
    pure = build(hotword_set, compiled=False, word_boundary=word_boundary)
    compiled = build(hotword_set, compiled=True, word_boundary=word_boundary)

    assert per_call(compiled, texts) == per_call(pure, texts)
    chunks = texts[0]
    assert list(detect_stream(compiled.conversation("s"), chunks)) == list(
        detect_stream(pure.conversation("s"), chunks)
    )


@needs_extension
@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(
        st.lists(st.sampled_from(["a", "e", "A", "도", "가", " ", "\u0301", "\u0307", "\u11ab"]))
        .map("".join)
        .filter(bool),
        max_size=30,
    ),
    word_boundary=st.booleans(),
)
def test_tails_replaced_by_the_next_chunk_match_the_pure_path(
    chunks: list[str], word_boundary: bool
) -> None:
    """Chunks that start with a mark or a final consonant rewrite the previous chunk's end, so
    the scanner is rewound and the normaliser's state goes back and forth."""
    hotword_set = HotwordSet.from_json(
        [{"uid": "a", "v": ["a"]}, {"uid": "e", "v": ["e a"]}, {"uid": "d", "v": ["도", "돈"]}]
    )
    pure = build(hotword_set, compiled=False, word_boundary=word_boundary)
    compiled = build(hotword_set, compiled=True, word_boundary=word_boundary)
    assert per_call(compiled, [chunks, chunks]) == per_call(pure, [chunks, chunks])


@needs_extension
@settings(max_examples=100, deadline=None)
@given(
    chunks=st.lists(
        st.sampled_from(["Jo", " mal", "one", "도", "손", " ", "34", "x"]), max_size=200
    )
)
def test_long_fast_path_streams_match_the_pure_path(chunks: list[str]) -> None:
    """Many chunks the fast path takes, so the scanner drops old text many times over."""
    hotword_set = HotwordSet.from_json(
        [{"uid": "jm", "v": ["Jo Malone"]}, {"uid": "ds", "v": ["도손"]}, {"uid": "n", "v": ["34"]}]
    )
    for word_boundary in (False, True):
        pure = build(hotword_set, compiled=False, word_boundary=word_boundary)
        compiled = build(hotword_set, compiled=True, word_boundary=word_boundary)
        texts = [chunks, ["x" * 5000, *chunks]]
        assert per_call(compiled, texts) == per_call(pure, texts)


@needs_extension
def test_huge_chunks_and_long_runs_of_marks_match_the_pure_path() -> None:
    hotword_set = HotwordSet.from_json(
        [{"uid": "jm", "v": ["Jo Malone"]}, {"uid": "n", "v": ["34"]}]
    )
    noise = "x\u0334" * 5_000 + "가" * 30_000
    texts = [
        [noise + " Jo Malone " + noise, "34"],
        ["\u0301" * 1_000, "34", "\u0323" * 1_000],
        ["a", *["\u0301"] * 2_000, " 34", "Jo", " Malone"],
        ["가" * 100_000, "Jo Malone"],  # the scanner's buffer grows, then shrinks back
    ]
    pure = build(hotword_set, compiled=False)
    compiled = build(hotword_set, compiled=True)
    assert per_call(compiled, texts) == per_call(pure, texts)


@needs_extension
def test_many_uids_completing_in_one_chunk_match_the_pure_path() -> None:
    """More uids than the compiled feed settles in C fire in one chunk, in order, some of them
    at the same character, with earlier and later variants of one uid."""
    hotword_set = HotwordSet.from_json(
        [{"uid": f"u{i:02d}", "v": [f"w{i}x", f"{i}x"]} for i in range(12)]
        + [{"uid": "zz", "v": ["1x", "x"]}]
    )
    text = " ".join(f"w{i}x" for i in reversed(range(12))) + " 1x"
    texts = [[text], [text[:7], text[7:]], [*text]]
    for word_boundary in (False, True):
        pure = build(hotword_set, compiled=False, word_boundary=word_boundary)
        compiled = build(hotword_set, compiled=True, word_boundary=word_boundary)
        assert per_call(compiled, texts) == per_call(pure, texts)


@needs_extension
def test_the_scanner_knows_the_provisional_tail_as_the_normaliser_does() -> None:
    """After a chunk the scanner took, it says where the provisional tail starts without asking
    the Python normaliser: for every ASCII character and Hangul syllable that ends a chunk."""
    assert COMPILED is not None
    automaton = COMPILED(["zz"])
    for code in [*range(0x80), *range(0xAC00, 0xD7A4)]:
        scanner = automaton.scanner(8, 64)
        assert scanner.feed("x" + chr(code)) is None
        _, _, provisional = StreamNormaliser().push("x" + chr(code))
        assert scanner.stable_end == scanner.end - len(provisional.encode())
        scanner.take_chunk()
        assert scanner.stable_end is None


def test_feed_behaves_as_a_python_method_on_both_paths() -> None:
    hotword_set = HotwordSet.from_json([{"uid": "jm", "v": ["Jo Malone"]}])
    paths = (False, True) if COMPILED is not None else (False,)
    for compiled in paths:
        conversation = build(hotword_set, compiled=compiled).conversation("c")
        first, second = conversation.feed("hello"), conversation.feed("hello")
        assert first == second == () and type(first) is tuple  # nothing to report: no allocation
        assert conversation.feed(text_chunk="jo Malone ")[0].hotword_uid == "jm"
        assert Conversation.feed(conversation, "x") == ()
        with pytest.raises(InvalidInput, match="chunk text must be a string, got bytes"):
            conversation.feed(b"jo")
        with pytest.raises(TypeError):
            conversation.feed()
        with pytest.raises(TypeError):
            conversation.feed("a", "b")
    assert list(inspect.signature(Conversation.feed).parameters) == ["self", "text_chunk"]


@needs_extension
def test_subclasses_get_the_compiled_feed_unless_they_define_their_own() -> None:
    hotword_set = HotwordSet.from_json([{"uid": "jm", "v": ["Jo Malone"]}])

    class Counted(Conversation):  # inherits the compiled feed: gets a descriptor of its own
        __slots__ = ()

    class Quiet(Conversation):  # defines feed: keeps it, and so do its subclasses
        __slots__ = ()

        def feed(self, text_chunk: str) -> tuple[HotwordEvent, ...]:
            return ()

    class QuieterStill(Quiet):
        __slots__ = ()

    detector = build(hotword_set, compiled=True)
    assert "feed" in vars(Counted) and vars(Counted)["feed"] is not vars(Conversation)["feed"]
    counted = Counted(detector, "c")
    assert [e.hotword_uid for e in counted.feed("Jo Malone, ")] == ["jm"]
    with pytest.raises(TypeError):
        vars(Counted)["feed"](detector.conversation("other"), "x")  # a Conversation is no Counted
    assert QuieterStill(detector, "q").feed("Jo Malone, ") == ()
    assert "feed" not in vars(QuieterStill)
    with pytest.raises(TypeError, match="takes no arguments"):
        type("Tagged", (Conversation,), {"__slots__": ()}, tag=1)


def test_a_conversation_is_freed_without_the_garbage_collector() -> None:
    hotword_set = HotwordSet.from_json([{"uid": "jm", "v": ["Jo Malone"]}])
    paths = (False, True) if COMPILED is not None else (False,)
    detectors = [build(hotword_set, compiled=compiled) for compiled in paths]
    gc.collect()
    gc.disable()
    try:
        for detector in detectors:
            conversation = detector.conversation("c")
            conversation.feed("Jo Malone, ")
            del conversation
        assert gc.collect() == 0  # no reference cycle was left for it
    finally:
        gc.enable()


@needs_extension
@settings(max_examples=300, deadline=None)
@given(
    keys=st.sets(st.text(st.sampled_from("ab\x80\xe0c"), min_size=1, max_size=6), max_size=40),
    text=st.text(st.sampled_from("ab\x80\xe0cd"), max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=20),
)
def test_the_automaton_finds_what_pyahocorasick_finds(
    keys: set[str], text: str, cuts: list[int]
) -> None:
    assert COMPILED is not None
    key_list = sorted(keys)
    automaton = COMPILED(key_list)
    want: list[tuple[int, int]] = []
    if key_list:
        reference = ahocorasick.Automaton()
        for index, key in enumerate(key_list):
            reference.add_word(key, index)
        reference.make_automaton()
        want = sorted(reference.iter(text))

    assert sorted(automaton.findall(text)) == want
    scanner = automaton.scanner(8, 64)
    found: list[tuple[int, int]] = []
    bounds = sorted(min(cut, len(text)) for cut in cuts)
    for start, end in zip([0, *bounds], [*bounds, len(text)]):
        found.extend(scanner.step(text[start:end], False) or [])
    assert sorted(found) == want
    assert scanner.end == len(text)


@needs_extension
def test_the_scanner_refuses_bad_input_and_declines_what_it_does_not_handle() -> None:
    assert COMPILED is not None
    scanner = COMPILED(["ab"]).scanner(4, 8)

    for declined in (b"ab", None, 3, "é", "ab\u1100", "中"):
        assert scanner.feed(declined) is False
    assert scanner.end == 0 and scanner.take_chunk() is None
    assert scanner.feed("AB\t\n c") == [(1, 0)]
    assert scanner.recent() == (0, "ab c")
    with pytest.raises(ValueError):
        scanner.rewind(99)
    with pytest.raises(TypeError):
        scanner.step("中", False)
    with pytest.raises(ValueError):
        COMPILED(["a", "a"])
    with pytest.raises(ValueError):
        COMPILED([""])
    with pytest.raises(TypeError):
        COMPILED(["中"])
    with pytest.raises(TypeError):
        type(scanner)()


@needs_extension
def test_no_memory_is_leaked() -> None:
    assert COMPILED is not None
    hotword_set = HotwordSet.from_json(
        [{"uid": "jm", "v": ["Jo Malone", "malone"]}, {"uid": "ds", "v": ["도손"]}]
    )
    chunks = ["Jo Ma", "lone 도", "손", " é", "\u0301x ", "x" * 3000, "malone"]

    def work() -> None:
        detector = build(hotword_set, compiled=True)
        for _ in range(20):
            conversation = detector.conversation("c")
            for chunk in chunks:
                conversation.feed(chunk)
            conversation.flush()
            conversation._discard_text()
        automaton = COMPILED(["ab", "b", "abc"])
        automaton.findall("xabcabc" * 50)
        scanner = automaton.scanner(8, 64)
        scanner.step("abc" * 100, True)
        scanner.feed("ABC")
        scanner.take_chunk()

    work()
    gc.collect()
    tracemalloc.start()
    try:
        work()
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(30):
            work()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 50_000


def test_memento_pure_python_forces_the_pure_path() -> None:
    code = (
        "from memento_core.hotwords import HotwordDetector;"
        "from memento_core.hotwords import HotwordSet;"
        "print(HotwordDetector(HotwordSet.from_json([{'uid': 'a', 'v': ['x']}])).compiled)"
    )
    env = {**os.environ, "MEMENTO_PURE_PYTHON": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_both_paths_give_the_events_of_the_protocol() -> None:
    hotword_set = HotwordSet.from_json(
        [
            {"uid": "jm", "v": ["조말론", "Jo Malone"], "data": {"floor": 3}},
            {"uid": "n", "v": ["34"]},
        ]
    )
    events: list[list[HotwordEvent]] = []
    for compiled in (False, True) if COMPILED is not None else (False,):
        detector = build(hotword_set, compiled=compiled)
        events.append(detector.conversation("c").feed_message("JO MALONE, 34번가"))
    assert all(found == events[0] for found in events)
    assert [e.status for e in events[0]] == ["hotword_detected", "memory_dict", "hotword_detected"]
