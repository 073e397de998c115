"""The hotword detector: streaming detection, its rules, its events, and the stream wrappers."""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
import unicodedata
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memento_core.errors import InvalidInput
from memento_core.hotwords import (
    MAX_EVENT_BYTES,
    HotwordDetected,
    HotwordDetector,
    HotwordEntry,
    HotwordEvent,
    HotwordSet,
    MemoryDict,
    adetect_stream,
    detect_stream,
)

PRODUCT_SET = HotwordSet.from_json(
    [
        {"uid": "d3609c2758b7aa6b9", "v": ["도손", "Do Son"]},
        {
            "uid": "jomalone",
            "v": ["조말론", "조 말론 런던", "조 말론", "Jo Malone"],
            "data": {"brand": "Jo Malone London", "floor": 3},
        },
        {"uid": "street34", "v": ["34", "34번가"]},
    ]
)


def detections(events: Iterable[Any]) -> list[tuple[str, str]]:
    """(uid, hotword) of each hotword_detected event, in order."""
    return [(e.hotword_uid, e.hotword) for e in events if isinstance(e, HotwordDetected)]


def fed_in(
    chunks: list[str], *, word_boundary: bool = False, hotword_set: HotwordSet = PRODUCT_SET
) -> list[tuple[str, str]]:
    conversation = HotwordDetector(hotword_set, word_boundary=word_boundary).conversation("c")
    events = [event for chunk in chunks for event in conversation.feed(chunk)]
    return detections([*events, *conversation.flush()])


# --- the events, in the product protocol's shape ---------------------------------------------


def test_events_have_the_exact_protocol_shape() -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("conn-1")

    events = conversation.feed_message("I bought JO MALONE today")

    assert [json.loads(event.to_json()) for event in events] == [
        {
            "status": "hotword_detected",
            "connection_id": "conn-1",
            "msg": "조말론",
            "hotword": "Jo Malone",
            "hotword_uid": "jomalone",
            "msgtype": "info",
        },
        {
            "status": "memory_dict",
            "connection_id": "conn-1",
            "msg": '[{"k":"brand","v":"Jo Malone London"},{"k":"floor","v":3}]',
            "hotword": "Jo Malone",
            "hotword_uid": "jomalone",
            "msgtype": "hotword",
        },
    ]
    assert list(events[0].to_dict()) == [
        "status",
        "connection_id",
        "msg",
        "hotword",
        "hotword_uid",
        "msgtype",
    ]
    assert isinstance(events[1], MemoryDict)
    assert events[1].payload == {"brand": "Jo Malone London", "floor": 3}


def test_no_memory_dict_without_a_payload() -> None:
    events = HotwordDetector(PRODUCT_SET).conversation("c").feed_message("도손에서 만나요")

    assert [event.status for event in events] == ["hotword_detected"]


def _set_with_payload_of(size: int) -> HotwordSet:
    return HotwordSet([HotwordEntry("big", ("Do Son",), {"blob": "가" * size})])


def _memory_dict_size(size: int) -> int | None:
    events = HotwordDetector(_set_with_payload_of(size)).conversation("conn").feed_message("do son")
    sizes = [len(e.to_json().encode("utf-8")) for e in events if isinstance(e, MemoryDict)]
    return sizes[0] if sizes else None


def test_memory_dict_is_sent_up_to_32_kb_and_not_beyond() -> None:
    overhead = _memory_dict_size(0)
    assert overhead is not None
    largest_fitting = (MAX_EVENT_BYTES - overhead) // 3  # each 가 is 3 bytes of UTF-8

    assert _memory_dict_size(largest_fitting) == overhead + 3 * largest_fitting <= MAX_EVENT_BYTES
    assert _memory_dict_size(largest_fitting + 1) is None


def test_the_detection_is_still_sent_when_the_payload_is_too_large() -> None:
    events = HotwordDetector(_set_with_payload_of(40_000)).conversation("c").feed_message("Do Son")

    assert [(e.status, e.hotword_uid) for e in events] == [("hotword_detected", "big")]
    assert all(len(e.to_json().encode("utf-8")) <= MAX_EVENT_BYTES for e in events)


# --- the detection rules ---------------------------------------------------------------------


def test_each_uid_fires_once_per_conversation() -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("c")

    first = conversation.feed_message("조말론 좋아해요")
    second = conversation.feed_message("Jo Malone again, and 조 말론 런던")

    assert detections(first) == [("jomalone", "조말론")]
    assert second == ()
    assert conversation.fired_uids == {"jomalone"}


