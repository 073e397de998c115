"""Hotword sets: which memory fires on which words, validated, with JSON import and export.

A memory's hotwords are ordered variants of one name, such as
``["조말론", "조 말론 런던", "Jo Malone"]``. The first is its primary name; order also breaks ties
(see ``memento_core.hotwords``). The JSON form is the product's::

    [{"uid": "d3609c2758b7aa6b9", "v": ["도손", "Do Son"]}, ...]

where an entry may also carry ``"data"``, the memory's dictionary payload.

Rules:

- A variant is a string that is not blank once normalised (see ``memento_core.hotwords``),
  has no control characters other than whitespace, and is at most ``MAX_VARIANT_CHARS`` long.
  Variants of one uid that normalise alike are kept as written; the first of them is reported.
- A uid appears once per set.
- One variant may belong to several uids: a mention fires every one of them. Memories are
  independent, and two memories about "34" should both surface, not depend on which came first.
- Limits are checked before anything is built: ``MAX_VARIANTS_PER_UID`` per uid and
  ``MAX_TOTAL_VARIANTS`` per set. A million variants take about 7 s of CPU and 450 MB to validate
  and build (see ``benchmarks/results/hotwords.md``); sets that large are better split by scope.
"""

from __future__ import annotations

import hashlib
import json
import types
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memento_core._model import MemoryItem, check_json
from memento_core.errors import InvalidHotwords, InvalidInput
from memento_core.hotwords._normalisation import normalise_text

__all__ = [
    "MAX_TOTAL_VARIANTS",
    "MAX_UID_CHARS",
    "MAX_VARIANTS_PER_UID",
    "MAX_VARIANT_CHARS",
    "HotwordEntry",
    "HotwordSet",
    "check_hotword_variants",
]

MAX_VARIANT_CHARS = 256
"""Longest variant, in characters; a hotword is a name, not a passage."""
MAX_VARIANTS_PER_UID = 256
MAX_TOTAL_VARIANTS = 1_000_000
"""Most variants in one set; a set this large takes seconds and hundreds of MB to build."""
MAX_UID_CHARS = 256

_JSON_KEYS = frozenset({"uid", "v", "data"})


def _check_variant(value: object, position: int, uid: str | None) -> str:
    """Return the variant's matching form, or raise naming what is wrong with it."""
    what = f"variant {position}"
    if not isinstance(value, str):
        raise InvalidHotwords(f"{what} must be a string, got {type(value).__name__}", uid=uid)
    if len(value) > MAX_VARIANT_CHARS:
        raise InvalidHotwords(
            f"{what} is {len(value)} characters; the maximum is {MAX_VARIANT_CHARS}", uid=uid
        )
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs") and not char.isspace():
            raise InvalidHotwords(
                f"{what} holds a control character or lone surrogate: {value!r}", uid=uid
            )
    matched = normalise_text(value).strip(" ")
    if not matched:
        raise InvalidHotwords(f"{what} is empty or only whitespace", uid=uid)
    return matched


