"""Hotword events, in the exact shape of the product's WebSocket protocol.

Two kinds, sent in this order when a memory's hotword is detected::

    {"status": "hotword_detected", "connection_id": ..., "msg": ..., "hotword": ...,
     "hotword_uid": ..., "msgtype": "info"}
    {"status": "memory_dict", "connection_id": ..., "msg": "[{\\"k\\": ..., \\"v\\": ...}, ...]",
     "hotword": ..., "hotword_uid": ..., "msgtype": "hotword"}

``hotword`` is the variant that matched, as written in the hotword set; ``msg`` of
``hotword_detected`` is the memory's primary hotword (its first-listed variant), one stable label
whichever variant matched. ``memory_dict`` follows only for memories with a dictionary payload, and
only if its encoding fits ``MAX_EVENT_BYTES`` (one WebSocket frame); otherwise the consumer fetches
the memory by ``hotword_uid``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

__all__ = [
    "MAX_EVENT_BYTES",
    "HotwordDetected",
    "HotwordEvent",
    "MemoryDict",
    "encode_payload",
    "json_string_bytes",
    "memory_dict_bytes",
]

MAX_EVENT_BYTES = 32_768
"""Largest encoded event (UTF-8 JSON): one 32 KB WebSocket frame."""


def encode_payload(payload: Mapping[str, Any]) -> str:
    """A payload as ``memory_dict`` carries it: the JSON of ``[{"k": key, "v": value}, ...]``."""
    pairs = [{"k": key, "v": value} for key, value in payload.items()]
    return json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))


def json_string_bytes(text: str) -> int:
    """How many UTF-8 bytes ``text`` takes inside an encoded event, quotes excluded."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2


@dataclass(frozen=True)
class HotwordEvent:
    """What every hotword event carries; see the subclasses for what ``msg`` holds."""

    connection_id: str
    msg: str
    hotword: str
    hotword_uid: str

    status: ClassVar[str]
    msgtype: ClassVar[str]

    def to_dict(self) -> dict[str, str]:
        return {
            "status": self.status,
            "connection_id": self.connection_id,
            "msg": self.msg,
            "hotword": self.hotword,
            "hotword_uid": self.hotword_uid,
            "msgtype": self.msgtype,
        }

    def to_json(self) -> str:
        """Compact JSON, non-ASCII kept as is: the exact text to send in one frame."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class HotwordDetected(HotwordEvent):
    """A memory's hotword was mentioned; ``msg`` is the memory's primary hotword."""

    status: ClassVar[str] = "hotword_detected"
    msgtype: ClassVar[str] = "info"


@dataclass(frozen=True)
class MemoryDict(HotwordEvent):
    """The dictionary payload of the memory just detected; ``msg`` is ``encode_payload(...)``."""

    status: ClassVar[str] = "memory_dict"
    msgtype: ClassVar[str] = "hotword"

    @property
    def payload(self) -> dict[str, Any]:
        """The payload back as a mapping (the ``k``/``v`` pairs of ``msg``)."""
        return {pair["k"]: pair["v"] for pair in json.loads(self.msg)}


EventT = TypeVar("EventT", bound=HotwordEvent)
_new_object = object.__new__


def make_event(
    kind: type[EventT], connection_id: str, msg: str, hotword: str, hotword_uid: str
) -> EventT:
    """``kind(connection_id, msg, hotword, hotword_uid)`` in half the time: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, this writes the instance's
    dictionary. The detector makes its events with it, on the stream's path."""
    event = _new_object(kind)
    fields = event.__dict__
    fields["connection_id"] = connection_id
    fields["msg"] = msg
    fields["hotword"] = hotword
    fields["hotword_uid"] = hotword_uid
    return event


_EMPTY_EVENT_BYTES = len(MemoryDict("", "", "", "").to_json().encode("utf-8"))


def memory_dict_bytes(*, connection_id: str, msg_bytes: int, hotword: str, hotword_uid: str) -> int:
    """The encoded size of a ``MemoryDict`` without building it (``msg_bytes`` from
    ``json_string_bytes``), so a large payload is measured once, not per conversation."""
    return (
        _EMPTY_EVENT_BYTES
        + json_string_bytes(connection_id)
        + msg_bytes
        + json_string_bytes(hotword)
        + json_string_bytes(hotword_uid)
    )