def test_conversations_are_independent() -> None:
    detector = HotwordDetector(PRODUCT_SET)
    alice, bob = detector.conversation("alice"), detector.conversation("bob")

    assert detections(alice.feed_message("도손")) == [("d3609c2758b7aa6b9", "도손")]
    assert detections(bob.feed_message("Do Son")) == [("d3609c2758b7aa6b9", "Do Son")]
    assert [e.connection_id for e in bob.feed_message("34")] == ["bob"]


def test_earliest_listed_variant_wins_within_a_chunk() -> None:
    assert fed_in(["34번가에서"]) == [("street34", "34")]
    assert fed_in(["조 말론 런던"]) == [("jomalone", "조 말론 런던")]
    # Streamed, "조 말론" completes a chunk before "조 말론 런던" does.
    assert fed_in(["조 말론", " 런던"]) == [("jomalone", "조 말론")]


def test_uids_fire_in_the_order_their_hotwords_end() -> None:
    assert [uid for uid, _ in fed_in(["도손 and 34 and Jo Malone"])] == [
        "d3609c2758b7aa6b9",
        "street34",
        "jomalone",
    ]


def test_a_hotword_split_across_chunks_is_found() -> None:
    assert fed_in(["I like J", "o Ma", "lo", "ne a lot"]) == [("jomalone", "Jo Malone")]
    assert fed_in(["조", "말", "론"]) == [("jomalone", "조말론")]


def test_composed_and_decomposed_hangul_match_alike() -> None:
    decomposed = unicodedata.normalize("NFD", "도손에서")
    decomposed_set = HotwordSet.from_json(
        [{"uid": "d", "v": [unicodedata.normalize("NFD", "도손")]}]
    )

    assert fed_in([decomposed]) == [("d3609c2758b7aa6b9", "도손")]
    assert fed_in(list(decomposed)) == [("d3609c2758b7aa6b9", "도손")]  # one jamo per chunk
    assert [uid for uid, _ in fed_in(["도손"], hotword_set=decomposed_set)] == ["d"]


def test_a_syllable_completed_by_the_next_chunk_is_not_a_match() -> None:
    hotword_set = HotwordSet.from_json([{"uid": "do", "v": ["도"]}])
    decomposed_don = unicodedata.normalize("NFD", "돈")  # ᄃ ᅩ ᆫ: 도 + a final consonant

    assert fed_in([decomposed_don[:2], decomposed_don[2:]], hotword_set=hotword_set) == []
    assert fed_in(["돈"], hotword_set=hotword_set) == []
    assert fed_in(["도", "ᆫ"], hotword_set=hotword_set) == []


def test_case_and_whitespace_do_not_matter() -> None:
    assert fed_in(["JO\n\t  maLONE"]) == [("jomalone", "Jo Malone")]
    assert fed_in(["조   말론"]) == [("jomalone", "조 말론")]
    assert fed_in(["Jo ", " ", "\nMalone"]) == [("jomalone", "Jo Malone")]


def test_an_accent_in_the_next_chunk_cancels_the_match() -> None:
    hotword_set = HotwordSet.from_json([{"uid": "cafe", "v": ["cafe"]}])
    conversation = HotwordDetector(hotword_set).conversation("c")

    assert conversation.feed("a cafe") == ()
    assert conversation.pending
    assert conversation.feed("\u0301 here") == ()  # "café" is not "cafe"
    assert conversation.flush() == ()
    assert fed_in(["a café"], hotword_set=hotword_set) == []
    assert fed_in(["a cafe here"], hotword_set=hotword_set) == [("cafe", "cafe")]


def test_34_in_2345_by_mode() -> None:
    assert fed_in(["2345"]) == [("street34", "34")]
    assert fed_in(["2345"], word_boundary=True) == []
    assert fed_in(["a34"], word_boundary=True) == []
    assert fed_in(["34번가"], word_boundary=True) == [("street34", "34")]
    assert fed_in(["(34)"], word_boundary=True) == [("street34", "34")]
    assert fed_in(["23", "4", "5"], word_boundary=True) == []
    assert fed_in(["2", "34"], word_boundary=True) == []


def test_word_boundary_leaves_hangul_edges_as_substrings() -> None:
    assert fed_in(["Jo Malone을 샀어요"], word_boundary=True) == [("jomalone", "Jo Malone")]
    assert fed_in(["Jo Malones"], word_boundary=True) == []
    assert fed_in(["도손에서"], word_boundary=True) == [("d3609c2758b7aa6b9", "도손")]