def _check_variants(value: object, uid: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidHotwords(
            f"hotwords must be a list of strings, got {type(value).__name__}", uid=uid
        )
    if not value:
        raise InvalidHotwords("hotwords must hold at least one variant", uid=uid)
    if len(value) > MAX_VARIANTS_PER_UID:
        raise InvalidHotwords(
            f"{len(value)} variants given; at most {MAX_VARIANTS_PER_UID} are allowed", uid=uid
        )
    matched = tuple(_check_variant(v, i, uid) for i, v in enumerate(value))
    return tuple(value), matched


def check_hotword_variants(value: object, *, uid: str | None = None) -> tuple[str, ...]:
    """Validate a memory's hotwords (a list of strings) and return them as a tuple.

    Raises ``InvalidHotwords`` saying which variant is wrong and why; ``uid`` goes in the message.
    """
    return _check_variants(value, uid)[0]


def _check_uid(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidHotwords(f"uid must be a string, got {type(value).__name__}: {value!r}")
    if not value.strip():
        raise InvalidHotwords("uid is empty")
    if len(value) > MAX_UID_CHARS:
        raise InvalidHotwords(f"uid is longer than {MAX_UID_CHARS} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
        raise InvalidHotwords(f"uid holds a control character or lone surrogate: {value!r}")
    return value


def _check_payload(value: object, uid: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidHotwords(f"data must be a JSON object, got {type(value).__name__}", uid=uid)
    if not all(isinstance(key, str) for key in value):
        raise InvalidHotwords("data keys must be strings", uid=uid)
    try:
        copied = check_json(dict(value), "data")
    except InvalidInput as err:
        raise InvalidHotwords(str(err), uid=uid) from err
    return types.MappingProxyType(copied)


@dataclass(frozen=True)
class HotwordEntry:
    """One memory's hotwords: its uid, its variants in order, and its dictionary payload if any."""

    uid: str
    variants: tuple[str, ...]
    payload: Mapping[str, Any] | None = None
    matched_forms: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """The variants as the detector matches them: NFC, case-folded, whitespace collapsed."""

    def __post_init__(self) -> None:
        uid = _check_uid(self.uid)
        variants, matched = _check_variants(self.variants, uid)
        object.__setattr__(self, "variants", variants)
        object.__setattr__(self, "matched_forms", matched)
        object.__setattr__(self, "payload", _check_payload(self.payload, uid))

    def __hash__(self) -> int:  # the payload mapping is not hashable; uid and variants suffice
        return hash((self.uid, self.variants))

    @property
    def primary(self) -> str:
        """The first-listed variant: the memory's name for this hotword."""
        return self.variants[0]

    def to_dict(self, *, payload: bool = False) -> dict[str, Any]:
        """The JSON form ``{"uid": ..., "v": [...]}``, plus ``"data"`` if asked and present."""
        result: dict[str, Any] = {"uid": self.uid, "v": list(self.variants)}
        if payload and self.payload is not None:
            result["data"] = dict(self.payload)
        return result


class HotwordSet:
    """An immutable, validated collection of ``HotwordEntry``, kept in uid order.

    Keeping uid order makes the set, its ``fingerprint`` and the detector's tie-breaks independent
    of the order entries were given in.
    """

    __slots__ = ("_by_uid", "_entries", "_fingerprint", "_variant_count")

    def __init__(self, entries: Iterable[HotwordEntry] = ()) -> None:
        by_uid: dict[str, HotwordEntry] = {}
        variant_count = 0
        for entry in entries:
            if not isinstance(entry, HotwordEntry):
                raise InvalidHotwords(f"expected a HotwordEntry, got {type(entry).__name__}")
            if entry.uid in by_uid:
                raise InvalidHotwords("uid appears more than once in the set", uid=entry.uid)
            variant_count += len(entry.variants)
            if variant_count > MAX_TOTAL_VARIANTS:
                raise InvalidHotwords(
                    f"more than {MAX_TOTAL_VARIANTS} variants in one set; split it by scope"
                )
            by_uid[entry.uid] = entry
        self._entries = tuple(sorted(by_uid.values(), key=lambda e: e.uid))
        self._by_uid = by_uid
        self._variant_count = variant_count
        self._fingerprint: str | None = None

    @classmethod
    def from_items(cls, items: Iterable[MemoryItem]) -> HotwordSet:
        """The hotwords of memories: uid = ``item.id``, variants = ``item.hotwords``, payload =
        ``item.data``. Memories without hotwords, and deleted ones, are skipped."""
        return cls(
            HotwordEntry(item.id, item.hotwords, item.data)
            for item in items
            if item.hotwords and not item.is_deleted
        )

    @classmethod
    def from_json(cls, source: str | bytes | Sequence[Any]) -> HotwordSet:
        """Read the JSON form, as text or as already-parsed list. Raises ``InvalidHotwords``."""
        if isinstance(source, (str, bytes, bytearray)):
            try:
                parsed: object = json.loads(source)
            except (ValueError, UnicodeDecodeError, RecursionError) as err:
                raise InvalidHotwords(f"hotword JSON is malformed: {err}") from err
        else:
            parsed = source
        if not isinstance(parsed, list):
            raise InvalidHotwords(
                f'hotword JSON must be a list of {{"uid": ..., "v": [...]}}, got '
                f"{type(parsed).__name__}"
            )
        total = sum(
            len(e["v"]) for e in parsed if isinstance(e, dict) and isinstance(e.get("v"), list)
        )
        if total > MAX_TOTAL_VARIANTS:  # refuse before normalising a million strings
            raise InvalidHotwords(
                f"{total} variants given; at most {MAX_TOTAL_VARIANTS} are allowed in one set"
            )
        return cls(_entry_from_json(index, raw) for index, raw in enumerate(parsed))

    def to_list(self, *, payloads: bool = False) -> list[dict[str, Any]]:
        """The JSON form as a list; with ``payloads=True`` entries also carry their ``"data"``."""
        return [entry.to_dict(payload=payloads) for entry in self._entries]

    def to_json(self, *, payloads: bool = False) -> str:
        """The JSON form as text (UTF-8 friendly: Hangul is not escaped)."""
        return json.dumps(self.to_list(payloads=payloads), ensure_ascii=False)

    @property
    def fingerprint(self) -> str:
        """A hash of the whole content, payloads included: equal sets have equal fingerprints,
        so a caller can keep one detector per fingerprint instead of rebuilding it."""
        if self._fingerprint is None:
            records = [
                [entry.uid, entry.variants, None if entry.payload is None else dict(entry.payload)]
                for entry in self._entries
            ]
            encoded = json.dumps(records, ensure_ascii=False).encode("utf-8")  # one C-level pass
            self._fingerprint = hashlib.sha256(encoded).hexdigest()[:32]
        return self._fingerprint

    @property
    def variant_count(self) -> int:
        return self._variant_count

    def get(self, uid: str) -> HotwordEntry | None:
        return self._by_uid.get(uid)

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid

    def __iter__(self) -> Iterator[HotwordEntry]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HotwordSet):
            return NotImplemented
        return self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        return f"<HotwordSet of {len(self)} uids, {self._variant_count} variants>"


def _entry_from_json(index: int, raw: object) -> HotwordEntry:
    if not isinstance(raw, dict):
        raise InvalidHotwords(
            f'entry {index} must be an object {{"uid": ..., "v": [...]}}, got {type(raw).__name__}'
        )
    unknown = set(raw) - _JSON_KEYS
    missing = {"uid", "v"} - set(raw)
    if unknown or missing:
        problem = f"unknown key(s) {sorted(unknown)}" if unknown else f"missing {sorted(missing)}"
        raise InvalidHotwords(f'entry {index}: {problem}; expected "uid", "v" and optional "data"')
    try:
        return HotwordEntry(raw["uid"], raw["v"], raw.get("data"))
    except InvalidHotwords as err:
        located = InvalidHotwords(f"entry {index}: {err}")
        located.uid = err.uid
        raise located from err
