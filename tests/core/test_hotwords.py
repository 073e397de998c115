"""Hotword sets: JSON import and export, validation, limits, fingerprints."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memento_core._model import MemoryItem
from memento_core.errors import InvalidHotwords, InvalidInput, MementoError
from memento_core.hotwords import (
    MAX_VARIANT_CHARS,
    MAX_VARIANTS_PER_UID,
    HotwordEntry,
    HotwordSet,
    check_hotword_variants,
)
from memento_core.hotwords import _sets as hotwords

PRODUCT_JSON = (
    '[{"uid": "d3609c2758b7aa6b9", "v": ["도손", "Do Son"]},'
    ' {"uid": "a1", "v": ["조말론", "조 말론 런던", "조 말론", "Jo Malone"]},'
    ' {"uid": "b2", "v": ["34", "34번가"]}]'
)


def test_reads_the_product_json_form() -> None:
    hotword_set = HotwordSet.from_json(PRODUCT_JSON)

    assert len(hotword_set) == 3
    assert hotword_set.variant_count == 8
    jo_malone = hotword_set.get("a1")
    assert jo_malone is not None
    assert jo_malone.variants == ("조말론", "조 말론 런던", "조 말론", "Jo Malone")
    assert jo_malone.primary == "조말론"
    assert jo_malone.payload is None
    assert "b2" in hotword_set and "zz" not in hotword_set


def test_exports_the_product_json_form_and_reads_it_back() -> None:
    hotword_set = HotwordSet.from_json(PRODUCT_JSON)

    exported = json.loads(hotword_set.to_json())

    assert exported == sorted(json.loads(PRODUCT_JSON), key=lambda entry: entry["uid"])
    assert "도손" in hotword_set.to_json()  # Hangul is written as is, not \\u-escaped
    assert HotwordSet.from_json(hotword_set.to_json()) == hotword_set
    assert HotwordSet.from_json(hotword_set.to_list()) == hotword_set


def test_payloads_are_exported_only_when_asked() -> None:
    source = [{"uid": "p", "v": ["Do Son"], "data": {"city": "Hai Phong", "beach": True}}]
    hotword_set = HotwordSet.from_json(source)

    assert hotword_set.to_list() == [{"uid": "p", "v": ["Do Son"]}]
    assert hotword_set.to_list(payloads=True) == source
    assert HotwordSet.from_json(hotword_set.to_json(payloads=True)) == hotword_set


def test_built_from_memories() -> None:
    items = [
        MemoryItem(id="m2", content="Jo Malone", hotwords=("조말론", "Jo Malone"), data={"k": 1}),
        MemoryItem(id="m1", content="no hotwords here"),
        MemoryItem(id="m3", content="34th street", hotwords=("34", "34번가")),
    ]

    hotword_set = HotwordSet.from_items(items)

    assert [entry.uid for entry in hotword_set] == ["m2", "m3"]
    m2 = hotword_set.get("m2")
    assert m2 is not None
    assert m2.variants == ("조말론", "Jo Malone")
    assert m2.payload == {"k": 1}


def test_deleted_memories_are_left_out() -> None:
    from datetime import datetime, timezone

    deleted = MemoryItem(
        id="gone", content="x", hotwords=("x",), deleted_at=datetime.now(timezone.utc)
    )

    assert len(HotwordSet.from_items([deleted])) == 0


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('[{"uid": "a", "v": ["x"]', "malformed"),
        (b"\xff\xfe", "malformed"),
        ('{"uid": "a", "v": ["x"]}', "must be a list"),
        ('["just a string"]', "entry 0 must be an object"),
        ('[{"uid": "a"}]', "missing ['v']"),
        ('[{"uid": "a", "v": ["x"], "variants": ["y"]}]', "unknown key(s) ['variants']"),
        ('[{"uid": "a", "v": "Do Son"}]', "must be a list of strings"),
        ('[{"uid": "a", "v": []}]', "at least one variant"),
        ('[{"uid": "a", "v": ["ok", 34]}]', "variant 1 must be a string, got int"),
        ('[{"uid": "a", "v": [null]}]', "variant 0 must be a string, got NoneType"),
        ('[{"uid": "a", "v": [""]}]', "variant 0 is empty"),
        ('[{"uid": "a", "v": ["  \\t\\n "]}]', "variant 0 is empty"),
        ('[{"uid": "a", "v": ["a\\u0000b"]}]', "control character"),
        ('[{"uid": "a", "v": ["\\ud800"]}]', "lone surrogate"),
        ('[{"uid": 7, "v": ["x"]}]', "uid must be a string"),
        ('[{"uid": "", "v": ["x"]}]', "uid is empty"),
        ('[{"uid": "a", "v": ["x"]}, {"uid": "a", "v": ["y"]}]', "more than once"),
        ('[{"uid": "a", "v": ["x"], "data": [1, 2]}]', "data must be a JSON object"),
        ('[{"uid": "a", "v": ["x"], "data": {"n": NaN}}]', "JSON-serialisable"),
    ],
)
def test_bad_hotword_json_is_a_clear_error(source: str | bytes, expected: str) -> None:
    with pytest.raises(InvalidHotwords) as caught:
        HotwordSet.from_json(source)

    assert expected in str(caught.value)
    assert isinstance(caught.value, InvalidInput)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, MementoError)


def test_error_names_the_entry_and_uid() -> None:
    with pytest.raises(InvalidHotwords) as caught:
        HotwordSet.from_json([{"uid": "ok", "v": ["x"]}, {"uid": "bad", "v": ["fine", ""]}])

    assert caught.value.uid == "bad"
    assert "entry 1" in str(caught.value)
    assert "'bad'" in str(caught.value)


def test_a_one_megabyte_variant_is_rejected_before_anything_is_built() -> None:
    with pytest.raises(InvalidHotwords, match=f"the maximum is {MAX_VARIANT_CHARS}"):
        HotwordSet.from_json([{"uid": "big", "v": ["가" * 1_000_000]}])


def test_a_variant_at_the_limit_is_accepted() -> None:
    hotword_set = HotwordSet.from_json([{"uid": "long", "v": ["x" * MAX_VARIANT_CHARS]}])

    assert hotword_set.variant_count == 1


def test_too_many_variants_for_one_uid() -> None:
    variants = [f"v{i}" for i in range(MAX_VARIANTS_PER_UID + 1)]

    with pytest.raises(InvalidHotwords, match=f"at most {MAX_VARIANTS_PER_UID}"):
        HotwordSet.from_json([{"uid": "many", "v": variants}])


def test_too_many_variants_in_a_set_is_refused_before_validating_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hotwords, "MAX_TOTAL_VARIANTS", 5)
    entries = [{"uid": f"u{i}", "v": ["a", "b"]} for i in range(3)]

    with pytest.raises(InvalidHotwords, match="6 variants given; at most 5"):
        HotwordSet.from_json(entries)
    with pytest.raises(InvalidHotwords, match="more than 5 variants"):
        HotwordSet(HotwordEntry(f"u{i}", ("a", "b")) for i in range(3))


def test_one_variant_may_belong_to_several_uids() -> None:
    hotword_set = HotwordSet.from_json([{"uid": "a", "v": ["34"]}, {"uid": "b", "v": ["34"]}])

    assert len(hotword_set) == 2


def test_variants_that_normalise_alike_are_kept_as_written() -> None:
    entry = HotwordEntry("a", ("Jo Malone", "JO  MALONE"))

    assert entry.variants == ("Jo Malone", "JO  MALONE")
    assert entry.matched_forms == ("jo malone", "jo malone")


def test_matched_forms_are_nfc_casefolded_and_whitespace_collapsed() -> None:
    decomposed = "\u1103\u1169\u1109\u1169\u11ab"  # 도손 as jamo
    entry = HotwordEntry("a", (decomposed, " Do\t\n Son ", "STRASSE", "Straße"))

    assert entry.matched_forms == ("도손", "do son", "strasse", "strasse")


def test_entries_and_payloads_are_read_only() -> None:
    entry = HotwordEntry("a", ("x",), {"k": [1, 2]})

    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.uid = "b"  # type: ignore[misc]  # the point: frozen
    with pytest.raises(TypeError):
        entry.payload["k"] = 3  # type: ignore[index]  # the point: read-only


def test_payload_is_copied_so_later_changes_do_not_leak_in() -> None:
    payload: dict[str, Any] = {"k": 1}
    entry = HotwordEntry("a", ("x",), payload)

    payload["k"] = 2

    assert entry.payload == {"k": 1}


def test_fingerprint_ignores_order_but_sees_every_change() -> None:
    base = json.loads(PRODUCT_JSON)
    reordered = list(reversed(base))
    fingerprint = HotwordSet.from_json(base).fingerprint

    assert HotwordSet.from_json(reordered).fingerprint == fingerprint
    changed_variant_order = json.loads(PRODUCT_JSON)
    changed_variant_order[0]["v"].reverse()
    with_payload = json.loads(PRODUCT_JSON)
    with_payload[0]["data"] = {"k": "v"}
    without_one = base[1:]
    for other in (changed_variant_order, with_payload, without_one):
        assert HotwordSet.from_json(other).fingerprint != fingerprint
    assert len(fingerprint) == 32


def test_check_hotword_variants() -> None:
    assert check_hotword_variants(["34", "34번가"]) == ("34", "34번가")
    with pytest.raises(InvalidHotwords, match="hotwords of 'm1': variant 1 is empty"):
        check_hotword_variants(["34", " "], uid="m1")


_variant = st.text(
    alphabet=st.sampled_from("abcXYZ 가나다도손\u0301\u1100\u1161é"), min_size=1, max_size=12
).filter(lambda text: bool(text.strip()))


@given(
    st.dictionaries(
        keys=st.text(alphabet="abcdef0123456789", min_size=1, max_size=17),
        values=st.tuples(
            st.lists(_variant, min_size=1, max_size=5),
            st.none()
            | st.dictionaries(
                st.text("kv가 ", max_size=4), st.integers() | st.text("xy나", max_size=4)
            ),
        ),
        max_size=8,
    )
)
def test_json_round_trip_keeps_every_entry(raw: dict[str, Any]) -> None:
    source = [{"uid": uid, "v": v, "data": data} for uid, (v, data) in raw.items()]
    hotword_set = HotwordSet.from_json(source)

    again = HotwordSet.from_json(hotword_set.to_json(payloads=True))

    assert again == hotword_set
    assert [(e.uid, e.variants, e.payload) for e in again] == [
        (e.uid, e.variants, e.payload) for e in hotword_set
    ]