def test_word_boundary_waits_for_the_next_character() -> None:
    conversation = HotwordDetector(PRODUCT_SET, word_boundary=True).conversation("c")

    assert conversation.feed("go to 34") == ()
    assert conversation.pending
    assert detections(conversation.feed(" now")) == [("street34", "34")]
    assert not conversation.pending


def test_flush_settles_a_match_at_the_end_of_the_text() -> None:
    conversation = HotwordDetector(PRODUCT_SET, word_boundary=True).conversation("c")

    assert conversation.feed("Jo Malone") == ()
    assert detections(conversation.flush()) == [("jomalone", "Jo Malone")]


def test_a_hotword_never_spans_two_messages() -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("c")

    assert conversation.feed_message("조") == ()
    assert conversation.feed_message("말론") == ()


def test_feed_message_equals_feed_then_flush() -> None:
    text = "도손 34 Jo Malone"
    detector = HotwordDetector(PRODUCT_SET)
    one, two = detector.conversation("c"), detector.conversation("c")

    assert one.feed_message(text) == two.feed(text) + two.flush()


def test_one_variant_shared_by_two_uids_fires_both() -> None:
    hotword_set = HotwordSet.from_json(
        [{"uid": "b", "v": ["34"]}, {"uid": "a", "v": ["34번가", "34"]}]
    )

    assert fed_in(["34번가"], hotword_set=hotword_set) == [("a", "34번가"), ("b", "34")]


def test_empty_set_detects_nothing() -> None:
    conversation = HotwordDetector(HotwordSet()).conversation("c")

    assert conversation.feed("anything") == ()
    assert conversation.flush() == ()


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [b"bytes", None, 34, ["a", "list"]])
def test_a_chunk_that_is_not_text_is_a_clear_error(bad: Any) -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("c")

    with pytest.raises(InvalidInput, match="chunk text must be a string"):
        conversation.feed(bad)
    assert detections(conversation.feed_message("34")) == [("street34", "34")]  # still usable


@pytest.mark.parametrize("bad", ["", "x" * 257, "a\nb", 7])
def test_bad_connection_ids_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidInput, match="connection_id"):
        HotwordDetector(PRODUCT_SET).conversation(bad)


def test_huge_chunks_and_long_runs_of_marks_are_handled() -> None:
    noise = "x\u0334" * 50_000 + "가" * 300_000
    assert fed_in([noise + " Jo Malone " + noise]) == [("jomalone", "Jo Malone")]
    assert fed_in(["\u0301" * 10_000, "34", "\u0323" * 10_000]) == [("street34", "34")]
    assert fed_in(["\ud800 34 \udfff"]) == [("street34", "34")]  # lone surrogates pass through
    marks_one_by_one = ["a", *["\u0301"] * 20_000, " 34"]
    assert fed_in(marks_one_by_one) == [("street34", "34")]  # linear, not quadratic


# --- the same detections whatever the chunking (property tests) ------------------------------

VARIANT_PIECES = ["a", "b", "A", "é", "3", "4", " ", "가", "각", "도", "손"]
TEXT_PIECES = [*VARIANT_PIECES, "e\u0301", "\u1100", "\u1161", "\u11a8", "\u0301", "\n ", "x", "_"]


def _reference_form(text: str) -> str:
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    return re.sub(r"\s+", " ", folded)


def _is_word(char: str) -> bool:
    hangul = "\u1100" <= char <= "\u11ff" or "\uac00" <= char <= "\ud7a3"
    return (char.isalnum() or char == "_") and not hangul


def expected(hotword_set: HotwordSet, text: str, word_boundary: bool) -> list[tuple[str, str]]:
    """What a whole-message feed must report, computed naively: uids by where their first
    valid match ends (then by uid), each with its earliest-listed variant that matches anywhere."""
    normalised = _reference_form(text)
    first_end: dict[str, int] = {}
    best_variant: dict[str, int] = {}
    for entry in hotword_set:
        for index, variant in enumerate(entry.variants):
            form = _reference_form(variant).strip(" ")
            start = normalised.find(form)
            while start != -1:
                end = start + len(form)
                before = normalised[start - 1] if start else " "
                after = normalised[end] if end < len(normalised) else " "
                if not word_boundary or (
                    not (_is_word(form[0]) and _is_word(before))
                    and not (_is_word(form[-1]) and _is_word(after))
                ):
                    first_end[entry.uid] = min(first_end.get(entry.uid, end), end)
                    best_variant.setdefault(entry.uid, index)
                start = normalised.find(form, start + 1)
    order = sorted(first_end, key=lambda uid: (first_end[uid], uid))
    return [(uid, hotword_set.get(uid).variants[best_variant[uid]]) for uid in order]  # type: ignore[union-attr]  # uid is in the set


