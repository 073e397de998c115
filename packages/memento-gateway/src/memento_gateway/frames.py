"""The frames the gateway sends, field for field in the order of the sendmsg protocol spec.

Every frame is compact JSON (non-ASCII kept as is) of at most ``MAX_FRAME_BYTES``. Text that
could overflow a frame is bounded before it gets here: stream pieces by ``MAX_PIECE_CHARS``,
sentences by ``sentences.MAX_SENTENCE_CHARS``, error texts by ``MAX_ERROR_CHARS``.
"""

from __future__ import annotations

import base64
import json
import secrets
import string
import time
from dataclasses import dataclass
from typing import Any

from memento_core import MAX_EVENT_BYTES, HotwordDetected, HotwordEvent

__all__ = [
    "HISTORY_DONE",
    "HISTORY_SEARCHING",
    "MAX_FRAME_BYTES",
    "MAX_PIECE_CHARS",
    "MEMORY_SEARCHING",
    "THINK_END",
    "THINK_START",
    "FrameTooLarge",
    "TurnIds",
    "encode",
    "error_frame",
    "hotword_frame",
    "memory_found",
    "new_connection_id",
    "new_sent_uid",
]

MAX_FRAME_BYTES = MAX_EVENT_BYTES
"""32 KB: no frame sent is larger, and a larger incoming frame closes the connection (1009)."""
MAX_PIECE_CHARS = 2_000
"""Longest text in one stream frame. It appears twice (``msg`` and ``data.chunk.content``), at
most 6 bytes a character once JSON-escaped, so a frame stays under 32 KB with room to spare."""
MAX_ERROR_CHARS = 1_000

HISTORY_SEARCHING = "대화 기억을 찾고 있습니다."
HISTORY_DONE = "대화 기억을 재생하였습니다."
MEMORY_SEARCHING = "저장된 메모리를 찾고 있습니다."
THINK_START = "생각을 시작합니다."
THINK_END = "생각이 끝났습니다."
_UID_ALPHABET = string.ascii_letters + string.digits


class FrameTooLarge(RuntimeError):
    """A frame over ``MAX_FRAME_BYTES`` was about to be sent: a bug in the gateway's bounds."""


def memory_found(hotword_memories: int) -> str:
    found = "저장된 메모리를 찾았습니다."
    return f"{found} 핫워드 수신으로 설정된 메모리는 총 {hotword_memories}개 입니다."


def hotword_sentence(primary: str) -> str:
    return f'핫워드 "{primary}"가 감지되었습니다.'


def new_connection_id() -> str:
    """16 characters of URL-safe base64, the shape the product's connection ids have."""
    return base64.urlsafe_b64encode(secrets.token_bytes(11)).decode("ascii")


def _uid(length: int) -> str:
    return "".join(secrets.choice(_UID_ALPHABET) for _ in range(length))


def new_sent_uid() -> str:
    return _uid(28)


def encode(frame: dict[str, Any]) -> str:
    """The frame as sent: compact JSON, refused if it would not fit one 32 KB frame."""
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
    if len(text) * 4 > MAX_FRAME_BYTES and len(text.encode("utf-8")) > MAX_FRAME_BYTES:
        raise FrameTooLarge(f"a {frame.get('status')!r} frame of {len(text)} characters")
    return text


def error_frame(connection_id: str, message: str) -> dict[str, Any]:
    """The spec's error frame; ``message`` is cut to its first line and ``MAX_ERROR_CHARS``."""
    lines = message.strip().splitlines() or ["unknown error"]
    line = lines[0]
    if len(line) > MAX_ERROR_CHARS:
        line = line[: MAX_ERROR_CHARS - 1] + "…"
    return {"status": "connected", "connection_id": connection_id, "msg": line, "msgtype": "error"}


def hotword_frame(event: HotwordEvent) -> dict[str, Any]:
    """Core's hotword event; ``hotword_detected`` says so in the product's sentence."""
    frame: dict[str, Any] = event.to_dict()
    if isinstance(event, HotwordDetected):
        frame["msg"] = hotword_sentence(event.msg)
    return frame


@dataclass(frozen=True)
class TurnIds:
    """What every frame of one turn (one sendmsg request) repeats."""

    connection_id: str
    room_uid: str
    stream_uid: str
    created_at: str
    is_stream: bool
    return_voice: int
    scene_number: int = 0

    @classmethod
    def new(
        cls, connection_id: str, room_uid: str, *, is_stream: bool, return_voice: int
    ) -> TurnIds:
        return cls(
            connection_id=connection_id,
            room_uid=room_uid,
            stream_uid=_uid(25),
            created_at=f"{time.time():.6f}",
            is_stream=is_stream,
            return_voice=return_voice,
        )

    def start(self, msg: str = "") -> dict[str, Any]:
        return {
            "status": "START",
            "connection_id": self.connection_id,
            "room_uid": self.room_uid,
            "stream_uid": self.stream_uid,
            "scene_number": self.scene_number,
            "msg": msg,
            "is_stream": self.is_stream,
            "cAt": self.created_at,
            "return_voice": self.return_voice,
            "msgtype": "info",
        }

    def info(self, status: str, msg: str) -> dict[str, Any]:
        """A ``history``, ``memory`` or ``think`` progress frame."""
        return {
            "status": status,
            "connection_id": self.connection_id,
            "stream_uid": self.stream_uid,
            "scene_number": self.scene_number,
            "room_uid": self.room_uid,
            "msg": msg,
            "is_stream": self.is_stream,
            "msgtype": "info",
        }

    def stream(self, sent_uid: str, piece: str) -> dict[str, Any]:
        return {
            "status": "stream",
            "connection_id": self.connection_id,
            "stream_uid": self.stream_uid,
            "scene_number": self.scene_number,
            "room_uid": self.room_uid,
            "sent_uid": sent_uid,
            "event": "on_chat_model_stream",
            "data": {"chunk": {"content": piece}},
            "msg": piece,
            "is_stream": self.is_stream,
            "msgtype": "stream",
        }

    def voice_ready(self, sent_uid: str, sentence: str, url: str, length: float) -> dict[str, Any]:
        return {
            "status": "voice_ready",
            "connection_id": self.connection_id,
            "stream_uid": self.stream_uid,
            "scene_number": self.scene_number,
            "room_uid": self.room_uid,
            "msg": sentence,
            "voice_url": url,
            "voice_length": length,
            "sent_uid": sent_uid,
            "is_stream": self.is_stream,
            "msgtype": "info",
        }

    def end(self, msg: str = "") -> dict[str, Any]:
        return {
            "status": "END",
            "connection_id": self.connection_id,
            "stream_uid": self.stream_uid,
            "scene_number": self.scene_number,
            "room_uid": self.room_uid,
            "msg": msg,
            "cAt": self.created_at,
            "is_stream": self.is_stream,
            "return_voice": self.return_voice,
            "msgtype": "info",
        }


def chain_event_frame(event: dict[str, Any]) -> dict[str, Any]:
    """An ``on_chain_*`` / ``on_chat_model_start`` event passed through as the spec shows it:
    its name, ids and tags, with ``data`` left empty (it can hold anything, of any size)."""
    tags = [str(tag)[:256] for tag in event.get("tags") or ()][:32]
    parents = [str(parent) for parent in event.get("parent_ids") or ()][:64]
    return {
        "event": event["event"],
        "data": {},
        "run_id": str(event.get("run_id", "")),
        "parent_ids": parents,
        "tags": tags,
    }