@st.composite
def hotword_sets(draw: st.DrawFn) -> HotwordSet:
    variant = st.lists(st.sampled_from(VARIANT_PIECES), min_size=1, max_size=4).map("".join)
    entries = draw(
        st.dictionaries(
            st.sampled_from(["u1", "u2", "u3", "u4"]),
            st.lists(variant.filter(str.strip), min_size=1, max_size=3),
            min_size=1,
        )
    )
    return HotwordSet(HotwordEntry(uid, tuple(variants)) for uid, variants in entries.items())


@st.composite
def chunked(draw: st.DrawFn, pieces: list[str]) -> tuple[str, list[str]]:
    text = "".join(draw(st.lists(st.sampled_from(pieces), max_size=20)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=10)))
    return text, [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)])]


@settings(max_examples=300, deadline=None)
@given(hotword_sets(), chunked(TEXT_PIECES), st.booleans())
def test_any_chunking_fires_the_same_uids_in_the_same_order(
    hotword_set: HotwordSet, case: tuple[str, list[str]], word_boundary: bool
) -> None:
    text, chunks = case
    want = expected(hotword_set, text, word_boundary)
    detector = HotwordDetector(hotword_set, word_boundary=word_boundary)

    whole = detections(detector.conversation("whole").feed_message(text))
    streamed = detections(detect_stream(detector.conversation("s"), chunks))

    assert whole == want
    assert [uid for uid, _ in streamed] == [uid for uid, _ in want]


PLAIN_PIECES = ["a", "b", "A", "3", "4", " ", "가", "도", "손", "x"]


@settings(max_examples=300, deadline=None)
@given(hotword_sets(), chunked(PLAIN_PIECES))
def test_events_come_just_before_the_chunk_that_completed_the_hotword(
    hotword_set: HotwordSet, case: tuple[str, list[str]]
) -> None:
    _, chunks = case
    stream = list(detect_stream(HotwordDetector(hotword_set).conversation("c"), chunks))

    assert [item for item in stream if isinstance(item, str)] == chunks
    for position, item in enumerate(stream):
        if isinstance(item, HotwordDetected):
            completing = next(i for i in stream[position:] if isinstance(i, str))
            index = chunks.index(
                completing, len([i for i in stream[:position] if isinstance(i, str)])
            )
            before = "".join(chunks[:index])
            through = before + completing
            fired_before = [uid for uid, _ in expected(hotword_set, before, False)]
            fired_through = [uid for uid, _ in expected(hotword_set, through, False)]
            assert item.hotword_uid not in fired_before
            assert item.hotword_uid in fired_through


# Long texts in many short chunks: ASCII and composed Hangul (the normaliser's fast path) mixed
# with decomposed Hangul and accents that reach back across a chunk boundary (its general path),
# so the record of recent text is brought up to date and trimmed many times over.
LONG_SET = HotwordSet.from_json(
    [
        {"uid": "jm", "v": ["Jo Malone", "malone"]},
        {"uid": "ds", "v": ["도손", "Do Son"]},
        {"uid": "don", "v": ["돈"]},
        {"uid": "s34", "v": ["34"]},
        {"uid": "cafe", "v": ["café x"]},
    ]
)
LONG_PIECES = [
    *["Jo", "jo ", "MALONE", "malone", "do", "son", "caf", "34", "x", "_", " ", "  ", "\n"],
    *["도", "손", "\u1103", "\u1169", "\u1109", "\u11ab", "e", "\u0301", "é"],
]


@st.composite
def many_chunks(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = "".join(draw(st.lists(st.sampled_from(LONG_PIECES), min_size=30, max_size=120)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), min_size=40, max_size=150)))
    return text, [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)])]


@settings(max_examples=200, deadline=None)
@given(many_chunks(), st.booleans())
def test_long_texts_in_many_chunks_fire_as_whole_ones(
    case: tuple[str, list[str]], word_boundary: bool
) -> None:
    text, chunks = case
    want = expected(LONG_SET, text, word_boundary)
    detector = HotwordDetector(LONG_SET, word_boundary=word_boundary)

    whole = detections(detector.conversation("whole").feed_message(text))
    streamed = detections(detect_stream(detector.conversation("s"), chunks))
    conversation = detector.conversation("twice")  # a second text reuses the trimmed state
    conversation.feed_message("34 and more " * 20)
    second = detections(detect_stream(conversation, chunks))

    assert whole == want
    assert [uid for uid, _ in streamed] == [uid for uid, _ in want]
    assert [uid for uid, _ in second] == [uid for uid, _ in want if uid != "s34"]


# --- the stream wrappers ---------------------------------------------------------------------


@dataclass
class MessageChunk:
    """Stands in for a framework's message chunk (e.g. LangChain's AIMessageChunk)."""

    content: str


def content_of(chunk: MessageChunk) -> str:
    return chunk.content


def test_detect_stream_interleaves_events_before_the_completing_chunk() -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("c")
    chunks = ["We met at 도", "손 beach, then", " 34번가."]

    stream = list(detect_stream(conversation, chunks))

    assert [type(item).__name__ if isinstance(item, HotwordEvent) else item for item in stream] == [
        "We met at 도",
        "HotwordDetected",
        "손 beach, then",
        "HotwordDetected",
        " 34번가.",
    ]


def test_a_chunk_ending_on_a_hotword_is_held_until_the_match_is_certain() -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("c")
    chunks = iter(["I like Jo Malone", " a lot"])
    stream = detect_stream(conversation, chunks)

    # "e" might still take an accent, so the first chunk waits for the second to decide.
    first_three = [next(stream) for _ in range(3)]

    assert [type(item) for item in first_three] == [HotwordDetected, MemoryDict, str]
    assert first_three[2] == "I like Jo Malone"


def test_detect_stream_passes_chunk_objects_through() -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("c")
    chunks = [MessageChunk("Jo "), MessageChunk("Malone"), MessageChunk("!")]

    wrapped = detect_stream(conversation, chunks, text_of=content_of)
    stream = list(wrapped)

    assert [chunk for chunk in stream if isinstance(chunk, MessageChunk)] == chunks
    assert stream.index(chunks[1]) > next(
        i for i, item in enumerate(stream) if isinstance(item, HotwordDetected)
    )
    assert stream[-1] is chunks[2]


def test_stopping_a_stream_early_leaves_the_conversation_usable() -> None:
    conversation = HotwordDetector(PRODUCT_SET).conversation("c")
    stream = detect_stream(conversation, ["조", "말", "론"])

    assert next(stream) == "조"
    stream.close()  # the consumer went away mid-hotword

    assert conversation.feed_message("말론") == ()  # the abandoned "조" does not carry over
    assert detections(conversation.feed_message("조말론")) == [("jomalone", "조말론")]


async def _agen(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def test_adetect_stream_matches_detect_stream() -> None:
    chunks = [MessageChunk(text) for text in ["We met at 도", "손 beach; Jo Mal", "one", " bye"]]
    detector = HotwordDetector(PRODUCT_SET)

    wrapped = detect_stream(detector.conversation("c"), chunks, text_of=content_of)
    sync = list(wrapped)
    items = [
        item
        async for item in adetect_stream(
            detector.conversation("c"), _agen(chunks), text_of=content_of
        )
    ]

    assert items == sync
    assert len([item for item in items if isinstance(item, HotwordEvent)]) == 3


def test_on_event_observes_every_event_released() -> None:
    observed: list[HotwordEvent] = []
    detector = HotwordDetector(PRODUCT_SET, on_event=observed.append)

    returned = detector.conversation("c").feed_message("Jo Malone at 도손")

    assert tuple(observed) == returned
    assert [e.status for e in observed] == ["hotword_detected", "memory_dict", "hotword_detected"]


def test_the_detectors_events_are_the_frozen_dataclasses_they_say() -> None:
    detected, memory_dict = HotwordDetector(PRODUCT_SET).conversation("c").feed_message("조말론")

    rebuilt = HotwordDetected("c", "조말론", "조말론", "jomalone")
    assert type(detected) is HotwordDetected and detected == rebuilt
    assert hash(detected) == hash(rebuilt)
    assert memory_dict == MemoryDict("c", memory_dict.msg, "조말론", "jomalone")
    assert repr(detected).startswith("HotwordDetected(connection_id='c', msg=")
    assert pickle.loads(pickle.dumps(memory_dict)) == memory_dict
    with pytest.raises(dataclasses.FrozenInstanceError):
        detected.msg = "changed"  # type: ignore[misc]  # the point: frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        detected.extra = 1  # type: ignore[attr-defined]  # the point: frozen
